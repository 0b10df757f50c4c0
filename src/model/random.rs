//! Seeded random streams. Every draw of a run comes from a stream derived from (seed, stream),
//! so one seed reproduces a run exactly and each kind of draw is independent of the others.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::rows::mix64;

/// The random number generator behind every draw: small, fast, and its output is fixed by its
/// specification, so a seed gives the same run on every platform and release.
pub type SimRng = Xoshiro256PlusPlus;

/// The independent random streams of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Stream {
    /// Gaps between Poisson arrivals.
    Arrivals = 1,
    /// Hold times.
    Holds = 2,
    /// Which key an arrival increments.
    Keys = 3,
    /// Which synthetic user sends it.
    Users = 4,
    /// Uniform bits for the `random` policy.
    Slots = 5,
    /// Retry backoff jitter (drawn inside each engine).
    Retries = 6,
    /// Which batching server takes a like (inside each engine, one draw per like).
    Servers = 7,
    /// Hold times of batching flushes (inside each engine, one draw per flush).
    FlushHolds = 8,
    /// Slot bits of retries and flushes under the `random` policy (inside each engine).
    EngineSlots = 9,
    /// Neighbour endpoints' request times.
    Neighbours = 10,
    /// Closed-loop clients' think times (one stream per client).
    Think = 11,
    /// CPU demands of the pipeline's `[machine.cpu]` (inside each engine, one per update).
    Cpu = 12,
    /// Time outside the database, `[client] overhead` (inside each engine, one per update).
    Overhead = 13,
    /// How many copies of a trace line arrive, and their jitter (`[arrivals] scale`).
    Traffic = 14,
    /// The lag of each copy between regions (`[regions]`; a like's region is drawn from
    /// [`Stream::Keys`], as a key is).
    Lags = 16,
    /// Whether an update is an unlike (`[regions] unlike_fraction`).
    Unlikes = 17,
    /// Whether a like is a double tap (`[users] repeat_fraction`, one draw per like).
    Repeats = 18,
    /// Insert holds on the likes table (`[likes_table] insert_hold`).
    Inserts = 19,
    /// Failures between a like's insert and its increment (`step_failure_rate`).
    StepFailures = 20,
    /// Which waiter takes a released row under `[hold] grant_order = "random"` (inside each
    /// engine, one draw per handover).
    Grants = 21,
    /// Time outside the database of a request sent on an idle connection
    /// (`[client] idle_overhead`).
    IdleOverhead = 22,
    /// When the machine stalls and for how long (`[stalls]`, inside each engine).
    Stalls = 23,
    /// The requests of a burst that fills the pool (a trigger of [`crate::stability`]).
    Triggers = 24,
}

/// The generator of one stream of a run seeded with `seed`.
pub fn stream_rng(seed: u64, stream: Stream) -> SimRng {
    SimRng::seed_from_u64(mix64(seed ^ mix64(stream as u64)))
}

/// Maps uniform bits onto `0..bound` without division (Lemire's multiply-shift).
pub fn bounded(bits: u64, bound: u64) -> u64 {
    ((u128::from(bits) * u128::from(bound)) >> 64) as u64
}
