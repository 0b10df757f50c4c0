//! The triggers a stream must recover from: what its database is known to do to it — stall
//! for its fitted p99 and for the longest stall its calibration saw — and a burst that fills
//! its pool. Each leaves a queue behind; the stream is stable only if that queue drains.

use std::fmt;

use crate::scenario::Scenario;
use crate::time::SimTime;

/// One event that leaves a queue behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The machine completes nothing for this long.
    Stall {
        /// How long, ns.
        length_ns: SimTime,
        /// Which stall: the fitted p99, or the longest the calibration saw.
        kind: StallKind,
    },
    /// This many requests arrive at once, on top of the stream: as many as the pool has
    /// connections, so every connection is busy when they have arrived.
    Burst {
        /// The requests.
        requests: u32,
    },
}

/// Which of the machine's stalls a stall trigger is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallKind {
    /// The 99th percentile of the fitted stall lengths (`[stalls]`).
    P99,
    /// The longest stall the calibration saw (`[stalls] longest_ms`).
    Longest,
}

impl Trigger {
    /// Its name in `summary.csv` and the JSON: `stall-p99`, `stall-longest`, `burst`.
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Stall {
                kind: StallKind::P99,
                ..
            } => "stall-p99",
            Trigger::Stall {
                kind: StallKind::Longest,
                ..
            } => "stall-longest",
            Trigger::Burst { .. } => "burst",
        }
    }

    /// How long the trigger itself lasts (a burst arrives at once), ns.
    pub fn length_ns(self) -> SimTime {
        match self {
            Trigger::Stall { length_ns, .. } => length_ns,
            Trigger::Burst { .. } => 0,
        }
    }

    /// The requests it leaves waiting on a stream of `rate_per_s`: a stall's arrivals, or
    /// the burst.
    pub fn queue_left(self, rate_per_s: f64) -> f64 {
        match self {
            Trigger::Stall { length_ns, .. } => rate_per_s * length_ns as f64 / 1e9,
            Trigger::Burst { requests } => f64::from(requests),
        }
    }
}

impl Trigger {
    /// In a table's few words: `a 9.05 ms stall`, `a burst of 64`.
    pub fn short(self) -> String {
        match self {
            Trigger::Stall { length_ns, .. } => {
                format!("a {} stall", crate::units::duration(length_ns))
            }
            Trigger::Burst { requests } => format!("a burst of {requests}"),
        }
    }
}

impl fmt::Display for Trigger {
    /// In words: `a 9.05 ms stall (the fitted p99)`, `a burst of 64 requests (fills the pool)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Trigger::Stall { length_ns, kind } => write!(
                f,
                "a {} stall ({})",
                crate::units::duration(length_ns),
                match kind {
                    StallKind::P99 => "the fitted p99",
                    StallKind::Longest => "the longest seen",
                }
            ),
            Trigger::Burst { requests } => write!(
                f,
                "a burst of {} (fills the pool)",
                crate::units::plural(u64::from(requests), "request")
            ),
        }
    }
}

/// The triggers of `scenario`'s stream at `rate_per_s`, mildest first (by the queue each
/// leaves): its stalls' p99 and longest seen (`[stalls]`), and a burst of as many requests
/// as its pool has connections (`[pool]`). Empty when it has neither.
pub fn triggers(scenario: &Scenario, rate_per_s: f64) -> Vec<Trigger> {
    let mut triggers = Vec::with_capacity(3);
    if let Some(stalls) = scenario.machine().stalls.as_ref() {
        let p99 = stalls.p99_ns();
        if p99 > 0 {
            triggers.push(Trigger::Stall {
                length_ns: p99,
                kind: StallKind::P99,
            });
        }
        if let Some(longest) = stalls.longest_ns().filter(|&longest| longest > p99) {
            triggers.push(Trigger::Stall {
                length_ns: longest,
                kind: StallKind::Longest,
            });
        }
    }
    if let Some(pool) = scenario.features().pool.as_ref() {
        triggers.push(Trigger::Burst {
            requests: pool.size,
        });
    }
    triggers.sort_by(|a, b| {
        a.queue_left(rate_per_s)
            .total_cmp(&b.queue_left(rate_per_s))
    });
    triggers
}
