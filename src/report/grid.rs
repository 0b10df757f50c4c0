//! The outputs of a grid sweep, in tidy long format: `summary.csv` and `timeseries.csv` gain
//! one leading column per swept field (one row per configuration × shard count), `sweep.csv`
//! holds one row per configuration × policy with what it recommends, and the terminal prints
//! the recommended shard count as a grid.
//!
//! Each configuration's rows are rendered on their own ([`ConfigBlock`]) exactly as a run of
//! that configuration writes them, then prefixed with its values; [`assemble`] joins the
//! blocks in grid order. A partition renders only its blocks and `shardsim merge` joins every
//! slice's blocks with the same function, so a merged output is the single run's, byte for
//! byte.

use std::fmt::Write;

use crate::model::ShardRun;
use crate::scenario::Scenario;

use super::csv::{decimal, summary_csv, timeseries_csv};
use super::units;
use crate::figures::{Recommendation, SummaryRow, by_policy};

/// The columns of `sweep.csv` after the swept fields.
pub const SWEEP_COLUMNS: [&str; 7] = [
    "policy",
    "recommended_shards",
    "smallest_stable_shards",
    "smallest_meeting_target_shards",
    "recommended_p99_ms",
    "recommended_p999_ms",
    "peak_offered_per_s",
];

/// One configuration's CSV text: each file with its header line, as a run of that
/// configuration alone writes it (`sweep` without a header). A partial merge keeps finished
/// blocks as JSON lines (without the remedy, which only a run reports).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConfigBlock {
    /// Its position in grid order.
    pub(crate) index: usize,
    /// `summary.csv` with its values prefixed, header first.
    pub(crate) summary: String,
    /// `timeseries.csv` with its values prefixed, header first.
    pub(crate) timeseries: String,
    /// Its `sweep.csv` rows, one per policy.
    pub sweep: String,
    /// What would help, when a policy of it meets no target of `[slo]` at any simulated
    /// shard count ([`crate::figures::remedy`]).
    #[serde(skip)]
    pub(crate) remedy: Option<&'static str>,
}

/// Renders one configuration's rows; `values` are its values of the swept `fields`.
pub fn config_block(
    index: usize,
    fields: &[String],
    values: &[String],
    scenario: &Scenario,
    rows: &[SummaryRow],
    first: &[ShardRun],
) -> ConfigBlock {
    let prefix = csv_fields(values);
    let summary = String::from_utf8(summary_csv(
        rows,
        scenario.seed(),
        crate::time::ns_to_s(scenario.warmup()),
    ))
    .expect("CSV of UTF-8 fields is UTF-8");
    let timeseries =
        String::from_utf8(timeseries_csv(scenario, first)).expect("CSV of UTF-8 fields is UTF-8");
    let mut sweep = String::new();
    for group in by_policy(scenario, rows) {
        sweep.push_str(&sweep_line(
            values,
            scenario,
            group.policy,
            group.recommendation,
            group.rows,
        ));
    }
    let names = csv_fields(fields);
    let unmet = crate::figures::by_policy(scenario, rows)
        .iter()
        .any(|group| group.recommendation.meets_target.is_none());
    ConfigBlock {
        index,
        summary: prefixed(&names, &prefix, &summary),
        timeseries: prefixed(&names, &prefix, &timeseries),
        sweep,
        remedy: (scenario.slo().is_set() && unmet).then(|| crate::figures::remedy(rows)),
    }
}

/// One policy's line of `sweep.csv` for the configuration of the swept `values`: what its
/// `rows` (in shard-count order; at least the recommended one) recommend.
pub fn sweep_line(
    values: &[String],
    scenario: &Scenario,
    policy: crate::model::Policy,
    recommendation: Recommendation,
    rows: &[SummaryRow],
) -> String {
    let recommended = recommendation
        .shards()
        .and_then(|n| rows.iter().find(|r| r.shards() == n && !r.adaptive()));
    let shards = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
    let ms = |ns: Option<u64>| ns.map(crate::time::fmt_ms).unwrap_or_default();
    let fields = [
        policy.to_string(),
        shards(recommendation.shards()),
        shards(recommendation.stable),
        shards(recommendation.meets_target),
        ms(recommended.map(|r| r.waits.p99_ns)),
        ms(recommended.map(|r| r.waits.p999_ns)),
        decimal(scenario.peak_offered_per_s(), 3),
    ];
    format!("{}\n", join(&csv_fields(values), &csv_fields(&fields)))
}

/// The grid's `summary.csv`, `timeseries.csv` and `sweep.csv` from its blocks (in any order;
/// they are sorted into grid order). The headers are the first block's (every configuration
/// writes the same columns).
pub fn assemble(fields: &[String], blocks: &mut [ConfigBlock]) -> [Vec<u8>; 3] {
    blocks.sort_by_key(|block| block.index);
    let mut sink = BlockSink::new(fields, Vec::new(), Vec::new(), Vec::new());
    for block in blocks.iter() {
        sink.push(block).expect("writing to memory does not fail");
    }
    sink.finish().expect("writing to memory does not fail")
}

/// Writes the grid's three CSV files block by block, in grid order, as [`assemble`] joins
/// them: each file's header once (from the first block), then every block's rows. A merge
/// streams its blocks through it, holding one at a time.
#[derive(Debug)]
pub struct BlockSink<W: std::io::Write> {
    summary: W,
    timeseries: W,
    sweep: W,
    headers_written: bool,
}

impl<W: std::io::Write> BlockSink<W> {
    /// A sink writing `summary.csv`, `timeseries.csv` and `sweep.csv` (whose header, from the
    /// swept `fields`, it writes at once).
    pub fn new(fields: &[String], summary: W, timeseries: W, mut sweep: W) -> BlockSink<W> {
        let header = join(&csv_fields(fields), &csv_fields(&SWEEP_COLUMNS));
        // A failure here shows again at the first push.
        let _ = writeln!(sweep, "{header}");
        BlockSink {
            summary,
            timeseries,
            sweep,
            headers_written: false,
        }
    }

    /// Appends the next block's rows.
    pub fn push(&mut self, block: &ConfigBlock) -> std::io::Result<()> {
        for (out, text) in [
            (&mut self.summary, &block.summary),
            (&mut self.timeseries, &block.timeseries),
        ] {
            let (header, body) = text.split_once('\n').unwrap_or((text, ""));
            if !self.headers_written {
                out.write_all(header.as_bytes())?;
                out.write_all(b"\n")?;
            }
            out.write_all(body.as_bytes())?;
        }
        self.headers_written = true;
        self.sweep.write_all(block.sweep.as_bytes())
    }

    /// Flushes and returns the three writers: summary, timeseries, sweep.
    pub fn finish(mut self) -> std::io::Result<[W; 3]> {
        for out in [&mut self.summary, &mut self.timeseries, &mut self.sweep] {
            out.flush()?;
        }
        Ok([self.summary, self.timeseries, self.sweep])
    }
}

/// One row of `sweep.csv`, read back (for the terminal grid and the chart).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    /// Its swept values.
    pub(crate) values: Vec<String>,
    /// The policy.
    pub(crate) policy: String,
    /// The recommended shard count, if any.
    pub(crate) recommended: Option<u32>,
    /// The p99 wait at it, ms.
    pub(crate) p99_ms: Option<f64>,
}

/// Reads `sweep.csv` text with `fields` swept fields.
pub fn read_sweep(fields: usize, text: &[u8]) -> Result<Vec<SweepRow>, String> {
    let mut reader = csv::Reader::from_reader(text);
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|err| format!("sweep.csv: {err}"))?;
        let cell = |i: usize| record.get(i).unwrap_or_default();
        rows.push(SweepRow {
            values: (0..fields).map(|i| cell(i).to_owned()).collect(),
            policy: cell(fields).to_owned(),
            recommended: cell(fields + 1).parse().ok(),
            p99_ms: cell(fields + 4).parse().ok(),
        });
    }
    Ok(rows)
}

/// The terminal's view of a grid: per policy, the recommended shard count of every
/// configuration — as a grid when two fields are swept (the first down, the second across),
/// else one line per configuration.
pub fn render(
    name: &str,
    fields: &[String],
    rows: &[SweepRow],
    target: &str,
    shard_counts: Option<usize>,
) -> String {
    let mut out = String::new();
    let configurations = rows
        .iter()
        .map(|r| &r.values)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let _ = writeln!(
        out,
        "{name}: a sweep of {} over {}{}; shards recommended ({target}; — when none):",
        units::plural(configurations as u64, "configuration"),
        fields.join(" × "),
        shard_counts.map_or(String::new(), |n| format!(" ({n} shard counts each)")),
    );
    for policy in policies(rows) {
        let of: Vec<&SweepRow> = rows.iter().filter(|r| r.policy == policy).collect();
        let _ = writeln!(out, "\npolicy {policy}");
        let cell = |row: &SweepRow| row.recommended.map_or("—".to_owned(), |n| n.to_string());
        if fields.len() == 2 {
            let across = distinct(of.iter().map(|r| r.values[1].as_str()));
            let down = distinct(of.iter().map(|r| r.values[0].as_str()));
            let width = across.iter().map(|v| v.len()).max().unwrap_or(1).max(4);
            let first = down
                .iter()
                .map(|v| v.len())
                .max()
                .unwrap_or(1)
                .max(fields[0].len());
            let _ = write!(out, "{:>first$}", format!("{} \\ {}", fields[0], fields[1]));
            let first = first.max(fields[0].len() + fields[1].len() + 3);
            for value in &across {
                let _ = write!(out, "  {value:>width$}");
            }
            out.push('\n');
            for row_value in &down {
                let _ = write!(out, "{row_value:>first$}");
                for value in &across {
                    let found = of
                        .iter()
                        .find(|r| r.values[0] == *row_value && r.values[1] == *value);
                    let _ = write!(out, "  {:>width$}", found.map_or("".into(), |r| cell(r)));
                }
                out.push('\n');
            }
        } else {
            for row in of {
                let described: Vec<String> = fields
                    .iter()
                    .zip(&row.values)
                    .map(|(f, v)| format!("{f} = {v}"))
                    .collect();
                let p99 = row.p99_ms.map_or(String::new(), |ms| {
                    format!(" (p99 {})", units::duration((ms * 1e6).round() as u64))
                });
                let _ = writeln!(out, "  {}: {}{p99}", described.join(", "), cell(row));
            }
        }
    }
    out
}

/// The policies of `rows`, in first-seen order.
pub fn policies(rows: &[SweepRow]) -> Vec<String> {
    distinct(rows.iter().map(|r| r.policy.as_str()))
}

/// The distinct values of `values`, in first-seen order.
pub fn distinct<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for value in values {
        if !seen.iter().any(|s| s == value) {
            seen.push(value.to_owned());
        }
    }
    seen
}

/// `fields` as one CSV record without its line end.
fn csv_fields<S: AsRef<str>>(fields: &[S]) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer
        .write_record(fields.iter().map(AsRef::as_ref))
        .expect("writing CSV to memory cannot fail");
    let bytes = writer
        .into_inner()
        .expect("flushing CSV to memory cannot fail");
    String::from_utf8(bytes)
        .expect("CSV of UTF-8 fields is UTF-8")
        .trim_end_matches(['\r', '\n'])
        .to_owned()
}

fn join(prefix: &str, rest: &str) -> String {
    if prefix.is_empty() {
        rest.to_owned()
    } else {
        format!("{prefix},{rest}")
    }
}

/// `csv` with the field names before its header and `prefix` (the values) before every row.
fn prefixed(names: &str, prefix: &str, csv: &str) -> String {
    let mut lines = csv.lines();
    let mut out = String::new();
    if let Some(header) = lines.next() {
        out.push_str(&join(names, header));
        out.push('\n');
    }
    for line in lines {
        out.push_str(&join(prefix, line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        assert_eq!(csv_fields(&["1", "random"]), "1,random");
        assert_eq!(csv_fields(&["a,b"]), "\"a,b\"");
    }
}
