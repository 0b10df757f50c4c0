//! One row of `summary.csv`, as a type: serialised by `csv` for the file and by `serde_json`
//! for `--format json`, so the two carry the same columns and values by construction. Each
//! field's doc is the column's meaning (docs/outputs.md follows them). Numbers
//! are numbers; a figure that is unbounded or undefined (or a section the scenario lacks) is
//! `None`: an empty cell in the CSV, `null` in JSON — never `inf` or `NaN`.

use serde::Serialize;

use crate::stats::WaitSummary;

use super::extended::{BatchSummary, ClientSummary};
use super::summary::SummaryRow;

/// How `shardsim check` judges a column of `summary.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Waits and backlogs: up is a regression.
    LowerIsBetter,
    /// Throughput: down is a regression.
    HigherIsBetter,
    /// The offered load and capacity: any move is a change of scenario or model.
    Fixed,
    /// Bookkeeping (names, the seed, interval bounds, counts behind other columns): not
    /// compared.
    Unchecked,
}

/// Defines [`SummaryRecord`] and, beside each column, how `shardsim check` judges it: one
/// list, so a new column cannot be left out of the check by mistake.
macro_rules! summary_columns {
    ($($(#[$doc:meta])* $name:ident: $ty:ty => $check:ident,)*) => {
        /// One shard count's figures as `summary.csv` writes them, in column order.
        #[derive(Debug, Clone, Default, PartialEq, Serialize)]
        pub struct SummaryRecord {
            $($(#[$doc])* pub $name: $ty,)*
        }

        impl SummaryRecord {
            /// Every column, in order, with how `check` judges it.
            pub const COLUMNS: &'static [(&'static str, Check)] =
                &[$((stringify!($name), Check::$check),)*];
        }
    };
}

summary_columns! {
    /// The scenario's name.
    scenario: String => Unchecked,
    /// The slot-choice policy.
    policy: String => Unchecked,
    /// Rows per key (adaptive: the rows a key starts with).
    shards: u32 => Unchecked,
    /// Updates that reached the rows in the measured period.
    arrivals: u64 => Fixed,
    /// Holds that finished in the measured period.
    completed: u64 => HigherIsBetter,
    /// The measured period, s.
    duration_s: Option<f64> => Fixed,
    /// Arrivals ÷ duration.
    offered_per_s: Option<f64> => Fixed,
    /// Completed ÷ duration.
    throughput_per_s: Option<f64> => HigherIsBetter,
    /// Shards ÷ mean hold: one key's most increments a second (empty when unbounded).
    ceiling_per_s: Option<f64> => Fixed,
    /// The busiest key's offered rate ÷ ceiling (empty when undefined).
    utilization: Option<f64> => Fixed,
    /// Mean wait for the row, ms (exact).
    wait_mean_ms: Option<f64> => LowerIsBetter,
    /// Median wait, ms.
    wait_p50_ms: Option<f64> => LowerIsBetter,
    /// 90th-percentile wait, ms.
    wait_p90_ms: Option<f64> => LowerIsBetter,
    /// 99th-percentile wait, ms.
    wait_p99_ms: Option<f64> => LowerIsBetter,
    /// 99.9th-percentile wait, ms.
    wait_p999_ms: Option<f64> => LowerIsBetter,
    /// Longest wait, ms (exact).
    wait_max_ms: Option<f64> => LowerIsBetter,
    /// Most increments waiting at any instant.
    backlog_max: u64 => LowerIsBetter,
    /// Increments still waiting at the end.
    backlog_final: u64 => LowerIsBetter,
    /// The busiest key's peak offered rate (with retries, the load the rows see).
    peak_offered_per_s: Option<f64> => Fixed,
    /// Peak offered ÷ ceiling.
    peak_utilization: Option<f64> => Fixed,
    /// Keys that received at least one increment.
    keys_touched: u64 => Fixed,
    /// The seed used.
    seed: u64 => Unchecked,
    /// Replications behind each figure.
    replications: u32 => Unchecked,
    /// The warm-up left out of the statistics, s.
    warmup_s: f64 => Unchecked,
    /// Lower end of the mean wait's 95% interval, ms (two or more replications).
    wait_mean_ms_lo: Option<f64> => Unchecked,
    /// Upper end of the mean wait's 95% interval, ms.
    wait_mean_ms_hi: Option<f64> => Unchecked,
    /// Lower end of the median's interval, ms.
    wait_p50_ms_lo: Option<f64> => Unchecked,
    /// Upper end of the median's interval, ms.
    wait_p50_ms_hi: Option<f64> => Unchecked,
    /// Lower end of the p90's interval, ms.
    wait_p90_ms_lo: Option<f64> => Unchecked,
    /// Upper end of the p90's interval, ms.
    wait_p90_ms_hi: Option<f64> => Unchecked,
    /// Lower end of the p99's interval, ms.
    wait_p99_ms_lo: Option<f64> => Unchecked,
    /// Upper end of the p99's interval, ms.
    wait_p99_ms_hi: Option<f64> => Unchecked,
    /// Lower end of the p99.9's interval, ms.
    wait_p999_ms_lo: Option<f64> => Unchecked,
    /// Upper end of the p99.9's interval, ms.
    wait_p999_ms_hi: Option<f64> => Unchecked,
    /// Lower end of the maximum's interval, ms.
    wait_max_ms_lo: Option<f64> => Unchecked,
    /// Upper end of the maximum's interval, ms.
    wait_max_ms_hi: Option<f64> => Unchecked,
    /// Original likes (clients or app servers).
    likes: Option<f64> => Unchecked,
    /// Original likes per second.
    likes_per_s: Option<f64> => Unchecked,
    /// Attempts, retries included.
    attempts: Option<f64> => Unchecked,
    /// Attempts per second.
    attempts_per_s: Option<f64> => Unchecked,
    /// Attempts per like.
    amplification: Option<f64> => LowerIsBetter,
    /// Attempts that waited past the timeout.
    timeouts: Option<f64> => Unchecked,
    /// Likes that failed after their last retry.
    user_failures: Option<f64> => LowerIsBetter,
    /// Likes that succeeded.
    succeeded: Option<f64> => Unchecked,
    /// Likes still pending at the end.
    pending_likes: Option<f64> => Unchecked,
    /// Runs of a like beyond its first.
    duplicates: Option<f64> => Unchecked,
    /// Final count minus the likes that ran.
    count_drift: Option<f64> => LowerIsBetter,
    /// Successful likes per second.
    goodput_per_s: Option<f64> => HigherIsBetter,
    /// Flush updates reaching the database.
    db_writes: Option<f64> => Fixed,
    /// Flush updates per second.
    db_writes_per_s: Option<f64> => Unchecked,
    /// Likes lost in crashes.
    lost_likes: Option<f64> => LowerIsBetter,
    /// Likes held unflushed in app-server memory, time-averaged.
    at_risk_mean: Option<f64> => Unchecked,
    /// Most likes held unflushed at once.
    at_risk_max: Option<f64> => Unchecked,
    /// Median delay from a like to the commit that counted it, ms.
    count_delay_p50_ms: Option<f64> => Unchecked,
    /// 99th-percentile count delay, ms.
    count_delay_p99_ms: Option<f64> => LowerIsBetter,
    /// Longest count delay, ms.
    count_delay_max_ms: Option<f64> => Unchecked,
    /// Likes' p99 wait for a pool connection, ms.
    like_connection_wait_p99_ms: Option<f64> => LowerIsBetter,
    /// Neighbour requests' mean wait for a connection, ms.
    neighbour_wait_mean_ms: Option<f64> => Unchecked,
    /// Neighbour requests' p99 wait for a connection, ms.
    neighbour_wait_p99_ms: Option<f64> => LowerIsBetter,
    /// The busiest key's share of the arrivals.
    hot_key_share: Option<f64> => Unchecked,
    /// `static`, or `adaptive` for the adaptive run.
    mode: &'static str => Unchecked,
    /// Rows over all keys at the end.
    rows_total: u64 => Unchecked,
    /// The most rows on one key at the end.
    max_key_rows: u32 => Unchecked,
    /// Read requests per second.
    read_requests_per_s: Option<f64> => Unchecked,
    /// Rows read per second.
    rows_read_per_s: Option<f64> => Unchecked,
    /// Rows read per key read.
    rows_per_read: Option<f64> => Unchecked,
    /// Share of key reads answered from the cache.
    cache_hit_ratio: Option<f64> => Unchecked,
    /// Mean age of the shown count, ms.
    staleness_mean_ms: Option<f64> => Unchecked,
    /// 99th-percentile age of the shown count, ms.
    staleness_p99_ms: Option<f64> => Unchecked,
    /// Mean likes the shown count trailed by.
    staleness_likes_mean: Option<f64> => Unchecked,
    /// 99th-percentile likes the shown count trailed by.
    staleness_likes_p99: Option<f64> => Unchecked,
    /// Locking reads' p99 wait for the rows, ms.
    read_lock_wait_p99_ms: Option<f64> => Unchecked,
    /// When the shard count was stopped as saturated, s (empty when it never was).
    saturated_at_s: Option<f64> => Unchecked,
    /// Mean response time, send → commit acknowledged as the client sees it, ms (closed loops,
    /// and open arrivals on a machine).
    response_mean_ms: Option<f64> => LowerIsBetter,
    /// Closed loop: median response time, ms.
    response_p50_ms: Option<f64> => Unchecked,
    /// Closed loop: 99th-percentile response time, ms.
    response_p99_ms: Option<f64> => LowerIsBetter,
    /// Closed loop: 99.9th-percentile response time, ms.
    response_p999_ms: Option<f64> => Unchecked,
    /// Closed loop: the clients.
    clients: Option<u32> => Unchecked,
    /// `[machine]`: the cores' busy fraction.
    cpu_utilization: Option<f64> => LowerIsBetter,
    /// `[wal]`: flushes per commit.
    fsyncs_per_commit: Option<f64> => LowerIsBetter,
    /// With a machine: what limits the shard count (row, cpu, wal or clients).
    bottleneck: Option<&'static str> => Unchecked,
    /// Time in windows whose offered rate exceeded the ceiling, s.
    overloaded_s: Option<f64> => Unchecked,
    /// Start of the first window whose p99 wait passed the `[slo]` p99 target, s.
    first_slo_breach_s: Option<f64> => Unchecked,
    /// From the end of the last overloaded window until the backlog is below 1% of its
    /// largest, s (empty when never overloaded or never drained).
    drain_s: Option<f64> => Unchecked,
    /// The backlog's slope while overloaded, increments per second.
    backlog_growth_per_s: Option<f64> => Unchecked,
    /// `skip-locked`: rows tried per update.
    tries_per_update: Option<f64> => Unchecked,
    /// `[likes_table]`: likes stored in the likes table.
    likes_stored: Option<f64> => Unchecked,
    /// `[likes_table]`: increments committed for a stored like.
    likes_counted: Option<f64> => Unchecked,
    /// `[likes_table]`: attempts the primary key rejected (double taps, retries of a stored
    /// like).
    repeats_rejected: Option<f64> => Fixed,
    /// `[likes_table]`: attempts that failed between the insert and the increment.
    crashed_likes: Option<f64> => Unchecked,
    /// `[likes_table]`: attempts their client cancelled before they committed.
    withdrawn_likes: Option<f64> => Unchecked,
    /// `[likes_table]`: median wait for the partition's insert path, ms.
    insert_wait_p50_ms: Option<f64> => Unchecked,
    /// `[likes_table]`: 99th-percentile wait for the insert path, ms.
    insert_wait_p99_ms: Option<f64> => LowerIsBetter,
    /// `[likes_table]`: 99.9th-percentile wait for the insert path, ms.
    insert_wait_p999_ms: Option<f64> => Unchecked,
    /// `[likes_table]`: the busiest partition's share of the inserts.
    hot_partition_share: Option<f64> => Unchecked,
    /// `[likes_table]`: the busiest partition's busy fraction.
    hot_partition_utilization: Option<f64> => LowerIsBetter,
    /// `[likes_table]`: median like latency end to end (send → answer), ms.
    like_latency_p50_ms: Option<f64> => Unchecked,
    /// `[likes_table]`: 99th-percentile like latency end to end, ms.
    like_latency_p99_ms: Option<f64> => LowerIsBetter,
    /// `[likes_table]`: stored likes the count misses for good at the end.
    drift_final: Option<f64> => Unchecked,
    /// `[likes_table]`: the most such likes at any instant.
    drift_max: Option<f64> => LowerIsBetter,
    /// `[likes_table]`: likes `[reconcile]` added back.
    reconciled_likes: Option<f64> => Unchecked,
    /// `[stalls]`: stalls that began in the measured period.
    stalls: Option<f64> => Fixed,
    /// `[stalls]`: time the machine was stalled in the measured period, s.
    stalled_s: Option<f64> => Fixed,
    /// `[stalls]`: the p99 wait of the same arrivals on the same machine without its stalls,
    /// ms (`wait_p99_ms` is with them).
    wait_p99_without_stalls_ms: Option<f64> => LowerIsBetter,
    /// Probed for metastability: `stable` (keeps up at the peak and recovers from every
    /// trigger), `metastable` (keeps up, but a trigger tips it) or `collapsed` (falls behind
    /// from empty); `check` counts a move down that list as a regression.
    stability: Option<&'static str> => LowerIsBetter,
    /// Probed: the highest rate over all keys it keeps up with from empty, per second.
    advertised_capacity_per_s: Option<f64> => HigherIsBetter,
    /// Probed: the highest rate over all keys at which it recovers from every trigger, per
    /// second.
    hidden_capacity_per_s: Option<f64> => HigherIsBetter,
    /// Probed: the trigger that tipped it (metastable), else the one it took longest to
    /// recover from: `stall-p99`, `stall-longest` or `burst`.
    trigger: Option<&'static str> => Unchecked,
    /// Probed: how long after that trigger began the queue was back at its level before it, s
    /// (empty when it never was within the recovery window).
    recovery_s: Option<f64> => Unchecked,
    /// A closed loop on a machine: the client count (of 1, 2, 4, … and its own) at which its
    /// rows commit the most — its knee.
    best_clients: Option<u32> => Unchecked,
    /// A closed loop on a machine: what its rows commit at that client count, per second.
    best_clients_per_s: Option<f64> => HigherIsBetter,
    /// With a calibration's band: the lowest throughput over the band's ends, per second.
    throughput_band_lo_per_s: Option<f64> => HigherIsBetter,
    /// With a calibration's band: the highest throughput over its ends, per second.
    throughput_band_hi_per_s: Option<f64> => Unchecked,
    /// With a calibration's band: the lowest p99 over its ends (a client's response where
    /// the run has responses, else the wait for a row), ms.
    response_p99_band_lo_ms: Option<f64> => Unchecked,
    /// With a calibration's band: the highest p99 over its ends, ms.
    response_p99_band_hi_ms: Option<f64> => LowerIsBetter,
    /// With a calibration's band: the share of the database's measurements it is meant to
    /// hold (empty for an old calibration's spread, which states none).
    band_coverage: Option<f64> => Unchecked,
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
    Some(crate::time::ns_to_ms(ns))
}

impl SummaryRecord {
    /// The record of one summary row.
    pub fn of(row: &SummaryRow, seed: u64, warmup_s: f64) -> SummaryRecord {
        let mut record = SummaryRecord::core(row, seed, warmup_s);
        record.set_intervals(row.waits_lo.as_ref(), row.waits_hi.as_ref());
        record.set_clients(row);
        record.set_reads(row);
        record.set_machine(row);
        record.set_likes(row);
        record.set_stability(row);
        record.best_clients = row.knee().map(|k| k.best_clients());
        record.best_clients_per_s = row.knee().and_then(|k| rounded(k.best_per_s(), 1));
        record.set_band(row);
        record
    }

    /// The columns every run has: the rows' load, waits, backlog and burst.
    fn core(row: &SummaryRow, seed: u64, warmup_s: f64) -> SummaryRecord {
        let w = &row.waits;
        SummaryRecord {
            scenario: row.scenario.clone(),
            policy: row.policy.to_string(),
            shards: row.shards(),
            arrivals: row.arrivals(),
            completed: row.completed(),
            duration_s: rounded(row.duration_s, 3),
            offered_per_s: rounded(row.offered_per_s(), 3),
            throughput_per_s: rounded(row.throughput_per_s(), 3),
            ceiling_per_s: rounded(row.ceiling_per_s, 3),
            utilization: rounded(row.utilization(), 4),
            wait_mean_ms: ms(w.mean_ns),
            wait_p50_ms: ms(w.p50_ns),
            wait_p90_ms: ms(w.p90_ns),
            wait_p99_ms: ms(w.p99_ns),
            wait_p999_ms: ms(w.p999_ns),
            wait_max_ms: ms(w.max_ns),
            backlog_max: row.backlog_max,
            backlog_final: row.backlog_final,
            peak_offered_per_s: rounded(row.peak_offered_per_s, 3),
            peak_utilization: rounded(row.peak_utilization(), 4),
            keys_touched: row.keys_touched as u64,
            seed,
            replications: row.replications,
            warmup_s,
            hot_key_share: rounded(row.hot_key_share, 6),
            mode: row.rows.mode(),
            rows_total: row.rows_total,
            max_key_rows: row.max_key_rows,
            saturated_at_s: row.saturated_at_s.and_then(|at| rounded(at, 3)),
            overloaded_s: rounded(row.burst.overloaded_s, 3),
            first_slo_breach_s: row.burst.first_slo_breach_s.and_then(|s| rounded(s, 3)),
            drain_s: row.burst.drain_s.and_then(|s| rounded(s, 3)),
            backlog_growth_per_s: row.burst.backlog_growth_per_s.and_then(|g| rounded(g, 3)),
            tries_per_update: row.tries_per_update.and_then(|t| rounded(t, 4)),
            ..SummaryRecord::default()
        }
    }

    /// The waits' 95% intervals over replications.
    fn set_intervals(&mut self, lo: Option<&WaitSummary>, hi: Option<&WaitSummary>) {
        let bound = |summary: Option<&WaitSummary>, ns: fn(&WaitSummary) -> u64| {
            summary.and_then(|s| ms(ns(s)))
        };
        self.wait_mean_ms_lo = bound(lo, |s| s.mean_ns);
        self.wait_mean_ms_hi = bound(hi, |s| s.mean_ns);
        self.wait_p50_ms_lo = bound(lo, |s| s.p50_ns);
        self.wait_p50_ms_hi = bound(hi, |s| s.p50_ns);
        self.wait_p90_ms_lo = bound(lo, |s| s.p90_ns);
        self.wait_p90_ms_hi = bound(hi, |s| s.p90_ns);
        self.wait_p99_ms_lo = bound(lo, |s| s.p99_ns);
        self.wait_p99_ms_hi = bound(hi, |s| s.p99_ns);
        self.wait_p999_ms_lo = bound(lo, |s| s.p999_ns);
        self.wait_p999_ms_hi = bound(hi, |s| s.p999_ns);
        self.wait_max_ms_lo = bound(lo, |s| s.max_ns);
        self.wait_max_ms_hi = bound(hi, |s| s.max_ns);
    }

    /// The clients' columns: timeouts and retries, batching and the pool.
    fn set_clients(&mut self, row: &SummaryRow) {
        let extended = row.extended.as_ref();
        let client = extended.and_then(|e| e.client);
        let batching = extended.and_then(|e| e.batching.as_ref());
        let pool = extended.and_then(|e| e.pool.as_ref());
        let c = |get: fn(&ClientSummary) -> f64| client.and_then(|c| rounded(get(&c), 3));
        let b = |get: fn(&BatchSummary) -> f64| batching.and_then(|b| rounded(get(b), 3));
        // Likes and pending likes come from the clients or, with batching, the app servers.
        let either = |from_client: fn(&ClientSummary) -> f64,
                      from_batching: fn(&BatchSummary) -> f64| {
            c(from_client).or_else(|| b(from_batching))
        };
        self.likes = either(|c| c.likes, |b| b.likes);
        self.likes_per_s = either(|c| c.likes_per_s, |b| b.likes_per_s);
        self.attempts = c(|c| c.attempts);
        self.attempts_per_s = c(|c| c.attempts_per_s);
        self.amplification = c(|c| c.amplification);
        self.timeouts = c(|c| c.timeouts);
        self.user_failures = c(|c| c.failed);
        self.succeeded = c(|c| c.succeeded);
        self.pending_likes = either(|c| c.pending, |b| b.pending);
        self.duplicates = c(|c| c.duplicates);
        self.count_drift = c(|c| c.drift);
        self.goodput_per_s = c(|c| c.goodput_per_s);
        self.db_writes = b(|b| b.db_writes);
        self.db_writes_per_s = b(|b| b.db_writes_per_s);
        self.lost_likes = b(|b| b.lost);
        self.at_risk_mean = b(|b| b.at_risk_mean);
        self.at_risk_max = b(|b| b.at_risk_max);
        self.count_delay_p50_ms = batching.and_then(|b| ms(b.delay.p50_ns));
        self.count_delay_p99_ms = batching.and_then(|b| ms(b.delay.p99_ns));
        self.count_delay_max_ms = batching.and_then(|b| ms(b.delay.max_ns));
        self.like_connection_wait_p99_ms = pool.and_then(|p| ms(p.like_wait.p99_ns));
        self.neighbour_wait_mean_ms = pool.and_then(|p| ms(p.neighbour_wait.mean_ns));
        self.neighbour_wait_p99_ms = pool.and_then(|p| ms(p.neighbour_wait.p99_ns));
    }

    /// The read path's columns.
    fn set_reads(&mut self, row: &SummaryRow) {
        let Some(r) = row.extended.as_ref().and_then(|e| e.reads.as_ref()) else {
            return;
        };
        self.read_requests_per_s = rounded(r.requests_per_s, 3);
        self.rows_read_per_s = rounded(r.rows_touched_per_s, 3);
        self.rows_per_read = rounded(r.rows_per_read, 4);
        self.cache_hit_ratio = rounded(r.cache_hit_ratio, 4);
        self.staleness_mean_ms = ms(r.staleness.mean_ns);
        self.staleness_p99_ms = ms(r.staleness.p99_ns);
        self.staleness_likes_mean = Some(r.staleness_likes.mean_ns as f64);
        self.staleness_likes_p99 = Some(r.staleness_likes.p99_ns as f64);
        self.read_lock_wait_p99_ms = ms(r.lock_wait.p99_ns);
    }

    /// The responses (a closed loop's clients', or open arrivals' on a machine) and the
    /// machine's columns.
    fn set_machine(&mut self, row: &SummaryRow) {
        let closed = row.closed.as_ref();
        let machine = row.machine.as_ref();
        let responses = closed
            .map(|c| c.responses)
            .or_else(|| machine.and_then(|m| m.responses));
        self.response_mean_ms = responses.and_then(|r| ms(r.mean_ns));
        self.response_p50_ms = responses.and_then(|r| ms(r.p50_ns));
        self.response_p99_ms = responses.and_then(|r| ms(r.p99_ns));
        self.response_p999_ms = responses.and_then(|r| ms(r.p999_ns));
        self.clients = closed.map(|c| c.clients);
        self.cpu_utilization = machine.and_then(|m| m.cpu_utilization.and_then(|u| rounded(u, 4)));
        self.fsyncs_per_commit =
            machine.and_then(|m| m.fsyncs_per_commit.and_then(|f| rounded(f, 4)));
        self.bottleneck = machine.map(|m| m.bottleneck.name());
        if let Some(stalls) = machine.and_then(|m| m.stalls) {
            self.stalls = rounded(stalls.stalls, 3);
            self.stalled_s = rounded(stalls.stalled_s, 6);
            self.wait_p99_without_stalls_ms = rounded(stalls.wait_p99_without_ns / 1e6, 6);
        }
    }

    /// The calibration band's columns.
    fn set_band(&mut self, row: &SummaryRow) {
        let Some(band) = row.band else {
            return;
        };
        self.throughput_band_lo_per_s = rounded(band.throughput_per_s.0, 3);
        self.throughput_band_hi_per_s = rounded(band.throughput_per_s.1, 3);
        self.response_p99_band_lo_ms = ms(band.p99_ns.0);
        self.response_p99_band_hi_ms = ms(band.p99_ns.1);
        self.band_coverage = band.coverage;
    }

    /// The stability probe's columns.
    fn set_stability(&mut self, row: &SummaryRow) {
        let Some(probed) = row.stability() else {
            return;
        };
        self.stability = Some(probed.stability().name());
        self.advertised_capacity_per_s = rounded(probed.advertised_per_s(), 1);
        self.hidden_capacity_per_s = rounded(probed.hidden_per_s(), 1);
        self.trigger = probed.trigger().map(|trigger| trigger.name());
        self.recovery_s = probed
            .slowest()
            .and_then(|(_, after)| rounded(crate::time::ns_to_s(after), 3));
    }

    /// The likes table's columns.
    fn set_likes(&mut self, row: &SummaryRow) {
        let Some(likes) = row.likes.as_ref() else {
            return;
        };
        self.likes_stored = rounded(likes.stored, 3);
        self.likes_counted = rounded(likes.counted, 3);
        self.repeats_rejected = rounded(likes.rejected, 3);
        self.crashed_likes = rounded(likes.crashed, 3);
        self.withdrawn_likes = rounded(likes.withdrawn, 3);
        self.insert_wait_p50_ms = ms(likes.insert_waits.p50_ns);
        self.insert_wait_p99_ms = ms(likes.insert_waits.p99_ns);
        self.insert_wait_p999_ms = ms(likes.insert_waits.p999_ns);
        self.hot_partition_share = rounded(likes.hot_partition_share, 4);
        self.hot_partition_utilization = rounded(likes.hot_partition_utilization, 4);
        self.like_latency_p50_ms = likes.latency.and_then(|w| ms(w.p50_ns));
        self.like_latency_p99_ms = likes.latency.and_then(|w| ms(w.p99_ns));
        self.drift_final = rounded(likes.drift_final, 3);
        self.drift_max = rounded(likes.drift_max, 3);
        self.reconciled_likes = rounded(likes.reconciled, 3);
    }
}
