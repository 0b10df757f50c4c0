//! The engine's optional behaviours (see [`super::clients`]): the state they keep, how an
//! attempt, a retry, a flush, a crash and a neighbour's request run on the engine's clock,
//! and the figures they report. Without any of them the engine never enters this module.

use std::sync::Arc;

use rand::Rng;

use super::clients::{Attempt, ClientCounts, Features, ReadMode};
use super::config::EngineConfig;
use super::random::{SimRng, Stream, bounded, stream_rng};
use crate::stats::WaitStats;
use crate::time::SimTime;

/// The figures of the optional behaviours for one shard count.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ExtendedRun {
    /// Timeouts and retries.
    pub client: Option<ClientRun>,
    /// Write batching.
    pub batching: Option<BatchRun>,
    /// The connection pool.
    pub pool: Option<PoolRun>,
    /// The read path.
    pub reads: Option<ReadRun>,
}

/// What the read path did.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ReadRun {
    /// Key reads (a feed request reads `feed_size` keys).
    pub key_reads: u64,
    /// Rows read (summing a key reads all its rows).
    pub rows_touched: u64,
    /// Reads answered from the cached total.
    pub cache_hits: u64,
    /// How many likes the shown count trailed the true one (likes, as counts).
    pub staleness_likes: WaitStats,
    /// How old the shown count was, ns (0 when summed on the spot).
    pub staleness: WaitStats,
    /// Waits of locking reads for the rows, ns.
    pub lock_waits: WaitStats,
}

/// What the clients experienced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientRun {
    /// The counts.
    pub counts: ClientCounts,
    /// The rows' final total minus the likes that ran: likes counted twice.
    pub drift: u64,
}

/// What write batching did.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BatchRun {
    /// Likes that reached an app server.
    pub likes: u64,
    /// Flush updates sent to the database (one per server and key with counts).
    pub db_writes: u64,
    /// Likes carried by those flushes.
    pub flushed_likes: u64,
    /// Likes lost in crashes.
    pub lost: u64,
    /// Likes still in servers' memory at the end.
    pub pending: u64,
    /// Delay from a like to the commit of the flush that counted it (likes whose flush
    /// committed by the end).
    pub delays: WaitStats,
    /// Likes held in memory, averaged over time.
    pub(crate) at_risk_mean: f64,
    /// Most likes held in memory at once.
    pub at_risk_max: u64,
}

/// What the connection pool did.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PoolRun {
    /// Each neighbour endpoint's name and its requests' waits for a connection.
    pub neighbour_waits: Vec<(String, WaitStats)>,
    /// The likes' waits for a connection (part of their wait).
    pub like_waits: WaitStats,
}

/// Likes held by one batching server: (key, arrival time).
pub(super) type Memory = Vec<(u32, SimTime)>;

/// The state of the optional behaviours.
#[derive(Debug)]
pub(super) struct Extension {
    pub(super) features: Arc<Features>,
    /// Attempts waiting for their retry time, indexed by the retry event.
    pub(super) retry_slab: Vec<Attempt>,
    pub(super) free_slab: Vec<u32>,
    pub(super) retry_rng: SimRng,
    pub(super) server_rng: SimRng,
    pub(super) hold_rng: SimRng,
    pub(super) slot_rng: SimRng,
    pub(super) servers: Vec<Memory>,
    pub(super) counts: ClientCounts,
    pub(super) batch_likes: u64,
    pub(super) db_writes: u64,
    pub(super) flushed_likes: u64,
    pub(super) lost: u64,
    pub(super) delays: WaitStats,
    pub(super) at_risk: u64,
    pub(super) at_risk_max: u64,
    /// ∫ at_risk dt in likes × ns, up to `at_risk_since`.
    pub(super) at_risk_area: u128,
    pub(super) at_risk_since: SimTime,
    pub(super) neighbour_waits: Vec<WaitStats>,
    pub(super) like_connection_waits: WaitStats,
    /// Cached totals: key → (built at, value).
    pub(super) read_cache: rustc_hash::FxHashMap<u32, (SimTime, u64)>,
    pub(super) key_reads: u64,
    pub(super) rows_touched: u64,
    pub(super) cache_hits: u64,
    pub(super) staleness_likes: WaitStats,
    pub(super) staleness: WaitStats,
    pub(super) lock_waits: WaitStats,
}

impl Extension {
    pub(super) fn new(config: &EngineConfig) -> Extension {
        let features = Arc::clone(&config.features);
        let servers = features.batching.as_ref().map_or(0, |b| b.servers as usize);
        let neighbours = features.pool.as_ref().map_or(0, |p| p.neighbours.len());
        Extension {
            retry_slab: Vec::new(),
            free_slab: Vec::new(),
            retry_rng: stream_rng(config.seed, Stream::Retries),
            server_rng: stream_rng(config.seed, Stream::Servers),
            hold_rng: stream_rng(config.seed, Stream::FlushHolds),
            slot_rng: stream_rng(config.seed, Stream::EngineSlots),
            servers: vec![Vec::new(); servers],
            counts: ClientCounts::default(),
            batch_likes: 0,
            db_writes: 0,
            flushed_likes: 0,
            lost: 0,
            delays: WaitStats::new(),
            at_risk: 0,
            at_risk_max: 0,
            at_risk_area: 0,
            at_risk_since: 0,
            neighbour_waits: vec![WaitStats::new(); neighbours],
            like_connection_waits: WaitStats::new(),
            read_cache: rustc_hash::FxHashMap::default(),
            key_reads: 0,
            rows_touched: 0,
            cache_hits: 0,
            staleness_likes: WaitStats::new(),
            staleness: WaitStats::new(),
            lock_waits: WaitStats::new(),
            features,
        }
    }

    /// Changes the likes at risk at `now`, keeping the time integral.
    fn change_at_risk(&mut self, now: SimTime, added: u64, removed: u64) {
        self.at_risk_area += u128::from(self.at_risk) * u128::from(now - self.at_risk_since);
        self.at_risk_since = now;
        self.at_risk = self.at_risk + added - removed;
        self.at_risk_max = self.at_risk_max.max(self.at_risk);
    }

    /// The like of `attempt` failed for its client: the retry to make and its backoff delay,
    /// or `None` (counted as failed) when it has no retry left or there is no client policy.
    pub(super) fn retry_of(&mut self, attempt: Attempt) -> Option<(Attempt, SimTime)> {
        let client = self.features.client.as_ref()?;
        if attempt.retry >= client.retries {
            self.counts.failed += 1;
            return None;
        }
        let cap = client.backoff.saturating_mul(1u64 << attempt.retry.min(40));
        let jitter = if cap == 0 {
            0
        } else {
            bounded(self.retry_rng.next_u64(), cap + 1)
        };
        let retry = Attempt {
            retry: attempt.retry + 1,
            ..attempt
        };
        Some((retry, jitter))
    }

    /// Keeps `attempt` until its retry time; returns its index for [`Extension::unpark`].
    pub(super) fn park(&mut self, attempt: Attempt) -> u32 {
        match self.free_slab.pop() {
            Some(index) => {
                self.retry_slab[index as usize] = attempt;
                index
            }
            None => {
                self.retry_slab.push(attempt);
                (self.retry_slab.len() - 1) as u32
            }
        }
    }

    /// The attempt parked at `index`, whose retry time has come.
    pub(super) fn unpark(&mut self, index: u32) -> Attempt {
        self.free_slab.push(index);
        self.retry_slab[index as usize]
    }

    /// Counts a like's attempt as it runs (takes its row): whether it repeats a like that
    /// already ran, and whether its client saw it succeed. Returns what it adds to the row.
    pub(super) fn count_execution(&mut self, attempt: &Attempt, timed_out: bool) -> u64 {
        let idempotent = self.features.client.as_ref().is_some_and(|c| c.idempotent);
        if attempt.is_like {
            let counts = &mut self.counts;
            counts.executions += 1;
            if attempt.executed_before {
                counts.duplicates += 1;
            } else {
                counts.distinct_executed += 1;
            }
            if !timed_out {
                counts.succeeded += 1;
            }
        }
        if attempt.executed_before && idempotent {
            0
        } else {
            attempt.amount
        }
    }

    /// The `+k` update a flushing `server` sends for one key's likes `group` (its hold drawn
    /// from `hold`) and its slot bits, counted as a database write.
    pub(super) fn flush_update(
        &mut self,
        server: u32,
        group: &[(u32, SimTime)],
        hold: &super::hold::HoldDist,
    ) -> (Attempt, u64) {
        let hold = hold.sample(&mut self.hold_rng);
        let random_bits = self.slot_rng.next_u64();
        self.db_writes += 1;
        self.flushed_likes += group.len() as u64;
        let attempt = Attempt {
            key: group[0].0,
            user: u64::from(server),
            hold,
            amount: group.len() as u64,
            retry: 0,
            executed_before: false,
            is_like: false,
            stored: false,
            client: super::clients::NO_CLIENT,
        };
        (attempt, random_bits)
    }

    /// A like lands in a random batching server's memory at `now`.
    pub(super) fn batch_like(&mut self, now: SimTime, key: u32, at: SimTime) {
        let servers = self.servers.len() as u64;
        let server = bounded(self.server_rng.next_u64(), servers) as usize;
        self.servers[server].push((key, at));
        self.batch_likes += 1;
        self.change_at_risk(now, 1, 0);
    }

    /// Empties `server`'s memory at `now` for its flush: the likes by key, then arrival time
    /// (give the buffer back with [`Extension::return_memory`]).
    pub(super) fn take_memory(&mut self, server: u32, now: SimTime) -> Memory {
        let mut memory = std::mem::take(&mut self.servers[server as usize]);
        self.change_at_risk(now, 0, memory.len() as u64);
        memory.sort_by_key(|&(key, at)| (key, at));
        memory
    }

    /// Gives a flushed server its (emptied) buffer back.
    pub(super) fn return_memory(&mut self, server: u32, mut memory: Memory) {
        memory.clear();
        self.servers[server as usize] = memory;
    }

    /// The first `servers` batching servers lose what they hold at `now`.
    pub(super) fn crash(&mut self, now: SimTime, servers: u32) {
        let mut lost = 0;
        for memory in self.servers.iter_mut().take(servers as usize) {
            lost += memory.len() as u64;
            memory.clear();
        }
        self.lost += lost;
        self.change_at_risk(now, 0, lost);
    }

    /// A read of `key` at `now`: the cached total, if the read path caches and it is fresh
    /// (counted as a hit in the measured period).
    pub(super) fn cached_total(
        &mut self,
        key: u32,
        now: SimTime,
        measured: bool,
    ) -> Option<(SimTime, u64)> {
        let reads = self.features.reads.expect("reads come from [reads]");
        if measured {
            self.key_reads += 1;
        }
        let cached = match reads.mode {
            ReadMode::Sum => None,
            ReadMode::Cached => self
                .read_cache
                .get(&key)
                .copied()
                .filter(|&(built, _)| now < built.saturating_add(reads.cache_ttl)),
        };
        if cached.is_some() && measured {
            self.cache_hits += 1;
        }
        cached
    }

    /// Records what a read showed: how many likes and how long it trailed the truth.
    pub(super) fn record_read(&mut self, trailing_likes: u64, age: SimTime, measured: bool) {
        if measured {
            self.staleness_likes.record(trailing_likes);
            self.staleness.record(age);
        }
    }

    /// The figures of the behaviours that are on, at the end of a run whose rows hold
    /// `rows_total` over all keys.
    pub(super) fn figures(&mut self, horizon: SimTime, rows_total: u64) -> ExtendedRun {
        self.change_at_risk(horizon, 0, 0);
        let live_retries = (self.retry_slab.len() - self.free_slab.len()) as u64;
        self.counts.pending = live_retries;
        let features = Arc::clone(&self.features);
        let client = features.client.as_ref().map(|_| ClientRun {
            counts: self.counts,
            drift: rows_total.saturating_sub(self.counts.distinct_executed),
        });
        let batching = features.batching.as_ref().map(|_| BatchRun {
            likes: self.batch_likes,
            db_writes: self.db_writes,
            flushed_likes: self.flushed_likes,
            lost: self.lost,
            pending: self.servers.iter().map(|m| m.len() as u64).sum(),
            delays: self.delays.clone(),
            at_risk_mean: self.at_risk_area as f64 / horizon.max(1) as f64,
            at_risk_max: self.at_risk_max,
        });
        let pool = features.pool.as_ref().map(|pool| PoolRun {
            neighbour_waits: pool
                .neighbours
                .iter()
                .zip(&self.neighbour_waits)
                .map(|(n, waits)| (n.name.clone(), waits.clone()))
                .collect(),
            like_waits: self.like_connection_waits.clone(),
        });
        let reads = features.reads.map(|_| ReadRun {
            key_reads: self.key_reads,
            rows_touched: self.rows_touched,
            cache_hits: self.cache_hits,
            staleness_likes: self.staleness_likes.clone(),
            staleness: self.staleness.clone(),
            lock_waits: self.lock_waits.clone(),
        });
        ExtendedRun {
            client,
            batching,
            pool,
            reads,
        }
    }
}
