//! Poisson arrivals whose rate is constant within each segment of a profile (a
//! non-homogeneous Poisson process). Within a segment the gaps are exponential; at a segment's
//! end the pending gap is discarded and the next segment starts afresh, which is exact because
//! the exponential distribution is memoryless.

use rand::Rng;
use rand_distr::{Distribution, Exp1, Zipf};

use super::{DrawNeeds, SimRng, Stream, stream_rng};
use crate::model::random::bounded;
use crate::model::{Arrival, HoldDist, NO_USER, SimTime};
use crate::scenario::{RateSegment, Scenario};

/// Generates a scenario's synthetic arrivals.
#[derive(Debug)]
pub struct SyntheticSource {
    segments: Vec<RateSegment>,
    segment: usize,
    now: SimTime,
    hold: HoldDist,
    keys: Option<Zipf<f64>>,
    users: u64,
    needs: DrawNeeds,
    gap_rng: SimRng,
    hold_rng: SimRng,
    key_rng: SimRng,
    user_rng: SimRng,
    slot_rng: SimRng,
}

impl SyntheticSource {
    /// The arrivals of `scenario` over `segments`, from time 0, drawn from `seed`.
    pub fn new(
        scenario: &Scenario,
        seed: u64,
        segments: Vec<RateSegment>,
        needs: DrawNeeds,
    ) -> Self {
        let keys = (scenario.keys.count > 1).then(|| {
            Zipf::new(f64::from(scenario.keys.count), scenario.keys.zipf_s)
                .expect("validated: count ≥ 1 and zipf_s ≥ 0")
        });
        SyntheticSource {
            segments,
            segment: 0,
            now: 0,
            hold: scenario.hold.clone(),
            keys,
            users: scenario.users,
            needs,
            gap_rng: stream_rng(seed, Stream::Arrivals),
            hold_rng: stream_rng(seed, Stream::Holds),
            key_rng: stream_rng(seed, Stream::Keys),
            user_rng: stream_rng(seed, Stream::Users),
            slot_rng: stream_rng(seed, Stream::Slots),
        }
    }

    /// The next arrival, or `None` after the last segment.
    #[inline]
    pub fn next_arrival(&mut self) -> Option<Arrival> {
        let at = self.next_time()?;
        let key = match &self.keys {
            Some(zipf) => zipf.sample(&mut self.key_rng) as u32 - 1,
            None => 0,
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

    fn next_time(&mut self) -> Option<SimTime> {
        loop {
            let segment = *self.segments.get(self.segment)?;
            if segment.rate_per_s > 0.0 {
                let unit_gap: f64 = Exp1.sample(&mut self.gap_rng);
                let gap_ns = (unit_gap * 1e9 / segment.rate_per_s).round() as u64;
                let at = self.now.saturating_add(gap_ns);
                if at < segment.end {
                    self.now = at;
                    return Some(at);
                }
            }
            self.now = segment.end;
            self.segment += 1;
        }
    }
}
