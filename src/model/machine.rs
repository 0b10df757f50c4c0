//! The machine behind the rows: what a real database adds to the seed's lock model, each an
//! explicit section of a scenario. With any of them the sweep runs the event-driven
//! [`super::pipeline`], where an update takes its row, then works, then flushes, and holds the
//! row until its commit.
//!
//! - `[hold] per_waiter_ms`: the hold grows with the updates waiting for the same row;
//! - `[machine] cores` + `[machine.cpu]`: CPU every update needs on one of the shared cores;
//! - `[wal] flush_ms, group_commit, cpu_ms`: the flush every commit waits for, and the CPU
//!   its leader needs on the shared cores before the write;
//! - `[client] overhead_ms` / `[client.overhead]`: time outside the database (round trip,
//!   scheduling), in the response time and a client's cycle, never in a row's hold.

use std::fmt;

use super::cores::Scheduler;
use super::hold::HoldDist;
use super::stalls::{StallFigures, StallPlan};
use crate::stats::WaitStats;
use crate::time::SimTime;

/// The CPU every update needs while it holds its row.
#[derive(Debug, Clone)]
pub struct Cpu {
    /// Cores shared by every row and key.
    pub(crate) cores: u32,
    /// CPU time of one update.
    pub(crate) demand: HoldDist,
    /// How the cores share themselves among the work ready to run.
    pub(crate) scheduler: Scheduler,
}

/// The WAL flush every commit waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalModel {
    /// How long one flush's write takes.
    pub flush: SimTime,
    /// The CPU of the flush's leader on the shared cores before the write (0: none).
    pub cpu: SimTime,
    /// Whether one flush covers every commit waiting when it starts.
    pub group_commit: bool,
}

/// How a released row chooses among the updates waiting for it (`[hold] grant_order`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GrantOrder {
    /// First come, first served: the seed's lock model.
    #[default]
    Fifo,
    /// A waiter drawn uniformly: PostgreSQL wakes a row's waiters at each commit and they
    /// race for the new row version.
    Random,
}

impl GrantOrder {
    /// Its name in scenarios and outputs.
    pub fn name(self) -> &'static str {
        match self {
            GrantOrder::Fifo => "fifo",
            GrantOrder::Random => "random",
        }
    }
}

/// The machine sections of a scenario; all empty for the seed's lock model.
#[derive(Debug, Clone, Default)]
pub struct MachineModel {
    /// Extra hold per update waiting for the same row when an update takes it.
    pub per_waiter: SimTime,
    /// Which waiter a released row goes to.
    pub grant_order: GrantOrder,
    /// The wake-up of a process that slept on a lock: added to the hold of an update that
    /// waited for its row, and before a flush whose leader waited for the last one.
    pub wake: SimTime,
    /// CPU on the shared cores for each waiter woken when a row is released (they all race
    /// for it); 0 without `[machine]`.
    pub wake_cpu: SimTime,
    /// CPU on the shared cores for each waiter woken, for every other waiter woken with it
    /// (they contend with each other as they race; below 0, they share part of their
    /// wake-up): a release that wakes `w` costs `w × max(0, wake_cpu + (w − 1) × herd_cpu)`,
    /// in signed ns, at least −`wake_cpu`; 0 without `[machine]`.
    pub herd_cpu: i64,
    /// CPU on the shared cores for every request sent on an idle connection; 0 without
    /// `[machine]`.
    pub idle_wake_cpu: SimTime,
    /// CPU on the shared cores every update's request needs before it asks for its row (the
    /// server's work before the lock, and the load driver's where it runs on the same
    /// machine); 0 without `[machine]`.
    pub request_cpu: SimTime,
    /// CPU on the shared cores that a release costs for every update waiting for another row
    /// of the same key (a page's lock list scanned at every release, as InnoDB does); 0
    /// without `[machine]`.
    pub page_scan_cpu: SimTime,
    /// Shared CPU.
    pub cpu: Option<Cpu>,
    /// The WAL flush.
    pub wal: Option<WalModel>,
    /// Time outside the database per request.
    pub overhead: Option<HoldDist>,
    /// Time outside the database of a request sent on an idle connection, instead of
    /// `overhead` (`None`: the same).
    pub idle_overhead: Option<HoldDist>,
    /// Spells during which the machine completes nothing.
    pub stalls: Option<StallPlan>,
}

/// What limits a shard count's throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bottleneck {
    /// The busiest key's rows.
    Row,
    /// The shared CPU.
    Cpu,
    /// The WAL flush.
    Wal,
    /// A closed loop's clients: nothing in the database is near full.
    Clients,
}

impl Bottleneck {
    /// Its name in outputs.
    pub fn name(self) -> &'static str {
        match self {
            Bottleneck::Row => "row",
            Bottleneck::Cpu => "cpu",
            Bottleneck::Wal => "wal",
            Bottleneck::Clients => "clients",
        }
    }
}

impl fmt::Display for Bottleneck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl MachineModel {
    /// Whether no machine section is set (the seed's lock model).
    pub fn is_empty(&self) -> bool {
        self.per_waiter == 0
            && self.grant_order == GrantOrder::Fifo
            && self.wake == 0
            && self.wake_cpu == 0
            && self.herd_cpu == 0
            && self.idle_wake_cpu == 0
            && self.request_cpu == 0
            && self.page_scan_cpu == 0
            && self.cpu.is_none()
            && self.wal.is_none()
            && self.overhead.is_none()
            && self.idle_overhead.is_none()
            && self.stalls.is_none()
    }

    /// A row's mean hold with nobody waiting, in nanoseconds: the drawn hold, the CPU and the
    /// flush — its leader's CPU and its write (the row is held until the commit).
    pub fn row_hold_ns(&self, hold: &HoldDist) -> f64 {
        hold.mean_ns()
            + self.cpu.as_ref().map_or(0.0, |cpu| cpu.demand.mean_ns())
            + self
                .wal
                .map_or(0.0, |wal| wal.flush.saturating_add(wal.cpu) as f64)
    }

    /// A row's mean hold when its updates queue back to back, in nanoseconds: the hold with
    /// nobody waiting plus the wake-up of the waiter that takes it each time. One row takes
    /// at most one update per this hold: its ceiling.
    pub fn saturated_row_hold_ns(&self, hold: &HoldDist) -> f64 {
        self.row_hold_ns(hold) + self.wake as f64
    }

    /// The most updates a second the machine takes over all rows and keys, and which part
    /// sets it: the cores ÷ the mean CPU (the update's and its request's), or one flush at a
    /// time without group commit (`None`
    /// when neither bounds it). Without group commit every update also pays its flush's CPU
    /// (`[wal] cpu_ms`); with it a flush's CPU is shared by the commits it covers, as many as
    /// the load makes, and is left out.
    pub fn ceiling_per_s(&self) -> Option<(f64, Bottleneck)> {
        let own_flush = self
            .wal
            .filter(|wal| !wal.group_commit)
            .map_or(0.0, |wal| wal.cpu as f64);
        let cpu = self.cpu.as_ref().and_then(|cpu| {
            let mean = cpu.demand.mean_ns() + own_flush + self.request_cpu as f64;
            (mean > 0.0).then(|| (f64::from(cpu.cores) * 1e9 / mean, Bottleneck::Cpu))
        });
        let wal = self
            .wal
            .filter(|wal| !wal.group_commit && wal.flush > 0)
            .map(|wal| {
                (
                    1e9 / wal.flush.saturating_add(wal.cpu) as f64,
                    Bottleneck::Wal,
                )
            });
        match (cpu, wal) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// The mean time outside the database, in nanoseconds.
    pub fn overhead_ns(&self) -> f64 {
        self.overhead.as_ref().map_or(0.0, HoldDist::mean_ns)
    }
}

/// What the machine did in one shard count's measured period.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MachineRun {
    /// Cores (0 without `[machine]`).
    pub(crate) cores: u32,
    /// CPU time spent in the measured period.
    pub cpu_busy_ns: u128,
    /// Flushes started in the measured period.
    pub flushes: u64,
    /// Time the WAL spent flushing in the measured period.
    pub(crate) wal_busy_ns: u128,
    /// Commits in the measured period.
    pub commits: u64,
    /// Time the busiest row of the busiest key was held in the measured period.
    pub(crate) busiest_row_ns: u64,
    /// The measured period's length.
    pub(crate) measured_ns: SimTime,
    /// Response times (send → commit acknowledged, the time outside the database included)
    /// of open arrivals; a closed loop keeps them in its [`super::run::ClosedRun`].
    pub responses: Option<WaitStats>,
    /// What the stalls did (`None` without `[stalls]`).
    pub stalls: Option<StallFigures>,
    /// The p99 wait of the same run without its stalls, ns (`None` without `[stalls]`).
    pub wait_p99_without_stalls_ns: Option<SimTime>,
}

impl MachineRun {
    /// The cores' busy fraction (`None` without `[machine]`).
    pub fn cpu_utilization(&self) -> Option<f64> {
        (self.cores > 0 && self.measured_ns > 0)
            .then(|| self.cpu_busy_ns as f64 / (f64::from(self.cores) * self.measured_ns as f64))
    }

    /// Flushes per commit (`None` without `[wal]` or commits).
    pub fn fsyncs_per_commit(&self, has_wal: bool) -> Option<f64> {
        (has_wal && self.commits > 0).then(|| self.flushes as f64 / self.commits as f64)
    }

    /// The WAL's busy fraction.
    pub fn wal_utilization(&self) -> f64 {
        if self.measured_ns == 0 {
            return 0.0;
        }
        self.wal_busy_ns as f64 / self.measured_ns as f64
    }

    /// The busy fraction of the busiest key's busiest row.
    pub fn row_utilization(&self) -> f64 {
        if self.measured_ns == 0 {
            return 0.0;
        }
        self.busiest_row_ns as f64 / self.measured_ns as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_ceiling_pays_the_wake_up_its_quiet_hold_does_not() {
        let hold = HoldDist::Constant { hold_ns: 10_000 };
        let machine = MachineModel {
            wake: 150_000,
            cpu: Some(Cpu {
                cores: 1,
                demand: HoldDist::Constant { hold_ns: 40_000 },
                scheduler: Scheduler::Fifo,
            }),
            wal: Some(WalModel {
                flush: 50_000,
                cpu: 0,
                group_commit: true,
            }),
            ..MachineModel::default()
        };
        // Nobody waiting: hold + CPU + flush. Back to back, each update is a woken waiter's.
        assert_eq!(machine.row_hold_ns(&hold), 100_000.0);
        assert_eq!(machine.saturated_row_hold_ns(&hold), 250_000.0);
        assert!(!machine.is_empty());
        assert!(MachineModel::default().is_empty());
    }

    #[test]
    fn a_flush_with_cpu_counts_it_in_the_rows_hold_and_the_ceilings() {
        let hold = HoldDist::Constant { hold_ns: 10_000 };
        let machine = |group_commit| MachineModel {
            cpu: Some(Cpu {
                cores: 1,
                demand: HoldDist::Constant { hold_ns: 40_000 },
                scheduler: Scheduler::Fifo,
            }),
            wal: Some(WalModel {
                flush: 50_000,
                cpu: 20_000,
                group_commit,
            }),
            ..MachineModel::default()
        };
        // Hold + CPU + the flush's CPU and write: 120 µs.
        assert_eq!(machine(true).row_hold_ns(&hold), 120_000.0);
        // Group commit shares the flush's CPU: the cores take one update per 40 µs.
        assert_eq!(
            machine(true).ceiling_per_s(),
            Some((25_000.0, Bottleneck::Cpu))
        );
        // Without it each update pays a whole flush, 70 µs, of which 20 µs on the core.
        let (per_s, part) = machine(false).ceiling_per_s().unwrap();
        assert!((per_s - 1e9 / 70_000.0).abs() < 1e-6 && part == Bottleneck::Wal);
    }
}
