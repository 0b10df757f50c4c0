//! Closed-loop clients: `clients` clients, each with at most one update in flight, sending
//! its next update a think time after its previous one commits — what pgbench, k6 and most
//! apps do. Unlike open arrivals, the load follows the rows: when they slow down, the clients
//! wait, and the queue can never hold more than one update per client.
//!
//! The clients run on the event-driven pipeline (a client sends when its last like is done,
//! plus its think time). Every client has its own hold, think and slot streams, so the k-th
//! update of client c draws the same hold and think time in every shard count (common random
//! numbers).

use super::hold::HoldDist;
use super::random::{SimRng, Stream, stream_rng};
use super::rows::mix64;

/// A closed loop of clients (`[arrivals] clients`).
#[derive(Debug, Clone)]
pub struct ClosedLoop {
    /// Clients, each with one update in flight at most.
    pub(crate) clients: u32,
    /// Think time between a commit and the client's next update.
    pub(crate) think: HoldDist,
}

impl ClosedLoop {
    /// The most updates a second the clients could send if nothing ever waited:
    /// clients ÷ (mean think + `busy_ns`, the mean time from send to answer with no wait).
    pub fn max_rate_per_s(&self, busy_ns: f64) -> f64 {
        let cycle_s = (self.think.mean_ns() + busy_ns) / 1e9;
        f64::from(self.clients) / cycle_s
    }
}

/// One client's random streams: the same draws for its k-th update in every shard count and
/// on either engine.
#[derive(Debug)]
pub(super) struct ClientStreams {
    pub(super) holds: SimRng,
    pub(super) thinks: SimRng,
    pub(super) slots: SimRng,
    /// CPU demands (the pipeline's `[machine.cpu]`).
    pub(super) cpu: SimRng,
    /// Time outside the database (the pipeline's `[client] overhead`).
    pub(super) overhead: SimRng,
    /// Time outside the database after a think time (the pipeline's
    /// `[client] idle_overhead`).
    pub(super) idle_overhead: SimRng,
    /// The keys of its likes, when the scenario has many (the pipeline's closed loop).
    pub(super) keys: SimRng,
    /// Whether the client thought before its next send (its connection sat idle).
    pub(super) thought: bool,
}

impl ClientStreams {
    /// Client `id`'s streams of a run seeded with `seed`.
    pub(super) fn new(seed: u64, id: u32) -> Self {
        let seed = mix64(seed ^ mix64(u64::from(id) + 1));
        ClientStreams {
            holds: stream_rng(seed, Stream::Holds),
            thinks: stream_rng(seed, Stream::Think),
            slots: stream_rng(seed, Stream::Slots),
            cpu: stream_rng(seed, Stream::Cpu),
            overhead: stream_rng(seed, Stream::Overhead),
            idle_overhead: stream_rng(seed, Stream::IdleOverhead),
            keys: stream_rng(seed, Stream::Keys),
            thought: false,
        }
    }
}
