//! The `throughput` chart: offered rate, achieved throughput and ceiling against shard count.

use super::*;

/// Offered rate, achieved throughput and ceiling against shard count.
/// With many keys every line is the busiest key's (its rows' ceiling against its load), so no
/// all-keys rate sits on the same axis as one key's.
pub(super) fn throughput_figure<'a>(
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
) -> ShardLinesFigure<'a> {
    let of = |value: &dyn Fn(&SummaryRow) -> f64| rows.iter().map(value).collect();
    let ceiling = (
        "ceiling of one key's rows (shards ÷ mean hold)".to_owned(),
        of(&|r| r.ceiling_per_s),
        Mark::Line(PALETTE[7]),
    );
    if scenario.key_count() > 1 {
        return ShardLinesFigure {
            scenario,
            rows,
            what: "the busiest key's load against shard count",
            y_desc: "increments per second to the busiest key",
            band: None,
            waits: false,
            series: vec![
                ceiling,
                (
                    "busiest key: peak offered".into(),
                    of(&|r| r.peak_offered_per_s),
                    Mark::Line(PALETTE[3]),
                ),
                (
                    "busiest key: mean offered".into(),
                    of(&|r| r.offered_per_s() * r.hot_key_share),
                    Mark::Dashed(PALETTE[1]),
                ),
            ],
        };
    }
    ShardLinesFigure {
        scenario,
        rows,
        what: "throughput against shard count",
        y_desc: "increments per second",
        band: super::shard_lines::calibration_band(rows, "throughput", |b| b.throughput_per_s),
        waits: false,
        series: vec![
            ceiling,
            (
                "peak offered".into(),
                of(&|r| r.peak_offered_per_s),
                Mark::Line(PALETTE[3]),
            ),
            (
                "achieved throughput".into(),
                of(&|r| r.throughput_per_s()),
                Mark::Line(PALETTE[0]),
            ),
            (
                "mean offered".into(),
                of(&|r| r.offered_per_s()),
                Mark::Dashed(PALETTE[1]),
            ),
        ],
    }
}
