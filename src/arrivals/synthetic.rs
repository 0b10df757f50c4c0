//! Synthetic likes: Poisson arrival times over the scenario's rate profile (see
//! `arrivals::clock`), each with its key, user, hold and slot draws.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, Zipf};

use super::clock::PoissonClock;
use super::{DrawNeeds, SimRng, Stream, stream_rng};
use super::{RateSegment, StreamPlan};
use crate::model::random::bounded;
use crate::model::{Arrival, HoldDist, NO_USER};

/// Generates a scenario's synthetic arrivals.
#[derive(Debug)]
pub struct SyntheticSource {
    clock: PoissonClock,
    hold: HoldDist,
    keys: Option<Zipf<f64>>,
    /// With `[regions]`: each region's cumulative share (a like's region is its key).
    regions: Option<Vec<f64>>,
    users: u64,
    needs: DrawNeeds,
    hold_rng: SimRng,
    key_rng: SimRng,
    user_rng: SimRng,
    slot_rng: SimRng,
}

impl SyntheticSource {
    /// The likes of `plan` over `segments`, from time 0, drawn from `seed`.
    pub fn new(plan: &StreamPlan<'_>, seed: u64, segments: Vec<RateSegment>) -> Self {
        let keys = plan.keys;
        SyntheticSource {
            clock: PoissonClock::new(segments, stream_rng(seed, Stream::Arrivals)),
            hold: plan.hold.clone(),
            keys,
            regions: plan.region_shares.map(|shares| {
                let mut total = 0.0;
                shares
                    .iter()
                    .map(|share| {
                        total += share;
                        total
                    })
                    .collect()
            }),
            users: plan.users,
            needs: plan.needs,
            hold_rng: stream_rng(seed, Stream::Holds),
            key_rng: stream_rng(seed, Stream::Keys),
            user_rng: stream_rng(seed, Stream::Users),
            slot_rng: stream_rng(seed, Stream::Slots),
        }
    }

    /// The next arrival, or `None` after the last segment.
    #[inline]
    pub fn next_arrival(&mut self) -> Option<Arrival> {
        let at = self.clock.next_time()?;
        let key = match (&self.keys, &self.regions) {
            (Some(zipf), _) => zipf.sample(&mut self.key_rng) as u32 - 1,
            (None, Some(cumulative)) => {
                let unit: f64 = self.key_rng.random();
                let region = cumulative.iter().position(|&c| unit < c);
                region.unwrap_or(cumulative.len() - 1) as u32
            }
            (None, None) => 0,
        };
        let user = if self.needs.users {
            bounded(self.user_rng.next_u64(), self.users)
        } else {
            NO_USER
        };
        let random_bits = if self.needs.slot_bits {
            self.slot_rng.next_u64()
        } else {
            0
        };
        Some(Arrival {
            at,
            hold: self.hold.sample(&mut self.hold_rng),
            random_bits,
            user,
            key,
            endpoint: 0,
        })
    }
}
