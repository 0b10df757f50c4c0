//! `shardsim calibrate`: measure a real database (PostgreSQL, MariaDB, MySQL) under load, fit
//! the machine model to it and write the sections a scenario includes (`calibration.toml`),
//! every run with its fitted prediction (`calibration.csv`) and a chart of measured against
//! fitted throughput.
//!
//! - [`backend`]: what it needs from a database, one file per database (connection strings,
//!   password sources, timeouts, the schema's SQL, the durability setting);
//! - [`host`]: whether the load shares the server's machine in another scheduling group;
//! - [`schema`]: the one schema it creates, refuses to reuse when foreign, and always drops;
//! - [`load`]: closed loops and open streams of `UPDATE … SET count = count + 1`;
//! - [`fit`]: the model's parameters from the measurements, by simulation;
//! - [`validate`]: loads the fit did not use, measured and predicted side by side.

pub mod backend;
pub mod checkpoints;
pub mod fit;
pub mod host;
pub mod load;
pub mod schema;
pub mod spread;
pub mod stalls;
pub mod validate;

use std::time::Duration;

use backend::{DbFailure, Durability, Target};
use checkpoints::{ServerCheckpoints, ServerLog};
use fit::{Machine, Observation, OpenStream};
use load::{Load, Measured};
use spread::{MeasuredLoop, Spread};
use stalls::FittedStalls;

/// Seconds of warm-up before each run's measurement.
const WARMUP_S: f64 = 1.0;
/// The light open stream's rate as a share of one row's best measured throughput: light
/// enough that its responses are mostly the time outside the database.
const LIGHT_SHARE: f64 = 0.3;
/// The heavy open stream's rate as a share of the best throughput any closed loop measured:
/// the machine half busy, where waking the server for every request queues on its cores.
const HEAVY_SHARE: f64 = 0.5;
/// An open stream's length in closed-loop runs: its p99 is made by rare stalls of the
/// machine, so it is measured longer.
const OPEN_RUNS_LONG: f64 = 4.0;
/// Open streams a calibration measures: a light one, a heavy one, and one between them (at
/// their geometric mean) — two streams do not place the knee between them, so two machines
/// that fit both exactly can disagree tenfold on a stream in between.
const OPEN_STREAMS: usize = 3;
/// The most the database may move by itself — the busiest closed loop's second measurement,
/// after the open streams, against its first — before a calibration says it
/// cannot be trusted closer than that: `validate`'s default throughput tolerance. A shared
/// host's CPU time itself varies, and the same closed loop with it (docs/validation.md).
const STEADY_WITHIN: f64 = 0.15;

/// The most a light open stream's p99 — the steady one the fit takes — may be above its median
/// before a calibration says the machine stalled while it measured it: a light stream's own
/// queue is short, so a tail far above its median is the machine's, not the queue's, and a fit
/// to it would hand the stalls to the idle connection (the measured ratios are in
/// docs/validation.md, "The fit's constants").
const STALLED_TAIL: f64 = 20.0;

/// Clients of the one-row run beyond the client counts: as many as an open stream of
/// `validate` has connections, the herd a backlogged stream wakes at every commit. From 32
/// to 64 waiters the time of an update on one row grows far faster than from 4 to 32, which
/// no count up to 32 shows, and without it the model calls stable a row that collapses. It is
/// fitted after the rest ([`fit::fit_herd`]).
pub const HERD_CLIENTS: u32 = validate::OPEN_CONNECTIONS;

/// Rows of the full pool's run: a few, so the most connections pile many waiters on each.
const FULL_POOL_ROWS: u32 = 4;
/// The full pool's rate over the best closed loop measured on its rows: above what a full
/// pool commits, so every connection stays busy while it is measured.
const FULL_POOL_OVERLOAD: f64 = 1.25;

/// Simulated seconds of the fitted full pool in `calibration.csv`.
const FULL_POOL_PREDICTED_S: f64 = 2.0;

/// What `calibrate` measures.
#[derive(Debug, Clone)]
pub struct Design {
    /// Client counts of each series.
    pub(crate) clients: Vec<u32>,
    /// The many-rows series' row count (the one-row series has 1).
    pub(crate) max_rows: u32,
    /// Seconds measured per run.
    pub(crate) duration_s: f64,
    /// The server's cores.
    pub(crate) cores: u32,
    /// Seconds of a light open stream measured at the end for its stalls alone
    /// (`--watch`; `None`: none).
    pub(crate) watch_s: Option<f64>,
    /// The server's log, read for the checkpoints it logs while the calibration runs
    /// (`--server-log`).
    pub(crate) server_log: Option<std::path::PathBuf>,
    /// The share of measurements the calibration's band is meant to hold (`--coverage`).
    pub(crate) coverage: f64,
}

/// One measured run with what the fitted model predicts for it.
#[derive(Debug, Clone)]
pub struct CalibrationRun {
    /// The load.
    pub(crate) load: Load,
    /// What was measured.
    pub(crate) measured: Measured,
    /// What the fitted model predicts.
    pub(crate) fitted: Observation,
    /// A closed loop's throughput as predicted by the machine refitted without it
    /// ([`spread`]), updates a second (`None` for the rest).
    pub(crate) held_out_tps: Option<f64>,
}

/// What a calibration run was, in the order they are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// A closed loop of the design.
    Closed,
    /// An open stream.
    Open,
    /// The full pool: an open stream over a few rows started with a burst, above what they
    /// commit with every connection busy.
    FullPool,
    /// A closed loop's second measurement, made after the open streams.
    Repeat,
}

impl RunKind {
    /// Its name in `calibration.csv`'s `run` column.
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Closed => "closed",
            RunKind::Open => "open",
            RunKind::FullPool => "full-pool",
            RunKind::Repeat => "repeat",
        }
    }
}

/// A finished calibration.
#[derive(Debug, Clone)]
pub struct Calibration {
    /// The server as shown.
    pub(crate) server: String,
    /// The server's commit durability (`synchronous_commit`, `innodb_flush_log_at_trx_commit`).
    pub(crate) durability: Durability,
    /// The fitted machine.
    pub(crate) machine: Machine,
    /// Every run.
    pub(crate) runs: Vec<CalibrationRun>,
    /// Why the runs' times are longer than a client on another machine would see
    /// ([`host::scheduling_notice`]), when they are.
    pub(crate) load_notice: Option<&'static str>,
    /// Each closed loop's second measurement, after the open streams, in the order of
    /// `runs`' closed loops: how far the database moves by itself.
    pub(crate) repeats: Vec<CalibrationRun>,
    /// The full pool ([`Design::full_pool`]), which the extra hold per waiter is fitted to.
    pub(crate) full_pool: Option<CalibrationRun>,
    /// The stalls seen in every run's measured seconds, fitted (`None`: none seen).
    pub(crate) stalls: Option<FittedStalls>,
    /// How much slower or faster than fitted the database could have been ([`spread`]).
    pub(crate) spread: Option<Spread>,
    /// What the server said of its checkpoints while it was measured, when it keeps
    /// counters ([`checkpoints`]).
    pub(crate) checkpoints: Option<ServerCheckpoints>,
    /// Seconds of the light-load watch for stalls (`--watch`), when there was one.
    pub(crate) watched_s: Option<f64>,
}

/// How far the database moved by itself during a calibration: the busiest closed loop measured
/// twice, minutes apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steadiness {
    /// The loop's rows.
    pub(crate) rows: u32,
    /// Its clients.
    pub(crate) clients: u32,
    /// Its first measurement, updates a second.
    pub(crate) first_tps: f64,
    /// Its second measurement, after the open streams, updates a second.
    pub(crate) again_tps: f64,
}

impl Steadiness {
    /// The move from the first measurement to the second, as a fraction of the first.
    pub fn moved(&self) -> f64 {
        self.again_tps / self.first_tps.max(1.0) - 1.0
    }

    /// Whether the move is within `STEADY_WITHIN`.
    pub fn is_steady(&self) -> bool {
        self.moved().abs() <= STEADY_WITHIN
    }

    /// The two measurements and the move in one sentence, with a warning when it is too far.
    pub fn describe(&self) -> String {
        use crate::units::quantity;
        let sentence = format!(
            "the busiest closed loop ({} rows, {} clients) measured {}/s, and {}/s again after \
             the open streams: the database moved by {:+.0}% by itself",
            self.rows,
            self.clients,
            quantity(self.first_tps),
            quantity(self.again_tps),
            100.0 * self.moved()
        );
        if self.is_steady() {
            sentence
        } else {
            format!(
                "{sentence}, more than ±{:.0}%: no fit can be closer to this database than that; \
                 calibrate again on a quiet machine (no other load, a host of its own)",
                100.0 * STEADY_WITHIN
            )
        }
    }
}

/// The lightest open stream of a calibration, when its tail says the machine stalled while it
/// was measured (its p99 more than `STALLED_TAIL` times its median).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StalledStream {
    /// The stream's rate, requests a second.
    pub(crate) rate_per_s: f64,
    /// Its measured median response, ns.
    pub(crate) p50_ns: u64,
    /// Its measured p99 response over the whole stream, ns.
    pub(crate) p99_ns: u64,
    /// Its steady p99, ns: the median of its windows' p99s, which the fit takes (`None`: not
    /// measured, the fit takes the whole stream's).
    pub(crate) steady_p99_ns: Option<u64>,
    /// The fitted idle connection's p99 time outside the database, ms (`None`: not fitted).
    pub(crate) idle_p99_ms: Option<f64>,
}

impl StalledStream {
    /// The p99 the fit takes: the steady one when measured.
    pub fn fitted_p99_ns(&self) -> u64 {
        self.steady_p99_ns.unwrap_or(self.p99_ns)
    }

    /// The stream's tail and what it does to the fit, in one sentence.
    pub fn describe(&self) -> String {
        use crate::units::{duration, quantity};
        let idle = self.idle_p99_ms.map_or(String::new(), |ms| {
            format!(
                " (p99 {} outside the database)",
                duration((ms * 1e6).round() as u64)
            )
        });
        let p99 = match self.steady_p99_ns {
            Some(steady) => format!(
                "a steady p99 of {} (the median of its windows'; {} over the whole stream)",
                duration(steady),
                duration(self.p99_ns)
            ),
            None => format!("a p99 of {}", duration(self.p99_ns)),
        };
        format!(
            "the lightest open stream ({}/s) measured {p99}, {:.0} times its median of {}: the \
             machine stalled while it was measured (a light stream's own queue is short), and \
             the fitted idle connection takes the stalls as its own{idle}, so every predicted \
             p99 is too long; calibrate again on a quiet machine",
            quantity(self.rate_per_s),
            self.fitted_p99_ns() as f64 / self.p50_ns.max(1) as f64,
            duration(self.p50_ns),
        )
    }
}

impl Design {
    /// The runs, in the order they are made: one row at each client count and at as many
    /// clients as an open stream has connections ([`HERD_CLIENTS`]), then many rows, then the
    /// middle row counts at the most clients (they separate CPU from flush), and the largest
    /// of them at [`HERD_CLIENTS`] too: several rows whose waiters outnumber the cores many
    /// times, where the holders share the cores with everything else and a release scans the
    /// rows' page for the waiters of the others.
    pub fn loads(&self) -> Vec<Load> {
        let load = |rows: u32, clients: u32| Load {
            rows,
            clients,
            rate_per_s: None,
            think: Duration::ZERO,
            warmup: Duration::from_secs_f64(WARMUP_S),
            duration: Duration::from_secs_f64(self.duration_s),
        };
        let most = self.clients.iter().copied().max().unwrap_or(1);
        let mut loads: Vec<Load> = self.clients.iter().map(|&c| load(1, c)).collect();
        if most < HERD_CLIENTS {
            loads.push(load(1, HERD_CLIENTS));
        }
        if self.max_rows > 1 {
            loads.extend(self.clients.iter().map(|&c| load(self.max_rows, c)));
            let mut middle = 4;
            let mut largest_middle = None;
            while middle < self.max_rows {
                loads.push(load(middle, most));
                largest_middle = Some(middle);
                middle *= 4;
            }
            if let Some(rows) = largest_middle.filter(|_| most < HERD_CLIENTS) {
                loads.push(load(rows, HERD_CLIENTS));
            }
        }
        loads
    }

    /// The open streams measured after the closed loops, over the most rows: a light one at
    /// `LIGHT_SHARE` of the best throughput `closed` measured on one row, a heavy one at
    /// `HEAVY_SHARE` of the best of all, and one at the geometric mean of the two.
    pub fn open_loads(&self, loads: &[Load], closed: &[Measured]) -> [Load; OPEN_STREAMS] {
        let best = |rows: Option<u32>| {
            loads
                .iter()
                .zip(closed)
                .filter(|(load, _)| rows.is_none_or(|rows| load.rows == rows))
                .map(|(_, measured)| measured.tps)
                .fold(1.0_f64, f64::max)
        };
        let load = |rate_per_s: f64| Load {
            rows: self.max_rows,
            clients: validate::OPEN_CONNECTIONS,
            rate_per_s: Some(rate_per_s),
            think: Duration::ZERO,
            warmup: Duration::from_secs_f64(WARMUP_S),
            duration: Duration::from_secs_f64(OPEN_RUNS_LONG * self.duration_s),
        };
        let light = LIGHT_SHARE * best(Some(1));
        let heavy = HEAVY_SHARE * best(None);
        [load(light), load((light * heavy).sqrt()), load(heavy)]
    }

    /// The full pool: an open stream over [`FULL_POOL_ROWS`] rows (at most the design's)
    /// through [`HERD_CLIENTS`] connections, started with a burst that fills them, at
    /// [`FULL_POOL_OVERLOAD`] times the best throughput `closed` measured on those rows (on
    /// one row times the rows, when none measured them).
    pub fn full_pool(&self, loads: &[Load], closed: &[Measured]) -> Load {
        let rows = FULL_POOL_ROWS.min(self.max_rows).max(1);
        let best = |rows: u32| {
            loads
                .iter()
                .zip(closed)
                .filter(|(load, _)| load.rows == rows)
                .map(|(_, measured)| measured.tps)
                .fold(0.0_f64, f64::max)
        };
        let measured = match best(rows) {
            tps if tps > 0.0 => tps,
            _ => best(1) * f64::from(rows),
        };
        Load {
            rows,
            clients: HERD_CLIENTS,
            rate_per_s: Some(FULL_POOL_OVERLOAD * measured.max(1.0)),
            think: Duration::ZERO,
            warmup: Duration::from_secs_f64(WARMUP_S),
            duration: Duration::from_secs_f64(self.duration_s),
        }
    }

    /// The middle row counts' runs in words (none when `max_rows` is 4 or fewer).
    fn middle_rows(&self) -> String {
        let most = self.clients.iter().copied().max().unwrap_or(1);
        let loads = self.loads();
        let Some(herd) = loads
            .iter()
            .find(|load| load.rows > 1 && load.rows < self.max_rows && load.clients > most)
        else {
            return if self.max_rows > 4 {
                format!(", then the row counts between at {most}")
            } else {
                String::new()
            };
        };
        format!(
            ", then the row counts between at {most} and {} rows at {}",
            herd.rows, herd.clients
        )
    }

    /// The plan in one line: runs, seconds each, total time.
    pub fn describe(&self) -> String {
        // Each closed loop twice, and the full pool.
        let closed = 2 * self.loads().len() + 1;
        let runs = closed + OPEN_STREAMS;
        let seconds = closed as f64 * (self.duration_s + WARMUP_S)
            + OPEN_STREAMS as f64 * (OPEN_RUNS_LONG * self.duration_s + WARMUP_S);
        format!(
            "{} runs, each after a {} s warm-up: closed loops of {} s on 1 and {} rows at {} clients{}{}, then open streams at {:.0}% of one row's best, {:.0}% of the best of all and their geometric mean, over {} rows for {} s each, then every closed loop again (the database's own noise, and the band at {:.0}% coverage), then the full pool ({} rows through {} connections from a burst, above what they commit); about {:.0} s of load, then the fit",
            runs,
            WARMUP_S,
            self.duration_s,
            self.max_rows,
            self.clients
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            if self.clients.iter().all(|&c| c < HERD_CLIENTS) {
                format!(", one row at {HERD_CLIENTS} (the herd a backlogged stream wakes)")
            } else {
                String::new()
            },
            self.middle_rows(),
            100.0 * LIGHT_SHARE,
            100.0 * HEAVY_SHARE,
            self.max_rows,
            OPEN_RUNS_LONG * self.duration_s,
            100.0 * self.coverage,
            FULL_POOL_ROWS.min(self.max_rows).max(1),
            HERD_CLIENTS,
            seconds
        )
    }
}

/// Measures every run of `design` on `target` (in a schema of its own, dropped at the end)
/// and fits the machine; `progress` hears "measuring k/n" and "fitting" steps.
pub fn calibrate(
    target: &Target,
    design: &Design,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Calibration, DbFailure> {
    let durability = load::durability(target)?;
    let load_notice = host::scheduling_notice(target)?;
    if let Some(notice) = load_notice {
        progress(notice);
    }
    let durable = durability.durable;
    let schema = schema::OwnSchema::create(target, design.max_rows)?;
    let mut server = ServerLog::open(target, design.server_log.as_deref())?;
    let runs = measure_all(target, design, progress)?;
    let watch = match design.watch_s {
        Some(seconds) => Some(watch_stalls(target, &runs, seconds, progress)?),
        None => None,
    };
    schema.drop_now()?;
    let checkpoints = server.checkpoints();
    progress("fitting the model to the runs");
    let machine = fit_machine(design, &runs, durable);
    progress("holding each closed loop out of the fit for the band");
    let loops = runs.loops(durable);
    let held_out = Spread::fit(&machine, &loops, design.coverage);
    let spread = held_out.as_ref().map(|held| held.spread);
    let held_out_tps = |index: usize| held_out.as_ref().map(|held| held.predicted_tps[index]);
    let run = |(load, measured): (Load, Measured), held_out_tps: Option<f64>| CalibrationRun {
        fitted: predict(&machine, &load),
        load,
        measured,
        held_out_tps,
    };
    let stalls = FittedStalls::fit(
        &runs
            .closed
            .iter()
            .chain(&runs.open)
            .chain(&runs.repeats)
            .chain(&watch)
            .map(|(load, measured)| (measured.stalls.clone(), load.duration.as_secs_f64()))
            .collect::<Vec<_>>(),
    );
    let stalls = match &checkpoints {
        Some(evidence) => FittedStalls::with_checkpoints(stalls, evidence),
        None => stalls,
    };
    let full_pool = CalibrationRun {
        fitted: machine.simulate_full_pool(&open_stream(&runs.full_pool.0), FULL_POOL_PREDICTED_S),
        load: runs.full_pool.0,
        measured: runs.full_pool.1,
        held_out_tps: None,
    };
    let repeats = runs
        .repeats
        .into_iter()
        .enumerate()
        .map(|(index, repeat)| run(repeat, held_out_tps(index)))
        .collect();
    let closed = runs.closed.into_iter().enumerate();
    let runs = closed
        .map(|(index, closed)| run(closed, held_out_tps(index)))
        .chain(runs.open.into_iter().map(|open| run(open, None)))
        .collect();
    Ok(Calibration {
        server: target.shown().to_owned(),
        durability,
        machine,
        runs,
        load_notice,
        repeats,
        full_pool: Some(full_pool),
        stalls,
        spread,
        checkpoints,
        watched_s: design.watch_s,
    })
}

/// The light open stream measured for `seconds` after the runs, for the stalls a longer
/// look at a quiet database sees (`--watch`).
fn watch_stalls(
    target: &Target,
    runs: &Runs,
    seconds: f64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(Load, Measured), DbFailure> {
    let light = runs
        .open
        .first()
        .map(|(load, _)| *load)
        .expect("calibrate measures open streams");
    let load = Load {
        duration: Duration::from_secs_f64(seconds),
        ..light
    };
    progress(&format!(
        "watching for stalls: an open stream of {:.0}/s over {} rows for {:.0} s",
        load.rate_per_s.unwrap_or_default(),
        load.rows,
        seconds
    ));
    let measured = load::run(target, &load, 97)?;
    Ok((load, measured))
}

/// What calibrate measured: each run's load beside what the database did.
struct Runs {
    /// The closed loops.
    closed: Vec<(Load, Measured)>,
    /// The open streams, chosen from the closed loops' results.
    open: Vec<(Load, Measured)>,
    /// Each closed loop's second measurement, after the open streams (in `closed`'s order).
    repeats: Vec<(Load, Measured)>,
    /// The full pool ([`Design::full_pool`]).
    full_pool: (Load, Measured),
}

impl Runs {
    /// The closed loops with each of their measurements, in the design's order.
    fn loops(&self, durable: bool) -> Vec<MeasuredLoop> {
        self.closed
            .iter()
            .enumerate()
            .map(|(index, (load, first))| MeasuredLoop {
                measurements: std::iter::once(first)
                    .chain(self.repeats.get(index).map(|(_, again)| again))
                    .map(|m| observation(load, m, durable))
                    .collect(),
            })
            .collect()
    }
}

/// Measures the design's closed loops, then its open streams, then every closed loop again in
/// the same order (a loop's two measurements minutes apart, never back to back: the
/// database's own noise), then the full pool.
fn measure_all(
    target: &Target,
    design: &Design,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Runs, DbFailure> {
    let loads = design.loads();
    let total = 2 * loads.len() + OPEN_STREAMS + 1;
    let mut measured = Vec::with_capacity(loads.len());
    for (index, load) in loads.iter().enumerate() {
        progress(&format!(
            "measuring run {}/{total}: {}",
            index + 1,
            closed_loop(load)
        ));
        measured.push(load::run(target, load, 7 + index as u64)?);
    }
    let open_loads = design.open_loads(&loads, &measured);
    let mut open_measured = Vec::with_capacity(open_loads.len());
    for (index, load) in open_loads.iter().enumerate() {
        let number = loads.len() + index + 1;
        progress(&format!(
            "measuring run {number}/{total}: an open stream of {:.0}/s over {} rows and {} connections",
            load.rate_per_s.unwrap_or_default(),
            load.rows,
            load.clients
        ));
        open_measured.push(load::run(target, load, 7 + number as u64)?);
    }
    let mut repeats = Vec::with_capacity(loads.len());
    for (index, load) in loads.iter().enumerate() {
        let number = loads.len() + OPEN_STREAMS + index + 1;
        progress(&format!(
            "measuring run {number}/{total}: {} again",
            closed_loop(load)
        ));
        repeats.push((*load, load::run(target, load, 7 + number as u64)?));
    }
    // Last: a collapsed stream leaves the database behind (row versions, a long queue of
    // sessions), which no other run should inherit.
    let full_pool = design.full_pool(&loads, &measured);
    progress(&format!(
        "measuring run {total}/{total}: the full pool, {:.0}/s over {} through {} connections, from a burst",
        full_pool.rate_per_s.unwrap_or_default(),
        crate::units::plural(u64::from(full_pool.rows), "row"),
        full_pool.clients
    ));
    let full_pool_measured = load::run_from_burst(target, &full_pool, 7 + total as u64)?;
    Ok(Runs {
        closed: loads.into_iter().zip(measured).collect(),
        open: open_loads.into_iter().zip(open_measured).collect(),
        repeats,
        full_pool: (full_pool, full_pool_measured),
    })
}

/// Fits the machine to the runs: the rows, CPU and flush to the closed loops (each at the
/// geometric mean of its two measurements), the herd to the
/// loops with more clients than the design's, the page's scan to every closed loop, then the
/// idle connection's cost to the open streams (the cores fitted both ways:
/// [`fit::fit_closed_loops`]), and last the extra hold per waiter to the full pool.
fn fit_machine(design: &Design, runs: &Runs, durable: bool) -> Machine {
    let closed: Vec<Observation> = runs
        .loops(durable)
        .iter()
        .map(MeasuredLoop::fitted_to)
        .collect();
    let (herd_runs, observations): (Vec<Observation>, Vec<Observation>) = closed
        .iter()
        .partition(|run| design.clients.iter().all(|&c| run.clients > c));
    let machine = fit::fit_closed_loops(&observations, &herd_runs, design.cores, durable);
    let streams: Vec<(OpenStream, Observation)> = runs
        .open
        .iter()
        .map(|(load, m)| (open_stream(load), observation(load, m, durable)))
        .collect();
    let machine = fit::fit_idle(&machine, &streams);
    let (load, measured) = &runs.full_pool;
    let full_pool = observation(load, measured, durable);
    fit::fit_full_pool(&machine, &open_stream(load), &full_pool, &closed)
}

/// A closed loop in words: "64 rows, 32 clients".
fn closed_loop(load: &Load) -> String {
    use crate::units::plural;
    format!(
        "{}, {}",
        plural(u64::from(load.rows), "row"),
        plural(u64::from(load.clients), "client")
    )
}

/// The open stream of an open `load`.
fn open_stream(load: &Load) -> OpenStream {
    OpenStream {
        rows: load.rows,
        connections: load.clients,
        rate_per_s: load.rate_per_s.unwrap_or_default(),
    }
}

/// What the fitted `machine` predicts for a calibration run.
fn predict(machine: &Machine, load: &Load) -> Observation {
    match load.rate_per_s {
        None => machine.simulate(load.rows, load.clients, 2.0),
        Some(rate) => machine.simulate_open(&open_stream(load), fit::open_simulated_seconds(rate)),
    }
}

/// A measured run as the fit sees it. An open stream's p99 is its steady p99, which a stall in
/// one or two of its windows does not move: the model has no stalls, and fitted to a stalled
/// stream's whole p99 it would predict every stream at the stall's length.
pub fn observation(load: &Load, measured: &Measured, durable: bool) -> Observation {
    let summary = measured.responses.summary();
    Observation {
        rows: load.rows,
        clients: load.clients,
        tps: measured.tps,
        p50_ms: crate::time::ns_to_ms(summary.p50_ns),
        p99_ms: crate::time::ns_to_ms(measured.steady_p99_ns.unwrap_or(summary.p99_ns)),
        fsyncs_per_commit: measured.fsyncs_per_commit.filter(|_| durable),
    }
}

/// `text` as TOML comment lines of at most 90 characters.
/// Why a calibration cannot be fully trusted, as `calibration.toml`'s `warnings` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalibrationWarning {
    /// The database moved by itself by more than [`STEADY_WITHIN`] while it was measured.
    Moved,
    /// The machine stalled under the lightest open stream.
    Stalled,
}

impl CalibrationWarning {
    /// Its name in `warnings`.
    pub fn key(self) -> &'static str {
        match self {
            CalibrationWarning::Moved => "moved",
            CalibrationWarning::Stalled => "stalled",
        }
    }

    /// The warning named `key`, if there is one.
    pub fn of_key(key: &str) -> Option<CalibrationWarning> {
        [CalibrationWarning::Moved, CalibrationWarning::Stalled]
            .into_iter()
            .find(|warning| warning.key() == key)
    }

    /// What `validate` says of it before it measures.
    pub fn said_by_validate(self) -> String {
        match self {
            CalibrationWarning::Moved => format!(
                "the calibration says the database moved by itself by more than ±{:.0}% while it \
                 was measured: no prediction of it can be closer than that; calibrate again on a \
                 quiet machine",
                100.0 * STEADY_WITHIN
            ),
            CalibrationWarning::Stalled => "the calibration says the machine stalled while it \
                measured the lightest open stream: its fitted idle connection took the stalls as \
                its own, so its predicted p99s are too long for a database that does not stall; \
                calibrate again on a quiet machine"
                .to_owned(),
        }
    }
}

/// `calibration.toml`'s top-level `warnings`: the names of its [`CalibrationWarning`]s.
#[derive(serde::Serialize)]
struct WarningsFile {
    /// The warnings' names.
    warnings: Vec<&'static str>,
}

fn comment(text: &str) -> String {
    crate::units::wrap(text, 88)
        .lines()
        .map(|line| format!("# {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Calibration {
    /// Every run in the order measured — the closed loops, the open streams, each closed loop
    /// again, then the full pool — each with its kind.
    pub fn every_run(&self) -> impl Iterator<Item = (&CalibrationRun, RunKind)> {
        let kind = |run: &CalibrationRun| match run.load.rate_per_s {
            Some(_) => RunKind::Open,
            None => RunKind::Closed,
        };
        self.runs
            .iter()
            .map(move |run| (run, kind(run)))
            .chain(self.repeats.iter().map(|run| (run, RunKind::Repeat)))
            .chain(self.full_pool.iter().map(|run| (run, RunKind::FullPool)))
    }

    /// How far the database moved by itself between the busiest closed loop's two
    /// measurements — the most rows, then the most clients (when it was measured twice).
    pub fn steadiness(&self) -> Option<Steadiness> {
        let again = self
            .repeats
            .iter()
            .max_by_key(|run| (run.load.rows, run.load.clients))?;
        let first = self.runs.iter().find(|run| run.load == again.load)?;
        Some(Steadiness {
            rows: again.load.rows,
            clients: again.load.clients,
            first_tps: first.measured.tps,
            again_tps: again.measured.tps,
        })
    }

    /// The lightest open stream, when the machine stalled while it was measured so that the
    /// fit takes the stalls (its steady p99 more than `STALLED_TAIL` times its median).
    pub fn stalled_stream(&self) -> Option<StalledStream> {
        let (rate_per_s, lightest) = self
            .runs
            .iter()
            .filter_map(|run| run.load.rate_per_s.map(|rate| (rate, run)))
            .min_by(|a, b| a.0.total_cmp(&b.0))?;
        let summary = lightest.measured.responses.summary();
        let stalls = StalledStream {
            rate_per_s,
            p50_ns: summary.p50_ns,
            p99_ns: summary.p99_ns,
            steady_p99_ns: lightest.measured.steady_p99_ns,
            idle_p99_ms: self.machine.idle.map(|idle| idle.overhead.p99_ms),
        };
        (stalls.fitted_p99_ns() as f64 > STALLED_TAIL * stalls.p50_ns as f64).then_some(stalls)
    }

    /// What says the calibration cannot be trusted, as data: written to `calibration.toml`'s
    /// `warnings` and read back by `validate`.
    pub fn warning_kinds(&self) -> Vec<CalibrationWarning> {
        self.found_warnings().map(|(kind, _)| kind).collect()
    }

    /// What says the calibration cannot be trusted, each a line: the database moved by itself
    /// by more than ±15% (`steadiness: …`), or the machine stalled under the lightest open
    /// stream (`stalls: …`). `--quiet` prints these still, where it prints nothing else.
    pub fn warnings(&self) -> Vec<String> {
        self.found_warnings().map(|(_, line)| line).collect()
    }

    /// Each warning that applies, with its line: one place decides both what
    /// `calibration.toml` records and what is printed.
    fn found_warnings(&self) -> impl Iterator<Item = (CalibrationWarning, String)> {
        let moved = self
            .steadiness()
            .filter(|steadiness| !steadiness.is_steady())
            .map(|steadiness| {
                let line = format!("steadiness: {}", steadiness.describe());
                (CalibrationWarning::Moved, line)
            });
        let stalled = self.stalled_stream().map(|stalls| {
            let line = format!("stalls: {}", stalls.describe());
            (CalibrationWarning::Stalled, line)
        });
        moved.into_iter().chain(stalled)
    }

    /// `calibration.toml`: where it comes from, then the sections a scenario includes.
    pub fn toml(&self) -> String {
        let m = &self.machine;
        let steadiness = self.steadiness().map_or(String::new(), |steadiness| {
            comment(&format!("Steadiness: {}.", steadiness.describe())) + "\n"
        });
        let stalls = self.stalled_stream().map_or(String::new(), |stalls| {
            comment(&format!("Stalls: {}.", stalls.describe())) + "\n"
        });
        let kinds = self.warning_kinds();
        let warnings = if kinds.is_empty() {
            String::new()
        } else {
            let names: Vec<&str> = kinds.iter().map(|kind| kind.key()).collect();
            format!(
                "\n{}\n{}",
                comment("What validate warns of before it measures (see the comments above):"),
                toml::to_string(&WarningsFile { warnings: names }).expect("strings serialise")
            )
        };
        format!(
            "# shardsim calibrate: {} runs on {} ({}).\n\
             # Include it in a scenario with include = \"calibration.toml\", or pass\n\
             # --calibration calibration.toml to run, plan and check; the scenario's own fields win.\n\
             {}{steadiness}{stalls}{}\n{warnings}\n{}",
            self.every_run().count(),
            self.server,
            self.durability,
            self.load_notice
                .map_or(String::new(), |notice| comment(notice) + "\n"),
            comment(&format!("Fitted: {}.", m.describe())),
            m.sections() + &self.stall_section() + &self.spread_section()
        )
    }

    /// `[spread]` as fitted, after a comment of where it comes from.
    fn spread_section(&self) -> String {
        self.spread.map_or(String::new(), |spread| {
            format!(
                "\n{}\n{}",
                comment(&format!(
                    "Spread: {}; plan answers at both ends and chooses by the slower.",
                    spread.describe()
                )),
                spread.toml()
            )
        })
    }

    /// `[stalls]` as fitted, with how many were seen, or a comment that none was.
    fn stall_section(&self) -> String {
        let seconds: f64 = self
            .every_run()
            .map(|(run, _)| run.load.duration.as_secs_f64())
            .sum::<f64>()
            + self.watched_s.unwrap_or(0.0);
        let evidence = self.stall_evidence();
        let evidence = if evidence.is_empty() {
            String::new()
        } else {
            format!("\n{}", comment(&evidence))
        };
        let section = match &self.stalls {
            Some(stalls) => format!(
                "\n{}\n{}",
                comment(&format!(
                    "Stalls of the machine: {} (a plan that rests on fewer than {} says so).",
                    stalls.describe(),
                    crate::plan::FEW_STALLS
                )),
                stalls.toml()
            ),
            None => format!(
                "\n{}\n",
                comment(&format!(
                    "No stall of the machine in {seconds:.0} s of load (no gap between commits \
                     20 times the service time while updates were outstanding)."
                ))
            ),
        };
        evidence + &section
    }

    /// Where the stalls come from beyond the runs: the light-load watch and the server's
    /// checkpoints, in words (empty without either).
    pub fn stall_evidence(&self) -> String {
        let mut parts = Vec::new();
        if let Some(seconds) = self.watched_s {
            parts.push(format!(
                "a light open stream watched for {seconds:.0} s after the runs"
            ));
        }
        if let Some(checkpoints) = &self.checkpoints {
            parts.push(checkpoints.describe());
        }
        if parts.is_empty() {
            return String::new();
        }
        format!("Stall evidence: {}.", parts.join("; "))
    }

    /// `calibration.csv`: every run's settings, measurements, prediction and residuals.
    pub fn csv(&self) -> Vec<u8> {
        let mut out = csv::Writer::from_writer(Vec::new());
        let header = [
            "rows",
            "clients_or_connections",
            "offered_per_s",
            "duration_s",
            "measured_tps",
            "fitted_tps",
            "tps_residual",
            "held_out_tps",
            "measured_p50_ms",
            "fitted_p50_ms",
            "measured_p99_ms",
            "measured_steady_p99_ms",
            "fitted_p99_ms",
            "measured_fsyncs_per_commit",
            "fitted_fsyncs_per_commit",
            "run",
        ];
        out.write_record(header).expect("writing to memory");
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4}"));
        for (run, kind) in self.every_run() {
            // A run that fell behind from its first instant answers none of the updates sent
            // in its measured seconds: its response columns are empty, not zero.
            let answered = run.measured.responses.count() > 0;
            let summary = run.measured.responses.summary();
            let response = |ns: u64| opt(answered.then(|| crate::time::ns_to_ms(ns)));
            out.write_record([
                run.load.rows.to_string(),
                run.load.clients.to_string(),
                run.load
                    .rate_per_s
                    .map_or(String::new(), |rate| format!("{rate:.1}")),
                format!("{}", run.load.duration.as_secs_f64()),
                format!("{:.1}", run.measured.tps),
                format!("{:.1}", run.fitted.tps),
                format!("{:.4}", run.fitted.tps / run.measured.tps.max(1.0) - 1.0),
                run.held_out_tps
                    .map_or(String::new(), |tps| format!("{tps:.1}")),
                response(summary.p50_ns),
                format!("{:.4}", run.fitted.p50_ms),
                response(summary.p99_ns),
                opt(run.measured.steady_p99_ns.map(crate::time::ns_to_ms)),
                format!("{:.4}", run.fitted.p99_ms),
                opt(run.measured.fsyncs_per_commit),
                opt(run.fitted.fsyncs_per_commit),
                kind.name().to_owned(),
            ])
            .expect("writing to memory");
        }
        out.into_inner().expect("writing to memory")
    }
}

#[cfg(test)]
impl CalibrationRun {
    /// A run of `load` that measured `tps`, fitted exactly (p50 1 ms, p99 2 ms), for tests.
    pub(crate) fn measured_and_fitted(load: Load, tps: f64) -> CalibrationRun {
        CalibrationRun {
            measured: Measured {
                tps,
                responses: crate::stats::WaitStats::new(),
                fsyncs_per_commit: None,
                steady_p99_ns: None,
                stalls: Vec::new(),
            },
            fitted: Observation {
                rows: load.rows,
                clients: load.clients,
                tps,
                p50_ms: 1.0,
                p99_ms: 2.0,
                fsyncs_per_commit: None,
            },
            load,
            held_out_tps: None,
        }
    }
}

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;
