//! The increments a scenario offers, in time order, with every random draw already made:
//! the same stream is fed to every shard count (common random numbers).
//!
//! - [`synthetic`]: Poisson arrivals at a constant rate or a piecewise-constant profile;
//! - [`trace`]: a CSV trace, scanned once to validate it and then replayed in streaming chunks,
//!   thinned, copied or sped up by the scenario's what-if [`Traffic`].
//!
//! Each kind of draw has its own random stream derived from (seed, stream) (see
//! [`crate::model::random`]), so changing one part of a scenario (say the hold distribution)
//! leaves the others' draws unchanged.

mod clock;
mod neighbours;
mod reads;
pub mod synthetic;
pub mod trace;

use crate::error::InputError;
use crate::model::Arrival;
pub use crate::model::random::{SimRng, Stream, stream_rng};
use crate::scenario::{ArrivalPlan, Scenario};

/// What-if traffic (`[arrivals] scale`, `speed` and `jitter_ms`, or `--traffic`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    /// Multiplies the likes: every synthetic rate; a trace's arrivals are thinned below 1 (each
    /// kept with probability `scale`) and copied above it (`⌊scale⌋` copies, one more with
    /// probability `scale − ⌊scale⌋`).
    pub scale: f64,
    /// A trace's clock runs this many times faster (its times are divided by it).
    pub speed: f64,
    /// A trace's extra copies arrive up to this long after their original, uniformly.
    pub jitter: crate::model::SimTime,
}

impl Traffic {
    /// The traffic as recorded: nothing scaled or sped up.
    pub const AS_RECORDED: Traffic = Traffic {
        scale: 1.0,
        speed: 1.0,
        jitter: 1_000_000,
    };

    /// The time a trace line at `at` arrives after the speed-up (rounded to the nanosecond;
    /// exact at speed 1).
    pub fn warp(&self, at: crate::model::SimTime) -> crate::model::SimTime {
        if self.speed == 1.0 {
            at
        } else {
            crate::model::time::round_to_ns(at as f64 / self.speed)
        }
    }

    /// How long after its original the latest copy of a trace line may arrive.
    pub fn reach(&self) -> crate::model::SimTime {
        if self.scale > 1.0 { self.jitter } else { 0 }
    }
}

pub use crate::model::DrawNeeds;

/// The likes of a scenario, read in chunks.
#[derive(Debug)]
enum Likes<'a> {
    /// Poisson arrivals.
    Synthetic(synthetic::SyntheticSource),
    /// A replayed trace.
    Trace(trace::TraceReplay<'a>),
    /// None from outside: a closed loop's updates come from its clients, inside each engine
    /// (see [`crate::model::closed`]).
    Closed,
}

impl Likes<'_> {
    fn fill(&mut self, chunk: &mut Vec<Arrival>, max: usize) -> Result<(), InputError> {
        chunk.clear();
        match self {
            Likes::Synthetic(source) => {
                chunk.extend(std::iter::from_fn(|| source.next_arrival()).take(max));
                Ok(())
            }
            Likes::Trace(replay) => replay.fill(chunk, max),
            Likes::Closed => Ok(()),
        }
    }
}

/// A time-ordered stream of arrivals — the likes, merged with the neighbour endpoints'
/// requests when the scenario has any — read in chunks.
#[derive(Debug)]
pub struct ArrivalSource<'a> {
    likes: Likes<'a>,
    neighbours: Option<neighbours::Neighbours>,
    reads: Option<reads::ReadStream>,
    /// Likes read ahead while merging with neighbours, and the next one to use.
    ahead: Vec<Arrival>,
    next: usize,
}

impl<'a> ArrivalSource<'a> {
    /// Opens the scenario's arrival stream from its beginning, drawing from `seed`.
    pub fn open(scenario: &'a Scenario, seed: u64) -> Result<Self, InputError> {
        let mut needs = DrawNeeds::for_policies(&scenario.policies);
        // A likes table partitioned by (post, user) spreads by the user.
        needs.users |= scenario
            .likes
            .as_ref()
            .is_some_and(|l| l.partition_by == crate::model::likes::PartitionBy::PostUser);
        let likes =
            match &scenario.arrivals {
                ArrivalPlan::Poisson { segments } => Likes::Synthetic(
                    synthetic::SyntheticSource::new(scenario, seed, segments.clone(), needs),
                ),
                ArrivalPlan::Trace(info) => {
                    Likes::Trace(trace::TraceReplay::open(info, scenario, seed, needs)?)
                }
                ArrivalPlan::Closed(_) => Likes::Closed,
            };
        let neighbours = scenario
            .features
            .pool
            .as_ref()
            .filter(|pool| !pool.neighbours.is_empty())
            .map(|pool| neighbours::Neighbours::new(&pool.neighbours, seed, scenario.horizon));
        let reads = match (&scenario.read_segments, scenario.features.reads) {
            (Some(segments), Some(reads)) => Some(reads::ReadStream::new(
                scenario,
                segments.clone(),
                reads.feed_size,
                seed,
            )),
            _ => None,
        };
        Ok(ArrivalSource {
            likes,
            neighbours,
            reads,
            ahead: Vec::new(),
            next: 0,
        })
    }

    /// Replaces `chunk`'s contents with up to `max` next arrivals; leaves it empty at the end.
    /// Likes, neighbours' requests and reads are merged in time order (on ties in that order).
    pub fn fill(&mut self, chunk: &mut Vec<Arrival>, max: usize) -> Result<(), InputError> {
        if self.neighbours.is_none() && self.reads.is_none() {
            return self.likes.fill(chunk, max);
        }
        chunk.clear();
        while chunk.len() < max {
            if self.next == self.ahead.len() {
                self.likes.fill(&mut self.ahead, max.max(1024))?;
                self.next = 0;
            }
            let like = self.ahead.get(self.next).copied();
            let request = self.neighbours.as_ref().and_then(|n| n.peek());
            let read = self.reads.as_ref().and_then(|r| r.peek());
            let earliest = [like, request, read]
                .into_iter()
                .flatten()
                .map(|a| a.at)
                .min();
            let Some(at) = earliest else { break };
            if let Some(like) = like.filter(|l| l.at == at) {
                chunk.push(like);
                self.next += 1;
            } else if let Some(request) = request.filter(|r| r.at == at) {
                chunk.push(request);
                self.neighbours.as_mut().expect("peeked").advance();
            } else if let Some(read) = read {
                chunk.push(read);
                self.reads.as_mut().expect("peeked").advance();
            }
        }
        Ok(())
    }
}
