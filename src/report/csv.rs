//! `summary.csv` and `timeseries.csv`. Columns are a contract: new ones may be added, none is
//! renamed. Times are exact decimal milliseconds; rates have three decimals.

use crate::model::ShardRun;
use crate::model::time::{fmt_ms, fmt_s};
use crate::scenario::Scenario;

use crate::stats::WaitSummary;

use super::summary::SummaryRow;

/// The columns of `summary.csv`, in order.
pub const SUMMARY_COLUMNS: [&str; 73] = [
    "scenario",
    "policy",
    "shards",
    "arrivals",
    "completed",
    "duration_s",
    "offered_per_s",
    "throughput_per_s",
    "ceiling_per_s",
    "utilization",
    "wait_mean_ms",
    "wait_p50_ms",
    "wait_p90_ms",
    "wait_p99_ms",
    "wait_p999_ms",
    "wait_max_ms",
    "backlog_max",
    "backlog_final",
    "peak_offered_per_s",
    "peak_utilization",
    "keys_touched",
    "seed",
    "replications",
    "warmup_s",
    "wait_mean_ms_lo",
    "wait_mean_ms_hi",
    "wait_p50_ms_lo",
    "wait_p50_ms_hi",
    "wait_p90_ms_lo",
    "wait_p90_ms_hi",
    "wait_p99_ms_lo",
    "wait_p99_ms_hi",
    "wait_p999_ms_lo",
    "wait_p999_ms_hi",
    "wait_max_ms_lo",
    "wait_max_ms_hi",
    "likes",
    "likes_per_s",
    "attempts",
    "attempts_per_s",
    "amplification",
    "timeouts",
    "user_failures",
    "succeeded",
    "pending_likes",
    "duplicates",
    "count_drift",
    "goodput_per_s",
    "db_writes",
    "db_writes_per_s",
    "lost_likes",
    "at_risk_mean",
    "at_risk_max",
    "count_delay_p50_ms",
    "count_delay_p99_ms",
    "count_delay_max_ms",
    "like_connection_wait_p99_ms",
    "neighbour_wait_mean_ms",
    "neighbour_wait_p99_ms",
    "hot_key_share",
    "mode",
    "rows_total",
    "max_key_rows",
    "read_requests_per_s",
    "rows_read_per_s",
    "rows_per_read",
    "cache_hit_ratio",
    "staleness_mean_ms",
    "staleness_p99_ms",
    "staleness_likes_mean",
    "staleness_likes_p99",
    "read_lock_wait_p99_ms",
    "saturated_at_s",
];

/// The columns of `timeseries.csv`, in order.
pub const TIMESERIES_COLUMNS: [&str; 14] = [
    "scenario",
    "policy",
    "shards",
    "t_s",
    "arrivals",
    "started",
    "backlog",
    "wait_p99_ms",
    "wait_max_ms",
    "at_risk",
    "mode",
    "rows",
    "hot_key_rows",
    "backlog_peak",
];

/// Columns of `summary.csv` that hold text; every other column is a number.
pub const SUMMARY_TEXT_COLUMNS: [&str; 3] = ["scenario", "policy", "mode"];

/// A number with `places` decimals, or an empty cell when it is unbounded or undefined
/// (infinite or NaN): no CSV or JSON output ever holds `inf` or `NaN`.
pub fn decimal(value: f64, places: usize) -> String {
    if value.is_finite() {
        format!("{value:.places$}")
    } else {
        String::new()
    }
}

/// The `mode` column: `adaptive` or `static` row counts.
pub fn mode(adaptive: bool) -> &'static str {
    if adaptive { "adaptive" } else { "static" }
}

/// The fields of each summary row as written in `summary.csv`, in [`SUMMARY_COLUMNS`] order.
/// The JSON output is built from the same fields, so the two always agree. Interval columns
/// are empty with a single replication.
pub fn summary_records(rows: &[SummaryRow], seed: u64, warmup_s: f64) -> Vec<[String; 73]> {
    rows.iter()
        .map(|row| {
            let w = &row.waits;
            let bound = |summary: &Option<WaitSummary>, ns: fn(&WaitSummary) -> u64| {
                summary.as_ref().map(|s| fmt_ms(ns(s))).unwrap_or_default()
            };
            let (lo, hi) = (&row.waits_lo, &row.waits_hi);
            [
                row.scenario.clone(),
                row.policy.clone(),
                row.shards.to_string(),
                row.arrivals.to_string(),
                row.completed.to_string(),
                decimal(row.duration_s, 3),
                decimal(row.offered_per_s, 3),
                decimal(row.throughput_per_s, 3),
                decimal(row.ceiling_per_s, 3),
                decimal(row.utilization, 4),
                fmt_ms(w.mean_ns),
                fmt_ms(w.p50_ns),
                fmt_ms(w.p90_ns),
                fmt_ms(w.p99_ns),
                fmt_ms(w.p999_ns),
                fmt_ms(w.max_ns),
                row.backlog_max.to_string(),
                row.backlog_final.to_string(),
                decimal(row.peak_offered_per_s, 3),
                decimal(row.peak_utilization, 4),
                row.keys_touched.to_string(),
                seed.to_string(),
                row.replications.to_string(),
                format!("{warmup_s}"),
                bound(lo, |s| s.mean_ns),
                bound(hi, |s| s.mean_ns),
                bound(lo, |s| s.p50_ns),
                bound(hi, |s| s.p50_ns),
                bound(lo, |s| s.p90_ns),
                bound(hi, |s| s.p90_ns),
                bound(lo, |s| s.p99_ns),
                bound(hi, |s| s.p99_ns),
                bound(lo, |s| s.p999_ns),
                bound(hi, |s| s.p999_ns),
                bound(lo, |s| s.max_ns),
                bound(hi, |s| s.max_ns),
            ]
            .into_iter()
            .chain(extended_fields(row))
            .chain([
                decimal(row.hot_key_share, 6),
                mode(row.adaptive).to_owned(),
                row.rows_total.to_string(),
                row.max_key_rows.to_string(),
            ])
            .chain(read_fields(row))
            .chain([row
                .saturated_at_s
                .map(|at| decimal(at, 3))
                .unwrap_or_default()])
            .collect::<Vec<_>>()
            .try_into()
            .expect("one field per column")
        })
        .collect()
}

/// The columns of the optional behaviours, empty where the scenario lacks them.
fn extended_fields(row: &SummaryRow) -> [String; 23] {
    let number = |value: f64| {
        let text = decimal(value, 3);
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    let extended = row.extended.as_ref();
    let client = extended.and_then(|e| e.client);
    let batching = extended.and_then(|e| e.batching.as_ref());
    let pool = extended.and_then(|e| e.pool.as_ref());
    let c = |get: fn(&super::extended::ClientSummary) -> f64| {
        client.map(|c| number(get(&c))).unwrap_or_default()
    };
    let b = |get: fn(&super::extended::BatchSummary) -> f64| {
        batching.map(|b| number(get(b))).unwrap_or_default()
    };
    // Likes and pending likes come from the clients or, with batching, the app servers.
    let either = |from_client: fn(&super::extended::ClientSummary) -> f64,
                  from_batching: fn(&super::extended::BatchSummary) -> f64| {
        match (client, batching) {
            (Some(c), _) => number(from_client(&c)),
            (None, Some(b)) => number(from_batching(b)),
            _ => String::new(),
        }
    };
    [
        either(|c| c.likes, |b| b.likes),
        either(|c| c.likes_per_s, |b| b.likes_per_s),
        c(|c| c.attempts),
        c(|c| c.attempts_per_s),
        c(|c| c.amplification),
        c(|c| c.timeouts),
        c(|c| c.failed),
        c(|c| c.succeeded),
        either(|c| c.pending, |b| b.pending),
        c(|c| c.duplicates),
        c(|c| c.drift),
        c(|c| c.goodput_per_s),
        b(|b| b.db_writes),
        b(|b| b.db_writes_per_s),
        b(|b| b.lost),
        b(|b| b.at_risk_mean),
        b(|b| b.at_risk_max),
        batching.map(|b| fmt_ms(b.delay.p50_ns)).unwrap_or_default(),
        batching.map(|b| fmt_ms(b.delay.p99_ns)).unwrap_or_default(),
        batching.map(|b| fmt_ms(b.delay.max_ns)).unwrap_or_default(),
        pool.map(|p| fmt_ms(p.like_wait.p99_ns)).unwrap_or_default(),
        pool.map(|p| fmt_ms(p.neighbour_wait.mean_ns))
            .unwrap_or_default(),
        pool.map(|p| fmt_ms(p.neighbour_wait.p99_ns))
            .unwrap_or_default(),
    ]
}

/// The read-path columns, empty without `[reads]`.
fn read_fields(row: &SummaryRow) -> [String; 9] {
    let Some(r) = row.extended.as_ref().and_then(|e| e.reads.as_ref()) else {
        return Default::default();
    };
    [
        decimal(r.requests_per_s, 3),
        decimal(r.rows_touched_per_s, 3),
        decimal(r.rows_per_read, 4),
        decimal(r.cache_hit_ratio, 4),
        fmt_ms(r.staleness.mean_ns),
        fmt_ms(r.staleness.p99_ns),
        r.staleness_likes.mean_ns.to_string(),
        r.staleness_likes.p99_ns.to_string(),
        fmt_ms(r.lock_wait.p99_ns),
    ]
}

/// The columns of `keys.csv`, in order.
pub const KEY_COLUMNS: [&str; 13] = [
    "scenario",
    "policy",
    "shards",
    "rank",
    "key",
    "arrivals",
    "offered_per_s",
    "utilization",
    "wait_mean_ms",
    "wait_p99_ms",
    "wait_max_ms",
    "mode",
    "rows",
];

/// Renders `keys.csv`: the hottest keys of each shard count's first replication, with their
/// load against one key's ceiling and their waits.
pub fn keys_csv(scenario: &Scenario, rows: &[SummaryRow], runs: &[ShardRun]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    write(&mut writer, KEY_COLUMNS.iter().map(|c| c.to_string()));
    let duration_s = scenario.measured_duration_s();
    for (row, run) in rows.iter().zip(runs) {
        for (rank, key) in run.hot_keys.iter().enumerate() {
            let offered = key.arrivals as f64 / duration_s;
            write(
                &mut writer,
                [
                    row.scenario.clone(),
                    row.policy.clone(),
                    row.shards.to_string(),
                    (rank + 1).to_string(),
                    scenario.key_name(key.key).into_owned(),
                    key.arrivals.to_string(),
                    decimal(offered, 3),
                    decimal(offered / row.ceiling_per_s, 4),
                    fmt_ms(key.mean_wait_ns),
                    key.p99_wait_ns.map(fmt_ms).unwrap_or_default(),
                    fmt_ms(key.max_wait_ns),
                    mode(row.adaptive).to_owned(),
                    key.rows.to_string(),
                ],
            );
        }
    }
    finish(writer)
}

/// The columns of `growth.csv`, in order.
pub const GROWTH_COLUMNS: [&str; 6] = [
    "scenario",
    "key",
    "published_s",
    "effective_s",
    "rows_before",
    "rows_after",
];

/// Renders `growth.csv`: every growth of a key's row count in the adaptive run (first
/// replication) — each key's row count over time as steps.
pub fn growth_csv(scenario: &Scenario, runs: &[ShardRun]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    write(&mut writer, GROWTH_COLUMNS.iter().map(|c| c.to_string()));
    for run in runs.iter().filter(|run| run.adaptive) {
        for growth in &run.growths {
            write(
                &mut writer,
                [
                    scenario.name.clone(),
                    scenario.key_name(growth.key).into_owned(),
                    fmt_s(growth.published),
                    fmt_s(growth.effective),
                    growth.from.to_string(),
                    growth.to.to_string(),
                ],
            );
        }
    }
    finish(writer)
}

/// The columns of `neighbours.csv`, in order.
pub const NEIGHBOUR_COLUMNS: [&str; 9] = [
    "scenario",
    "policy",
    "shards",
    "neighbour",
    "requests",
    "wait_mean_ms",
    "wait_p50_ms",
    "wait_p99_ms",
    "wait_max_ms",
];

/// Renders `neighbours.csv`: each neighbour endpoint's connection waits per shard count.
pub fn neighbours_csv(rows: &[SummaryRow]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    write(&mut writer, NEIGHBOUR_COLUMNS.iter().map(|c| c.to_string()));
    for row in rows {
        let Some(pool) = row.extended.as_ref().and_then(|e| e.pool.as_ref()) else {
            continue;
        };
        for (name, waits) in &pool.neighbours {
            write(
                &mut writer,
                [
                    row.scenario.clone(),
                    row.policy.clone(),
                    row.shards.to_string(),
                    name.clone(),
                    waits.count.to_string(),
                    fmt_ms(waits.mean_ns),
                    fmt_ms(waits.p50_ns),
                    fmt_ms(waits.p99_ns),
                    fmt_ms(waits.max_ns),
                ],
            );
        }
    }
    finish(writer)
}

/// Renders `summary.csv`: one row per shard count.
pub fn summary_csv(rows: &[SummaryRow], seed: u64, warmup_s: f64) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    write(&mut writer, SUMMARY_COLUMNS.iter().map(|c| c.to_string()));
    for record in summary_records(rows, seed, warmup_s) {
        write(&mut writer, record);
    }
    finish(writer)
}

/// Renders `timeseries.csv`: one row per shard count per window, in long format.
pub fn timeseries_csv(scenario: &Scenario, runs: &[ShardRun]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    write(
        &mut writer,
        TIMESERIES_COLUMNS.iter().map(|c| c.to_string()),
    );
    let policy = scenario.policy.to_string();
    for run in runs {
        for (index, window) in run.windows.iter().enumerate() {
            write(
                &mut writer,
                [
                    scenario.name.clone(),
                    policy.clone(),
                    run.shards.to_string(),
                    fmt_s(index as u64 * scenario.window),
                    window.arrivals.to_string(),
                    window.started.to_string(),
                    window.backlog.to_string(),
                    window.wait_p99_ns().map(fmt_ms).unwrap_or_default(),
                    window.wait_max_ns().map(fmt_ms).unwrap_or_default(),
                    window.at_risk.to_string(),
                    mode(run.adaptive).to_owned(),
                    window.rows.to_string(),
                    window.hot_key_rows.to_string(),
                    window.backlog_peak.to_string(),
                ],
            );
        }
    }
    finish(writer)
}

fn write(writer: &mut csv::Writer<Vec<u8>>, fields: impl IntoIterator<Item = String>) {
    writer
        .write_record(fields)
        .expect("writing CSV to memory cannot fail");
}

fn finish(writer: csv::Writer<Vec<u8>>) -> Vec<u8> {
    writer
        .into_inner()
        .expect("flushing CSV to memory cannot fail")
}
