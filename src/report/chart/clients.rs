//! The `clients` chart (with `[client]`): attempts and failures per like against shard count.

use super::*;

/// Attempts and user failures per original like, when the scenario has `[client]`.
pub(super) fn clients_figure<'a>(
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
) -> Option<ShardLinesFigure<'a>> {
    let clients: Vec<_> = rows
        .iter()
        .map(|r| r.extended.as_ref().and_then(|e| e.client))
        .collect::<Option<_>>()?;
    let per_like = |value: f64, likes: f64| if likes > 0.0 { value / likes } else { 0.0 };
    Some(ShardLinesFigure {
        scenario,
        rows,
        what: "retries and failures against shard count",
        y_desc: "per original like",
        band: None,
        waits: false,
        series: vec![
            (
                "attempts per like (amplification)".into(),
                clients.iter().map(|c| c.amplification).collect(),
                Mark::Line(PALETTE[1]),
            ),
            (
                "user-visible failures per like".into(),
                clients
                    .iter()
                    .map(|c| per_like(c.failed, c.likes))
                    .collect(),
                Mark::Line(PALETTE[3]),
            ),
            (
                "duplicate runs per like".into(),
                clients
                    .iter()
                    .map(|c| per_like(c.duplicates, c.likes))
                    .collect(),
                Mark::Dashed(PALETTE[4]),
            ),
        ],
    })
}
