//! Per-key statistics for runs with many keys: arrivals and the longest and mean wait of every
//! touched key, and the 99th-percentile wait of the hottest ones. Memory follows the keys
//! touched (24 bytes each) plus a small histogram for at most [`MAX_TRACKED`] hot keys.

use hdrhistogram::Histogram;

use crate::time::SimTime;

/// A key gets a wait histogram once it has had this many increments (hot keys reach it
/// first, so the histograms go to them; the first increments are not in its percentiles).
pub const TRACK_AFTER: u32 = 64;
/// Most keys with a wait histogram (about 22 KB each).
pub const MAX_TRACKED: usize = 512;
/// Longest wait a key histogram holds (about 13 days); longer waits are clamped.
const HIGHEST_NS: u64 = 1 << 50;

/// One touched key's figures.
#[derive(Debug, Clone)]
struct KeyStat {
    key: u32,
    arrivals: u32,
    max_wait_ns: SimTime,
    /// Summed waits in ns (saturating: 584 years of waiting per key).
    sum_wait_ns: u64,
    waits: Option<Box<Histogram<u32>>>,
}

/// The figures reported for one hot key.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KeyFigures {
    /// Dense key id.
    pub key: u32,
    /// Its increments (measured period).
    pub arrivals: u64,
    /// Mean wait.
    pub(crate) mean_wait_ns: SimTime,
    /// 99th-percentile wait (2 significant digits) over the increments after its 64th, when it
    /// was among the first 512 keys to reach 64.
    pub(crate) p99_wait_ns: Option<SimTime>,
    /// Longest wait.
    pub max_wait_ns: SimTime,
    /// Rows the key had at the end.
    pub(crate) rows: u32,
}

/// Per-key statistics, indexed like the rows: by the order in which keys were first touched.
#[derive(Debug, Clone, Default)]
pub struct KeyTracker {
    stats: Vec<KeyStat>,
    tracked: usize,
}

impl KeyTracker {
    /// No keys yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a wait of `key`, whose rows are block `block` (blocks are numbered densely in
    /// first-touch order, so a new key's block is the next number); a wait of the warm-up
    /// (`measured` false) only registers the key, so blocks stay dense.
    #[inline]
    pub fn record(&mut self, block: usize, key: u32, wait_ns: SimTime, measured: bool) {
        // Blocks are numbered in the order keys got rows, which can run ahead of their first
        // wait (an update that gave up before taking its row, or one waiting for a
        // connection): the blocks in between are filled in when their waits come.
        while block >= self.stats.len() {
            self.stats.push(KeyStat {
                key: u32::MAX,
                arrivals: 0,
                max_wait_ns: 0,
                sum_wait_ns: 0,
                waits: None,
            });
        }
        self.stats[block].key = key;
        if !measured {
            return;
        }
        let stat = &mut self.stats[block];
        stat.arrivals = stat.arrivals.saturating_add(1);
        stat.max_wait_ns = stat.max_wait_ns.max(wait_ns);
        stat.sum_wait_ns = stat.sum_wait_ns.saturating_add(wait_ns);
        if let Some(waits) = stat.waits.as_mut() {
            waits.saturating_record(wait_ns.min(HIGHEST_NS));
        } else if stat.arrivals >= TRACK_AFTER && self.tracked < MAX_TRACKED {
            let mut waits =
                Histogram::new_with_bounds(1, HIGHEST_NS, 2).expect("valid histogram bounds");
            waits.auto(false);
            stat.waits = Some(Box::new(waits));
            self.tracked += 1;
        }
    }

    /// The `count` keys with the most increments (ties: lower key id first), each with the
    /// rows `rows_of` gives it.
    pub fn hottest(&self, count: usize, rows_of: impl Fn(u32) -> u32) -> Vec<KeyFigures> {
        let mut order: Vec<&KeyStat> = self.stats.iter().filter(|s| s.arrivals > 0).collect();
        order.sort_unstable_by(|a, b| b.arrivals.cmp(&a.arrivals).then(a.key.cmp(&b.key)));
        order
            .into_iter()
            .take(count)
            .map(|stat| KeyFigures {
                key: stat.key,
                arrivals: u64::from(stat.arrivals),
                mean_wait_ns: (stat.sum_wait_ns as f64 / f64::from(stat.arrivals)).round()
                    as SimTime,
                p99_wait_ns: stat
                    .waits
                    .as_ref()
                    .filter(|w| !w.is_empty())
                    .map(|w| w.value_at_quantile(0.99).min(stat.max_wait_ns)),
                max_wait_ns: stat.max_wait_ns,
                rows: rows_of(stat.key),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_keys_by_arrivals_and_tracks_the_hot_ones() {
        let mut tracker = KeyTracker::new();
        for i in 0..200u64 {
            tracker.record(0, 7, i * 1_000, true);
        }
        tracker.record(1, 3, 5, true);
        tracker.record(1, 3, 15, true);
        let hot = tracker.hottest(5, |_| 0);
        assert_eq!(hot.len(), 2);
        assert_eq!(
            (hot[0].key, hot[0].arrivals, hot[0].max_wait_ns),
            (7, 200, 199_000)
        );
        assert!(hot[0].p99_wait_ns.is_some());
        assert_eq!(
            (
                hot[1].key,
                hot[1].arrivals,
                hot[1].mean_wait_ns,
                hot[1].p99_wait_ns
            ),
            (3, 2, 10, None)
        );
    }
}
