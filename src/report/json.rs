//! `--format json`: the summary as one JSON document on standard output, for scripts. Its
//! rows are the same [`SummaryRecord`] type `summary.csv` is written from (an empty cell is
//! `null`), plus the verdict, so a script sees exactly the CSV's figures.

use serde::Serialize;
use serde_json::json;

use crate::scenario::Scenario;

use super::record::SummaryRecord;
use super::summary::{Recommendation, SummaryRow};

/// A summary row in the JSON output: the CSV's columns and the verdict.
#[derive(Debug, Serialize)]
struct JsonRow<'a> {
    #[serde(flatten)]
    record: SummaryRecord,
    verdict: &'a str,
}

/// Renders the JSON summary of a sweep written to `output`.
pub fn render(
    scenario: &Scenario,
    rows: &[SummaryRow],
    recommendation: &Recommendation,
    output: &str,
) -> String {
    let warmup_s = scenario.warmup as f64 / 1e9;
    let rows_json: Vec<JsonRow> = rows
        .iter()
        .map(|row| JsonRow {
            record: SummaryRecord::of(row, scenario.seed, warmup_s),
            verdict: row.verdict().label(),
        })
        .collect();
    let document = json!({
        "scenario": scenario.name,
        "description": scenario.description,
        "seed": scenario.seed,
        "policy": scenario.policies_label(),
        "output": output,
        "recommended_shards": recommendation.shards(),
        "smallest_stable_shards": recommendation.stable,
        "smallest_meeting_target_shards": recommendation.meets_target,
        "rows": rows_json,
    });
    let mut text = serde_json::to_string_pretty(&document).expect("JSON values always render");
    text.push('\n');
    text
}
