//! What `shardsim check` prints and writes: the table of values that moved beyond tolerance
//! (every compared value with `--verbose`), one JSON document for scripts, and a JUnit XML
//! report (one test case per scenario × shard count × column) for CI systems to show.

use std::fmt::Write;

use serde_json::json;

use crate::check::{Move, Status};

use super::html::escape;
use super::units::{self, plural};

/// A finished comparison: what `check` compared and against which baseline.
#[derive(Debug, Clone)]
pub struct Outcome<'a> {
    /// The scenario's name.
    pub(crate) scenario: &'a str,
    /// The baseline file as the user named it.
    pub(crate) baseline: &'a str,
    /// Every compared value.
    pub(crate) moves: &'a [Move],
    /// Whether improvements beyond tolerance fail too.
    pub(crate) strict: bool,
}

impl Outcome<'_> {
    /// Whether this compared value fails the check.
    pub fn fails(&self, m: &Move) -> bool {
        matches!(m.status, Status::Regression | Status::Changed)
            || (self.strict && m.status == Status::Improvement)
    }

    fn count(&self, status: Status) -> usize {
        self.moves.iter().filter(|m| m.status == status).count()
    }
}

fn row_label(m: &Move) -> String {
    let row = crate::model::Rows::of(m.shards, m.adaptive).to_string();
    match &m.policy {
        Some(policy) => format!("{policy} {row}"),
        None => row,
    }
}

fn change(m: &Move) -> String {
    match (m.old, m.new) {
        (Some(old), Some(new)) if old != 0.0 => format!("{:+.1}%", (new - old) / old.abs() * 100.0),
        (Some(old), Some(new)) => format!("{:+}", number(new - old)),
        _ => "switched".to_owned(),
    }
}

fn value(v: Option<f64>) -> String {
    v.map_or_else(|| "(empty)".to_owned(), number)
}

/// Renders the values that moved beyond tolerance (all compared values when `verbose`) and a
/// closing line with the counts.
pub fn render(outcome: &Outcome, verbose: bool) -> String {
    let mut out = String::new();
    let shown: Vec<&Move> = outcome
        .moves
        .iter()
        .filter(|m| verbose || m.status.is_beyond())
        .collect();
    if !shown.is_empty() {
        let _ = writeln!(
            out,
            "{:>8}  {:<27}  {:>16}  {:>16}  {:>9}  {:>12}  status",
            "shards", "column", "baseline", "now", "change", "allowed"
        );
        for m in shown {
            let _ = writeln!(
                out,
                "{:>8}  {:<27}  {:>16}  {:>16}  {:>9}  {:>12}  {}",
                row_label(m),
                m.column,
                value(m.old),
                value(m.new),
                change(m),
                format!("±{}", number(m.limit)),
                m.status.label()
            );
        }
    }
    let (regressions, improvements, changed) = (
        outcome.count(Status::Regression),
        outcome.count(Status::Improvement),
        outcome.count(Status::Changed),
    );
    let within = outcome.count(Status::Within);
    let unchanged = outcome.count(Status::Unchanged);
    if unchanged == outcome.moves.len() {
        let _ = writeln!(
            out,
            "{}: matches {} exactly ({} compared)",
            outcome.scenario,
            outcome.baseline,
            plural(unchanged as u64, "value")
        );
        return out;
    }
    let _ = writeln!(
        out,
        "{}: {} compared against {}: {}, {}, {within} within tolerance, {unchanged} unchanged{}{}",
        outcome.scenario,
        plural(outcome.moves.len() as u64, "value"),
        outcome.baseline,
        plural(regressions as u64, "regression"),
        plural(improvements as u64, "improvement"),
        if outcome.strict && improvements > 0 {
            " (--strict: improvements fail too)"
        } else {
            ""
        },
        if changed > 0 {
            format!(
                "; {changed} CHANGED: the offered load or the capacity moved, so the scenario or the model \
                 changed — if that was meant, --update the baseline"
            )
        } else {
            String::new()
        }
    );
    out
}

/// The comparison as one JSON document: the counts and every compared value.
pub fn render_json(outcome: &Outcome) -> String {
    let values: Vec<serde_json::Value> = outcome
        .moves
        .iter()
        .map(|m| {
            json!({
                "shards": row_label(m),
                "column": m.column,
                "baseline": m.old,
                "now": m.new,
                "allowed": m.limit,
                "status": status_name(m.status),
                "fails": outcome.fails(m),
            })
        })
        .collect();
    let document = json!({
        "scenario": outcome.scenario,
        "baseline": outcome.baseline,
        "strict": outcome.strict,
        "passed": !outcome.moves.iter().any(|m| outcome.fails(m)),
        "regressions": outcome.count(Status::Regression),
        "changed": outcome.count(Status::Changed),
        "improvements": outcome.count(Status::Improvement),
        "within_tolerance": outcome.count(Status::Within),
        "unchanged": outcome.count(Status::Unchanged),
        "values": values,
    });
    let mut text = serde_json::to_string_pretty(&document).expect("JSON values always render");
    text.push('\n');
    text
}

/// The start of every JUnit report `check` writes.
const JUNIT_HEAD: &str =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"shardsim check\"";

/// Whether a file that starts with `head` is a JUnit report of `check`'s (one it may replace).
pub fn is_junit(head: &[u8]) -> bool {
    head.starts_with(JUNIT_HEAD.as_bytes())
}

/// The comparison as a JUnit XML report: one test suite for the scenario, one test case per
/// shard count and column, failed where the check fails.
pub fn render_junit(outcome: &Outcome) -> String {
    let failures = outcome.moves.iter().filter(|m| outcome.fails(m)).count();
    let mut out = String::from(JUNIT_HEAD);
    let _ = writeln!(
        out,
        " tests=\"{}\" failures=\"{failures}\">",
        outcome.moves.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\">",
        escape(outcome.scenario),
        outcome.moves.len()
    );
    for m in outcome.moves {
        let name = format!("shards={} {}", row_label(m), m.column);
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\"",
            escape(outcome.scenario),
            escape(&name)
        );
        if outcome.fails(m) {
            let message = format!(
                "{}: baseline {}, now {} ({}), allowed ±{}",
                m.status.label(),
                value(m.old),
                value(m.new),
                change(m),
                number(m.limit)
            );
            let _ = writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"{}\"/>\n    </testcase>",
                escape(&message),
                status_name(m.status)
            );
        } else {
            out.push_str("/>\n");
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::Unchanged => "unchanged",
        Status::Within => "within_tolerance",
        Status::Regression => "regression",
        Status::Improvement => "improvement",
        Status::Changed => "changed",
    }
}

fn number(value: f64) -> String {
    units::trim_zeros(format!("{value:.6}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moves() -> Vec<Move> {
        let m = |column, old: f64, new: f64, status| Move {
            shards: 4,
            adaptive: false,
            policy: None,
            column,
            old: Some(old),
            new: Some(new),
            limit: 0.5,
            status,
        };
        vec![
            m("wait_p99_ms", 10.0, 10.0, Status::Unchanged),
            m("wait_p50_ms", 1.0, 1.2, Status::Within),
            m("wait_max_ms", 10.0, 12.0, Status::Regression),
        ]
    }

    fn outcome(moves: &[Move]) -> Outcome<'_> {
        Outcome {
            scenario: "s",
            baseline: "b.csv",
            moves,
            strict: false,
        }
    }

    #[test]
    fn the_table_shows_only_what_moved_beyond_tolerance() {
        let moves = moves();
        let outcome = outcome(&moves);
        let table = render(&outcome, false);
        assert!(table.contains("wait_max_ms") && !table.contains("wait_p50_ms"));
        assert!(table.contains("1 regression, 0 improvements, 1 within tolerance, 1 unchanged"));
        assert!(render(&outcome, true).contains("wait_p50_ms"));
    }

    #[test]
    fn junit_has_a_case_per_value_and_fails_the_regression() {
        let moves = moves();
        let outcome = outcome(&moves);
        let xml = render_junit(&outcome);
        assert_eq!(xml.matches("<testcase ").count(), 3);
        assert_eq!(xml.matches("<failure ").count(), 1);
        assert!(xml.contains("tests=\"3\" failures=\"1\""));
        let json: serde_json::Value = serde_json::from_str(&render_json(&outcome)).unwrap();
        assert_eq!(json["passed"], false);
        assert_eq!(json["values"].as_array().unwrap().len(), 3);
    }
}
