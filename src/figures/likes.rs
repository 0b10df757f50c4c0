//! The likes table's figures (`[likes_table]`): per shard count, the insert path's waits and
//! its hottest partition, the like's end-to-end latency, how every attempt ended and the
//! count's drift — the summary's columns (the table the terminal and the report page show is
//! [`crate::report::extended`]'s).

use crate::model::ShardRun;
use crate::stats::WaitSummary;

use crate::stats::replications::{mean_by, wait_estimates};

/// The likes table's figures for one shard count (means over replications).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LikesSummary {
    /// Attempts that took the insert path.
    pub(crate) attempts: f64,
    /// Of the likes, double taps.
    pub(crate) repeats: f64,
    /// Likes stored in the likes table.
    pub(crate) stored: f64,
    /// Increments committed for a stored like.
    pub(crate) counted: f64,
    /// Attempts the primary key rejected.
    pub(crate) rejected: f64,
    /// Attempts that failed between the insert and the increment.
    pub(crate) crashed: f64,
    /// Attempts their client cancelled.
    pub(crate) withdrawn: f64,
    /// Attempts still in the database at the end.
    pub(crate) in_flight: f64,
    /// Waits for the insert path, ns.
    pub(crate) insert_waits: WaitSummary,
    /// The busiest partition's share of the inserts.
    pub(crate) hot_partition_share: f64,
    /// The busiest partition's busy fraction.
    pub(crate) hot_partition_utilization: f64,
    /// Send → answer, as the client sees it, ns.
    pub(crate) latency: Option<WaitSummary>,
    /// Stored likes the count misses for good at the end.
    pub(crate) drift_final: f64,
    /// The most drift at any instant.
    pub(crate) drift_max: f64,
    /// Likes the reconciliation added back.
    pub(crate) reconciled: f64,
}

/// The likes table's figures over `runs`, when the scenario has one.
pub fn summarize(runs: &[ShardRun]) -> Option<LikesSummary> {
    let likes: Vec<&crate::model::likes::LikesRun> =
        runs.iter().filter_map(|run| run.likes.as_ref()).collect();
    if likes.is_empty() {
        return None;
    }
    let mean = |get: &dyn Fn(&crate::model::likes::LikesRun) -> f64| mean_by(&likes, |l| get(l));
    let waits: Vec<WaitSummary> = likes.iter().map(|l| l.insert_waits.summary()).collect();
    let latencies: Vec<WaitSummary> = runs
        .iter()
        .filter_map(|run| run.machine.as_ref()?.responses.as_ref())
        .map(crate::stats::WaitStats::summary)
        .collect();
    Some(LikesSummary {
        attempts: mean(&|l| l.outcomes.attempts as f64),
        repeats: mean(&|l| l.outcomes.repeats as f64),
        stored: mean(&|l| l.outcomes.stored as f64),
        counted: mean(&|l| l.outcomes.counted as f64),
        rejected: mean(&|l| l.outcomes.rejected as f64),
        crashed: mean(&|l| l.outcomes.crashed as f64),
        withdrawn: mean(&|l| l.outcomes.withdrawn as f64),
        in_flight: mean(&|l| l.outcomes.in_flight as f64),
        insert_waits: wait_estimates(&waits).0,
        hot_partition_share: mean(&|l| l.hot_partition_share),
        hot_partition_utilization: mean(&|l| l.hot_partition_utilization),
        latency: (!latencies.is_empty()).then(|| wait_estimates(&latencies).0),
        drift_final: mean(&|l| l.drift_final as f64),
        drift_max: mean(&|l| l.drift_max as f64),
        reconciled: mean(&|l| l.reconciled as f64),
    })
}
