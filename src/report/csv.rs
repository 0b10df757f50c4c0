//! `summary.csv` and `timeseries.csv`. Columns are a contract: new ones may be added, none is
//! renamed. Times are exact decimal milliseconds; rates have three decimals.

use crate::model::ShardRun;
use crate::scenario::Scenario;
use crate::time::{fmt_ms, fmt_s};

use crate::figures::SummaryRow;
use crate::figures::columns::Feature;
use crate::figures::record::SummaryRecord;

/// The columns of `timeseries.csv`, in order.
pub const TIMESERIES_COLUMNS: [&str; 15] = [
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
    "drift",
];

/// A number with `places` decimals, or an empty cell when it is unbounded or undefined
/// (infinite or NaN): no CSV or JSON output ever holds `inf` or `NaN`.
pub fn decimal(value: f64, places: usize) -> String {
    if value.is_finite() {
        format!("{value:.places$}")
    } else {
        String::new()
    }
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
                    row.policy.to_string(),
                    row.shards().to_string(),
                    (rank + 1).to_string(),
                    scenario.key_name(key.key).into_owned(),
                    key.arrivals.to_string(),
                    decimal(offered, 3),
                    decimal(offered / row.ceiling_per_s, 4),
                    fmt_ms(key.mean_wait_ns),
                    key.p99_wait_ns.map(fmt_ms).unwrap_or_default(),
                    fmt_ms(key.max_wait_ns),
                    row.rows.mode().to_owned(),
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
                    scenario.name().to_owned(),
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
                    row.policy.to_string(),
                    row.shards().to_string(),
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
/// Its columns are the fields of [`SummaryRecord`], the same type the JSON output carries,
/// those of a feature the run lacks left out ([`Feature`]).
pub fn summary_csv(rows: &[SummaryRow], seed: u64, warmup_s: f64) -> Vec<u8> {
    let records: Vec<csv::StringRecord> = rows
        .iter()
        .map(|row| record_cells(&SummaryRecord::of(row, seed, warmup_s)))
        .collect();
    // A feature's own columns are written only when the run has the feature.
    let kept: Vec<usize> = (0..SummaryRecord::COLUMNS.len())
        .filter(|&at| Feature::of(SummaryRecord::COLUMNS[at].0).in_any(rows))
        .collect();
    let mut writer = csv::Writer::from_writer(Vec::new());
    write(
        &mut writer,
        kept.iter()
            .map(|&at| SummaryRecord::COLUMNS[at].0.to_owned()),
    );
    for record in &records {
        write(&mut writer, kept.iter().map(|&at| record[at].to_owned()));
    }
    finish(writer)
}

/// A summary record's cells, every column, as the CSV writes them.
fn record_cells(record: &SummaryRecord) -> csv::StringRecord {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    writer
        .serialize(record)
        .expect("writing CSV to memory cannot fail");
    let bytes = finish(writer);
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(bytes.as_slice())
        .records()
        .next()
        .and_then(Result::ok)
        .expect("a record written is read back")
}

/// Renders `timeseries.csv`: one row per shard count per window, in long format.
pub fn timeseries_csv(scenario: &Scenario, runs: &[ShardRun]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    write(
        &mut writer,
        TIMESERIES_COLUMNS.iter().map(|c| c.to_string()),
    );
    for run in runs {
        let policy = run.policy.to_string();
        for (index, window) in run.windows.iter().enumerate() {
            write(
                &mut writer,
                [
                    scenario.name().to_owned(),
                    policy.clone(),
                    run.shards.to_string(),
                    fmt_s(index as u64 * scenario.window()),
                    window.arrivals.to_string(),
                    window.started.to_string(),
                    window.backlog.to_string(),
                    window.wait_p99_ns().map(fmt_ms).unwrap_or_default(),
                    window.wait_max_ns().map(fmt_ms).unwrap_or_default(),
                    window.at_risk.to_string(),
                    run.rows().mode().to_owned(),
                    window.rows.to_string(),
                    window.hot_key_rows.to_string(),
                    window.backlog_peak.to_string(),
                    window.drift.to_string(),
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
