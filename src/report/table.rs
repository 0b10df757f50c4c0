//! The tables for people. [`Table`] is any small table of text cells; the summary table is
//! built once and shown by both the terminal and `report.html`: waits in human units with `±`
//! half-widths when there are replications, counts with thousands separators, and each row's
//! verdict and whether it is the recommendation.

use super::units::{count, duration, duration_within, quantity, ratio};
use crate::figures::{Recommendation, SummaryRow, Verdict};
use crate::stats::WaitSummary;

/// A small table of text cells for the terminal and the report page.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// What the table shows.
    pub(crate) title: String,
    /// Column headings.
    pub(crate) header: Vec<String>,
    /// One row per shard count.
    pub(crate) rows: Vec<Vec<String>>,
}

/// The summary table's headings.
pub const HEADER: [&str; 11] = [
    "shards",
    "ceiling/s",
    "util",
    "peak util",
    "p50 wait",
    "p99 wait",
    "p99.9 wait",
    "max wait",
    "backlog max",
    "backlog end",
    "verdict",
];

/// One row of the summary table: its cells and how to mark it.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryLine {
    /// The cells, in [`HEADER`] order.
    pub(crate) cells: [String; 11],
    /// The row's verdict (for colours and classes).
    pub(crate) verdict: Verdict,
    /// Whether it is the recommended shard count.
    pub(crate) recommended: bool,
}

/// The summary table's rows.
pub fn summary_lines(rows: &[SummaryRow], recommendation: &Recommendation) -> Vec<SummaryLine> {
    rows.iter()
        .map(|row| SummaryLine {
            cells: cells(row),
            verdict: row.verdict(),
            recommended: !row.adaptive() && recommendation.shards() == Some(row.shards()),
        })
        .collect()
}

fn cells(row: &SummaryRow) -> [String; 11] {
    // The interval's upper end is the mean plus the half-width; its lower end is clamped at
    // 0, so (hi − lo) / 2 would shrink the ± exactly when the interval reaches 0.
    let half = |get: fn(&WaitSummary) -> u64| {
        let hi = row.waits_hi.as_ref()?;
        Some(get(hi) as f64 - get(&row.waits) as f64)
    };
    let wait = |get: fn(&WaitSummary) -> u64| duration_within(get(&row.waits), half(get));
    let verdict = match row.saturated_at_s {
        Some(at) => format!("saturated at {} s", quantity(at)),
        None => row.verdict().label().to_owned(),
    };
    [
        row.label(),
        quantity(row.ceiling_per_s),
        ratio(row.utilization()),
        ratio(row.peak_utilization()),
        wait(|w| w.p50_ns),
        wait(|w| w.p99_ns),
        wait(|w| w.p999_ns),
        duration(row.waits.max_ns),
        count(row.backlog_max),
        count(row.backlog_final),
        verdict,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::summary::tests::row;

    #[test]
    fn the_plus_minus_is_the_half_width_even_where_the_interval_is_clamped_at_zero() {
        // A p99 of 2 ms ± 3 ms: its interval [−1, 5] ms is written [0, 5] ms.
        let mut clamped = row(4, 0.5, 2);
        let at = |p99_ms: u64| WaitSummary {
            p99_ns: p99_ms * 1_000_000,
            ..WaitSummary::default()
        };
        clamped.waits_lo = Some(at(0));
        clamped.waits_hi = Some(at(5));
        assert_eq!(cells(&clamped)[5], "2 ±3 ms");
        // Unclamped, the same: [1, 5] ms around 3 ms is ± 2 ms.
        let mut inside = row(4, 0.5, 3);
        inside.waits_lo = Some(at(1));
        inside.waits_hi = Some(at(5));
        assert_eq!(cells(&inside)[5], "3 ±2 ms");
    }
}
