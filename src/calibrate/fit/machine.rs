//! The machine model calibrate fits, as the fit sees it: its parameters ([`Machine`]), the
//! scenario sections `calibration.toml` writes for it, and its simulated closed loops, open
//! streams and full pool — each a run of the pipeline itself with fixed seeds, exactly what
//! a scenario that includes the calibration simulates.

use std::path::Path;

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

use super::{FLOOR_MS, MAX_CPU_SHARE, MIN_CPU_SHARE, OPEN_WARMUP_S};

/// The machine model's parameters. Its fields are calibrate's alone, and every machine the
/// fit makes keeps two rules: the time outside the database has its p99 above its median,
/// and a flush's CPU is 0 without a flush ([`Machine::is_consistent`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// The row's hold with nobody waiting, beyond CPU and flush, ms.
    pub(in crate::calibrate) hold_ms: f64,
    /// Which waiter a released row goes to (chosen by the fit).
    pub(in crate::calibrate) grant_order: GrantOrder,
    /// The wake-up of a process that slept on a lock (its row, or the last flush), ms.
    pub(in crate::calibrate) wake_ms: f64,
    /// CPU of waking one waiter of a released row, ms.
    pub(in crate::calibrate) wake_cpu_ms: f64,
    /// CPU of waking one waiter for every other woken with it, ms (the herd's contention, or
    /// below 0 the part of their wake-ups they share; fitted last, from one row at more
    /// clients than the rest: [`fit_herd`]).
    pub(in crate::calibrate) herd_cpu_ms: f64,
    /// The extra hold of an update for every update waiting for its row when it takes it, ms
    /// (fitted last, to the full pool: [`super::fit_full_pool`]); 0 when the rest explains it.
    pub(in crate::calibrate) per_waiter_ms: f64,
    /// CPU every release costs for each update waiting for another row of the same key, ms
    /// (the rows share a page whose lock list is scanned at every release; fitted after the
    /// herd, from the runs with several rows and many clients: [`fit_page_scan`]).
    pub(in crate::calibrate) page_scan_cpu_ms: f64,
    /// CPU of one update, ms.
    pub(in crate::calibrate) cpu_ms: f64,
    /// The server's cores (given, not fitted).
    pub(in crate::calibrate) cores: u32,
    /// How the cores share themselves: first come, first served (the wake-ups' and the
    /// flush's CPU queue for a free core) or shared (every piece of work ready to run gets its
    /// share: a row's holder is slowed by all that runs beside it).
    pub(in crate::calibrate) scheduler: Scheduler,
    /// CPU of a request on the shared cores before it asks for its row (the server's parsing,
    /// a load driver on the same machine), ms; fitted with shared cores only.
    pub(in crate::calibrate) request_cpu_ms: f64,
    /// The WAL flush of a durable commit (its write), ms; `None` when commits do not wait
    /// for it.
    pub(in crate::calibrate) flush_ms: Option<f64>,
    /// The CPU of a flush's leader on the shared cores before its write, ms (durable
    /// commits only).
    pub(in crate::calibrate) flush_cpu_ms: f64,
    /// Time outside the database per request (round trip, scheduling): its median, ms.
    pub(in crate::calibrate) overhead_ms: f64,
    /// Its 99th percentile, ms (above the median: a log-normal).
    pub(in crate::calibrate) overhead_p99_ms: f64,
    /// What a request sent on an idle connection costs (fitted to the open streams after the
    /// rest); `None`: the same as back to back.
    pub(in crate::calibrate) idle: Option<Idle>,
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
             waiter takes {:.4} ms to run again and each waiter woken costs {:.4} ms of CPU{}{}{}; \
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
            if self.per_waiter_ms > 0.0 {
                format!(
                    "; with every connection busy, an update holds its row {:.6} ms longer for \
                     each update waiting for it",
                    self.per_waiter_ms
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
    pub(super) fn tables(&self) -> ScenarioFile {
        let constant = |ms: f64| HoldTable {
            dist: Some("constant".to_owned()),
            ms: Some(micro(ms)),
            ..HoldTable::default()
        };
        let shared = self.scheduler == Scheduler::Shared;
        ScenarioFile {
            hold: Some(HoldTable {
                grant_order: Some(self.grant_order),
                per_waiter_ms: (self.per_waiter_ms > 0.0).then(|| micro(self.per_waiter_ms)),
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
    pub(super) fn fit_file(&self, seed: u64, rows: u32, duration_s: f64) -> ScenarioFile {
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
    pub(in crate::calibrate) fn simulate_open_seeded(
        &self,
        stream: &OpenStream,
        seconds: f64,
        seed: u64,
    ) -> Observation {
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
    pub(in crate::calibrate) fn simulate_seeded(
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
    pub(super) fn observed(
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
            per_waiter_ms: self.per_waiter_ms * factor,
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
    pub(in crate::calibrate) fn to_point(self, split: bool) -> Vec<f64> {
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
    pub(in crate::calibrate) fn with_point(&self, point: &[f64], split: bool) -> Machine {
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
            per_waiter_ms: self.per_waiter_ms,
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
pub(super) fn lognormal(median_ms: f64, p99_ms: f64) -> HoldTable {
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
pub(super) fn run_fit_scenario(file: &ScenarioFile) -> ShardRun {
    let scenario = Scenario::from_values(Path::new("fit.toml"), file, &Overrides::default())
        .expect("fitted parameters make a valid scenario");
    sweep::run(&scenario, 0, vec![NoEvents], &sweep::NoProgress)
        .expect("a fitted machine runs")
        .remove(0)
        .0
}
