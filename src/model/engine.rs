//! The discrete-event simulation of one shard count.
//!
//! Arrivals come in time order from outside (the sweep feeds every engine the same stream);
//! everything that happens later is an event on the engine's [`Calendar`]. An increment's row
//! and start time are decided when it arrives — each row serves first come, first served, so
//! the start is `max(now, free_at)` as in the exact model — and an increment that must wait
//! schedules its hold start on a calendar of its own (the hot one, kept to bare times), so the
//! backlog (arrived, not yet started) is known at every instant. The optional behaviours'
//! events ([`Event`]) have a second calendar; at equal times, hold starts come first. Statistics are streamed: memory depends on the keys, rows and the current
//! backlog, never on the number of increments served.

use crate::stats::{KeyTracker, WaitStats, WindowSeries};

use super::adaptive::Adaptive;
use super::calendar::{Calendar, Instants};
use super::extended::Extension;
use super::rows::RowTable;
use super::time::SimTime;

pub use super::config::{
    Arrival, EngineConfig, KeyCounts, MAX_QUEUED, NO_USER, NoEvents, Observer,
};
pub use super::run::ShardRun;

/// Something the optional behaviours make happen at a later simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A queued update is abandoned at its client's deadline: it leaves the backlog unserved.
    Abandon,
    /// A failed like is tried again (the attempt waits in the extension's slab at this index).
    Retry(u32),
    /// A batching server flushes its counts.
    Flush(u32),
    /// The first this-many batching servers crash.
    Crash(u32),
}

/// Simulates one shard count over a stream of arrivals.
#[derive(Debug)]
pub struct Engine<O: Observer = NoEvents> {
    pub(super) config: EngineConfig,
    pub(super) rows: RowTable,
    /// When queued updates take their rows.
    pub(super) starts: Instants,
    /// Everything else that is due later (boxed: it is cold, and the hot fields stay close
    /// together).
    pub(super) calendar: Box<Calendar<Event>>,
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
    /// The optional behaviours' state; `None` keeps the exact core's fast path.
    pub(super) ext: Option<Box<Extension>>,
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
        let mut engine = Engine {
            ext: (!config.features.is_empty()).then(|| Box::new(Extension::new(&config))),
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
            calendar: Box::new(Calendar::new()),
            series: WindowSeries::new(config.window, config.window_count),
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
        };
        engine.schedule_batching();
        engine
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
        let extended = self.finish_extension();
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
            extended,
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

    #[inline]
    fn increment(&mut self, arrival: &Arrival) {
        self.take(arrival);
    }

    /// Serves one update of a closed loop and returns when it commits (its start plus its
    /// hold), or `None` once the shard count is saturated (it never commits).
    pub fn serve(&mut self, arrival: &Arrival) -> Option<SimTime> {
        assert!(
            self.ext.is_none() && self.adaptive.is_none(),
            "closed loops run the exact core (validation refuses the rest)"
        );
        self.take(arrival)
            .map(|start| start.saturating_add(arrival.hold))
    }

    /// Handles an arrival; returns its start when the exact core decided it at arrival.
    #[inline(always)]
    fn take(&mut self, arrival: &Arrival) -> Option<SimTime> {
        assert!(
            arrival.at >= self.now && arrival.at < self.config.horizon,
            "arrivals come in time order and before the horizon"
        );
        if self.saturated_at.is_some() {
            self.unserved_arrival(arrival);
            return None;
        }
        self.advance_to(arrival.at);
        self.now = arrival.at;
        let start = if self.ext.is_some() {
            self.extended_arrival(arrival);
            None
        } else {
            Some(self.exact_arrival(arrival))
        };
        if (self.starts.len() + self.calendar.len()) as u64 > self.config.queue_limit {
            self.saturate();
        }
        start
    }

    /// The exact core's increment: the row and start decided at arrival; returns the start.
    #[inline(always)]
    fn exact_arrival(&mut self, arrival: &Arrival) -> SimTime {
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
        grant.start
    }

    /// Stops serving: the queue passed its limit, so the shard count is saturated from now on.
    /// The calendars are dropped (their memory is what the limit protects); the backlog stays.
    #[cold]
    pub(super) fn saturate(&mut self) {
        self.saturated_at = Some(self.now);
        self.starts = Instants::new();
        *self.calendar = Calendar::new();
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
    pub(super) fn apply_growth(&mut self, key: u32) {
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
    pub(super) fn record_for_key(&mut self, key: u32, wait: SimTime, measured: bool) {
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

    /// The time of the next event on either calendar.
    #[inline]
    fn next_event_time(&self) -> Option<SimTime> {
        let start = self.starts.next_time();
        if self.calendar.is_empty() {
            return start;
        }
        match (start, self.calendar.next_time()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handles the event due at `time` (hold starts first on ties).
    fn handle_next_event(&mut self, time: SimTime) {
        self.close_windows_through(time);
        if self.calendar.is_empty() || self.starts.next_time() == Some(time) {
            self.starts.pop();
            self.backlog -= 1;
            self.series.record_start();
            return;
        }
        let (_, event) = self.calendar.pop().expect("an event is due");
        match event {
            Event::Abandon => self.backlog -= 1,
            other => {
                self.now = time;
                self.handle_extended_event(other);
            }
        }
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
        self.series.close_window(self.backlog, self.at_risk(), rows);
    }
}
