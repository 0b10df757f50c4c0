//! `summary.csv` and `timeseries.csv`. Columns are a contract: new ones may be added, none is
//! renamed. Times are exact decimal milliseconds; rates have three decimals.

use crate::model::ShardRun;
use crate::model::time::{fmt_ms, fmt_s};
use crate::scenario::Scenario;

use crate::stats::WaitSummary;

use super::summary::SummaryRow;

/// The columns of `summary.csv`, in order.
pub const SUMMARY_COLUMNS: [&str; 36] = [
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
];

/// The columns of `timeseries.csv`, in order.
pub const TIMESERIES_COLUMNS: [&str; 9] = [
    "scenario",
    "policy",
    "shards",
    "t_s",
    "arrivals",
    "started",
    "backlog",
    "wait_p99_ms",
    "wait_max_ms",
];

/// Columns of `summary.csv` that hold text; every other column is a number.
pub const SUMMARY_TEXT_COLUMNS: [&str; 2] = ["scenario", "policy"];

/// The fields of each summary row as written in `summary.csv`, in [`SUMMARY_COLUMNS`] order.
/// The JSON output is built from the same fields, so the two always agree. Interval columns
/// are empty with a single replication.
pub fn summary_records(rows: &[SummaryRow], seed: u64, warmup_s: f64) -> Vec<[String; 36]> {
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
                format!("{:.3}", row.duration_s),
                format!("{:.3}", row.offered_per_s),
                format!("{:.3}", row.throughput_per_s),
                format!("{:.3}", row.ceiling_per_s),
                format!("{:.4}", row.utilization),
                fmt_ms(w.mean_ns),
                fmt_ms(w.p50_ns),
                fmt_ms(w.p90_ns),
                fmt_ms(w.p99_ns),
                fmt_ms(w.p999_ns),
                fmt_ms(w.max_ns),
                row.backlog_max.to_string(),
                row.backlog_final.to_string(),
                format!("{:.3}", row.peak_offered_per_s),
                format!("{:.4}", row.peak_utilization),
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
        })
        .collect()
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
