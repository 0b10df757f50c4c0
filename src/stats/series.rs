//! The time series: per window of simulated time, arrivals, starts, the backlog at the window's
//! end and the waits of the increments that arrived in it.
//!
//! The exact core knows each wait at arrival. The event-driven pipeline learns it only when the
//! update takes its row, possibly windows later, so its series keeps the waits of every window
//! that still has an update waiting ([`WindowSeries::with_late_waits`]) and fills in the
//! window's wait figures once its last update has its row: the same figures as the exact core's
//! for the same waits.

use std::collections::VecDeque;

use crate::time::SimTime;

use super::waits::WaitStats;

/// One window of the time series; window `k` covers `[k·window, (k+1)·window)`. Kept small
/// (64 bytes), as a run holds one per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WindowRow {
    /// Increments that arrived in the window.
    pub arrivals: u64,
    /// Holds that started in the window.
    pub started: u64,
    /// Increments arrived but not yet started at the window's end.
    pub backlog: u64,
    /// The most increments waiting at any instant of the window.
    pub(crate) backlog_peak: u64,
    /// Likes held in batching servers' memory, not yet flushed, at the window's end
    /// (saturating at 2³² − 1).
    pub(crate) at_risk: u32,
    /// Rows over all keys at the window's end (at most 2²⁷ by the scenario limits).
    pub rows: u32,
    /// Rows of the busiest key at the window's end.
    pub(crate) hot_key_rows: u32,
    /// With `[likes_table]`: stored likes the counts miss for good at the window's end
    /// (saturating at 2³² − 1).
    #[serde(default)]
    pub drift: u32,
    wait_p99_ns: SimTime,
    wait_max_ns: SimTime,
}

impl WindowRow {
    /// A window with `arrivals` arrivals, `backlog` waiting at its end (its peak too) and
    /// p99 wait `p99_ns`.
    #[cfg(test)]
    pub(crate) fn for_test(arrivals: u64, backlog: u64, p99_ns: SimTime) -> WindowRow {
        WindowRow {
            arrivals,
            started: 0,
            backlog,
            backlog_peak: backlog,
            at_risk: 0,
            rows: 0,
            hot_key_rows: 0,
            drift: 0,
            wait_p99_ns: p99_ns,
            wait_max_ns: p99_ns,
        }
    }

    /// 99th-percentile wait of the window's arrivals (`None` without arrivals).
    pub fn wait_p99_ns(&self) -> Option<SimTime> {
        (self.arrivals > 0).then_some(self.wait_p99_ns)
    }

    /// Longest wait of the window's arrivals (`None` without arrivals).
    pub fn wait_max_ns(&self) -> Option<SimTime> {
        (self.arrivals > 0).then_some(self.wait_max_ns)
    }
}

/// Builds the time series window by window as simulated time advances.
#[derive(Debug, Clone)]
pub struct WindowSeries {
    window_ns: SimTime,
    window_count: usize,
    current_end: SimTime,
    arrivals: u64,
    started: u64,
    backlog_peak: u64,
    drift: u32,
    waits: WindowWaits,
    rows: Vec<WindowRow>,
    /// The pipeline's windows whose waits are not all known yet (`None` for the exact core).
    late: Option<Box<LateWaits>>,
}

/// The waits of windows, in arrival-window order, from the oldest window with an update still
/// waiting up to the current one.
#[derive(Debug, Clone, Default)]
struct LateWaits {
    /// Index of `open[0]`.
    first: usize,
    open: VecDeque<OpenWindow>,
    /// Emptied wait buffers, reused.
    spare: Vec<Vec<SimTime>>,
}

/// One window's known waits and how many of its arrivals still wait.
#[derive(Debug, Clone, Default)]
struct OpenWindow {
    pending: u64,
    waits: Vec<SimTime>,
}

impl WindowSeries {
    /// A series of `window_count` windows of `window_ns` each.
    pub fn new(window_ns: SimTime, window_count: usize) -> Self {
        assert!(window_ns > 0, "windows have a length");
        WindowSeries {
            window_ns,
            window_count,
            current_end: window_ns,
            arrivals: 0,
            started: 0,
            backlog_peak: 0,
            drift: 0,
            waits: WindowWaits::new(),
            rows: Vec::with_capacity(window_count),
            late: None,
        }
    }

    /// A series whose waits arrive late, each for the window its update arrived in
    /// ([`WindowSeries::record_late_arrival`], [`WindowSeries::record_late_wait`]).
    pub fn with_late_waits(window_ns: SimTime, window_count: usize) -> Self {
        let mut series = WindowSeries::new(window_ns, window_count);
        let mut late = LateWaits::default();
        late.open.push_back(OpenWindow::default());
        series.late = Some(Box::new(late));
        series
    }

    /// Counts an arrival of the current window whose wait comes later; returns the window's
    /// index, to give with the wait. Needs [`WindowSeries::with_late_waits`].
    #[inline]
    pub fn record_late_arrival(&mut self) -> u32 {
        self.arrivals += 1;
        let index = self.rows.len();
        if let Some(late) = self.late.as_mut()
            && let Some(window) = late.open.back_mut()
        {
            window.pending += 1;
        }
        u32::try_from(index).unwrap_or(u32::MAX)
    }

    /// The wait of an arrival of window `window` (from [`WindowSeries::record_late_arrival`]).
    #[inline]
    pub fn record_late_wait(&mut self, window: u32, wait_ns: SimTime) {
        let Some(late) = self.late.as_mut() else {
            return;
        };
        let Some(at) = (window as usize).checked_sub(late.first) else {
            return;
        };
        if let Some(open) = late.open.get_mut(at) {
            open.waits.push(wait_ns);
            open.pending -= 1;
        }
        if at == 0 {
            self.settle_late_windows();
        }
    }

    /// An arrival of window `window` (from [`WindowSeries::record_late_arrival`]) left without
    /// taking its row (its client gave up): it counts neither as an arrival nor a wait.
    pub fn forget_late_arrival(&mut self, window: u32) {
        let Some(late) = self.late.as_mut() else {
            return;
        };
        let index = window as usize;
        match self.rows.get_mut(index) {
            Some(row) => row.arrivals -= 1,
            None => self.arrivals -= 1,
        }
        let Some(at) = index.checked_sub(late.first) else {
            return;
        };
        if let Some(open) = late.open.get_mut(at) {
            open.pending -= 1;
        }
        if at == 0 {
            self.settle_late_windows();
        }
    }

    /// Fills in the wait figures of the closed windows at the front whose waits are all known.
    fn settle_late_windows(&mut self) {
        let Some(late) = self.late.as_mut() else {
            return;
        };
        while late.first < self.rows.len() && late.open.front().is_some_and(|w| w.pending == 0) {
            let mut window = late.open.pop_front().expect("checked above");
            window
                .waits
                .iter()
                .for_each(|&wait| self.waits.record(wait));
            let row = &mut self.rows[late.first];
            (row.wait_p99_ns, row.wait_max_ns) = self.waits.p99_and_max();
            self.waits.clear();
            window.waits.clear();
            late.spare.push(window.waits);
            late.first += 1;
        }
    }

    /// End of the window being filled: events at or after it belong to later windows.
    #[inline]
    pub fn current_end(&self) -> SimTime {
        self.current_end
    }

    /// Whether every window has been closed.
    pub fn is_complete(&self) -> bool {
        self.rows.len() >= self.window_count
    }

    /// Counts an arrival of the current window with its wait.
    #[inline]
    pub fn record_arrival(&mut self, wait_ns: SimTime) {
        self.arrivals += 1;
        self.waits.record(wait_ns);
    }

    /// [`WindowSeries::record_arrival`] of an arrival that waited `wait_ns > 0`.
    #[inline(always)]
    pub fn record_arrival_queued(&mut self, wait_ns: SimTime) {
        self.arrivals += 1;
        self.waits.record_positive(wait_ns);
    }

    /// Counts an arrival whose wait is unknown (a saturated shard count never serves it).
    #[inline]
    pub fn record_unserved(&mut self) {
        self.arrivals += 1;
    }

    /// Notes the backlog after it grew, for the window's peak.
    #[inline(always)]
    pub fn note_backlog(&mut self, backlog: u64) {
        self.backlog_peak = self.backlog_peak.max(backlog);
    }

    /// Notes the count's drift now (`[likes_table]`), for the window's end.
    pub fn note_drift(&mut self, drift: u64) {
        self.drift = u32::try_from(drift).unwrap_or(u32::MAX);
    }

    /// Counts `n` arrivals of the current window that waited for nothing: their holds
    /// started at once.
    #[inline]
    pub fn record_unqueued_starts(&mut self, n: u64) {
        self.arrivals += n;
        self.waits.zeros += n;
        self.started += n;
    }

    /// Counts a hold that started in the current window.
    #[inline]
    pub fn record_start(&mut self) {
        self.started += 1;
    }

    /// Closes the current window with the backlog, the counts at risk and the rows (over all
    /// keys, and of the busiest key) at its end, and opens the next.
    pub fn close_window(&mut self, backlog: u64, at_risk: u64, (rows, hot_key_rows): (u64, u32)) {
        let narrow = |value: u64| u32::try_from(value).unwrap_or(u32::MAX);
        let (at_risk, rows) = (narrow(at_risk), narrow(rows));
        let (wait_p99_ns, wait_max_ns) = self.waits.p99_and_max();
        self.rows.push(WindowRow {
            arrivals: self.arrivals,
            started: self.started,
            backlog,
            backlog_peak: self.backlog_peak.max(backlog),
            at_risk,
            rows,
            hot_key_rows,
            drift: self.drift,
            wait_p99_ns,
            wait_max_ns,
        });
        self.arrivals = 0;
        self.started = 0;
        // The next window starts with this backlog still waiting.
        self.backlog_peak = backlog;
        self.waits.clear();
        self.current_end += self.window_ns;
        if let Some(late) = self.late.as_mut() {
            let waits = late.spare.pop().unwrap_or_default();
            late.open.push_back(OpenWindow { pending: 0, waits });
            self.settle_late_windows();
        }
    }

    /// The closed windows. With late waits, a window whose updates never took their rows
    /// reports the waits that are known.
    pub fn into_rows(mut self) -> Vec<WindowRow> {
        if let Some(late) = self.late.as_mut() {
            late.open.iter_mut().for_each(|window| window.pending = 0);
            self.settle_late_windows();
        }
        self.rows
    }
}

/// Nonzero waits a window keeps as a list before it records them in a histogram instead
/// (512 KiB: about the histogram's own size).
const LISTED_WAITS: usize = 1 << 16;

/// One window's waits, for its p99 and maximum. Zeros are counted; the others are listed, and
/// the p99 is selected from the list — the value an HDR histogram of the same waits reports —
/// so a window costs what its waits do, not a histogram's reset (344 KiB). Past
/// [`LISTED_WAITS`] the window's waits go to the histogram, reset at its close.
#[derive(Debug, Clone)]
struct WindowWaits {
    zeros: u64,
    listed: Vec<SimTime>,
    max_ns: SimTime,
    /// The histogram: the bucket widths for the list's p99, and the waits of a window with
    /// too many to list.
    histogram: WaitStats,
    spilled: bool,
}

impl WindowWaits {
    fn new() -> Self {
        WindowWaits {
            zeros: 0,
            listed: Vec::new(),
            max_ns: 0,
            histogram: WaitStats::new(),
            spilled: false,
        }
    }

    #[inline]
    fn record(&mut self, wait_ns: SimTime) {
        if wait_ns == 0 {
            self.zeros += 1;
        } else {
            self.record_positive(wait_ns);
        }
    }

    #[inline(always)]
    fn record_positive(&mut self, wait_ns: SimTime) {
        if self.spilled {
            self.histogram.record(wait_ns);
        } else if self.listed.len() < LISTED_WAITS {
            self.listed.push(wait_ns);
            self.max_ns = self.max_ns.max(wait_ns);
        } else {
            self.spill(wait_ns);
        }
    }

    /// Moves the window's waits to the histogram, with one more.
    #[cold]
    fn spill(&mut self, wait_ns: SimTime) {
        self.spilled = true;
        for &wait in &self.listed {
            self.histogram.record(wait);
        }
        self.listed.clear();
        self.histogram.record(wait_ns);
    }

    /// The window's 99th-percentile wait, as an HDR histogram (3 digits) of its waits reports
    /// it, and its longest wait.
    fn p99_and_max(&mut self) -> (SimTime, SimTime) {
        if self.spilled {
            self.histogram.record_zeros(self.zeros);
            self.histogram.settle();
            return (self.histogram.quantile_ns(0.99), self.histogram.max_ns());
        }
        let count = self.zeros + self.listed.len() as u64;
        if count == 0 {
            return (0, 0);
        }
        // The histogram's rank: the smallest wait with at least 99% of the count at or below.
        let rank = ((0.99 * count as f64).ceil() as u64).max(1);
        if rank <= self.zeros {
            return (0, self.max_ns);
        }
        let at = (rank - self.zeros - 1) as usize;
        let (_, &mut wait, _) = self.listed.select_nth_unstable(at);
        let p99 = self.histogram.highest_equivalent_ns(wait).min(self.max_ns);
        (p99, self.max_ns)
    }

    /// Forgets the window's waits, keeping the allocations.
    fn clear(&mut self) {
        self.zeros = 0;
        self.listed.clear();
        self.max_ns = 0;
        if self.spilled {
            self.histogram.clear();
            self.spilled = false;
        }
    }
}

#[cfg(test)]
mod window_wait_tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// The p99 and maximum a histogram of the same waits reports.
    fn by_histogram(waits: &[SimTime]) -> (SimTime, SimTime) {
        let mut stats = WaitStats::new();
        waits.iter().for_each(|&w| stats.record(w));
        stats.settle();
        (stats.quantile_ns(0.99), stats.max_ns())
    }

    #[test]
    fn a_listed_window_reports_what_a_histogram_would() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let mut window = WindowWaits::new();
        for case in 0..300 {
            let n = rng.random_range(0..3_000);
            let zero_share: f64 = rng.random();
            let scale = 10u64.pow(rng.random_range(0..12));
            let waits: Vec<SimTime> = (0..n)
                .map(|_| {
                    if rng.random::<f64>() < zero_share {
                        0
                    } else {
                        rng.random_range(1..=scale * 7)
                    }
                })
                .collect();
            waits.iter().for_each(|&w| window.record(w));
            assert_eq!(window.p99_and_max(), by_histogram(&waits), "case {case}");
            window.clear();
        }
    }

    #[test]
    fn a_window_too_long_to_list_spills_into_the_histogram() {
        let waits: Vec<SimTime> = (0..(LISTED_WAITS as u64 + 5_000))
            .map(|i| (i * 7_919) % 100_003)
            .collect();
        let mut window = WindowWaits::new();
        waits.iter().for_each(|&w| window.record(w));
        assert!(window.spilled);
        assert_eq!(window.p99_and_max(), by_histogram(&waits));
        window.clear();
        window.record(5);
        assert!(!window.spilled);
        assert_eq!(window.p99_and_max(), by_histogram(&[5]));
    }
}
