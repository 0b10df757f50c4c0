//! Wait statistics: an HDR histogram (3 significant digits) for percentiles, with the exact
//! count, sum and maximum beside it. Zero waits — most waits below saturation — are only
//! counted (the histogram's bucket 0, kept apart): a percentile reads them as the histogram
//! would have, so the figures are exactly an HDR histogram's.

use std::ops::AddAssign;

use hdrhistogram::Histogram;

use crate::time::SimTime;

/// Waits are recorded in nanoseconds; longer waits than this (about 13 days) are clamped.
const HIGHEST_TRACKABLE_NS: u64 = 1 << 50;
/// Significant decimal digits kept by the histogram: percentiles are within 0.1%.
const SIGNIFICANT_DIGITS: u8 = 3;

/// Streaming, mergeable statistics of wait times.
#[derive(Debug, Clone)]
pub struct WaitStats {
    /// The waits above zero.
    histogram: Histogram<u64>,
    /// Waits of zero.
    zeros: u64,
    count: u64,
    sum_ns: u128,
    max_ns: SimTime,
    /// Set by [`WaitStats::freeze`]: the figures, kept after the histogram was released.
    frozen: Option<WaitSummary>,
}

/// The figures reported for a set of waits, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
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

/// The serialized form of [`WaitStats`] (for a partition's slices): the histogram as its
/// recorded (value, count) pairs, which rebuild exactly the same buckets.
#[derive(serde::Serialize, serde::Deserialize)]
struct WaitStatsForm {
    buckets: Vec<(u64, u64)>,
    zeros: u64,
    count: u64,
    sum_ns: u128,
    max_ns: SimTime,
    frozen: Option<WaitSummary>,
}

impl serde::Serialize for WaitStats {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WaitStatsForm {
            buckets: self
                .histogram
                .iter_recorded()
                .map(|bucket| (bucket.value_iterated_to(), bucket.count_at_value()))
                .collect(),
            zeros: self.zeros,
            count: self.count,
            sum_ns: self.sum_ns,
            max_ns: self.max_ns,
            frozen: self.frozen,
        }
        .serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for WaitStats {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = WaitStatsForm::deserialize(deserializer)?;
        let mut stats = WaitStats::new();
        for (value, count) in form.buckets {
            stats
                .histogram
                .record_n(value, count)
                .map_err(|err| serde::de::Error::custom(format!("a histogram bucket: {err}")))?;
        }
        if form.frozen.is_some() {
            stats.histogram =
                Histogram::new_with_bounds(1, 2, 1).expect("the smallest histogram is valid");
        }
        stats.zeros = form.zeros;
        stats.count = form.count;
        stats.sum_ns = form.sum_ns;
        stats.max_ns = form.max_ns;
        stats.frozen = form.frozen;
        Ok(stats)
    }
}

impl WaitStats {
    /// Empty statistics.
    pub fn new() -> Self {
        let mut histogram = Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NS, SIGNIFICANT_DIGITS)
            .expect("valid histogram bounds");
        histogram.auto(false);
        WaitStats {
            histogram,
            zeros: 0,
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

    /// Whether these statistics were frozen ([`WaitStats::freeze`]): they report, but record
    /// and merge no more.
    pub fn is_frozen(&self) -> bool {
        self.frozen.is_some()
    }

    /// Records one wait.
    #[inline(always)]
    pub fn record(&mut self, wait_ns: SimTime) {
        if wait_ns == 0 {
            self.record_zero();
        } else {
            self.record_positive(wait_ns);
        }
    }

    /// Records a wait of zero.
    #[inline(always)]
    pub fn record_zero(&mut self) {
        self.count += 1;
        self.zeros += 1;
    }

    /// Records a wait known to be above zero.
    #[inline(always)]
    pub fn record_positive(&mut self, wait_ns: SimTime) {
        debug_assert!(wait_ns > 0, "a positive wait");
        self.count += 1;
        self.histogram
            .saturating_record(wait_ns.min(HIGHEST_TRACKABLE_NS));
        self.sum_ns += u128::from(wait_ns);
        self.max_ns = self.max_ns.max(wait_ns);
    }

    /// Moves the zeros counted apart into the histogram, which then answers percentiles at
    /// its own speed (the figures do not change).
    pub fn settle(&mut self) {
        if self.zeros > 0 && self.frozen.is_none() {
            self.histogram.saturating_record_n(0, self.zeros);
            self.zeros = 0;
        }
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
        if self.zeros == 0 {
            return self.histogram.value_at_quantile(q).min(self.max_ns);
        }
        // As the histogram would rank them with the zeros in its first bucket.
        let rank = ((q.min(1.0) * self.count as f64).ceil() as u64).max(1);
        if rank <= self.zeros {
            return 0;
        }
        let mut below = self.zeros;
        for bucket in self.histogram.iter_recorded() {
            below += bucket.count_at_value();
            if below >= rank {
                let value = bucket.value_iterated_to();
                let value = if q == 0.0 {
                    self.histogram.lowest_equivalent(value)
                } else {
                    value
                };
                return value.min(self.max_ns);
            }
        }
        self.max_ns
    }

    /// Counts `n` more waits of zero.
    pub fn record_zeros(&mut self, n: u64) {
        self.count += n;
        self.zeros += n;
    }

    /// The highest wait the histogram does not tell apart from `wait_ns` (clamped as a
    /// recorded wait is): what a percentile falling on `wait_ns` reports.
    pub fn highest_equivalent_ns(&self, wait_ns: SimTime) -> SimTime {
        self.histogram
            .highest_equivalent(wait_ns.min(HIGHEST_TRACKABLE_NS))
    }

    /// Forgets every wait, keeping the allocation.
    pub fn clear(&mut self) {
        if !self.histogram.is_empty() {
            self.histogram.reset();
        }
        self.zeros = 0;
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
        self.zeros += other.zeros;
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_serialized_histogram_comes_back_the_same() {
        let mut stats = WaitStats::new();
        for (i, wait) in [0u64, 0, 7, 1_000, 123_456, 9_999_999, 42_000_000_000]
            .iter()
            .enumerate()
        {
            for _ in 0..=i {
                stats.record(*wait);
            }
        }
        let text = serde_json::to_string(&stats).unwrap();
        let back: WaitStats = serde_json::from_str(&text).unwrap();
        assert_eq!(back.summary(), stats.summary());
        // Merging into it behaves as merging into the original.
        let (mut a, mut b) = (stats.clone(), back);
        let mut more = WaitStats::new();
        more.record(55_555);
        a += &more;
        b += &more;
        assert_eq!(a.summary(), b.summary());
        // A frozen one keeps its figures.
        let mut frozen = stats.clone();
        frozen.freeze();
        let back: WaitStats =
            serde_json::from_str(&serde_json::to_string(&frozen).unwrap()).unwrap();
        assert_eq!(back.summary(), stats.summary());
    }

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
    fn zeros_kept_apart_give_the_histograms_own_percentiles() {
        // Against a plain HDR histogram holding every wait, zeros included, for mixes of
        // zeros and waits across the buckets.
        let mut seed = 7u64;
        for zeros_in_100 in [0u64, 1, 30, 70, 99, 100] {
            let mut stats = WaitStats::new();
            let mut plain = Histogram::<u64>::new_with_bounds(1, HIGHEST_TRACKABLE_NS, 3).unwrap();
            let mut max = 0;
            for _ in 0..5_000 {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let wait = if (seed >> 33) % 100 < zeros_in_100 {
                    0
                } else {
                    (seed >> 20) % 50_000_000 + 1
                };
                stats.record(wait);
                plain.record(wait).unwrap();
                max = max.max(wait);
            }
            for q in [0.0, 0.001, 0.3, 0.5, 0.69, 0.7, 0.71, 0.9, 0.99, 0.999, 1.0] {
                let expected = plain.value_at_quantile(q).min(max);
                assert_eq!(
                    stats.quantile_ns(q),
                    expected,
                    "{zeros_in_100}% zeros, q = {q}"
                );
            }
        }
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
