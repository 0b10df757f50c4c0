//! The `neighbours` chart (with `[[neighbours]]`): other endpoints' connection waits against shard count.

use super::*;

/// Each neighbour endpoint's p99 wait for a connection, when the scenario has neighbours.
pub(super) fn neighbours_figure<'a>(
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
) -> Option<ShardLinesFigure<'a>> {
    let pools: Vec<_> = rows
        .iter()
        .map(|r| r.extended.as_ref().and_then(|e| e.pool.as_ref()))
        .collect::<Option<_>>()?;
    let names: Vec<String> = pools
        .first()?
        .neighbours
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    if names.is_empty() {
        return None;
    }
    // Every endpoint waits in the same pool queue, so their lines often coincide: one line
    // then carries every name, instead of one line hiding another.
    let mut series: Vec<(String, Vec<f64>, Mark)> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let of = |get: fn(&crate::stats::WaitSummary) -> u64| -> Vec<f64> {
            pools
                .iter()
                .map(|p| crate::time::ns_to_ms(get(&p.neighbours[i].1)))
                .collect()
        };
        for (statistic, values, mark) in [
            (": mean wait", of(|w| w.mean_ns), Mark::Line(colour(i))),
            (": p99 wait", of(|w| w.p99_ns), Mark::Dashed(colour(i))),
        ] {
            match series
                .iter_mut()
                .find(|(label, v, _)| label.ends_with(statistic) && coincide(v, &values))
            {
                Some((label, _, _)) => {
                    let names = label.trim_end_matches(statistic).to_owned();
                    *label = format!("{names}, {name}{statistic}");
                }
                None => series.push((format!("{name}{statistic}"), values, mark)),
            }
        }
    }
    let likes: Vec<f64> = pools
        .iter()
        .map(|p| crate::time::ns_to_ms(p.like_wait.p99_ns))
        .collect();
    match series
        .iter_mut()
        .find(|(label, v, _)| label.ends_with(": p99 wait") && coincide(v, &likes))
    {
        Some((label, _, _)) => {
            *label = format!("{}, likes: p99 wait", label.trim_end_matches(": p99 wait"));
        }
        None => series.push((
            "likes: p99 wait for a connection".into(),
            likes,
            Mark::Line(PALETTE[7]),
        )),
    }
    Some(ShardLinesFigure {
        scenario,
        rows,
        what: "neighbour endpoints' wait for a connection",
        y_desc: "wait for a connection",
        series,
        band: None,
        waits: true,
    })
}
