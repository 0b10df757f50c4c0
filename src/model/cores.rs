//! The machine's CPU cores as a scheduler runs them (`[machine] scheduler`): first come, first
//! served (a piece of work takes a free core and keeps it until it is done), or shared (every
//! piece of work ready to run gets an equal share of the cores, as a time-slicing scheduler
//! gives many short bursts: processor sharing).
//!
//! Shared cores keep a virtual time, the service each running piece has had since the cores
//! were last idle: it advances at `min(1, cores / n)` per nanosecond with `n` pieces running, and
//! a piece is done when it reaches the piece's finish tag (virtual time at entry + demand). Each
//! entry and completion is O(log n); fractions of a nanosecond of service are carried between
//! advances while `n` stays the same and dropped when it changes (under a nanosecond of service
//! per change).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::servers::Servers;
use crate::time::SimTime;

/// How the cores share themselves among the work ready to run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    /// A piece of work takes a free core, or waits for one in line, and runs to its end.
    #[default]
    Fifo,
    /// Every piece of work ready to run gets `min(1, cores / n)` of a core: a row's holder
    /// needing CPU while others run is slowed down with them.
    Shared,
}

impl Scheduler {
    /// Its name in scenarios and outputs.
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Fifo => "fifo",
            Scheduler::Shared => "shared",
        }
    }
}

/// The machine's cores under their scheduler.
#[derive(Debug, Clone)]
pub enum Cores {
    /// First come, first served: identical servers with one line.
    Fifo(Servers),
    /// Processor sharing.
    Shared(SharedCores),
}

impl Cores {
    /// `cores ≥ 1` idle cores under `scheduler`.
    pub fn new(cores: u32, scheduler: Scheduler) -> Self {
        match scheduler {
            Scheduler::Fifo => Cores::Fifo(Servers::new(cores)),
            Scheduler::Shared => Cores::Shared(SharedCores::new(cores)),
        }
    }
}

/// Cores shared by processor sharing.
#[derive(Debug, Clone)]
pub struct SharedCores {
    cores: u32,
    /// Service each running piece has had since the cores were last idle, ns.
    virtual_ns: u64,
    /// Service not yet credited: a fraction `carry / running` of a nanosecond.
    carry: u64,
    /// When the virtual time was last advanced.
    advanced_at: SimTime,
    /// The running pieces by finish tag, then by entry (first in first out on a tie).
    running: BinaryHeap<Reverse<(u64, u64, u32)>>,
    entries: u64,
    /// The earliest check already on the calendar, if one is still due.
    check_at: Option<SimTime>,
}

impl SharedCores {
    /// `cores ≥ 1` idle cores.
    pub fn new(cores: u32) -> Self {
        assert!(cores >= 1, "a machine has a core");
        SharedCores {
            cores,
            virtual_ns: 0,
            carry: 0,
            advanced_at: 0,
            running: BinaryHeap::new(),
            entries: 0,
            check_at: None,
        }
    }

    /// Pieces of work running now.
    pub fn running(&self) -> u32 {
        u32::try_from(self.running.len()).unwrap_or(u32::MAX)
    }

    /// Brings the virtual time to `now`; returns when it was last advanced and how many cores
    /// were busy since (for the utilization).
    pub fn advance(&mut self, now: SimTime) -> (SimTime, u32) {
        let since = self.advanced_at;
        let n = self.running();
        self.advanced_at = now;
        let elapsed = now.saturating_sub(since);
        if n == 0 || elapsed == 0 {
            return (since, n.min(self.cores));
        }
        if n <= self.cores {
            self.virtual_ns = self.virtual_ns.saturating_add(elapsed);
        } else {
            let total = u128::from(elapsed) * u128::from(self.cores) + u128::from(self.carry);
            let n = u128::from(n);
            let credit = u64::try_from(total / n).unwrap_or(u64::MAX);
            self.carry = u64::try_from(total % n).unwrap_or(0);
            self.virtual_ns = self.virtual_ns.saturating_add(credit);
        }
        (since, n.min(self.cores))
    }

    /// `job` needs `demand` of CPU from now (the virtual time advanced to now first); returns a
    /// time at which to check for completions, if the calendar holds none early enough.
    pub fn enter(&mut self, job: u32, demand: SimTime, now: SimTime) -> Option<SimTime> {
        debug_assert_eq!(self.advanced_at, now, "advance before entering");
        self.carry = 0;
        let tag = self.virtual_ns.saturating_add(demand);
        self.running.push(Reverse((tag, self.entries, job)));
        self.entries += 1;
        self.next_check(now)
    }

    /// The pieces done by now (the virtual time advanced to now first), in the order they
    /// finished, into `done`; returns a time at which to check again, if the calendar holds
    /// none early enough.
    pub fn complete(&mut self, now: SimTime, done: &mut Vec<u32>) -> Option<SimTime> {
        debug_assert_eq!(self.advanced_at, now, "advance before completing");
        if self.check_at.is_some_and(|at| at <= now) {
            self.check_at = None;
        }
        let before = self.running.len();
        while let Some(&Reverse((tag, _, job))) = self.running.peek() {
            if tag > self.virtual_ns {
                break;
            }
            self.running.pop();
            done.push(job);
        }
        if self.running.len() != before {
            self.carry = 0;
        }
        self.next_check(now)
    }

    /// When the first running piece finishes at the present share, unless a check is
    /// already due by then.
    fn next_check(&mut self, now: SimTime) -> Option<SimTime> {
        let &Reverse((tag, _, _)) = self.running.peek()?;
        let left = tag.saturating_sub(self.virtual_ns);
        let n = u64::from(self.running());
        let cores = u64::from(self.cores);
        let wall = if n <= cores {
            left
        } else {
            let owed = u128::from(left) * u128::from(n);
            let credited = u128::from(self.carry);
            let needed = owed.saturating_sub(credited);
            u64::try_from(needed.div_ceil(u128::from(cores))).unwrap_or(u64::MAX)
        };
        let at = now.saturating_add(wall);
        if self.check_at.is_some_and(|due| due <= at) {
            return None;
        }
        self.check_at = Some(at);
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the shared cores' checks as a calendar would until every piece is done; returns
    /// each piece's end.
    fn finish_all(cores: &mut SharedCores, mut checks: Vec<SimTime>) -> Vec<(u32, SimTime)> {
        let mut ends = Vec::new();
        let mut done = Vec::new();
        while let Some(at) = checks.iter().copied().min() {
            checks.retain(|&t| t != at);
            cores.advance(at);
            done.clear();
            checks.extend(cores.complete(at, &mut done));
            ends.extend(done.iter().map(|&job| (job, at)));
        }
        ends
    }

    #[test]
    fn two_pieces_on_one_core_share_it() {
        // 10 and 30 ns entered together on one core: each runs at half speed, so the short
        // one ends at 20; the long one has 20 left, alone, and ends at 40.
        let mut cores = SharedCores::new(1);
        cores.advance(0);
        let mut checks: Vec<SimTime> = cores.enter(0, 10, 0).into_iter().collect();
        checks.extend(cores.enter(1, 30, 0));
        assert_eq!(finish_all(&mut cores, checks), [(0, 20), (1, 40)]);
    }

    #[test]
    fn a_late_piece_slows_the_running_one_down() {
        // A holder's 10 ns alone for 4 ns, then shared with a 100 ns piece on one core: its
        // last 6 ns take 12, and it ends at 16 instead of 10.
        let mut cores = SharedCores::new(1);
        cores.advance(0);
        let first = cores.enter(0, 10, 0).unwrap();
        assert_eq!(first, 10);
        cores.advance(4);
        let mut done = Vec::new();
        assert_eq!(cores.complete(4, &mut done), None, "the check at 10 stands");
        let later = cores.enter(1, 100, 4);
        assert_eq!(later, None, "the check at 10 comes first");
        let ends = finish_all(&mut cores, vec![first]);
        assert_eq!(ends, [(0, 16), (1, 110)]);
    }

    #[test]
    fn up_to_as_many_pieces_as_cores_run_at_full_speed() {
        let mut cores = SharedCores::new(2);
        cores.advance(0);
        let mut checks: Vec<SimTime> = cores.enter(0, 10, 0).into_iter().collect();
        checks.extend(cores.enter(1, 10, 0));
        assert_eq!(finish_all(&mut cores, checks), [(0, 10), (1, 10)]);
        // Three on two cores: each at 2/3 of a core; 30 ns of work each ends at 45.
        cores.advance(100);
        let mut checks: Vec<SimTime> = (0..3).filter_map(|j| cores.enter(j, 30, 100)).collect();
        checks.sort();
        assert_eq!(
            finish_all(&mut cores, checks),
            [(0, 145), (1, 145), (2, 145)]
        );
    }
}
