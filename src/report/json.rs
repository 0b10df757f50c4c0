//! `--format json`: the summary as one JSON document on standard output, for scripts. Its
//! rows carry exactly the `summary.csv` columns (numbers as numbers, `inf` as null) plus the
//! verdict, so a script sees the same figures as the CSV.

use serde_json::{Map, Value, json};

use crate::scenario::Scenario;

use super::csv::{SUMMARY_COLUMNS, SUMMARY_TEXT_COLUMNS, summary_records};
use super::summary::{Recommendation, SummaryRow};

/// Renders the JSON summary of a sweep written to `output`.
pub fn render(
    scenario: &Scenario,
    rows: &[SummaryRow],
    recommendation: &Recommendation,
    output: &str,
) -> String {
    let records = summary_records(rows, scenario.seed, scenario.warmup as f64 / 1e9);
    let rows_json: Vec<Value> = records
        .iter()
        .zip(rows)
        .map(|(record, row)| {
            let mut object = Map::new();
            for (column, field) in SUMMARY_COLUMNS.iter().zip(record) {
                object.insert(column.to_string(), cell(column, field));
            }
            object.insert("verdict".into(), row.verdict().label().into());
            Value::Object(object)
        })
        .collect();
    let document = json!({
        "scenario": scenario.name,
        "description": scenario.description,
        "seed": scenario.seed,
        "policy": scenario.policy.to_string(),
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

fn cell(column: &str, field: &str) -> Value {
    if SUMMARY_TEXT_COLUMNS.contains(&column) {
        return Value::String(field.to_owned());
    }
    if field.is_empty() {
        return Value::Null;
    }
    field
        .parse::<f64>()
        .ok()
        .and_then(|number| {
            if number.fract() == 0.0 && number.abs() < 9e15 && !field.contains('.') {
                Some(Value::from(number as i64))
            } else {
                serde_json::Number::from_f64(number).map(Value::Number)
            }
        })
        .unwrap_or(Value::Null)
}
