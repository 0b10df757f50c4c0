//! What a run's headline says of its scenario — its load, the what-if traffic, the hold, the
//! policies, the seed and the target — read from the scenario once; the terminal and the report
//! page each put it in their own words.

use crate::figures::SummaryRow;
use crate::scenario::{ArrivalPlan, Scenario, Slo};

/// The facts a run's headline states.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// The what-if traffic's scale, when it is not 1.
    pub scale: Option<f64>,
    /// A trace's speed-up, when the arrivals are a trace and it is not 1.
    pub speed: Option<f64>,
    /// The load the rows see.
    pub load: Load,
    /// Seconds simulated.
    pub duration_s: f64,
    /// The mean time an update holds its row, in nanoseconds.
    pub hold_ns: f64,
    /// The policies compared, as the scenario names them.
    pub policies: String,
    /// The seed of every random stream.
    pub seed: u64,
    /// The targets, when the scenario sets any.
    pub slo: Option<Slo>,
}

/// The load of a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// A closed loop: each client sends its next update a think time after the last is done.
    Closed {
        /// How many clients loop.
        clients: u32,
        /// Their mean think time, in nanoseconds.
        think_ns: f64,
        /// The most they can offer per second (none waits and none thinks longer).
        max_per_s: f64,
    },
    /// An open stream of increments.
    Open {
        /// Increments offered in the measured period (of the first shard count: every one
        /// sees the same stream).
        increments: u64,
        /// Whether the increments spread over several keys (the peak is the busiest's).
        many_keys: bool,
        /// The peak rate offered, per second.
        peak_per_s: f64,
    },
}

impl Headline {
    /// The headline of `scenario`'s run, whose summary rows are `rows`.
    pub fn of(scenario: &Scenario, rows: &[SummaryRow]) -> Headline {
        let traffic = scenario.traffic();
        let is_trace = matches!(scenario.arrivals(), ArrivalPlan::Trace(_));
        let load = match scenario.arrivals() {
            ArrivalPlan::Closed(closed) => Load::Closed {
                clients: closed.clients,
                think_ns: closed.think.mean_ns(),
                max_per_s: scenario.peak_offered_per_s(),
            },
            _ => Load::Open {
                increments: rows.first().map_or(0, SummaryRow::arrivals),
                many_keys: scenario.key_count() > 1,
                peak_per_s: scenario.peak_offered_per_s(),
            },
        };
        Headline {
            scale: (traffic.scale != 1.0).then_some(traffic.scale),
            speed: (is_trace && traffic.speed != 1.0).then_some(traffic.speed),
            load,
            duration_s: scenario.duration_s(),
            hold_ns: scenario.row_hold_ns(),
            policies: scenario.policies_label(),
            seed: scenario.seed(),
            slo: scenario.slo().is_set().then_some(scenario.slo()),
        }
    }
}
