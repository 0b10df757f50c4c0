//! Fitting the machine model to measured runs: the parameters — the row's hold with nobody
//! waiting (h0), the CPU of an update on the server's cores, the WAL flush (durable commits),
//! the wake-up of a waiter and the CPU each waiter woken at a release costs (the waiters'
//! growth), and the time outside the database (log-normal: its median and p99) — are those
//! whose simulated closed loops best reproduce the measured throughput, median and p99
//! response and WAL syncs per commit of every run. The grant order is read from the tails of
//! the one-row runs; the cores are the fit's too, up to the server's: a load driver on the
//! same machine takes part of them. With durable commits the fit also tries a flush whose
//! leader needs a core before its write (`[wal] cpu_ms`) and keeps it when it fits better: on
//! a busy machine that stretches every flush, and commits share fewer of them. The
//! simulation is the pipeline itself, with fixed seeds, so the fit is deterministic; the
//! search is Nelder–Mead over the logarithms of the parameters, a first pass for each core
//! count and wake-up guess, then restarts of the best while they improve.
//!
//! A per-waiter growth of the row's own hold (`[hold] per_waiter_ms`) is not fitted: the
//! wake-ups' CPU already explains what it would, and a term the runs cannot see only makes the
//! search wander (docs/validation.md, "The fit's constants").

use std::path::Path;

use rayon::prelude::*;

use crate::model::cores::Scheduler;
use crate::model::machine::GrantOrder;
use crate::model::{NoEvents, Policy, ShardRun};
use crate::scenario::file::{
    ArrivalsTable, ClientTable, HoldTable, MachineTable, PolicyList, PoolTable, ScenarioFile,
    WalTable,
};
use crate::scenario::{Overrides, Scenario};
use crate::stats::WaitSummary;
use crate::sweep;

use nelder_mead::{Budget, nelder_mead, restart_while_improving};

mod nelder_mead;

/// Commits each run's simulation aims for per evaluation: enough for its p99 (200 above it)
/// at a cost that does not grow with the measured throughput.
const SIMULATED_COMMITS: f64 = 20_000.0;
/// Simulated seconds per run and evaluation, at the least and at the most.
const SIMULATED_S: (f64, f64) = (0.25, 1.5);
/// Smallest value a fitted time may take, ms (the logarithms need a floor).
const FLOOR_MS: f64 = 1e-5;
/// The share of the flush its leader's CPU takes when the search for a flush that queues
/// for a core starts from a fitted machine whose flush has none.
const QUEUED_FLUSH_SHARE: f64 = 0.4;
/// The least and the most of a flush's time its leader's CPU may take.
const MIN_CPU_SHARE: f64 = 1e-3;
const MAX_CPU_SHARE: f64 = 0.95;
/// What a pass of the machine's search may spend: 300 evaluations, and it ends early when its
/// best misfit fell by less than [`STALL_GAIN`](nelder_mead::STALL_GAIN) of itself over the
/// last 100: the simulated runs' misfit moves in small steps (counts and quantiles), and a
/// simplex among them crawls without gaining.
const MACHINE_BUDGET: Budget = Budget {
    evaluations: 300,
    stall_window: Some(100),
};
/// What a pass of the idle connection's search may spend (three parameters, a few seconds
/// in all: it runs to its end).
const IDLE_BUDGET: Budget = Budget {
    evaluations: 150,
    stall_window: None,
};
/// The weight of an open stream's p99 in the idle connection's fit when the simulated one is
/// below the measured one (above it, 1). The fit's machine has no stalls, and a stall only
/// ever raises a measured tail: weighed alike, a stalled stream would give the time outside
/// the database a tail that every light stream then pays. The weight was chosen over refits of
/// measured calibrations (docs/validation.md, "The fit's constants").
const TAIL_BELOW_WEIGHT: f64 = 0.2;
/// Simulated seconds of an open stream before its measurement.
const OPEN_WARMUP_S: f64 = 0.2;
/// Simulated seconds of an open stream per evaluation, at the least and at the most.
const OPEN_SIMULATED_S: (f64, f64) = (1.0, 20.0);

/// The machine model's parameters. Its fields are calibrate's alone, and every machine the
/// fit makes keeps two rules: the time outside the database has its p99 above its median,
/// and a flush's CPU is 0 without a flush ([`Machine::is_consistent`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// The row's hold with nobody waiting, beyond CPU and flush, ms.
    pub(super) hold_ms: f64,
    /// Which waiter a released row goes to (chosen by the fit).
    pub(super) grant_order: GrantOrder,
    /// The wake-up of a process that slept on a lock (its row, or the last flush), ms.
    pub(super) wake_ms: f64,
    /// CPU of waking one waiter of a released row, ms.
    pub(super) wake_cpu_ms: f64,
    /// CPU of waking one waiter for every other woken with it, ms (the herd's contention, or
    /// below 0 the part of their wake-ups they share; fitted last, from one row at more
    /// clients than the rest: [`fit_herd`]).
    pub(super) herd_cpu_ms: f64,
    /// CPU every release costs for each update waiting for another row of the same key, ms
    /// (the rows share a page whose lock list is scanned at every release; fitted after the
    /// herd, from the runs with several rows and many clients: [`fit_page_scan`]).
    pub(super) page_scan_cpu_ms: f64,
    /// CPU of one update, ms.
    pub(super) cpu_ms: f64,
    /// The server's cores (given, not fitted).
    pub(super) cores: u32,
    /// How the cores share themselves: first come, first served (the wake-ups' and the
    /// flush's CPU queue for a free core) or shared (every piece of work ready to run gets its
    /// share: a row's holder is slowed by all that runs beside it).
    pub(super) scheduler: Scheduler,
    /// CPU of a request on the shared cores before it asks for its row (the server's parsing,
    /// a load driver on the same machine), ms; fitted with shared cores only.
    pub(super) request_cpu_ms: f64,
    /// The WAL flush of a durable commit (its write), ms; `None` when commits do not wait
    /// for it.
    pub(super) flush_ms: Option<f64>,
    /// The CPU of a flush's leader on the shared cores before its write, ms (durable
    /// commits only).
    pub(super) flush_cpu_ms: f64,
    /// Time outside the database per request (round trip, scheduling): its median, ms.
    pub(super) overhead_ms: f64,
    /// Its 99th percentile, ms (above the median: a log-normal).
    pub(super) overhead_p99_ms: f64,
    /// What a request sent on an idle connection costs (fitted to the open streams after the
    /// rest); `None`: the same as back to back.
    pub(super) idle: Option<Idle>,
}

/// A time outside the database as a log-normal: its median and 99th percentile, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lognormal {
    /// The median, ms.
    pub(crate) median_ms: f64,
    /// The 99th percentile, ms (above the median).
    pub(crate) p99_ms: f64,
}

/// What a request sent on an idle connection costs beyond one sent back to back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Idle {
    /// Its time outside the database.
    pub(crate) overhead: Lognormal,
    /// The CPU of waking the server (and the client, on the same machine) on the shared
    /// cores, ms.
    pub(crate) wake_cpu_ms: f64,
}

/// An open stream: Poisson sends over a capped set of connections.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenStream {
    /// Counter rows (a random one each).
    pub(crate) rows: u32,
    /// Connections the sends may use.
    pub(crate) connections: u32,
    /// Sends a second.
    pub(crate) rate_per_s: f64,
}

/// One measured (or simulated) closed-loop run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Counter rows.
    pub rows: u32,
    /// Clients.
    pub clients: u32,
    /// Updates a second.
    pub tps: f64,
    /// Median response, ms.
    pub p50_ms: f64,
    /// 99th-percentile response, ms.
    pub p99_ms: f64,
    /// WAL syncs per commit, when known.
    pub fsyncs_per_commit: Option<f64>,
}

impl Machine {
    /// Whether it keeps the rules every fitted machine keeps: the time outside the database
    /// has its p99 above its median (a log-normal), and there is no flush CPU without a flush.
    pub fn is_consistent(&self) -> bool {
        self.overhead_p99_ms > self.overhead_ms
            && (self.flush_ms.is_some() || self.flush_cpu_ms == 0.0)
            && self
                .idle
                .is_none_or(|idle| idle.overhead.p99_ms > idle.overhead.median_ms)
    }

    /// The fitted machine in words, for `calibration.toml` and the terminal.
    pub fn describe(&self) -> String {
        format!(
            "a row holds {:.4} ms beyond its CPU{}; a released row goes to {} waiter; a woken \
             waiter takes {:.4} ms to run again and each waiter woken costs {:.4} ms of CPU{}{}; \
             an update takes {:.4} ms of CPU on {} core{}{}; outside the database {:.4} ms at \
             the median, {:.4} ms at p99{}",
            self.hold_ms,
            self.flush_ms
                .map(|f| if self.flush_cpu_ms > 0.0 {
                    format!(
                        " and a WAL flush (group commit) whose leader queues for a core for \
                         {:.4} ms of CPU before a {f:.4} ms write",
                        self.flush_cpu_ms
                    )
                } else {
                    format!(" and a {f:.4} ms WAL flush (group commit)")
                })
                .unwrap_or_default(),
            match self.grant_order {
                GrantOrder::Fifo => "its first",
                GrantOrder::Random => "a random",
            },
            self.wake_ms,
            self.wake_cpu_ms,
            if self.herd_cpu_ms != 0.0 {
                format!(
                    " and {:.6} ms {} for every other woken with it",
                    self.herd_cpu_ms.abs(),
                    if self.herd_cpu_ms > 0.0 {
                        "more"
                    } else {
                        "less"
                    }
                )
            } else {
                String::new()
            },
            if self.page_scan_cpu_ms > 0.0 {
                format!(
                    "; every release costs {:.6} ms of CPU for each update waiting for another \
                     row of the key (the rows' page is scanned)",
                    self.page_scan_cpu_ms
                )
            } else {
                String::new()
            },
            self.cpu_ms,
            self.cores,
            if self.cores == 1 { "" } else { "s" },
            match self.scheduler {
                Scheduler::Fifo => String::new(),
                Scheduler::Shared => format!(
                    " shared by all the work ready to run, a request's own {:.4} ms before it \
                     asks for its row among it",
                    self.request_cpu_ms
                ),
            },
            self.overhead_ms,
            self.overhead_p99_ms,
            self.idle
                .map(|idle| format!(
                    " back to back, {:.4} ms and {:.4} ms from an idle connection, whose \
                     request costs {:.4} ms of CPU to wake the server",
                    idle.overhead.median_ms, idle.overhead.p99_ms, idle.wake_cpu_ms
                ))
                .unwrap_or_default()
        )
    }

    /// The scenario sections of this machine (`[hold]`, `[machine]`, `[wal]`, `[client]`), as
    /// `calibration.toml` writes them.
    pub fn sections(&self) -> String {
        toml::to_string(&self.tables()).expect("a scenario's tables serialise")
    }

    /// This machine as a scenario file's `[hold]`, `[machine]`, `[wal]` and `[client]`, every
    /// time to the microsecond (the herd's CPU to the nanosecond) as `calibration.toml`
    /// writes it, so that the fit simulates exactly what it writes.
    fn tables(&self) -> ScenarioFile {
        let constant = |ms: f64| HoldTable {
            dist: Some("constant".to_owned()),
            ms: Some(micro(ms)),
            ..HoldTable::default()
        };
        let shared = self.scheduler == Scheduler::Shared;
        ScenarioFile {
            hold: Some(HoldTable {
                grant_order: Some(self.grant_order),
                ..constant(self.hold_ms)
            }),
            machine: Some(MachineTable {
                cores: Some(self.cores),
                cpu: Some(constant(self.cpu_ms)),
                wake_ms: Some(micro(self.wake_ms)),
                wake_cpu_ms: Some(micro(self.wake_cpu_ms)),
                herd_cpu_ms: (self.herd_cpu_ms != 0.0).then(|| nano(self.herd_cpu_ms)),
                idle_wake_cpu_ms: self.idle.map(|idle| micro(idle.wake_cpu_ms)),
                request_cpu_ms: shared.then(|| micro(self.request_cpu_ms)),
                scheduler: shared.then_some(Scheduler::Shared),
                page_scan_cpu_ms: (self.page_scan_cpu_ms > 0.0)
                    .then(|| micro(self.page_scan_cpu_ms)),
            }),
            wal: self.flush_ms.map(|flush| WalTable {
                flush_ms: Some(micro(flush)),
                group_commit: Some(true),
                cpu_ms: (self.flush_cpu_ms > 0.0).then(|| micro(self.flush_cpu_ms)),
            }),
            client: Some(ClientTable {
                overhead: Some(lognormal(self.overhead_ms, self.overhead_p99_ms)),
                idle_overhead: self
                    .idle
                    .map(|idle| lognormal(idle.overhead.median_ms, idle.overhead.p99_ms)),
                ..ClientTable::default()
            }),
            ..ScenarioFile::default()
        }
    }

    /// The scenario the fit simulates this machine in: `rows` rows of one key chosen at random,
    /// for `duration_s`, with the draws of `seed`.
    fn fit_file(&self, seed: u64, rows: u32, duration_s: f64) -> ScenarioFile {
        ScenarioFile {
            name: Some("fit".to_owned()),
            seed: Some(seed),
            shards: Some(vec![rows]),
            policy: Some(PolicyList(vec![Policy::Random])),
            duration_s: Some(duration_s),
            ..self.tables()
        }
    }

    /// Simulates an open stream on this machine for `seconds` after a short warm-up; its
    /// throughput counts the measured seconds.
    pub fn simulate_open(&self, stream: &OpenStream, seconds: f64) -> Observation {
        self.simulate_open_seeded(stream, seconds, 13)
    }

    /// [`Machine::simulate_open`] with the arrivals and draws of `seed`.
    fn simulate_open_seeded(&self, stream: &OpenStream, seconds: f64, seed: u64) -> Observation {
        assert!(self.is_consistent(), "an inconsistent machine: {self:?}");
        let warmup = OPEN_WARMUP_S;
        let file = ScenarioFile {
            warmup_s: Some(warmup),
            arrivals: Some(ArrivalsTable {
                rate_per_s: Some(stream.rate_per_s),
                ..ArrivalsTable::default()
            }),
            pool: Some(PoolTable {
                size: Some(stream.connections),
            }),
            ..self.fit_file(seed, stream.rows, warmup + seconds)
        };
        let run = run_fit_scenario(&file);
        let responses = run
            .machine
            .as_ref()
            .and_then(|machine| machine.responses.as_ref())
            .map(|r| r.summary())
            .unwrap_or_default();
        self.observed(&run, stream.rows, stream.connections, seconds, &responses)
    }

    /// Simulates a closed loop of `clients` on `rows` rows of this machine.
    pub fn simulate(&self, rows: u32, clients: u32, seconds: f64) -> Observation {
        self.simulate_seeded(rows, clients, seconds, 11)
    }

    /// [`Machine::simulate`] with the draws of `seed`.
    pub(super) fn simulate_seeded(
        &self,
        rows: u32,
        clients: u32,
        seconds: f64,
        seed: u64,
    ) -> Observation {
        assert!(self.is_consistent(), "an inconsistent machine: {self:?}");
        let file = ScenarioFile {
            arrivals: Some(ArrivalsTable {
                clients: Some(clients),
                think_ms: Some(0.0),
                ..ArrivalsTable::default()
            }),
            ..self.fit_file(seed, rows, seconds)
        };
        let run = run_fit_scenario(&file);
        let responses = run
            .closed
            .as_ref()
            .expect("a closed loop")
            .responses
            .summary();
        self.observed(&run, rows, clients, seconds, &responses)
    }

    /// What a simulated run of this machine shows, as a measurement would.
    fn observed(
        &self,
        run: &ShardRun,
        rows: u32,
        clients: u32,
        seconds: f64,
        responses: &WaitSummary,
    ) -> Observation {
        let machine = run.machine.as_ref().expect("the machine sections are on");
        Observation {
            rows,
            clients,
            tps: run.completed as f64 / seconds,
            p50_ms: crate::time::ns_to_ms(responses.p50_ns),
            p99_ms: crate::time::ns_to_ms(responses.p99_ns),
            fsyncs_per_commit: machine.fsyncs_per_commit(self.flush_ms.is_some()),
        }
    }

    /// This machine with every time of it — the hold, CPU, flush, wake-ups and the time
    /// outside the database — `factor` times as long: the same database, slower or faster.
    pub fn scaled(&self, factor: f64) -> Machine {
        let idle = self.idle.map(|idle| Idle {
            overhead: Lognormal {
                median_ms: idle.overhead.median_ms * factor,
                p99_ms: idle.overhead.p99_ms * factor,
            },
            wake_cpu_ms: idle.wake_cpu_ms * factor,
        });
        Machine {
            hold_ms: self.hold_ms * factor,
            wake_ms: self.wake_ms * factor,
            wake_cpu_ms: self.wake_cpu_ms * factor,
            herd_cpu_ms: self.herd_cpu_ms * factor,
            page_scan_cpu_ms: self.page_scan_cpu_ms * factor,
            cpu_ms: self.cpu_ms * factor,
            flush_ms: self.flush_ms.map(|ms| ms * factor),
            flush_cpu_ms: self.flush_cpu_ms * factor,
            request_cpu_ms: self.request_cpu_ms * factor,
            overhead_ms: self.overhead_ms * factor,
            overhead_p99_ms: self.overhead_p99_ms * factor,
            idle,
            ..*self
        }
    }

    /// The search's coordinates; with `split`, the flush's CPU is one of them (else it is 0);
    /// with shared cores, the request's CPU is the last.
    fn to_point(self, split: bool) -> Vec<f64> {
        let mut point = vec![
            self.hold_ms.max(FLOOR_MS).ln(),
            self.cpu_ms.max(FLOOR_MS).ln(),
            self.overhead_ms.max(FLOOR_MS).ln(),
            (self.overhead_p99_ms / self.overhead_ms)
                .max(1.001)
                .ln()
                .ln(),
            self.wake_ms.max(FLOOR_MS).ln(),
            self.wake_cpu_ms.max(FLOOR_MS).ln(),
        ];
        // The flush as its whole time and the share of it on the cores: the runs see the
        // sum well and the split only through the busiest ones, so each gets an axis.
        if let Some(flush) = self.flush_ms {
            let total = (flush + self.flush_cpu_ms).max(FLOOR_MS);
            point.push(total.ln());
            if split {
                let share = (self.flush_cpu_ms / total).clamp(MIN_CPU_SHARE, MAX_CPU_SHARE);
                point.push((share / (1.0 - share)).ln());
            }
        }
        if self.scheduler == Scheduler::Shared {
            point.push(self.request_cpu_ms.max(FLOOR_MS).ln());
        }
        point
    }

    /// The machine at the search's coordinates (see [`Machine::to_point`]).
    fn with_point(&self, point: &[f64], split: bool) -> Machine {
        let share = if split { cpu_share(point[7]) } else { 0.0 };
        let ms = |x: f64| x.exp().clamp(FLOOR_MS, 1_000.0);
        let request_cpu_ms = match self.scheduler {
            Scheduler::Fifo => 0.0,
            Scheduler::Shared => ms(*point.last().expect("a request's CPU axis")),
        };
        let overhead_ms = ms(point[2]);
        // The spread p99 ÷ median is above 1: its log is fitted on a log scale.
        let spread = point[3].exp().exp().clamp(1.001, 100.0);
        Machine {
            hold_ms: ms(point[0]),
            cpu_ms: ms(point[1]),
            overhead_ms,
            overhead_p99_ms: overhead_ms * spread,
            wake_ms: ms(point[4]),
            wake_cpu_ms: ms(point[5]),
            herd_cpu_ms: self.herd_cpu_ms,
            page_scan_cpu_ms: self.page_scan_cpu_ms,
            flush_ms: self.flush_ms.map(|_| ms(point[6]) * (1.0 - share)),
            flush_cpu_ms: if self.flush_ms.is_some() {
                ms(point[6]) * share
            } else {
                0.0
            },
            cores: self.cores,
            scheduler: self.scheduler,
            request_cpu_ms,
            grant_order: self.grant_order,
            idle: self.idle,
        }
    }
}

/// A lognormal's median and p99 as the calibration writes them, to the microsecond: the median
/// at least 1 ns and the p99 at least 0.1% and one written step above it, since a scenario
/// refuses a p99 that is not above its median (a median of 0.0000567 ms and its p99 × 1.001
/// would both be written 0.000057).
fn lognormal(median_ms: f64, p99_ms: f64) -> HoldTable {
    let median = micro(median_ms).max(1e-6);
    let p99 = micro(p99_ms.max(median * 1.001).max(median + 1e-6));
    HoldTable {
        dist: Some("lognormal".to_owned()),
        median_ms: Some(median),
        p99_ms: Some(p99),
        ..HoldTable::default()
    }
}

/// `ms` to the microsecond, as `calibration.toml` writes it.
fn micro(ms: f64) -> f64 {
    (ms * 1e6).round() / 1e6
}

/// `ms` to the nanosecond.
fn nano(ms: f64) -> f64 {
    (ms * 1e9).round() / 1e9
}

/// The share of a flush on the cores, from its log-odds on the fit's axis.
fn cpu_share(log_odds: f64) -> f64 {
    (1.0 / (1.0 + (-log_odds).exp())).clamp(MIN_CPU_SHARE, MAX_CPU_SHARE)
}

/// Runs the one shard count of a scenario the fit wrote.
fn run_fit_scenario(file: &ScenarioFile) -> ShardRun {
    let scenario = Scenario::from_values(Path::new("fit.toml"), file, &Overrides::default())
        .expect("fitted parameters make a valid scenario");
    sweep::run(&scenario, 0, vec![NoEvents], &sweep::NoProgress)
        .expect("a fitted machine runs")
        .remove(0)
        .0
}

/// The weight of a run's throughput in the misfit (its median response weighs 0.5, its p99
/// 0.2). A closed loop's throughput and mean response carry the same information (Little's
/// law), but the median also carries the responses' shape, which the model gets less right:
/// weighed less, near-equal fits disagree on the throughput a planner reads.
const TPS_WEIGHT: f64 = 3.0;

/// How far `simulated` is from `measured`: squared log errors of throughput (weighted
/// `TPS_WEIGHT`), median and p99 response, and of the syncs per commit when both know them.
pub fn misfit(simulated: &Observation, measured: &Observation) -> f64 {
    let mut sum = TPS_WEIGHT * log_error(simulated.tps, measured.tps).powi(2)
        + 0.5 * log_error(simulated.p50_ms, measured.p50_ms).powi(2)
        + 0.2 * log_error(simulated.p99_ms, measured.p99_ms).powi(2);
    if let (Some(a), Some(b)) = (simulated.fsyncs_per_commit, measured.fsyncs_per_commit) {
        sum += 0.5 * log_error(a + 0.01, b + 0.01).powi(2);
    }
    sum
}

/// The log of `simulated` over `measured` (both floored above zero).
fn log_error(simulated: f64, measured: f64) -> f64 {
    (simulated.max(1e-9) / measured.max(1e-9)).ln()
}

/// Wake-ups the search starts from, ms: a process that runs again at once, and one that
/// waits for a busy core (the search does not cross from one basin to the other by itself).
pub const WAKE_GUESSES_MS: [f64; 2] = [0.01, 0.1];

/// A first guess from the measurements: the CPU from the best throughput on many rows, the
/// time outside the database from one client's response, small hold terms, and `wake_ms`.
pub fn first_guess(
    observations: &[Observation],
    cores: u32,
    durable: bool,
    grant_order: GrantOrder,
    wake_ms: f64,
) -> Machine {
    let best = observations.iter().map(|o| o.tps).fold(1.0_f64, f64::max);
    let lone = observations
        .iter()
        .filter(|o| o.clients == 1)
        .map(|o| o.p50_ms)
        .fold(f64::INFINITY, f64::min);
    let lone = if lone.is_finite() { lone } else { 0.5 };
    Machine {
        hold_ms: 0.02,
        grant_order,
        wake_ms,
        wake_cpu_ms: 0.005,
        herd_cpu_ms: 0.0,
        page_scan_cpu_ms: 0.0,
        cpu_ms: 1000.0 * f64::from(cores) / best,
        cores,
        scheduler: Scheduler::Fifo,
        request_cpu_ms: 0.0,
        flush_ms: durable.then_some(0.1),
        flush_cpu_ms: 0.0,
        overhead_ms: (lone * 0.6).max(0.01),
        overhead_p99_ms: (lone * 1.5).max(0.02),
        idle: None,
    }
}

/// The grant order the measurements show: a row whose waiters are served first come, first
/// served answers a closed loop's clients in about the same time (p99 within 2× of the
/// median), one that hands itself to a random waiter gives a geometric tail (p99 about 6× the
/// median with 8 or more waiters). Judged on the one-row runs of 8 or more clients.
pub fn grant_order_of(observations: &[Observation]) -> GrantOrder {
    let spreads = observations
        .iter()
        .filter(|o| o.rows == 1 && o.clients >= 8 && o.p50_ms > 0.0)
        .map(|o| o.p99_ms / o.p50_ms);
    match crate::stats::median(spreads) {
        Some(spread) if spread > 3.0 => GrantOrder::Random,
        _ => GrantOrder::Fifo,
    }
}

/// The machine whose simulation best matches `observations`, with `cores` at most the
/// server's, and its misfit: each core count (halving down to 1) searched once from each of
/// [`WAKE_GUESSES_MS`] (a first pass), and only the searches of the count whose first passes
/// ended lowest go on. With durable commits a flush whose leader queues for a core before its
/// write is searched too, from that count's best first pass with `QUEUED_FLUSH_SHARE` of its
/// flush moved to the CPU: any CPU in the flush puts it behind the queue on the cores, a change
/// of structure rather than of a number, which a search from one cannot reach by small steps
/// from the other. When its first pass ends below theirs it alone is finished; otherwise
/// every search is, and the best kept ([`fit_at`]'s without the queued flush).
pub fn fit_with_cores(observations: &[Observation], cores: u32, durable: bool) -> (Machine, f64) {
    let mut core_counts: Vec<u32> =
        std::iter::successors(Some(cores), |&c| (c > 1).then_some(c / 2)).collect();
    core_counts.dedup();
    // The core counts part early: the count ahead after the first passes is the one ahead at
    // the end, so only its searches are finished (a third of the fit's time saved).
    let searches = core_counts
        .into_iter()
        .map(|cores| first_passes(observations, cores, durable))
        .min_by(|a, b| lowest(a).total_cmp(&lowest(b)))
        .expect("at least one core count");
    let (best_first, best_first_cost) = searches
        .iter()
        .min_by(|a, b| a.cost.total_cmp(&b.cost))
        .map(|search| (search.machine(), search.cost))
        .expect("at least one start");
    let Some(flush) = best_first.flush_ms.filter(|_| durable) else {
        return finish_best(searches);
    };
    let queued = Search::begin(
        observations,
        Machine {
            flush_ms: Some(flush * (1.0 - QUEUED_FLUSH_SHARE)),
            flush_cpu_ms: flush * QUEUED_FLUSH_SHARE,
            ..best_first
        },
    );
    // A queued flush whose first pass already beats the plain flush's best is finished from
    // there: finishing the plain machine first gains little and costs a fifth of the fit.
    if queued.cost < best_first_cost {
        return queued.finish();
    }
    let plain = finish_best(searches);
    let queued = queued.finish();
    if queued.1 < plain.1 { queued } else { plain }
}

/// `fitted` (the machine [`fit_with_cores`] found, first come, first served) on the server's
/// `cores` shared among all the work ready to run, with a request's CPU before its row
/// (`SHARED_REQUEST_SHARE` of the update's to start), searched from there to best match
/// `observations`; and its misfit. A change of structure, not of a number: the search
/// starts from the fitted machine so that the two are told apart by the runs, not by where
/// each search happened to stop. One pass, not restarted: it starts from a finished machine,
/// and refitted to round 24's four calibrations its restarts took 5–36 s (of a calibration's
/// four minutes) to lower the misfit by 0–6%.
pub fn fit_shared(observations: &[Observation], fitted: &Machine, cores: u32) -> (Machine, f64) {
    let search = Search::begin(
        observations,
        Machine {
            scheduler: Scheduler::Shared,
            cores,
            request_cpu_ms: fitted.cpu_ms * SHARED_REQUEST_SHARE,
            ..*fitted
        },
    );
    (search.machine(), search.cost)
}

/// The machine whose closed loops best match `observations` (the design's client counts) and
/// `herd_runs` (more clients than those), up to `cores`: fitted with the cores first come,
/// first served ([`fit_with_cores`]) and shared ([`fit_shared`]), each given its herd
/// ([`fit_herd`]) and its page's scan ([`fit_page_scan`]); the one whose runs, the herd's
/// among them, come out closer is kept. The runs with many waiters are where the two differ:
/// on shared cores a row's holder is slowed by everything running, and the more requests are
/// under way the slower it gets.
pub fn fit_closed_loops(
    observations: &[Observation],
    herd_runs: &[Observation],
    cores: u32,
    durable: bool,
) -> Machine {
    let all: Vec<Observation> = observations.iter().chain(herd_runs).copied().collect();
    let (fifo, _) = fit_with_cores(observations, cores, durable);
    let (shared, _) = fit_shared(observations, &fifo, cores);
    [fifo, shared]
        .map(|machine| {
            let machine = fit_herd(&machine, observations, herd_runs);
            let machine = fit_page_scan(&machine, &all);
            (total_misfit(&machine, &all), machine)
        })
        .into_iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, machine)| machine)
        .expect("two machines")
}

/// The share of the update's CPU the search for shared cores starts a request's CPU at.
const SHARED_REQUEST_SHARE: f64 = 0.5;

/// The machine with `cores` (its flush, with durable commits, a write alone) whose
/// simulation best matches `observations`, with the grant order the measurements show,
/// searched from each of [`WAKE_GUESSES_MS`]; and its misfit.
pub fn fit_at(observations: &[Observation], cores: u32, durable: bool) -> (Machine, f64) {
    finish_best(first_passes(observations, cores, durable))
}

/// The first passes of the searches at `cores`, one from each of [`WAKE_GUESSES_MS`] with
/// the grant order the measurements show.
fn first_passes(observations: &[Observation], cores: u32, durable: bool) -> Vec<Search<'_>> {
    let order = grant_order_of(observations);
    WAKE_GUESSES_MS
        .iter()
        .map(|&wake_ms| {
            let guess = first_guess(observations, cores, durable, order, wake_ms);
            Search::begin(observations, guess)
        })
        .collect()
}

/// The lowest misfit among `searches` so far.
fn lowest(searches: &[Search]) -> f64 {
    searches
        .iter()
        .map(|s| s.cost)
        .fold(f64::INFINITY, f64::min)
}

/// Every one of `searches` finished: the best machine and its misfit (from different
/// starts the search ends in different valleys, and the first pass does not tell which is
/// lowest: on a simulated machine the start behind after it by 2.5× ended 2× lower).
fn finish_best(searches: Vec<Search>) -> (Machine, f64) {
    searches
        .into_iter()
        .map(Search::finish)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one start")
}

/// Simulated seconds for a run measured at `tps`: about `SIMULATED_COMMITS` commits.
pub fn simulated_seconds(tps: f64) -> f64 {
    (SIMULATED_COMMITS / tps.max(1.0)).clamp(SIMULATED_S.0, SIMULATED_S.1)
}

/// The summed misfit of `machine` over `observations` (simulated in parallel, added in
/// order: the same sum whatever the thread count).
pub fn total_misfit(machine: &Machine, observations: &[Observation]) -> f64 {
    let misfits: Vec<f64> = observations
        .par_iter()
        .map(|measured| {
            let seconds = simulated_seconds(measured.tps);
            let simulated = machine.simulate(measured.rows, measured.clients, seconds);
            misfit(&simulated, measured)
        })
        .collect();
    misfits.iter().sum()
}

/// A Nelder–Mead search of a machine's coordinates (with the flush's split between its
/// leader's CPU and its write, or with no CPU in the flush) under way: where it started, its
/// best point so far and that point's misfit.
struct Search<'a> {
    observations: &'a [Observation],
    start: Machine,
    split: bool,
    best: Vec<f64>,
    cost: f64,
}

impl<'a> Search<'a> {
    /// The first pass from `start` (its cores kept, and whether its flush's leader needs a
    /// core: a flush CPU above 0).
    fn begin(observations: &'a [Observation], start: Machine) -> Search<'a> {
        let split = start.flush_ms.is_some() && start.flush_cpu_ms > 0.0;
        let mut search = Search {
            observations,
            start,
            split,
            best: Vec::new(),
            cost: f64::INFINITY,
        };
        (search.best, search.cost) = nelder_mead(
            &|point| search.misfit(point),
            &start.to_point(split),
            0.7,
            MACHINE_BUDGET,
        );
        search
    }

    /// The search restarted from its best point — a new, smaller simplex escapes a collapsed
    /// one — while that still improves the fit by more than [`STALL_GAIN`](nelder_mead::STALL_GAIN); the machine it
    /// ends at and its misfit.
    fn finish(mut self) -> (Machine, f64) {
        (self.best, self.cost) = restart_while_improving(
            &|point| self.misfit(point),
            (self.best.clone(), self.cost),
            &[0.7, 0.2],
            MACHINE_BUDGET,
        );
        (self.machine(), self.cost)
    }

    /// The machine at the search's best point so far.
    fn machine(&self) -> Machine {
        self.start.with_point(&self.best, self.split)
    }

    /// The misfit of the machine at `point`.
    fn misfit(&self, point: &[f64]) -> f64 {
        total_misfit(&self.start.with_point(point, self.split), self.observations)
    }
}

/// The herd's shares of the wake-up CPU [`fit_herd`] tries, in steps of 2%: from −96% (a
/// waiter woken among 64 costs 1% of one woken among 32) to 98% (a waiter woken alone costs
/// 2% of it), nearest none first.
const HERD_STEPS: (i32, i32) = (-48, 49);
/// A step of the herd's share.
const HERD_STEP: f64 = 0.02;

/// `machine` (fitted to `observations`, which reach at most `most` clients) with the CPU of
/// a woken waiter split between its own wake-up and the herd woken with it (which adds to
/// it, or below 0 shares part of it) — `wake_cpu_ms` + (`most` − 1) × `herd_cpu_ms` kept at
/// the fitted wake-up CPU, so that a waiter woken among the most clients fitted costs what
/// the fit found — at the herd's share whose simulation best matches `observations` and
/// `herd_runs` together: one row at more clients than `most`, where a release wakes more
/// waiters than in any fitted run. Without such a run the machine is kept (no measurement
/// sees the herd). Searched on a fixed grid of shares
/// (`HERD_STEPS`), the one nearest none on a tie: the simulated runs move in small steps
/// as a term moves, so a search that follows the misfit's slope stops at the first step.
pub fn fit_herd(
    machine: &Machine,
    observations: &[Observation],
    herd_runs: &[Observation],
) -> Machine {
    let most = observations.iter().map(|o| o.clients).max().unwrap_or(1);
    let beyond = herd_runs.iter().any(|run| run.clients > most);
    if !beyond || most < 2 {
        return *machine;
    }
    let runs: Vec<Observation> = observations.iter().chain(herd_runs).copied().collect();
    let whole = machine.wake_cpu_ms + f64::from(most - 1) * machine.herd_cpu_ms;
    let with_share = |share: f64| Machine {
        wake_cpu_ms: whole * (1.0 - share),
        herd_cpu_ms: whole * share / f64::from(most - 1),
        ..*machine
    };
    let mut steps: Vec<i32> = (HERD_STEPS.0..=HERD_STEPS.1).collect();
    steps.sort_by_key(|step| (step.abs(), *step < 0));
    steps
        .into_iter()
        .map(|step| with_share(f64::from(step) * HERD_STEP))
        .map(|candidate| (total_misfit(&candidate, &runs), candidate))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(*machine, |(_, best)| best)
}

/// The CPU a release costs per update waiting for another row that [`fit_page_scan`] tries,
/// ms: none, then 0.01 µs to 100 µs in steps of a factor of √2.
fn page_scan_candidates() -> impl Iterator<Item = f64> {
    std::iter::once(0.0).chain((0..=26).map(|step| 1e-5 * 2f64.powf(f64::from(step) / 2.0)))
}

/// `machine` with the CPU every release costs for each update waiting for another row of
/// the key (`page_scan_cpu_ms`) whose simulation best matches `runs` — the closed loops with
/// several rows and more clients than rows are the ones it moves (one row has no other rows;
/// one client per row, no waiters). None unless some value fits better than none: a server
/// that keeps a line per row, as PostgreSQL does, keeps none. Searched on a fixed grid
/// (`page_scan_candidates`), for the reason [`fit_herd`] is.
pub fn fit_page_scan(machine: &Machine, runs: &[Observation]) -> Machine {
    let moved = runs
        .iter()
        .any(|run| run.rows > 1 && run.clients > run.rows);
    if !moved {
        return *machine;
    }
    let with = |page_scan_cpu_ms: f64| Machine {
        page_scan_cpu_ms,
        ..*machine
    };
    let misfit = |page_scan_cpu_ms: f64| total_misfit(&with(page_scan_cpu_ms), runs);
    let mut best = (f64::INFINITY, 0.0);
    for candidate in page_scan_candidates() {
        let cost = misfit(candidate);
        if cost < best.0 {
            best = (cost, candidate);
        }
    }
    if best.1 == 0.0 {
        return *machine;
    }
    // Between the grid's neighbours of the best value, a golden-section search on its log.
    let golden = (5f64.sqrt() - 1.0) / 2.0;
    let (mut low, mut high) = ((best.1 / 2f64.sqrt()).ln(), (best.1 * 2f64.sqrt()).ln());
    for _ in 0..PAGE_SCAN_REFINEMENTS {
        let left = high - golden * (high - low);
        let right = low + golden * (high - low);
        if misfit(left.exp()) <= misfit(right.exp()) {
            high = right;
        } else {
            low = left;
        }
    }
    let refined = ((low + high) / 2.0).exp();
    if misfit(refined) < best.0 {
        with(refined)
    } else {
        with(best.1)
    }
}

/// Steps of [`fit_page_scan`]'s golden-section search: a factor of 2 narrowed to 0.3%.
const PAGE_SCAN_REFINEMENTS: usize = 12;

/// Simulated seconds for an open stream of `rate_per_s`: about `SIMULATED_COMMITS` commits.
pub fn open_simulated_seconds(rate_per_s: f64) -> f64 {
    (SIMULATED_COMMITS / rate_per_s.max(1.0)).clamp(OPEN_SIMULATED_S.0, OPEN_SIMULATED_S.1)
}

/// `machine` with what an idle connection costs — its time outside the database (log-normal)
/// and the CPU of waking the server — whose simulated open streams best reproduce the
/// `measured` ones' throughput, median and p99 response (a simulated p99 below a measured one
/// weighing a fifth: `open_misfit`). The closed loops never leave a connection idle, so the
/// rest of the machine is theirs and is kept; a light stream's responses are mostly the time
/// outside, a heavy one's queue on the cores the wake-ups share.
pub fn fit_idle(machine: &Machine, measured: &[(OpenStream, Observation)]) -> Machine {
    let with = |point: &[f64]| {
        let median_ms = point[0].exp().clamp(FLOOR_MS, 1_000.0);
        let spread = point[1].exp().exp().clamp(1.001, 100.0);
        Machine {
            idle: Some(Idle {
                overhead: Lognormal {
                    median_ms,
                    p99_ms: median_ms * spread,
                },
                wake_cpu_ms: point[2].exp().clamp(FLOOR_MS, 1_000.0),
            }),
            ..*machine
        }
    };
    let cost = |point: &[f64]| -> f64 {
        let candidate = with(point);
        let misfits: Vec<f64> = measured
            .par_iter()
            .map(|(stream, measured)| {
                let simulated =
                    candidate.simulate_open(stream, open_simulated_seconds(stream.rate_per_s));
                open_misfit(&simulated, measured)
            })
            .collect();
        misfits.iter().sum()
    };
    // First guess: what the lightest stream's median and p99 leave above the back-to-back
    // machine's, and a small wake-up.
    let (stream, lightest) = measured
        .iter()
        .min_by(|a, b| a.0.rate_per_s.total_cmp(&b.0.rate_per_s))
        .expect("at least one open stream");
    let without = machine.simulate_open(stream, open_simulated_seconds(stream.rate_per_s));
    let median = (lightest.p50_ms - (without.p50_ms - machine.overhead_ms)).max(0.01);
    let p99 = (lightest.p99_ms - (without.p99_ms - machine.overhead_p99_ms)).max(median * 2.0);
    let start = [
        median.ln(),
        (p99 / median).ln().ln(),
        (0.1 * machine.cpu_ms).ln(),
    ];
    let first = nelder_mead(&cost, &start, 0.5, IDLE_BUDGET);
    let (best, _) = restart_while_improving(&cost, first, &[0.2], IDLE_BUDGET);
    with(&best)
}

/// How far a `simulated` open stream is from the `measured` one: squared log errors of
/// throughput, median and p99 response, the p99's weighed [`TAIL_BELOW_WEIGHT`] when the
/// simulated tail is the lower one (a stall the model does not have may have raised the
/// measured one).
fn open_misfit(simulated: &Observation, measured: &Observation) -> f64 {
    let tail = log_error(simulated.p99_ms, measured.p99_ms);
    let tail_weight = if tail < 0.0 { TAIL_BELOW_WEIGHT } else { 1.0 };
    log_error(simulated.tps, measured.tps).powi(2)
        + log_error(simulated.p50_ms, measured.p50_ms).powi(2)
        + tail_weight * tail.powi(2)
}

#[cfg(test)]
mod recovery;
#[cfg(test)]
mod stability;
#[cfg(test)]
mod tests;
