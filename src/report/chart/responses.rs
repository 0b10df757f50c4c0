//! The `responses` chart (with a machine): response time at p50 and p99 beside the p99 wait.

use super::*;

/// Response times beside the p99 wait for the row, when the scenario models the machine.
pub(super) fn responses_figure<'a>(
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
) -> Option<ShardLinesFigure<'a>> {
    if scenario.machine().is_empty() {
        return None;
    }
    let responses: Vec<WaitSummary> = rows
        .iter()
        .map(|r| {
            r.closed
                .map(|c| c.responses)
                .or_else(|| r.machine.and_then(|m| m.responses))
        })
        .collect::<Option<_>>()?;
    let ms = crate::time::ns_to_ms;
    Some(ShardLinesFigure {
        scenario,
        rows,
        what: "response time beside the wait for the row",
        y_desc: "time",
        series: vec![
            (
                "response p50".into(),
                responses.iter().map(|r| ms(r.p50_ns)).collect(),
                Mark::Line(PALETTE[0]),
            ),
            (
                "response p99".into(),
                responses.iter().map(|r| ms(r.p99_ns)).collect(),
                Mark::Line(PALETTE[3]),
            ),
            (
                "wait for the row p99".into(),
                rows.iter().map(|r| ms(r.waits.p99_ns)).collect(),
                Mark::Dashed(PALETTE[3]),
            ),
        ],
        band: super::shard_lines::calibration_band(rows, "response p99", |b| {
            (ms(b.p99_ns.0), ms(b.p99_ns.1))
        }),
        waits: true,
    })
}
