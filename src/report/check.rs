//! The diff table of `shardsim check`: every column that moved, by how much, and the verdict.

use std::fmt::Write;

use crate::check::{Move, Status};

/// Renders the moves (or a line saying nothing moved) and a closing verdict line.
pub fn render(baseline: &str, moves: &[Move], strict: bool) -> String {
    let mut out = String::new();
    if moves.is_empty() {
        let _ = writeln!(out, "matches {baseline} exactly");
        return out;
    }
    let _ = writeln!(
        out,
        "{:>6}  {:<18}  {:>16}  {:>16}  {:>9}  {:>12}  status",
        "shards", "column", "baseline", "now", "change", "allowed"
    );
    for m in moves {
        let change = if m.old != 0.0 {
            format!("{:+.1}%", (m.new - m.old) / m.old.abs() * 100.0)
        } else {
            format!("{:+}", m.new - m.old)
        };
        let _ = writeln!(
            out,
            "{:>6}  {:<18}  {:>16}  {:>16}  {:>9}  {:>12}  {}",
            if m.adaptive {
                "adaptive".to_owned()
            } else {
                m.shards.to_string()
            },
            m.column,
            number(m.old),
            number(m.new),
            change,
            format!("±{}", number(m.limit)),
            m.status.label()
        );
    }
    let count = |status: Status| moves.iter().filter(|m| m.status == status).count();
    let (regressions, improvements) = (count(Status::Regression), count(Status::Improvement));
    let _ = writeln!(
        out,
        "{regressions} regression(s), {improvements} improvement(s){} against {baseline}",
        if strict && improvements > 0 {
            " (--strict: improvements fail too)"
        } else {
            ""
        }
    );
    out
}

fn number(value: f64) -> String {
    let text = format!("{value:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
