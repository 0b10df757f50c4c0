//! A shard count's figures over its calibration's band: the throughput and p99 of the run
//! simulated at the band's slow and fast ends beside the fitted one, each as a range, with the
//! share of the database's measurements the band is meant to hold.

use super::summary::SummaryRow;

/// A shard count's throughput and p99 over its calibration's band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// The lowest and highest throughput of the ends and the fitted run, per second.
    pub(crate) throughput_per_s: (f64, f64),
    /// The lowest and highest p99 (a client's response where the run has responses, else the
    /// wait for a row), ns.
    pub(crate) p99_ns: (u64, u64),
    /// The share of measurements the band is meant to hold (`None`: an old calibration's
    /// spread, which states none).
    pub(crate) coverage: Option<f64>,
}

impl Band {
    /// The band of `fitted` between the same shard count at the band's `slow` and `fast` ends.
    pub fn between(
        fitted: &SummaryRow,
        slow: &SummaryRow,
        fast: &SummaryRow,
        coverage: Option<f64>,
    ) -> Band {
        let rows = [fitted, slow, fast];
        let throughput = rows.map(SummaryRow::throughput_per_s);
        let p99 = rows.map(p99_ns);
        Band {
            throughput_per_s: (
                throughput.iter().copied().fold(f64::INFINITY, f64::min),
                throughput.iter().copied().fold(0.0, f64::max),
            ),
            p99_ns: (
                p99.iter().copied().min().unwrap_or(0),
                p99.iter().copied().max().unwrap_or(0),
            ),
            coverage,
        }
    }
}

/// A row's p99: a client's response where it has responses (a closed loop, or a machine's
/// open stream), else the wait for a row.
pub fn p99_ns(row: &SummaryRow) -> u64 {
    let responses = row
        .closed
        .as_ref()
        .map(|c| c.responses)
        .or_else(|| row.machine.as_ref().and_then(|m| m.responses));
    responses.map_or(row.waits.p99_ns, |r| r.p99_ns)
}

/// Gives each of `rows` its band between the rows of the same policy and shard count in
/// `slow` and `fast` (the same scenario simulated at the band's ends); a row without both
/// ends keeps none.
pub fn attach(
    rows: &mut [SummaryRow],
    slow: &[SummaryRow],
    fast: &[SummaryRow],
    coverage: Option<f64>,
) {
    let same = |a: &SummaryRow, b: &SummaryRow| a.policy == b.policy && a.shards() == b.shards();
    for row in rows.iter_mut() {
        let ends = (
            slow.iter().find(|end| same(end, row)),
            fast.iter().find(|end| same(end, row)),
        );
        if let (Some(slow), Some(fast)) = ends {
            row.band = Some(Band::between(row, slow, fast, coverage));
        }
    }
}
