//! What clients and app servers do around the lock: timeouts, retries, write batching and the
//! shared connection pool. Each is an explicit, named choice in a scenario; without them the
//! engine runs the exact core model on its fast path, untouched.
//!
//! All of it is decided on the engine's clock with the same exact-at-arrival reasoning as the
//! rows: every queue here (rows, connections) is first come, first served and every client
//! has the same deadline, so whether a request would wait past its deadline is known when it
//! is sent. A request that would, under `cancel`, never takes its connection or row (a lock or
//! statement timeout abandons it), so it does not delay anyone behind it; under `orphan` the
//! client gives up but the update still runs.

use super::hold::HoldDist;
use crate::time::SimTime;

/// What happens to an update whose client gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTimeout {
    /// The database abandons the queued update: it never takes the row.
    Cancel,
    /// The client stops waiting but the update still runs and spends its row time.
    Orphan,
}

/// `[client]`: the client's patience and what it does after a failure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientPolicy {
    /// Longest wait (for a connection and the row) before the request fails for the user.
    pub timeout: SimTime,
    /// What the database does with a timed-out update.
    pub on_timeout: OnTimeout,
    /// How many times a failed like is tried again.
    pub retries: u32,
    /// Base of the exponential backoff: retry `n` (from 1) waits a uniform time in
    /// `[0, backoff × 2^(n−1)]` after the failure ("full jitter").
    pub backoff: SimTime,
    /// Whether a repeated execution of the same like is recognised and not counted again.
    pub idempotent: bool,
}

/// A batching server crash: the first `servers` servers lose their unflushed counts at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crash {
    /// When.
    pub at: SimTime,
    /// How many servers (the lowest-numbered) crash.
    pub servers: u32,
}

/// `[batching]`: likes land on app servers that flush one `+k` increment per key periodically.
#[derive(Debug, Clone)]
pub struct Batching {
    /// App servers; each like goes to one at random.
    pub servers: u32,
    /// Flush interval; server `s` flushes at `(s + 1) · flush / servers` and every `flush` after.
    pub flush: SimTime,
    /// Crashes, in time order.
    pub crashes: Vec<Crash>,
    /// Hold of a flush's update (the scenario's hold distribution).
    pub hold: HoldDist,
}

/// An endpoint that needs only a connection from the shared pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbour {
    /// Its name in the outputs.
    pub name: String,
    /// Its requests per second (Poisson).
    pub rate_per_s: f64,
    /// How long each request holds its connection.
    pub hold: SimTime,
}

/// `[pool]` and `[[neighbours]]`: the connections every request needs while it waits and runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// Connections.
    pub size: u32,
    /// Other endpoints sharing the pool.
    pub neighbours: Vec<Neighbour>,
}

/// How a read gets a key's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// Sum the key's rows on every read (touches every row; never stale).
    Sum,
    /// Read a cached total, rebuilt from the rows when it is older than the cache time.
    Cached,
}

/// `[reads]`: the read path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reads {
    /// How a read gets the count.
    pub mode: ReadMode,
    /// Age at which a cached total is rebuilt.
    pub cache_ttl: SimTime,
    /// Keys one read request reads (a feed of posts).
    pub feed_size: u32,
    /// Whether summing the rows takes their locks (queueing with the writes) instead of
    /// reading a snapshot (MVCC).
    pub lock: bool,
    /// How long a locking read holds the rows.
    pub lock_hold: SimTime,
}

/// The optional behaviours of a scenario.
#[derive(Debug, Clone, Default)]
pub struct Features {
    /// Timeouts and retries.
    pub client: Option<ClientPolicy>,
    /// Write batching.
    pub batching: Option<Batching>,
    /// The shared connection pool.
    pub pool: Option<Pool>,
    /// The read path.
    pub reads: Option<Reads>,
}

impl Features {
    /// Whether none is set: the engine then runs the exact core on its fast path.
    pub fn is_empty(&self) -> bool {
        self.client.is_none()
            && self.batching.is_none()
            && self.pool.is_none()
            && self.reads.is_none()
    }
}

/// The `endpoint` of an [`super::Arrival`] that is a read of its key.
pub const READ_ENDPOINT: u16 = u16::MAX;

/// One request to the database: a like's attempt, or a batching server's flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// Dense key id.
    pub(crate) key: u32,
    /// User id (hash-user), or the flushing server's number.
    pub(crate) user: u64,
    /// Hold of the update.
    pub(crate) hold: SimTime,
    /// What it adds to the row: 1 for a like, k for a flush.
    pub(crate) amount: u64,
    /// 0 for a like's first attempt, n for its n-th retry.
    pub(crate) retry: u32,
    /// Whether an earlier attempt of this like already executed (an orphan).
    pub(crate) executed_before: bool,
    /// Whether it is a client's like (flushes are not).
    pub(crate) is_like: bool,
    /// With `[likes_table]`: whether its like is already in the likes table (a double tap, or
    /// a retry after an earlier attempt stored it), so the primary key rejects it.
    pub(crate) stored: bool,
    /// The closed-loop client whose like it is, which sends again once the like is done
    /// (committed, or given up); [`NO_CLIENT`] for an open arrival's.
    pub(crate) client: u32,
}

/// The [`Attempt::client`] of a like no closed-loop client waits for.
pub const NO_CLIENT: u32 = u32::MAX;

impl Attempt {
    /// A like's first attempt, as it arrived.
    pub fn first_of(arrival: &super::Arrival) -> Attempt {
        Attempt {
            key: arrival.key,
            user: arrival.user,
            hold: arrival.hold,
            amount: 1,
            retry: 0,
            executed_before: false,
            is_like: true,
            stored: false,
            client: NO_CLIENT,
        }
    }
}

/// What clients experienced, over the whole simulated period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientCounts {
    /// Original likes (first attempts).
    pub likes: u64,
    /// Attempts, retries included.
    pub attempts: u64,
    /// Attempts that waited past the timeout.
    pub timeouts: u64,
    /// Likes that failed for the user after their last retry.
    pub failed: u64,
    /// Likes whose client got a success.
    pub succeeded: u64,
    /// Likes with a retry still scheduled at the end.
    pub pending: u64,
    /// Updates that ran (took a row).
    pub executions: u64,
    /// Likes that ran at least once.
    pub distinct_executed: u64,
    /// Runs of a like beyond its first.
    pub duplicates: u64,
}

impl ClientCounts {
    /// Final count minus the likes that ran: above 0 only when non-idempotent duplicates
    /// were counted twice.
    pub fn drift(&self, idempotent: bool) -> u64 {
        if idempotent { 0 } else { self.duplicates }
    }
}
