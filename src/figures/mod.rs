//! The figures a run reports, each computed once from its runs and the scenario: a shard
//! count's summary over its replications, its verdict, what a sweep recommends, what the burst
//! did, and the flat record `summary.csv` and the JSON carry. The renderers of
//! [`crate::report`], the planner, the check and the grid read them; none computes its own.
//!
//! - [`summary`]: a shard count's figures over its replications ([`SummaryRow`]);
//! - [`verdict`]: its verdict, the recommendation and the remedy;
//! - [`burst`]: time overloaded, first breach of the target, drain time, backlog growth;
//! - [`extended`]: timeouts, retries, batching, reads and the pool;
//! - [`likes`]: the likes table's figures;
//! - [`record`]: one row's figures flat, as `summary.csv` and the JSON carry them, and the
//!   direction in which each column regresses;
//! - [`columns`]: which feature each column of `summary.csv` belongs to;
//! - [`band`]: a shard count's throughput and p99 over its calibration's band.

pub mod band;
pub mod burst;
pub mod columns;
pub mod extended;
pub mod likes;
pub mod record;
pub mod summary;
pub mod verdict;

pub use burst::BurstMetrics;
pub use extended::ExtendedSummary;
pub use summary::{
    ClosedSummary, MachineSummary, StallSummary, SummaryRow, lowest_peak_utilization,
    static_ceiling_per_s, summarize, summarize_each,
};
pub use verdict::{
    NEAR_CEILING, PolicyRows, Recommendation, TAIL_HOLDS, UNDRAINED_S, Verdict, by_policy,
    machine_bound, recommend, remedy,
};
