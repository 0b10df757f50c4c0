//! The result of simulating one shard count, on either row stage.

use crate::stats::{KeyFigures, WaitStats, WindowRow};

use super::adaptive::Growth;
use super::extended::ExtendedRun;
use super::rows::Policy;
use crate::time::SimTime;

/// The result of simulating one shard count.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ShardRun {
    /// How its increments chose their rows.
    pub policy: Policy,
    /// Rows per key.
    pub shards: u32,
    /// Rows tried per update, summed over the measured updates that took their rows
    /// (`skip-locked` tries several; every other policy one).
    pub tries: u64,
    /// Updates that reached the rows in the measured period (after the warm-up, before the
    /// horizon): every like's attempts (retries included, abandoned ones too) or every
    /// batching flush; neighbours' requests are not counted.
    pub arrivals: u64,
    /// Holds that finished in the measured period.
    pub completed: u64,
    /// Waits of the updates that took their rows, from the measured period (an update
    /// abandoned at its deadline never takes its row and is counted in the client figures).
    pub waits: WaitStats,
    /// Largest backlog at any instant of the measured period (from its first arrival).
    pub backlog_max: u64,
    /// Backlog at the horizon.
    pub backlog_final: u64,
    /// The time series.
    pub windows: Vec<WindowRow>,
    /// Keys that received at least one increment.
    pub keys_touched: usize,
    /// Timeouts, retries, batching and pool figures, when the scenario has them.
    pub extended: Option<ExtendedRun>,
    /// The hottest keys, most increments first (empty unless asked for).
    pub hot_keys: Vec<KeyFigures>,
    /// Whether the row counts were adaptive.
    pub adaptive: bool,
    /// Every growth of a key's row count (adaptive runs).
    pub growths: Vec<Growth>,
    /// Rows over all keys at the end.
    pub rows_total: u64,
    /// The most rows any key had at the end.
    pub max_key_rows: u32,
    /// When the queue passed [`EngineConfig::queue_limit`](super::EngineConfig::queue_limit): from then on nothing was served,
    /// every later arrival counts as waiting, and the waits describe only the updates that took
    /// their rows before (a lower bound of what users would wait).
    pub(crate) saturated_at: Option<SimTime>,
    /// What a closed loop's clients saw (set by the pipeline's `run_closed`).
    pub closed: Option<ClosedRun>,
    /// What the machine did (runs on the event-driven pipeline).
    pub machine: Option<super::machine::MachineRun>,
    /// What the likes table did (`[likes_table]`, on the pipeline).
    #[serde(default)]
    pub likes: Option<super::likes::LikesRun>,
}

/// The rows each key has in a run: a fixed count, or adaptive rows that start at a count and
/// grow. Shown as the count or `adaptive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rows {
    /// The same rows for the whole run.
    Fixed(u32),
    /// Rows that start at `start` and grow with the load.
    Adaptive {
        /// The rows a key starts with.
        start: u32,
    },
}

impl Rows {
    /// The rows a key has (fixed) or starts with (adaptive).
    pub fn start(self) -> u32 {
        match self {
            Rows::Fixed(n) | Rows::Adaptive { start: n } => n,
        }
    }

    /// Whether the rows adapt.
    pub fn is_adaptive(self) -> bool {
        matches!(self, Rows::Adaptive { .. })
    }

    /// The `mode` column of the CSV files: `static` or `adaptive`.
    pub fn mode(self) -> &'static str {
        match self {
            Rows::Fixed(_) => "static",
            Rows::Adaptive { .. } => "adaptive",
        }
    }

    /// Its name in legends and progress bars: `N = 16`, or `adaptive`.
    pub fn legend(self) -> String {
        match self {
            Rows::Fixed(n) => format!("N = {n}"),
            Rows::Adaptive { .. } => "adaptive".to_owned(),
        }
    }

    /// `Fixed(shards)`, or `Adaptive` starting at `shards` when `adaptive`.
    pub fn of(shards: u32, adaptive: bool) -> Rows {
        if adaptive {
            Rows::Adaptive { start: shards }
        } else {
            Rows::Fixed(shards)
        }
    }
}

impl std::fmt::Display for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rows::Fixed(n) => write!(f, "{n}"),
            Rows::Adaptive { .. } => f.write_str("adaptive"),
        }
    }
}

impl ShardRun {
    /// Its rows: fixed, or adaptive from its shard count.
    pub fn rows(&self) -> Rows {
        Rows::of(self.shards, self.adaptive)
    }

    /// The statistics that summaries pool over replications (`+=`), which are therefore never
    /// frozen, not even in a slimmed later replication: the write batching's delays, the pool's
    /// waits and the read path's.
    pub fn pooled_waits(&self) -> impl Iterator<Item = &WaitStats> {
        let extended = self.extended.as_ref();
        let batching = extended.and_then(|e| e.batching.as_ref());
        let pool = extended.and_then(|e| e.pool.as_ref());
        let reads = extended.and_then(|e| e.reads.as_ref());
        batching
            .map(|b| &b.delays)
            .into_iter()
            .chain(pool.map(|p| &p.like_waits))
            .chain(
                pool.into_iter()
                    .flat_map(|p| p.neighbour_waits.iter().map(|(_, w)| w)),
            )
            .chain(
                reads
                    .into_iter()
                    .flat_map(|r| [&r.staleness_likes, &r.staleness, &r.lock_waits]),
            )
    }
}

/// What the clients of one shard count saw.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ClosedRun {
    /// Clients in the loop.
    pub(crate) clients: u32,
    /// Response times of the updates sent in the measured period: send → commit (the wait for
    /// the row plus the hold), as the client sees them.
    pub responses: WaitStats,
}
