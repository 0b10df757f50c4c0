//! Read requests: a Poisson stream whose rate is constant or follows the likes' profile, each
//! request reading `feed_size` keys drawn from the same popularity as the likes. Each key read
//! is one arrival with [`READ_ENDPOINT`], at the request's time.

use rand_distr::{Distribution, Exp1, Zipf};

use super::{SimRng, Stream, stream_rng};
use crate::model::clients::READ_ENDPOINT;
use crate::model::rows::mix64;
use crate::model::{Arrival, NO_USER, SimTime};
use crate::scenario::{RateSegment, Scenario};

/// The read stream of a scenario.
#[derive(Debug)]
pub(super) struct ReadStream {
    segments: Vec<RateSegment>,
    segment: usize,
    now: SimTime,
    feed_size: u32,
    left_in_request: u32,
    keys: Option<Zipf<f64>>,
    gap_rng: SimRng,
    key_rng: SimRng,
    current: Option<Arrival>,
}

impl ReadStream {
    /// The reads of `scenario` over `segments`, drawn from `seed`.
    pub(super) fn new(
        scenario: &Scenario,
        segments: Vec<RateSegment>,
        feed_size: u32,
        seed: u64,
    ) -> Self {
        let keys = (scenario.keys.count > 1).then(|| {
            Zipf::new(f64::from(scenario.keys.count), scenario.keys.zipf_s)
                .expect("validated: count ≥ 1 and zipf_s ≥ 0")
        });
        let mut stream = ReadStream {
            segments,
            segment: 0,
            now: 0,
            feed_size,
            left_in_request: 0,
            keys,
            gap_rng: stream_rng(seed ^ mix64(0x5EAD), Stream::Arrivals),
            key_rng: stream_rng(seed ^ mix64(0x5EAD), Stream::Keys),
            current: None,
        };
        stream.advance();
        stream
    }

    /// The next key read, if any.
    pub(super) fn peek(&self) -> Option<Arrival> {
        self.current
    }

    /// Moves to the next key read: the next key of the same request, or the next request.
    pub(super) fn advance(&mut self) {
        let at = if self.left_in_request > 0 {
            self.left_in_request -= 1;
            self.current.map(|a| a.at)
        } else {
            self.left_in_request = self.feed_size - 1;
            self.next_request()
        };
        self.current = at.map(|at| {
            let key = match &self.keys {
                Some(zipf) => zipf.sample(&mut self.key_rng) as u32 - 1,
                None => 0,
            };
            Arrival {
                at,
                hold: 0,
                random_bits: 0,
                user: NO_USER,
                key,
                endpoint: READ_ENDPOINT,
            }
        });
    }

    fn next_request(&mut self) -> Option<SimTime> {
        loop {
            let segment = *self.segments.get(self.segment)?;
            if segment.rate_per_s > 0.0 {
                let unit_gap: f64 = Exp1.sample(&mut self.gap_rng);
                let at = self
                    .now
                    .saturating_add((unit_gap * 1e9 / segment.rate_per_s).round() as u64);
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
