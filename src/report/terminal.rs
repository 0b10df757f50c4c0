//! The plain summary table printed after a run.

use std::fmt::Write;

use crate::scenario::Scenario;

use super::summary::SummaryRow;

const HEADER: [&str; 10] = [
    "shards",
    "ceiling/s",
    "util",
    "peak util",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "max ms",
    "backlog max",
    "backlog end",
];

/// Renders the scenario line and an aligned table with one row per shard count.
pub fn render(scenario: &Scenario, rows: &[SummaryRow]) -> String {
    let mut out = String::new();
    let arrivals = rows.first().map_or(0, |row| row.arrivals);
    let _ = writeln!(
        out,
        "{}: {} increments over {} s (peak {}/s), mean hold {} ms, policy {}, seed {}",
        scenario.name,
        arrivals,
        compact(scenario.duration_s()),
        compact(scenario.peak_offered_per_s()),
        compact(scenario.hold.mean_ns() / 1e6),
        scenario.policy,
        scenario.seed
    );
    let cells: Vec<[String; 10]> = rows.iter().map(row_cells).collect();
    let widths: Vec<usize> = (0..HEADER.len())
        .map(|i| {
            cells
                .iter()
                .map(|row| row[i].len())
                .chain([HEADER[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |fields: Vec<&str>| -> String {
        let padded: Vec<String> = fields
            .iter()
            .zip(&widths)
            .map(|(field, &width)| format!("{field:>width$}"))
            .collect();
        padded.join("  ")
    };
    let _ = writeln!(out, "{}", line(HEADER.to_vec()));
    for row in &cells {
        let _ = writeln!(out, "{}", line(row.iter().map(String::as_str).collect()));
    }
    out
}

fn row_cells(row: &SummaryRow) -> [String; 10] {
    let ms = |ns: u64| compact(ns as f64 / 1e6);
    [
        row.shards.to_string(),
        compact(row.ceiling_per_s),
        format!("{:.2}", row.utilization),
        format!("{:.2}", row.peak_utilization),
        ms(row.waits.p50_ns),
        ms(row.waits.p99_ns),
        ms(row.waits.p999_ns),
        ms(row.waits.max_ns),
        row.backlog_max.to_string(),
        row.backlog_final.to_string(),
    ]
}

/// A number with precision that suits its size: `0.012`, `4.5`, `1250`.
fn compact(value: f64) -> String {
    if !value.is_finite() {
        return "inf".into();
    }
    let text = if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}
