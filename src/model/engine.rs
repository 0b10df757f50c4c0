//! The discrete-event simulation of one shard count.
//!
//! Arrivals come in time order from outside (the sweep feeds every engine the same stream);
//! everything that happens later is an event on the engine's [`Calendar`]. An increment's row
//! and start time are decided when it arrives — each row serves first come, first served, so
//! the start is `max(now, free_at)` as in the exact model — and an increment that must wait
//! schedules a [`Event::HoldStart`], so the backlog (arrived, not yet started) is known at
//! every instant. Statistics are streamed: memory depends on the keys, rows and the current
//! backlog, never on the number of increments served.

use crate::stats::{WaitStats, WindowRow, WindowSeries};

use super::calendar::Calendar;
use super::rows::{Grant, Policy, RowTable};
use super::time::SimTime;

/// The `user` of an arrival that carries no user id.
pub const NO_USER: u64 = u64::MAX;

/// One increment offered to the counter, with every random draw it needs already made, so that
/// all shard counts see the same arrival (common random numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// Arrival time.
    pub at: SimTime,
    /// How long its update will hold the row.
    pub hold: SimTime,
    /// Uniform random bits for the `random` policy.
    pub random_bits: u64,
    /// The user id for the `hash-user` policy, or [`NO_USER`].
    pub user: u64,
    /// Dense key id.
    pub key: u32,
}

/// What an engine simulates.
#[derive(Debug, Clone, Copy)]
pub struct EngineConfig {
    /// Rows per key.
    pub shards: u32,
    /// How an increment picks its row.
    pub policy: Policy,
    /// End of the simulated period; arrivals come before it.
    pub horizon: SimTime,
    /// Length of a time-series window.
    pub window: SimTime,
    /// Number of time-series windows (`ceil(horizon / window)`).
    pub window_count: usize,
    /// Expected number of distinct keys (a capacity hint).
    pub key_hint: usize,
    /// Start of the measured period: arrivals before it (the warm-up) are simulated but left
    /// out of the statistics; 0 measures everything.
    pub measure_from: SimTime,
}

/// Sees every increment as it is decided (used to write `events.csv`).
pub trait Observer {
    /// Called once per increment, after it took its row.
    fn on_increment(&mut self, arrival: &Arrival, grant: &Grant, rows: &RowTable);
}

/// The observer that records nothing; costs nothing in the hot loop.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl Observer for NoEvents {
    #[inline(always)]
    fn on_increment(&mut self, _: &Arrival, _: &Grant, _: &RowTable) {}
}

/// Something that happens at a later simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A queued update takes its row lock: it leaves the backlog.
    HoldStart,
}

/// The result of simulating one shard count.
#[derive(Debug, Clone)]
pub struct ShardRun {
    /// Rows per key.
    pub shards: u32,
    /// Increments that arrived in the measured period (after the warm-up, before the horizon).
    pub arrivals: u64,
    /// Holds that finished in the measured period.
    pub completed: u64,
    /// Waits of the increments that arrived in the measured period.
    pub waits: WaitStats,
    /// Largest backlog at any instant of the measured period (from its first arrival).
    pub backlog_max: u64,
    /// Backlog at the horizon.
    pub backlog_final: u64,
    /// The time series.
    pub windows: Vec<WindowRow>,
    /// Keys that received at least one increment.
    pub keys_touched: usize,
}

/// Simulates one shard count over a stream of arrivals.
#[derive(Debug)]
pub struct Engine<O: Observer = NoEvents> {
    config: EngineConfig,
    rows: RowTable,
    calendar: Calendar<Event>,
    series: WindowSeries,
    waits: WaitStats,
    now: SimTime,
    arrivals: u64,
    completed: u64,
    backlog: u64,
    backlog_max: u64,
    measuring: bool,
    observer: O,
}

impl<O: Observer> Engine<O> {
    /// An engine at time 0 with every row free.
    pub fn new(config: EngineConfig, observer: O) -> Self {
        Engine {
            rows: RowTable::new(config.shards, config.policy, config.key_hint),
            calendar: Calendar::new(),
            series: WindowSeries::new(config.window, config.window_count),
            waits: WaitStats::new(),
            now: 0,
            arrivals: 0,
            completed: 0,
            backlog: 0,
            backlog_max: 0,
            measuring: false,
            observer,
            config,
        }
    }

    /// Simulates a batch of arrivals, in time order, all before the horizon.
    pub fn feed(&mut self, arrivals: &[Arrival]) {
        for arrival in arrivals {
            self.increment(arrival);
        }
    }

    /// The rows as they stand now.
    pub fn rows(&self) -> &RowTable {
        &self.rows
    }

    /// Runs the remaining events up to the horizon and returns the results and the observer.
    pub fn finish(mut self) -> (ShardRun, O) {
        while let Some(time) = self.calendar.next_time() {
            if time >= self.config.horizon {
                break;
            }
            self.handle_next_event(time);
        }
        while !self.series.is_complete() {
            self.series.close_window(self.backlog);
        }
        let run = ShardRun {
            shards: self.config.shards,
            arrivals: self.arrivals,
            completed: self.completed,
            waits: self.waits,
            backlog_max: self.backlog_max,
            backlog_final: self.backlog,
            windows: self.series.into_rows(),
            keys_touched: self.rows.keys_touched(),
        };
        (run, self.observer)
    }

    #[inline]
    fn increment(&mut self, arrival: &Arrival) {
        assert!(
            arrival.at >= self.now && arrival.at < self.config.horizon,
            "arrivals come in time order and before the horizon"
        );
        self.advance_to(arrival.at);
        self.now = arrival.at;
        let grant = self.rows.acquire(
            arrival.key,
            arrival.at,
            arrival.hold,
            arrival.random_bits,
            arrival.user,
        );
        let wait = grant.start - arrival.at;
        let measured = arrival.at >= self.config.measure_from;
        if measured {
            if !self.measuring {
                self.measuring = true;
                self.backlog_max = self.backlog;
            }
            self.arrivals += 1;
            self.waits.record(wait);
        }
        self.series.record_arrival(wait);
        if grant.start > arrival.at {
            self.calendar.schedule(grant.start, Event::HoldStart);
            self.backlog += 1;
            if measured {
                self.backlog_max = self.backlog_max.max(self.backlog);
            }
        } else {
            self.series.record_start();
        }
        let end = grant.start.saturating_add(arrival.hold);
        if end <= self.config.horizon && end >= self.config.measure_from {
            self.completed += 1;
        }
        self.observer.on_increment(arrival, &grant, &self.rows);
    }

    /// Handles every event at or before `time`, closing the windows that end on the way.
    #[inline]
    fn advance_to(&mut self, time: SimTime) {
        while let Some(next) = self.calendar.next_time() {
            if next > time {
                break;
            }
            self.handle_next_event(next);
        }
        self.close_windows_through(time);
    }

    fn handle_next_event(&mut self, time: SimTime) {
        self.close_windows_through(time);
        let (_, event) = self.calendar.pop().expect("an event is due");
        match event {
            Event::HoldStart => {
                self.backlog -= 1;
                self.series.record_start();
            }
        }
    }

    #[inline]
    fn close_windows_through(&mut self, time: SimTime) {
        while time >= self.series.current_end() {
            self.series.close_window(self.backlog);
        }
    }
}
