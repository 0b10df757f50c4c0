//! What a burst does to one shard count, read from its time series: how long the offered load
//! stayed above the rows' ceiling, when the target was first broken, how fast the backlog grew
//! while overloaded and how long it took to drain afterwards.

use crate::model::SimTime;
use crate::stats::WindowRow;

/// A backlog back below this share of its largest value counts as drained.
pub const DRAINED_SHARE: f64 = 0.01;

/// The burst figures of one shard count (from its first replication's windows).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BurstMetrics {
    /// Time in windows whose offered rate exceeded the ceiling, s.
    pub(crate) overloaded_s: f64,
    /// Start of the first window whose p99 wait passed the `[slo]` p99 target, s (`None`:
    /// never, or no target).
    pub(crate) first_slo_breach_s: Option<f64>,
    /// From the end of the last overloaded window until the backlog was back below 1% of its
    /// largest value, s (`None`: never overloaded, or it never drained in the run).
    pub(crate) drain_s: Option<f64>,
    /// The backlog's least-squares slope over the overloaded windows, increments per second
    /// (`None` when never overloaded).
    pub(crate) backlog_growth_per_s: Option<f64>,
}

/// The burst figures of `windows` of length `window_ns`, for rows whose ceiling is
/// `ceiling_per_s` and which see `share` of each window's arrivals (the busiest key's share
/// with many keys), judged against the p99 `target_ns` if any.
pub fn burst_metrics(
    windows: &[WindowRow],
    window_ns: SimTime,
    ceiling_per_s: f64,
    share: f64,
    target_ns: Option<SimTime>,
) -> BurstMetrics {
    let window_s = crate::time::ns_to_s(window_ns);
    let overloaded: Vec<usize> = (0..windows.len())
        .filter(|&i| windows[i].arrivals as f64 * share / window_s > ceiling_per_s)
        .collect();
    let first_slo_breach_s = target_ns.and_then(|target| {
        windows
            .iter()
            .position(|w| w.wait_p99_ns().is_some_and(|p99| p99 > target))
            .map(|i| i as f64 * window_s)
    });
    let Some(&last) = overloaded.last() else {
        return BurstMetrics {
            first_slo_breach_s,
            ..BurstMetrics::default()
        };
    };
    let largest = windows.iter().map(|w| w.backlog_peak).max().unwrap_or(0);
    let drained = largest as f64 * DRAINED_SHARE;
    let drain_s = (last..windows.len())
        .find(|&i| (windows[i].backlog as f64) < drained || windows[i].backlog == 0)
        .map(|i| (i - last) as f64 * window_s);
    BurstMetrics {
        overloaded_s: overloaded.len() as f64 * window_s,
        first_slo_breach_s,
        drain_s,
        backlog_growth_per_s: Some(slope(&overloaded, windows, window_s)),
    }
}

/// The least-squares slope of the backlog at the end of the given windows against their end
/// times; for one window, its backlog's change over the window.
fn slope(indices: &[usize], windows: &[WindowRow], window_s: f64) -> f64 {
    if let [only] = indices {
        let before = only.checked_sub(1).map_or(0, |i| windows[i].backlog);
        return (windows[*only].backlog as f64 - before as f64) / window_s;
    }
    let points: Vec<(f64, f64)> = indices
        .iter()
        .map(|&i| ((i + 1) as f64 * window_s, windows[i].backlog as f64))
        .collect();
    let n = points.len() as f64;
    let mean_t = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_b = points.iter().map(|p| p.1).sum::<f64>() / n;
    let covariance: f64 = points.iter().map(|p| (p.0 - mean_t) * (p.1 - mean_b)).sum();
    let variance: f64 = points.iter().map(|p| (p.0 - mean_t).powi(2)).sum();
    covariance / variance
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window with `arrivals` arrivals, `backlog` waiting at its end and p99 wait `p99`.
    fn window(arrivals: u64, backlog: u64, p99: SimTime) -> WindowRow {
        WindowRow::for_test(arrivals, backlog, p99)
    }

    #[test]
    fn a_hand_computed_burst() {
        // Ceiling 100/s, 1 s windows: 50, 150, 200, 150 then 50 arrivals; the backlog grows by
        // 50, 100 and 50 and drains by 50 a second from 200.
        let windows = [
            window(50, 0, 1_000_000),
            window(150, 50, 200_000_000),
            window(200, 150, 900_000_000),
            window(150, 200, 1_500_000_000),
            window(50, 150, 1_900_000_000),
            window(50, 100, 1_000_000_000),
            window(50, 50, 500_000_000),
            window(50, 1, 10_000_000),
            window(50, 0, 1_000_000),
        ];
        let burst = burst_metrics(&windows, 1_000_000_000, 100.0, 1.0, Some(100_000_000));
        assert_eq!(burst.overloaded_s, 3.0);
        assert_eq!(burst.first_slo_breach_s, Some(1.0));
        // The last overloaded window ends at 4 s; the backlog is below 1% of 200 at the end of
        // the window starting at 7 s (1 waiting), which ends at 8 s: 4 windows later.
        assert_eq!(burst.drain_s, Some(4.0));
        // Backlogs 50, 150, 200 at 2, 3, 4 s: slope 75/s.
        assert_eq!(burst.backlog_growth_per_s, Some(75.0));
    }

    #[test]
    fn a_queue_that_never_drains_and_a_run_never_overloaded() {
        let growing = [window(200, 100, 1), window(200, 200, 1), window(50, 150, 1)];
        let burst = burst_metrics(&growing, 1_000_000_000, 100.0, 1.0, None);
        assert_eq!(burst.drain_s, None);
        assert_eq!(burst.first_slo_breach_s, None);
        assert_eq!(burst.backlog_growth_per_s, Some(100.0));
        let calm = [window(50, 0, 1), window(60, 0, 1)];
        assert_eq!(
            burst_metrics(&calm, 1_000_000_000, 100.0, 1.0, Some(1)),
            BurstMetrics::default()
        );
    }
}
