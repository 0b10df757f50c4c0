//! Closed-loop clients: `clients` clients, each with at most one update in flight, sending
//! its next update a think time after its previous one commits — what pgbench, k6 and most
//! apps do. Unlike open arrivals, the load follows the rows: when they slow down, the clients
//! wait, and the queue can never hold more than one update per client.
//!
//! The driver pops the client whose next send is earliest (lowest client id on ties), lets
//! the engine serve it (the exact core decides its start at arrival, so its commit is known at
//! once), and schedules the client's next send. Every client has its own hold, think and slot
//! streams, so the k-th update of client c draws the same hold and think time in every shard
//! count (common random numbers).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;

use crate::stats::WaitStats;

use super::config::{Arrival, Observer};
use super::engine::Engine;
use super::hold::HoldDist;
use super::random::{SimRng, Stream, stream_rng};
use super::rows::DrawNeeds;
use super::rows::mix64;
use super::run::ClosedRun;
use super::time::SimTime;

/// Updates served between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 14;

/// A closed loop of clients (`[arrivals] clients`).
#[derive(Debug, Clone)]
pub struct ClosedLoop {
    /// Clients, each with one update in flight at most.
    pub clients: u32,
    /// Think time between a commit and the client's next update.
    pub think: HoldDist,
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

/// Runs the closed loop `closed`, whose updates hold their rows for draws of `hold`, on
/// `engine` until its horizon, drawing from `seed`; `progress` is told how many updates were
/// served, now and then.
pub fn drive<O: Observer>(
    engine: &mut Engine<O>,
    closed: &ClosedLoop,
    hold: &HoldDist,
    seed: u64,
    progress: &mut dyn FnMut(u64),
) -> ClosedRun {
    let needs = DrawNeeds::for_policy(engine.config.policy);
    let mut clients: Vec<ClientStreams> = (0..closed.clients)
        .map(|id| ClientStreams::new(seed, id))
        .collect();
    let mut due: BinaryHeap<Reverse<(SimTime, u32)>> =
        (0..closed.clients).map(|id| Reverse((0, id))).collect();
    let mut responses = WaitStats::new();
    let mut served = 0u64;
    while let Some(Reverse((at, id))) = due.pop() {
        if at >= engine.config.horizon {
            break;
        }
        let client = &mut clients[id as usize];
        let arrival = Arrival {
            at,
            hold: hold.sample(&mut client.holds),
            random_bits: if needs.slot_bits {
                client.slots.next_u64()
            } else {
                0
            },
            user: u64::from(id),
            key: 0,
            endpoint: 0,
        };
        served += 1;
        if served.is_multiple_of(PROGRESS_EVERY) {
            progress(PROGRESS_EVERY);
        }
        // A saturated shard count never commits: its client waits for good.
        let Some(commit) = engine.serve(&arrival) else {
            continue;
        };
        if at >= engine.config.measure_from {
            responses.record(commit - at);
        }
        let next = commit.saturating_add(closed.think.sample(&mut client.thinks));
        if next < engine.config.horizon {
            due.push(Reverse((next, id)));
        }
    }
    progress(served % PROGRESS_EVERY);
    ClosedRun {
        clients: closed.clients,
        responses,
    }
}
