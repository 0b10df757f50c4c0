//! `--format json`: the summary as one JSON document on standard output, for scripts. Its
//! rows are the same [`SummaryRecord`] type `summary.csv` is written from (an empty cell is
//! `null`), plus the verdict, so a script sees exactly the CSV's figures: a feature's fields
//! only when the run has the feature, as in the CSV.

use serde::Serialize;
use serde_json::json;

use crate::scenario::Scenario;

use crate::figures::columns::Feature;
use crate::figures::record::SummaryRecord;
use crate::figures::{Recommendation, SummaryRow, by_policy};

/// A summary row in the JSON output: the CSV's columns and the verdict.
#[derive(Debug, Serialize)]
struct JsonRow<'a> {
    #[serde(flatten)]
    record: SummaryRecord,
    verdict: &'a str,
}

/// Renders the JSON summary of a sweep written to `output`.
/// With several policies the top-level recommendation is the first policy's, and
/// `by_policy` gives each policy's.
pub fn render(scenario: &Scenario, rows: &[SummaryRow], output: &str) -> String {
    let groups = by_policy(scenario, rows);
    let recommendation = groups
        .first()
        .map_or_else(Recommendation::default, |g| g.recommendation);
    let warmup_s = crate::time::ns_to_s(scenario.warmup());
    let rows_json: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let mut value = json!(JsonRow {
                record: SummaryRecord::of(row, scenario.seed(), warmup_s),
                verdict: row.verdict().label(),
            });
            if let Some(fields) = value.as_object_mut() {
                // As in summary.csv, a feature's fields only when the run has the feature.
                fields.retain(|name, _| Feature::of(name).in_any(rows));
            }
            value
        })
        .collect();
    let mut document = json!({
        "scenario": scenario.name(),
        "description": scenario.description(),
        "seed": scenario.seed(),
        "policy": scenario.policies_label(),
        "traffic": {
            "scale": scenario.traffic().scale,
            "speed": scenario.traffic().speed,
        },
        "output": output,
        "recommended_shards": recommendation.shards(),
        "smallest_stable_shards": recommendation.stable,
        "smallest_meeting_target_shards": recommendation.meets_target,
        "rows": rows_json,
    });
    if let (true, Some(fields)) = (groups.len() > 1, document.as_object_mut()) {
        let each: Vec<_> = groups
            .iter()
            .map(|g| {
                json!({
                    "policy": g.policy.to_string(),
                    "recommended_shards": g.recommendation.shards(),
                    "smallest_stable_shards": g.recommendation.stable,
                    "smallest_meeting_target_shards": g.recommendation.meets_target,
                })
            })
            .collect();
        fields.insert("by_policy".into(), serde_json::Value::Array(each));
    }
    let mut text = serde_json::to_string_pretty(&document).expect("JSON values always render");
    text.push('\n');
    text
}
