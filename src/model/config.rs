//! What an engine simulates and who watches it: the arrivals it is fed, its settings, and
//! the observers that see each increment (shared by both row stages).

use std::sync::Arc;

use super::adaptive::AdaptivePolicy;
use super::clients::Features;
use super::rows::{Grant, Policy, RowTable, SkipLocked};
use crate::time::SimTime;

/// The most requests a shard count may hold queued; past it the shard count is saturated
/// (the memory budget may set a lower limit, [`EngineConfig::queue_limit`]).
pub const MAX_QUEUED: u64 = 1 << 22;

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
    /// 0 for a like; `i + 1` for a request of neighbour endpoint `i` (it needs only a
    /// connection from the pool).
    pub endpoint: u16,
}

impl Arrival {
    /// Work the database does at `at` for no update of its own (a flush's leader, the scan
    /// of a page): no hold, no draws, key 0.
    pub fn machine_work(at: SimTime) -> Arrival {
        Arrival {
            at,
            hold: 0,
            random_bits: 0,
            user: 0,
            key: 0,
            endpoint: 0,
        }
    }
}

/// What an engine simulates.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Rows per key.
    pub shards: u32,
    /// How an increment picks its row.
    pub policy: Policy,
    /// The `skip-locked` policy's settings.
    pub skip_locked: SkipLocked,
    /// End of the simulated period; arrivals come before it.
    pub horizon: SimTime,
    /// Length of a time-series window.
    pub window: SimTime,
    /// Expected number of distinct keys (a capacity hint).
    pub key_hint: usize,
    /// Start of the measured period: arrivals before it (the warm-up) are simulated but left
    /// out of the statistics; 0 measures everything.
    pub measure_from: SimTime,
    /// Timeouts, retries, batching and the connection pool (none: the exact core alone).
    pub features: Arc<Features>,
    /// Seed of the engine's own draws (retry jitter, batching servers and flush holds).
    pub seed: u64,
    /// How many of the hottest keys to report (0: no per-key statistics, as for one key).
    pub hot_keys: usize,
    /// Adaptive row counts (keys then start with `shards` rows and grow).
    pub adaptive: Option<AdaptivePolicy>,
    /// The busiest key, whose rows the time series follows.
    pub hot_key: u32,
    /// The most requests the engine may hold queued on its calendars: past it the shard count
    /// is saturated, and the engine stops serving (see [`ShardRun::saturated_at`](super::ShardRun::saturated_at)).
    pub queue_limit: u64,
    /// The likes table in front of the rows (the pipeline only).
    pub likes: Option<Arc<super::likes::LikesPlan>>,
}

impl EngineConfig {
    /// Number of time-series windows: `ceil(horizon / window)`.
    pub fn window_count(&self) -> usize {
        self.horizon.div_ceil(self.window) as usize
    }
}

/// The counts of every key's rows, as an observer sees them.
pub trait KeyCounts {
    /// The key's total: the sum of its rows (0 for a key never incremented).
    fn total(&self, key: u32) -> u64;
}

impl KeyCounts for RowTable {
    fn total(&self, key: u32) -> u64 {
        RowTable::total(self, key)
    }
}

impl KeyCounts for super::locks::LockTable {
    fn total(&self, key: u32) -> u64 {
        super::locks::LockTable::total(self, key)
    }
}

/// Sees every increment as it is decided (used to write `events.csv`).
pub trait Observer {
    /// Whether it ignores every increment: the engine may then take its one-key fast path,
    /// which never calls it.
    const SILENT: bool = false;

    /// Called once per increment, after it took its row.
    fn on_increment(&mut self, arrival: &Arrival, grant: &Grant, rows: &dyn KeyCounts);

    /// Called by the queued row stage when an update reaches the database (in time order).
    /// The exact core, which knows each commit when the update arrives, tells only
    /// [`Observer::on_increment`].
    #[inline(always)]
    fn on_arrival(&mut self, _arrival: &Arrival) {}

    /// Called by the queued row stage when an update commits, at `at` (in time order).
    #[inline(always)]
    fn on_commit(&mut self, _arrival: &Arrival, _at: SimTime) {}
}

/// The observer that records nothing; costs nothing in the hot loop.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl Observer for NoEvents {
    const SILENT: bool = true;

    #[inline(always)]
    fn on_increment(&mut self, _: &Arrival, _: &Grant, _: &dyn KeyCounts) {}
}
