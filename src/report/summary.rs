//! The figures reported for one shard count, derived from its run and the scenario.

use crate::model::ShardRun;
use crate::scenario::Scenario;
use crate::stats::WaitSummary;

/// One row of `summary.csv`: a shard count's throughput, ceiling and waits.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// Scenario name.
    pub scenario: String,
    /// Slot-choice policy.
    pub policy: String,
    /// Rows per key.
    pub shards: u32,
    /// Increments that arrived.
    pub arrivals: u64,
    /// Holds finished by the end of the simulated period.
    pub completed: u64,
    /// Simulated period in seconds.
    pub duration_s: f64,
    /// Mean arrival rate: arrivals ÷ duration.
    pub offered_per_s: f64,
    /// Mean completion rate: completed ÷ duration.
    pub throughput_per_s: f64,
    /// Most increments a second one key's rows can take: shards ÷ mean hold.
    pub ceiling_per_s: f64,
    /// Offered ÷ ceiling; at or above 1 the queue grows without bound.
    pub utilization: f64,
    /// Highest offered rate: the profile's busiest segment or a trace's busiest window.
    pub peak_offered_per_s: f64,
    /// Peak offered ÷ ceiling.
    pub peak_utilization: f64,
    /// Wait statistics over every increment, in nanoseconds.
    pub waits: WaitSummary,
    /// Largest backlog (arrived, not yet started) at any instant.
    pub backlog_max: u64,
    /// Backlog at the end of the simulated period.
    pub backlog_final: u64,
    /// Keys that received at least one increment.
    pub keys_touched: usize,
}

/// The summary of one shard count's run.
pub fn summarize(scenario: &Scenario, run: &ShardRun) -> SummaryRow {
    let duration_s = scenario.duration_s();
    let mean_hold_s = scenario.hold.mean_ns() / 1e9;
    let ceiling_per_s = f64::from(run.shards) / mean_hold_s;
    let offered_per_s = run.arrivals as f64 / duration_s;
    let peak_offered_per_s = scenario.peak_offered_per_s();
    SummaryRow {
        scenario: scenario.name.clone(),
        policy: scenario.policy.to_string(),
        shards: run.shards,
        arrivals: run.arrivals,
        completed: run.completed,
        duration_s,
        offered_per_s,
        throughput_per_s: run.completed as f64 / duration_s,
        ceiling_per_s,
        utilization: offered_per_s / ceiling_per_s,
        peak_offered_per_s,
        peak_utilization: peak_offered_per_s / ceiling_per_s,
        waits: run.waits.summary(),
        backlog_max: run.backlog_max,
        backlog_final: run.backlog_final,
        keys_touched: run.keys_touched,
    }
}
