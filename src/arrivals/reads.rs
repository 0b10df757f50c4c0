//! Read requests: a Poisson stream whose rate is constant or follows the likes' profile, each
//! request reading `feed_size` keys drawn from the same popularity as the likes. Each key read
//! is one arrival with [`READ_ENDPOINT`], at the request's time.

use rand_distr::{Distribution, Zipf};

use super::RateSegment;
use super::clock::PoissonClock;
use super::{SimRng, Stream, stream_rng};
use crate::model::clients::READ_ENDPOINT;
use crate::model::rows::mix64;
use crate::model::{Arrival, NO_USER};

/// The read stream of a scenario.
#[derive(Debug)]
pub(super) struct ReadStream {
    clock: PoissonClock,
    feed_size: u32,
    left_in_request: u32,
    keys: Option<Zipf<f64>>,
    key_rng: SimRng,
    current: Option<Arrival>,
}

impl ReadStream {
    /// The reads over `segments` of keys of popularity `keys` (one key without), drawn from
    /// `seed`.
    pub(super) fn new(
        keys: Option<Zipf<f64>>,
        segments: Vec<RateSegment>,
        feed_size: u32,
        seed: u64,
    ) -> Self {
        let mut stream = ReadStream {
            clock: PoissonClock::new(segments, stream_rng(seed ^ mix64(0x5EAD), Stream::Arrivals)),
            feed_size,
            left_in_request: 0,
            keys,
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
            self.clock.next_time()
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
}
