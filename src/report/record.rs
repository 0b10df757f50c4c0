//! One row of `summary.csv`, as a type: serialised by `csv` for the file and by `serde_json`
//! for `--format json`, so the two carry the same columns and values by construction. Each
//! field's doc is the column's meaning (docs/outputs.md follows them). Numbers
//! are numbers; a figure that is unbounded or undefined (or a section the scenario lacks) is
//! `None`: an empty cell in the CSV, `null` in JSON — never `inf` or `NaN`.

use serde::Serialize;

use crate::stats::WaitSummary;

use super::extended::{BatchSummary, ClientSummary};
use super::summary::SummaryRow;

/// One shard count's figures as `summary.csv` writes them, in column order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRecord {
    /// The scenario's name.
    pub scenario: String,
    /// The slot-choice policy.
    pub policy: String,
    /// Rows per key (adaptive: the rows a key starts with).
    pub shards: u32,
    /// Updates that reached the rows in the measured period.
    pub arrivals: u64,
    /// Holds that finished in the measured period.
    pub completed: u64,
    /// The measured period, s.
    pub duration_s: Option<f64>,
    /// Arrivals ÷ duration.
    pub offered_per_s: Option<f64>,
    /// Completed ÷ duration.
    pub throughput_per_s: Option<f64>,
    /// Shards ÷ mean hold: one key's most increments a second (empty when unbounded).
    pub ceiling_per_s: Option<f64>,
    /// The busiest key's offered rate ÷ ceiling (empty when undefined).
    pub utilization: Option<f64>,
    /// Mean wait for the row, ms (exact).
    pub wait_mean_ms: Option<f64>,
    /// Median wait, ms.
    pub wait_p50_ms: Option<f64>,
    /// 90th-percentile wait, ms.
    pub wait_p90_ms: Option<f64>,
    /// 99th-percentile wait, ms.
    pub wait_p99_ms: Option<f64>,
    /// 99.9th-percentile wait, ms.
    pub wait_p999_ms: Option<f64>,
    /// Longest wait, ms (exact).
    pub wait_max_ms: Option<f64>,
    /// Most increments waiting at any instant.
    pub backlog_max: u64,
    /// Increments still waiting at the end.
    pub backlog_final: u64,
    /// The busiest key's peak offered rate (with retries, the load the rows see).
    pub peak_offered_per_s: Option<f64>,
    /// Peak offered ÷ ceiling.
    pub peak_utilization: Option<f64>,
    /// Keys that received at least one increment.
    pub keys_touched: u64,
    /// The seed used.
    pub seed: u64,
    /// Replications behind each figure.
    pub replications: u32,
    /// The warm-up left out of the statistics, s.
    pub warmup_s: f64,
    /// Lower end of the mean wait's 95% interval, ms (two or more replications).
    pub wait_mean_ms_lo: Option<f64>,
    /// Upper end of the mean wait's 95% interval, ms.
    pub wait_mean_ms_hi: Option<f64>,
    /// Lower end of the median's interval, ms.
    pub wait_p50_ms_lo: Option<f64>,
    /// Upper end of the median's interval, ms.
    pub wait_p50_ms_hi: Option<f64>,
    /// Lower end of the p90's interval, ms.
    pub wait_p90_ms_lo: Option<f64>,
    /// Upper end of the p90's interval, ms.
    pub wait_p90_ms_hi: Option<f64>,
    /// Lower end of the p99's interval, ms.
    pub wait_p99_ms_lo: Option<f64>,
    /// Upper end of the p99's interval, ms.
    pub wait_p99_ms_hi: Option<f64>,
    /// Lower end of the p99.9's interval, ms.
    pub wait_p999_ms_lo: Option<f64>,
    /// Upper end of the p99.9's interval, ms.
    pub wait_p999_ms_hi: Option<f64>,
    /// Lower end of the maximum's interval, ms.
    pub wait_max_ms_lo: Option<f64>,
    /// Upper end of the maximum's interval, ms.
    pub wait_max_ms_hi: Option<f64>,
    /// Original likes (clients or app servers).
    pub likes: Option<f64>,
    /// Original likes per second.
    pub likes_per_s: Option<f64>,
    /// Attempts, retries included.
    pub attempts: Option<f64>,
    /// Attempts per second.
    pub attempts_per_s: Option<f64>,
    /// Attempts per like.
    pub amplification: Option<f64>,
    /// Attempts that waited past the timeout.
    pub timeouts: Option<f64>,
    /// Likes that failed after their last retry.
    pub user_failures: Option<f64>,
    /// Likes that succeeded.
    pub succeeded: Option<f64>,
    /// Likes still pending at the end.
    pub pending_likes: Option<f64>,
    /// Runs of a like beyond its first.
    pub duplicates: Option<f64>,
    /// Final count minus the likes that ran.
    pub count_drift: Option<f64>,
    /// Successful likes per second.
    pub goodput_per_s: Option<f64>,
    /// Flush updates reaching the database.
    pub db_writes: Option<f64>,
    /// Flush updates per second.
    pub db_writes_per_s: Option<f64>,
    /// Likes lost in crashes.
    pub lost_likes: Option<f64>,
    /// Likes held unflushed in app-server memory, time-averaged.
    pub at_risk_mean: Option<f64>,
    /// Most likes held unflushed at once.
    pub at_risk_max: Option<f64>,
    /// Median delay from a like to the commit that counted it, ms.
    pub count_delay_p50_ms: Option<f64>,
    /// 99th-percentile count delay, ms.
    pub count_delay_p99_ms: Option<f64>,
    /// Longest count delay, ms.
    pub count_delay_max_ms: Option<f64>,
    /// Likes' p99 wait for a pool connection, ms.
    pub like_connection_wait_p99_ms: Option<f64>,
    /// Neighbour requests' mean wait for a connection, ms.
    pub neighbour_wait_mean_ms: Option<f64>,
    /// Neighbour requests' p99 wait for a connection, ms.
    pub neighbour_wait_p99_ms: Option<f64>,
    /// The busiest key's share of the arrivals.
    pub hot_key_share: Option<f64>,
    /// `static`, or `adaptive` for the adaptive run.
    pub mode: &'static str,
    /// Rows over all keys at the end.
    pub rows_total: u64,
    /// The most rows on one key at the end.
    pub max_key_rows: u32,
    /// Read requests per second.
    pub read_requests_per_s: Option<f64>,
    /// Rows read per second.
    pub rows_read_per_s: Option<f64>,
    /// Rows read per key read.
    pub rows_per_read: Option<f64>,
    /// Share of key reads answered from the cache.
    pub cache_hit_ratio: Option<f64>,
    /// Mean age of the shown count, ms.
    pub staleness_mean_ms: Option<f64>,
    /// 99th-percentile age of the shown count, ms.
    pub staleness_p99_ms: Option<f64>,
    /// Mean likes the shown count trailed by.
    pub staleness_likes_mean: Option<f64>,
    /// 99th-percentile likes the shown count trailed by.
    pub staleness_likes_p99: Option<f64>,
    /// Locking reads' p99 wait for the rows, ms.
    pub read_lock_wait_p99_ms: Option<f64>,
    /// When the shard count was stopped as saturated, s (empty when it never was).
    pub saturated_at_s: Option<f64>,
    /// Mean response time, send → commit acknowledged as the client sees it, ms (closed loops,
    /// and open arrivals on a machine).
    pub response_mean_ms: Option<f64>,
    /// Closed loop: median response time, ms.
    pub response_p50_ms: Option<f64>,
    /// Closed loop: 99th-percentile response time, ms.
    pub response_p99_ms: Option<f64>,
    /// Closed loop: 99.9th-percentile response time, ms.
    pub response_p999_ms: Option<f64>,
    /// Closed loop: the clients.
    pub clients: Option<u32>,
    /// `[machine]`: the cores' busy fraction.
    pub cpu_utilization: Option<f64>,
    /// `[wal]`: flushes per commit.
    pub fsyncs_per_commit: Option<f64>,
    /// With a machine: what limits the shard count (row, cpu, wal or clients).
    pub bottleneck: Option<&'static str>,
    /// Time in windows whose offered rate exceeded the ceiling, s.
    pub overloaded_s: Option<f64>,
    /// Start of the first window whose p99 wait passed the `[slo]` p99 target, s.
    pub first_slo_breach_s: Option<f64>,
    /// From the end of the last overloaded window until the backlog is below 1% of its
    /// largest, s (empty when never overloaded or never drained).
    pub drain_s: Option<f64>,
    /// The backlog's slope while overloaded, increments per second.
    pub backlog_growth_per_s: Option<f64>,
    /// `skip-locked`: rows tried per update.
    pub tries_per_update: Option<f64>,
    /// `[likes_table]`: likes stored in the likes table.
    pub likes_stored: Option<f64>,
    /// `[likes_table]`: increments committed for a stored like.
    pub likes_counted: Option<f64>,
    /// `[likes_table]`: attempts the primary key rejected (double taps, retries of a stored
    /// like).
    pub repeats_rejected: Option<f64>,
    /// `[likes_table]`: attempts that failed between the insert and the increment.
    pub crashed_likes: Option<f64>,
    /// `[likes_table]`: attempts their client cancelled before they committed.
    pub withdrawn_likes: Option<f64>,
    /// `[likes_table]`: median wait for the partition's insert path, ms.
    pub insert_wait_p50_ms: Option<f64>,
    /// `[likes_table]`: 99th-percentile wait for the insert path, ms.
    pub insert_wait_p99_ms: Option<f64>,
    /// `[likes_table]`: 99.9th-percentile wait for the insert path, ms.
    pub insert_wait_p999_ms: Option<f64>,
    /// `[likes_table]`: the busiest partition's share of the inserts.
    pub hot_partition_share: Option<f64>,
    /// `[likes_table]`: the busiest partition's busy fraction.
    pub hot_partition_utilization: Option<f64>,
    /// `[likes_table]`: median like latency end to end (send → answer), ms.
    pub like_latency_p50_ms: Option<f64>,
    /// `[likes_table]`: 99th-percentile like latency end to end, ms.
    pub like_latency_p99_ms: Option<f64>,
    /// `[likes_table]`: stored likes the count misses for good at the end.
    pub drift_final: Option<f64>,
    /// `[likes_table]`: the most such likes at any instant.
    pub drift_max: Option<f64>,
    /// `[likes_table]`: likes `[reconcile]` added back.
    pub reconciled_likes: Option<f64>,
}

/// `value` rounded to `places` decimals as decimal formatting rounds it (ties to even, so
/// 0.15625 gives 0.1562), or `None` when it is infinite or NaN.
pub fn rounded(value: f64, places: usize) -> Option<f64> {
    if !value.is_finite() {
        return None;
    }
    format!("{value:.places$}").parse().ok()
}

/// Nanoseconds as milliseconds (exact to the nanosecond).
fn ms(ns: u64) -> Option<f64> {
    Some(ns as f64 / 1e6)
}

impl SummaryRecord {
    /// The record of one summary row.
    pub fn of(row: &SummaryRow, seed: u64, warmup_s: f64) -> SummaryRecord {
        let w = &row.waits;
        let bound = |summary: &Option<WaitSummary>, ns: fn(&WaitSummary) -> u64| {
            summary.as_ref().and_then(|s| ms(ns(s)))
        };
        let (lo, hi) = (&row.waits_lo, &row.waits_hi);
        let extended = row.extended.as_ref();
        let client = extended.and_then(|e| e.client);
        let batching = extended.and_then(|e| e.batching.as_ref());
        let pool = extended.and_then(|e| e.pool.as_ref());
        let reads = extended.and_then(|e| e.reads.as_ref());
        let closed = row.closed.as_ref();
        let machine = row.machine.as_ref();
        // Response times: a closed loop's clients', or open arrivals' on a machine.
        let responses = closed
            .map(|c| c.responses)
            .or_else(|| machine.and_then(|m| m.responses));
        let c = |get: fn(&ClientSummary) -> f64| client.and_then(|c| rounded(get(&c), 3));
        let likes = row.likes.as_ref();
        let l = |get: fn(&crate::report::likes::LikesSummary) -> f64| {
            likes.and_then(|l| rounded(get(l), 3))
        };
        let b = |get: fn(&BatchSummary) -> f64| batching.and_then(|b| rounded(get(b), 3));
        // Likes and pending likes come from the clients or, with batching, the app servers.
        let either = |from_client: fn(&ClientSummary) -> f64,
                      from_batching: fn(&BatchSummary) -> f64| {
            c(from_client).or_else(|| b(from_batching))
        };
        SummaryRecord {
            scenario: row.scenario.clone(),
            policy: row.policy.clone(),
            shards: row.shards,
            arrivals: row.arrivals,
            completed: row.completed,
            duration_s: rounded(row.duration_s, 3),
            offered_per_s: rounded(row.offered_per_s, 3),
            throughput_per_s: rounded(row.throughput_per_s, 3),
            ceiling_per_s: rounded(row.ceiling_per_s, 3),
            utilization: rounded(row.utilization, 4),
            wait_mean_ms: ms(w.mean_ns),
            wait_p50_ms: ms(w.p50_ns),
            wait_p90_ms: ms(w.p90_ns),
            wait_p99_ms: ms(w.p99_ns),
            wait_p999_ms: ms(w.p999_ns),
            wait_max_ms: ms(w.max_ns),
            backlog_max: row.backlog_max,
            backlog_final: row.backlog_final,
            peak_offered_per_s: rounded(row.peak_offered_per_s, 3),
            peak_utilization: rounded(row.peak_utilization, 4),
            keys_touched: row.keys_touched as u64,
            seed,
            replications: row.replications,
            warmup_s,
            wait_mean_ms_lo: bound(lo, |s| s.mean_ns),
            wait_mean_ms_hi: bound(hi, |s| s.mean_ns),
            wait_p50_ms_lo: bound(lo, |s| s.p50_ns),
            wait_p50_ms_hi: bound(hi, |s| s.p50_ns),
            wait_p90_ms_lo: bound(lo, |s| s.p90_ns),
            wait_p90_ms_hi: bound(hi, |s| s.p90_ns),
            wait_p99_ms_lo: bound(lo, |s| s.p99_ns),
            wait_p99_ms_hi: bound(hi, |s| s.p99_ns),
            wait_p999_ms_lo: bound(lo, |s| s.p999_ns),
            wait_p999_ms_hi: bound(hi, |s| s.p999_ns),
            wait_max_ms_lo: bound(lo, |s| s.max_ns),
            wait_max_ms_hi: bound(hi, |s| s.max_ns),
            likes: either(|c| c.likes, |b| b.likes),
            likes_per_s: either(|c| c.likes_per_s, |b| b.likes_per_s),
            attempts: c(|c| c.attempts),
            attempts_per_s: c(|c| c.attempts_per_s),
            amplification: c(|c| c.amplification),
            timeouts: c(|c| c.timeouts),
            user_failures: c(|c| c.failed),
            succeeded: c(|c| c.succeeded),
            pending_likes: either(|c| c.pending, |b| b.pending),
            duplicates: c(|c| c.duplicates),
            count_drift: c(|c| c.drift),
            goodput_per_s: c(|c| c.goodput_per_s),
            db_writes: b(|b| b.db_writes),
            db_writes_per_s: b(|b| b.db_writes_per_s),
            lost_likes: b(|b| b.lost),
            at_risk_mean: b(|b| b.at_risk_mean),
            at_risk_max: b(|b| b.at_risk_max),
            count_delay_p50_ms: batching.and_then(|b| ms(b.delay.p50_ns)),
            count_delay_p99_ms: batching.and_then(|b| ms(b.delay.p99_ns)),
            count_delay_max_ms: batching.and_then(|b| ms(b.delay.max_ns)),
            like_connection_wait_p99_ms: pool.and_then(|p| ms(p.like_wait.p99_ns)),
            neighbour_wait_mean_ms: pool.and_then(|p| ms(p.neighbour_wait.mean_ns)),
            neighbour_wait_p99_ms: pool.and_then(|p| ms(p.neighbour_wait.p99_ns)),
            hot_key_share: rounded(row.hot_key_share, 6),
            mode: if row.adaptive { "adaptive" } else { "static" },
            rows_total: row.rows_total,
            max_key_rows: row.max_key_rows,
            read_requests_per_s: reads.and_then(|r| rounded(r.requests_per_s, 3)),
            rows_read_per_s: reads.and_then(|r| rounded(r.rows_touched_per_s, 3)),
            rows_per_read: reads.and_then(|r| rounded(r.rows_per_read, 4)),
            cache_hit_ratio: reads.and_then(|r| rounded(r.cache_hit_ratio, 4)),
            staleness_mean_ms: reads.and_then(|r| ms(r.staleness.mean_ns)),
            staleness_p99_ms: reads.and_then(|r| ms(r.staleness.p99_ns)),
            staleness_likes_mean: reads.map(|r| r.staleness_likes.mean_ns as f64),
            staleness_likes_p99: reads.map(|r| r.staleness_likes.p99_ns as f64),
            read_lock_wait_p99_ms: reads.and_then(|r| ms(r.lock_wait.p99_ns)),
            saturated_at_s: row.saturated_at_s.and_then(|at| rounded(at, 3)),
            response_mean_ms: responses.and_then(|r| ms(r.mean_ns)),
            response_p50_ms: responses.and_then(|r| ms(r.p50_ns)),
            response_p99_ms: responses.and_then(|r| ms(r.p99_ns)),
            response_p999_ms: responses.and_then(|r| ms(r.p999_ns)),
            clients: closed.map(|c| c.clients),
            cpu_utilization: machine.and_then(|m| m.cpu_utilization.and_then(|u| rounded(u, 4))),
            fsyncs_per_commit: machine
                .and_then(|m| m.fsyncs_per_commit.and_then(|f| rounded(f, 4))),
            bottleneck: machine.map(|m| m.bottleneck.name()),
            overloaded_s: rounded(row.burst.overloaded_s, 3),
            first_slo_breach_s: row.burst.first_slo_breach_s.and_then(|s| rounded(s, 3)),
            drain_s: row.burst.drain_s.and_then(|s| rounded(s, 3)),
            backlog_growth_per_s: row.burst.backlog_growth_per_s.and_then(|g| rounded(g, 3)),
            tries_per_update: row.tries_per_update.and_then(|t| rounded(t, 4)),
            likes_stored: l(|l| l.stored),
            likes_counted: l(|l| l.counted),
            repeats_rejected: l(|l| l.rejected),
            crashed_likes: l(|l| l.crashed),
            withdrawn_likes: l(|l| l.withdrawn),
            insert_wait_p50_ms: likes.and_then(|l| ms(l.insert_waits.p50_ns)),
            insert_wait_p99_ms: likes.and_then(|l| ms(l.insert_waits.p99_ns)),
            insert_wait_p999_ms: likes.and_then(|l| ms(l.insert_waits.p999_ns)),
            hot_partition_share: likes.and_then(|l| rounded(l.hot_partition_share, 4)),
            hot_partition_utilization: likes.and_then(|l| rounded(l.hot_partition_utilization, 4)),
            like_latency_p50_ms: likes.and_then(|l| l.latency).and_then(|w| ms(w.p50_ns)),
            like_latency_p99_ms: likes.and_then(|l| l.latency).and_then(|w| ms(w.p99_ns)),
            drift_final: l(|l| l.drift_final),
            drift_max: l(|l| l.drift_max),
            reconciled_likes: l(|l| l.reconciled),
        }
    }
}
