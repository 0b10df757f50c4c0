//! The closed-form row stage: one shard count simulated by deciding each increment's row and
//! start when it arrives.
//!
//! Arrivals come in time order from outside (the sweep feeds every engine the same stream).
//! Each row serves first come, first served, so an increment's start is `max(now, free_at)` as
//! in the exact model; one that must wait puts its start on a calendar of bare times, so the
//! backlog (arrived, not yet started) is known at every instant. Many keys and adaptive row
//! counts are the row table's; the client behaviours (deadlines, retries, batching, the pool,
//! reads) and closed-loop clients run on the event-driven pipeline, which reproduces this stage
//! exactly where both apply. Statistics are streamed: memory depends on the keys, rows and the
//! current backlog, never on the number of increments served.

use crate::stats::{KeyTracker, WaitStats, WindowSeries};

use super::adaptive::Adaptive;
use super::calendar::Instants;
use super::rows::RowTable;
use crate::time::SimTime;

pub use super::config::{
    Arrival, EngineConfig, KeyCounts, MAX_QUEUED, NO_USER, NoEvents, Observer,
};
pub use super::run::ShardRun;

/// Simulates one shard count over a stream of arrivals.
#[derive(Debug)]
pub struct Engine<O: Observer = NoEvents> {
    pub(super) config: EngineConfig,
    pub(super) rows: RowTable,
    /// When queued updates take their rows.
    pub(super) starts: Instants,
    pub(super) series: WindowSeries,
    pub(super) waits: WaitStats,
    pub(super) now: SimTime,
    pub(super) arrivals: u64,
    /// Rows tried by the measured updates.
    pub(super) tries: u64,
    pub(super) completed: u64,
    pub(super) backlog: u64,
    pub(super) backlog_max: u64,
    pub(super) measuring: bool,
    pub(super) observer: O,
    /// Per-key statistics, with many keys.
    pub(super) keys: Option<Box<KeyTracker>>,
    /// Adaptive row counts.
    pub(super) adaptive: Option<Box<Adaptive>>,
    /// When the queue passed its limit, if it did.
    pub(super) saturated_at: Option<SimTime>,
}

impl<O: Observer> Engine<O> {
    /// An engine at time 0 with every row free.
    pub fn new(config: EngineConfig, observer: O) -> Self {
        assert!(
            config.features.is_empty(),
            "the client behaviours run on the pipeline (the scenario puts them there)"
        );
        Engine {
            keys: (config.hot_keys > 0).then(|| Box::new(KeyTracker::new())),
            adaptive: config
                .adaptive
                .map(|policy| Box::new(Adaptive::new(policy))),
            rows: RowTable::new(
                config.adaptive.map_or(config.shards, |a| a.start),
                config.policy,
                config.key_hint,
            )
            .with_skip_locked(config.skip_locked),
            starts: Instants::new(),
            series: WindowSeries::new(config.window, config.window_count()),
            waits: WaitStats::new(),
            now: 0,
            arrivals: 0,
            tries: 0,
            completed: 0,
            backlog: 0,
            backlog_max: 0,
            measuring: false,
            observer,
            saturated_at: None,
            config,
        }
    }

    /// Simulates a batch of arrivals, in time order, all before the horizon. Runs of one key
    /// that the exact core alone serves go through its tightest loop (`fast.rs`), the rest
    /// one by one; the results are the same.
    pub fn feed(&mut self, mut arrivals: &[Arrival]) {
        while let Some(arrival) = arrivals.first() {
            let fed = self.feed_fast(arrivals);
            if fed == 0 {
                self.increment(arrival);
                arrivals = &arrivals[1..];
            } else {
                arrivals = &arrivals[fed..];
            }
        }
    }

    /// The rows as they stand now.
    pub fn rows(&self) -> &RowTable {
        &self.rows
    }

    /// Runs the remaining events up to the horizon and returns the results and the observer.
    pub fn finish(mut self) -> (ShardRun, O) {
        while let Some(time) = self
            .next_event_time()
            .filter(|_| self.saturated_at.is_none())
        {
            if time >= self.config.horizon {
                break;
            }
            self.handle_next_event(time);
        }
        while !self.series.is_complete() {
            self.close_window();
        }
        let hot_keys = self.keys.as_ref().map_or_else(Vec::new, |keys| {
            keys.hottest(self.config.hot_keys, |key| self.rows.rows_of(key))
        });
        let run = ShardRun {
            policy: self.config.policy,
            shards: self.config.shards,
            tries: self.tries,
            arrivals: self.arrivals,
            completed: self.completed,
            waits: self.waits,
            backlog_max: self.backlog_max,
            backlog_final: self.backlog,
            windows: self.series.into_rows(),
            keys_touched: self.rows.keys_touched(),
            extended: None,
            hot_keys,
            adaptive: self.adaptive.is_some(),
            growths: self
                .adaptive
                .as_ref()
                .map_or_else(Vec::new, |a| a.growths().to_vec()),
            rows_total: self.rows.rows_total(),
            max_key_rows: self.rows.max_key_rows(),
            saturated_at: self.saturated_at,
            closed: None,
            machine: None,
            likes: None,
        };
        (run, self.observer)
    }

    /// Handles one arrival.
    #[inline(always)]
    fn increment(&mut self, arrival: &Arrival) {
        assert!(
            arrival.at >= self.now && arrival.at < self.config.horizon,
            "arrivals come in time order and before the horizon"
        );
        if self.saturated_at.is_some() {
            self.unserved_arrival(arrival);
            return;
        }
        self.advance_to(arrival.at);
        self.now = arrival.at;
        self.exact_arrival(arrival);
        if self.starts.len() as u64 > self.config.queue_limit {
            self.saturate();
        }
    }

    /// The exact core's increment: the row and start decided at arrival.
    #[inline(always)]
    fn exact_arrival(&mut self, arrival: &Arrival) {
        self.apply_growth(arrival.key);
        let grant = self.rows.acquire(
            arrival.key,
            arrival.at,
            arrival.hold,
            arrival.random_bits,
            arrival.user,
        );
        let measured = arrival.at >= self.config.measure_from;
        if measured {
            self.tries += u64::from(grant.tries);
        }
        self.record_update(arrival.at, grant.start, arrival.hold, measured);
        self.record_for_key(arrival.key, grant.start - arrival.at, measured);
        self.observer.on_increment(arrival, &grant, &self.rows);
    }

    /// Stops serving: the queue passed its limit, so the shard count is saturated from now on.
    /// The calendar is dropped (its memory is what the limit protects); the backlog stays.
    #[cold]
    pub(super) fn saturate(&mut self) {
        self.saturated_at = Some(self.now);
        self.starts = Instants::new();
    }

    /// An arrival after saturation: it joins the backlog and is never served.
    #[cold]
    fn unserved_arrival(&mut self, arrival: &Arrival) {
        self.now = arrival.at;
        self.close_windows_through(arrival.at);
        let measured = arrival.at >= self.config.measure_from;
        if measured {
            self.arrivals += 1;
        }
        self.series.record_unserved();
        self.enter_backlog(measured);
    }

    /// Adaptive runs: gives the key the rows its writers now use (a growth whose cache delay
    /// has passed).
    #[inline(always)]
    fn apply_growth(&mut self, key: u32) {
        if let Some(adaptive) = self.adaptive.as_mut()
            && let Some(block) = self.rows.block_of(key)
            && let Some(rows) = adaptive.due_rows(block, self.now)
        {
            self.rows.grow(key, rows);
        }
    }

    /// Feeds a wait to the key's figures: its growth signal (adaptive runs) and, in the
    /// measured period, its per-key statistics (many keys). The key's block is looked up once.
    #[inline(always)]
    fn record_for_key(&mut self, key: u32, wait: SimTime, measured: bool) {
        if self.keys.is_none() && self.adaptive.is_none() {
            return;
        }
        let block = self
            .rows
            .block_of(key)
            .expect("the key has rows once incremented");
        if let Some(keys) = self.keys.as_mut() {
            keys.record(block, key, wait, measured);
        }
        if let Some(adaptive) = self.adaptive.as_mut() {
            adaptive.record(block, key, self.now, wait);
        }
    }

    /// Accounts for an update sent at `sent` that takes its row at `start` for `hold`: its
    /// wait, the backlog until it starts, and its completion.
    #[inline(always)]
    pub(super) fn record_update(
        &mut self,
        sent: SimTime,
        start: SimTime,
        hold: SimTime,
        measured: bool,
    ) {
        let wait = start - sent;
        if measured {
            if !self.measuring {
                self.measuring = true;
                self.backlog_max = self.backlog;
            }
            self.arrivals += 1;
            self.waits.record(wait);
        }
        self.series.record_arrival(wait);
        if start > self.now {
            self.starts.schedule(start);
            self.enter_backlog(measured);
        } else {
            self.series.record_start();
        }
        let end = start.saturating_add(hold);
        if end <= self.config.horizon && end >= self.config.measure_from {
            self.completed += 1;
        }
    }

    /// One more update waits.
    #[inline(always)]
    pub(super) fn enter_backlog(&mut self, measured: bool) {
        self.backlog += 1;
        self.series.note_backlog(self.backlog);
        if measured {
            self.backlog_max = self.backlog_max.max(self.backlog);
        }
    }

    /// Handles every event at or before `time`, closing the windows that end on the way.
    #[inline]
    fn advance_to(&mut self, time: SimTime) {
        while let Some(next) = self.next_event_time() {
            if next > time {
                break;
            }
            self.handle_next_event(next);
        }
        self.close_windows_through(time);
    }

    /// When the next queued update takes its row.
    #[inline]
    fn next_event_time(&self) -> Option<SimTime> {
        self.starts.next_time()
    }

    /// A queued update takes its row at `time`.
    fn handle_next_event(&mut self, time: SimTime) {
        self.close_windows_through(time);
        self.starts.pop();
        self.backlog -= 1;
        self.series.record_start();
    }

    #[inline]
    fn close_windows_through(&mut self, time: SimTime) {
        while time >= self.series.current_end() {
            self.close_window();
        }
    }

    /// Closes the time series' current window with the state at its end.
    fn close_window(&mut self) {
        let rows = (
            self.rows.rows_total(),
            self.rows.rows_of(self.config.hot_key),
        );
        // No batching here: no like sits in a server's memory.
        self.series.close_window(self.backlog, 0, rows);
    }
}
