//! The increments a scenario offers, in time order, with every random draw already made:
//! the same stream is fed to every shard count (common random numbers).
//!
//! - [`synthetic`]: Poisson arrivals at a constant rate or a piecewise-constant profile;
//! - [`trace`]: a CSV trace, scanned once to validate it and then replayed in streaming chunks.
//!
//! Each kind of draw has its own random stream derived from (seed, stream), so changing one
//! part of a scenario (say the hold distribution) leaves the others' draws unchanged.

pub mod synthetic;
pub mod trace;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::InputError;
use crate::model::rows::mix64;
use crate::model::{Arrival, Policy};
use crate::scenario::{ArrivalPlan, Scenario};

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
}

/// The generator of one stream of a run seeded with `seed`.
pub fn stream_rng(seed: u64, stream: Stream) -> SimRng {
    SimRng::seed_from_u64(mix64(seed ^ mix64(stream as u64)))
}

/// Which per-arrival draws the policy needs (others are skipped to save time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrawNeeds {
    /// Draw uniform bits for the `random` policy.
    pub slot_bits: bool,
    /// Draw a synthetic user for `hash-user`.
    pub users: bool,
}

impl DrawNeeds {
    /// What `policy` needs.
    pub fn for_policy(policy: Policy) -> Self {
        DrawNeeds {
            slot_bits: policy == Policy::Random,
            users: policy == Policy::HashUser,
        }
    }
}

/// A time-ordered stream of arrivals, read in chunks.
#[derive(Debug)]
pub enum ArrivalSource<'a> {
    /// Poisson arrivals.
    Synthetic(synthetic::SyntheticSource),
    /// A replayed trace.
    Trace(trace::TraceReplay<'a>),
}

impl<'a> ArrivalSource<'a> {
    /// Opens the scenario's arrival stream from its beginning, drawing from `seed`.
    pub fn open(scenario: &'a Scenario, seed: u64) -> Result<Self, InputError> {
        let needs = DrawNeeds::for_policy(scenario.policy);
        Ok(match &scenario.arrivals {
            ArrivalPlan::Poisson { segments } => ArrivalSource::Synthetic(
                synthetic::SyntheticSource::new(scenario, seed, segments.clone(), needs),
            ),
            ArrivalPlan::Trace(info) => {
                ArrivalSource::Trace(trace::TraceReplay::open(info, scenario, seed, needs)?)
            }
        })
    }

    /// Replaces `chunk`'s contents with up to `max` next arrivals; leaves it empty at the end.
    pub fn fill(&mut self, chunk: &mut Vec<Arrival>, max: usize) -> Result<(), InputError> {
        chunk.clear();
        match self {
            ArrivalSource::Synthetic(source) => {
                chunk.extend(std::iter::from_fn(|| source.next_arrival()).take(max));
                Ok(())
            }
            ArrivalSource::Trace(replay) => replay.fill(chunk, max),
        }
    }
}
