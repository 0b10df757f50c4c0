//! Wait statistics: an HDR histogram (3 significant digits) for percentiles, with the exact
//! count, sum and maximum beside it.

use std::ops::AddAssign;

use hdrhistogram::Histogram;

use crate::model::SimTime;

/// Waits are recorded in nanoseconds; longer waits than this (about 13 days) are clamped.
const HIGHEST_TRACKABLE_NS: u64 = 1 << 50;
/// Significant decimal digits kept by the histogram: percentiles are within 0.1%.
const SIGNIFICANT_DIGITS: u8 = 3;

/// Streaming, mergeable statistics of wait times.
#[derive(Debug, Clone)]
pub struct WaitStats {
    histogram: Histogram<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: SimTime,
    /// Set by [`WaitStats::freeze`]: the figures, kept after the histogram was released.
    frozen: Option<WaitSummary>,
}

/// The figures reported for a set of waits, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaitSummary {
    /// Number of waits recorded.
    pub count: u64,
    /// Mean wait, rounded to the nearest nanosecond.
    pub mean_ns: SimTime,
    /// Median wait.
    pub p50_ns: SimTime,
    /// 90th percentile.
    pub p90_ns: SimTime,
    /// 99th percentile.
    pub p99_ns: SimTime,
    /// 99.9th percentile.
    pub p999_ns: SimTime,
    /// Longest wait (exact).
    pub max_ns: SimTime,
}

impl WaitStats {
    /// Empty statistics.
    pub fn new() -> Self {
        let mut histogram = Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NS, SIGNIFICANT_DIGITS)
            .expect("valid histogram bounds");
        histogram.auto(false);
        WaitStats {
            histogram,
            count: 0,
            sum_ns: 0,
            max_ns: 0,
            frozen: None,
        }
    }

    /// Keeps only the reported figures and releases the histogram (344 KiB): for finished
    /// statistics that will only be summarised, such as a replication's beyond the first.
    /// Frozen statistics record and merge no more.
    pub fn freeze(&mut self) {
        if self.frozen.is_some() {
            return;
        }
        self.frozen = Some(self.summary());
        self.histogram =
            Histogram::new_with_bounds(1, 2, 1).expect("the smallest histogram is valid");
    }

    /// Records one wait.
    #[inline(always)]
    pub fn record(&mut self, wait_ns: SimTime) {
        self.histogram
            .saturating_record(wait_ns.min(HIGHEST_TRACKABLE_NS));
        self.count += 1;
        self.sum_ns += u128::from(wait_ns);
        self.max_ns = self.max_ns.max(wait_ns);
    }

    /// Number of waits recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Longest wait recorded (0 when empty).
    pub fn max_ns(&self) -> SimTime {
        self.max_ns
    }

    /// The wait at quantile `q` in `[0, 1]`: the histogram bucket's highest value, never above
    /// the exact maximum (0 when empty).
    pub fn quantile_ns(&self, q: f64) -> SimTime {
        assert!(
            self.frozen.is_none(),
            "frozen statistics keep only their summary"
        );
        if self.count == 0 {
            return 0;
        }
        self.histogram.value_at_quantile(q).min(self.max_ns)
    }

    /// Forgets every wait, keeping the allocation.
    pub fn clear(&mut self) {
        if self.count > 0 {
            self.histogram.reset();
        }
        self.count = 0;
        self.sum_ns = 0;
        self.max_ns = 0;
    }

    /// The reported figures.
    pub fn summary(&self) -> WaitSummary {
        if let Some(frozen) = self.frozen {
            return frozen;
        }
        let mean_ns = if self.count == 0 {
            0
        } else {
            let count = u128::from(self.count);
            ((self.sum_ns + count / 2) / count) as SimTime
        };
        WaitSummary {
            count: self.count,
            mean_ns,
            p50_ns: self.quantile_ns(0.5),
            p90_ns: self.quantile_ns(0.9),
            p99_ns: self.quantile_ns(0.99),
            p999_ns: self.quantile_ns(0.999),
            max_ns: self.max_ns,
        }
    }
}

impl Default for WaitStats {
    fn default() -> Self {
        Self::new()
    }
}

impl AddAssign<&WaitStats> for WaitStats {
    fn add_assign(&mut self, other: &WaitStats) {
        assert!(
            self.frozen.is_none() && other.frozen.is_none(),
            "frozen statistics are not merged"
        );
        self.histogram
            .add(&other.histogram)
            .expect("histograms share their bounds");
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_exactly_where_it_can() {
        let mut stats = WaitStats::new();
        for wait in [0, 0, 10_000_000, 5_000_000, 0] {
            stats.record(wait);
        }
        let summary = stats.summary();
        assert_eq!(summary.count, 5);
        assert_eq!(summary.mean_ns, 3_000_000);
        assert_eq!(summary.p50_ns, 0);
        assert_eq!(summary.max_ns, 10_000_000);
        assert_eq!(summary.p999_ns, 10_000_000);
    }

    #[test]
    fn percentiles_keep_three_significant_digits() {
        let mut stats = WaitStats::new();
        (1..=100_000u64).for_each(|i| stats.record(i * 1_000));
        let p99 = stats.quantile_ns(0.99) as f64;
        assert!((p99 / 99_000_000.0 - 1.0).abs() < 1e-3, "{p99}");
    }

    #[test]
    fn frozen_statistics_keep_their_summary() {
        let mut stats = WaitStats::new();
        (1..=1000u64).for_each(|i| stats.record(i * 1_000));
        let summary = stats.summary();
        stats.freeze();
        assert_eq!(stats.summary(), summary);
    }

    #[test]
    fn merging_equals_recording_together() {
        let (mut a, mut b, mut all) = (WaitStats::new(), WaitStats::new(), WaitStats::new());
        for i in 0..1000u64 {
            let wait = i * i * 37;
            if i % 3 == 0 { &mut a } else { &mut b }.record(wait);
            all.record(wait);
        }
        a += &b;
        assert_eq!(a.summary(), all.summary());
    }
}
