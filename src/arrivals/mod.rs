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
pub mod counts;
mod neighbours;
mod reads;
pub mod synthetic;
pub mod timestamps;
pub mod trace;

use crate::error::InputError;
use crate::model::clients::Neighbour;
use crate::model::closed::ClosedLoop;
pub use crate::model::random::{SimRng, Stream, stream_rng};
use crate::model::{Arrival, HoldDist};
use crate::time::SimTime;
use trace::TraceInfo;

/// Where arrivals come from.
#[derive(Debug, Clone)]
pub enum ArrivalPlan {
    /// A Poisson process whose rate is constant within each segment.
    Poisson {
        /// Consecutive segments covering `[0, horizon)`.
        segments: Vec<RateSegment>,
    },
    /// A trace replayed exactly.
    Trace(TraceInfo),
    /// A closed loop of clients: each sends its next update a think time after its previous
    /// one commits.
    Closed(ClosedLoop),
}

/// One constant-rate stretch of a Poisson profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSegment {
    /// End of the segment (exclusive); it starts where the previous one ended.
    pub(crate) end: SimTime,
    /// Arrivals per second during the segment.
    pub(crate) rate_per_s: f64,
}

/// What one arrival stream is made of: the parts of a scenario that shape it.
#[derive(Debug, Clone, Copy)]
pub struct StreamPlan<'a> {
    /// Where the likes come from.
    pub(crate) likes: &'a ArrivalPlan,
    /// Their holds.
    pub(crate) hold: &'a HoldDist,
    /// The keys' popularity, with several keys.
    pub(crate) keys: Option<rand_distr::Zipf<f64>>,
    /// With `[regions]`: each region's share of the likes (a like's region is its key).
    pub(crate) region_shares: Option<&'a [f64]>,
    /// Size of the synthetic user population.
    pub(crate) users: u64,
    /// The per-arrival draws the policies (and a likes table by user) need.
    pub(crate) needs: DrawNeeds,
    /// The neighbour endpoints sharing the pool.
    pub(crate) neighbours: &'a [Neighbour],
    /// Reads: their rate over time and how many keys one request reads.
    pub(crate) reads: Option<(&'a [RateSegment], u32)>,
    /// End of the simulated period.
    pub(crate) horizon: SimTime,
}

/// What-if traffic (`[arrivals] scale`, `speed` and `jitter_ms`, or `--traffic`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    /// Multiplies the likes: every synthetic rate; a trace's arrivals are thinned below 1 (each
    /// kept with probability `scale`) and copied above it (`⌊scale⌋` copies, one more with
    /// probability `scale − ⌊scale⌋`).
    pub(crate) scale: f64,
    /// A trace's clock runs this many times faster (its times are divided by it).
    pub(crate) speed: f64,
    /// A trace's extra copies arrive up to this long after their original, uniformly.
    pub(crate) jitter: crate::model::SimTime,
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
            crate::time::round_to_ns(at as f64 / self.speed)
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
    /// Opens the arrival stream of `plan` from its beginning, drawing from `seed`.
    pub fn open(plan: StreamPlan<'a>, seed: u64) -> Result<Self, InputError> {
        let likes = match plan.likes {
            ArrivalPlan::Poisson { segments } => Likes::Synthetic(synthetic::SyntheticSource::new(
                &plan,
                seed,
                segments.clone(),
            )),
            ArrivalPlan::Trace(info) => Likes::Trace(trace::TraceReplay::open(info, &plan, seed)?),
            ArrivalPlan::Closed(_) => Likes::Closed,
        };
        let neighbours = (!plan.neighbours.is_empty())
            .then(|| neighbours::Neighbours::new(plan.neighbours, seed, plan.horizon));
        let reads = plan.reads.map(|(segments, feed_size)| {
            reads::ReadStream::new(plan.keys, segments.to_vec(), feed_size, seed)
        });
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
