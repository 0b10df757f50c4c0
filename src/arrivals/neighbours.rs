//! The requests of neighbour endpoints that share the connection pool: one Poisson stream per
//! endpoint, each from its own random stream, merged in time order.

use super::RateSegment;
use super::clock::PoissonClock;
use super::{Stream, stream_rng};
use crate::model::clients::Neighbour;
use crate::model::rows::mix64;
use crate::model::{Arrival, NO_USER, SimTime};

/// One endpoint's stream.
#[derive(Debug)]
struct Endpoint {
    hold: SimTime,
    clock: PoissonClock,
    /// Its next request, if before the horizon.
    next: Option<SimTime>,
}

/// Every neighbour endpoint's requests, next first.
#[derive(Debug)]
pub(super) struct Neighbours {
    endpoints: Vec<Endpoint>,
}

impl Neighbours {
    /// The streams of `neighbours` over `[0, horizon)`, drawn from `seed`.
    pub(super) fn new(neighbours: &[Neighbour], seed: u64, horizon: SimTime) -> Self {
        let mut streams = Neighbours {
            endpoints: neighbours
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let segments = vec![RateSegment {
                        end: horizon,
                        rate_per_s: n.rate_per_s,
                    }];
                    let rng = stream_rng(seed ^ mix64(i as u64 + 1), Stream::Neighbours);
                    Endpoint {
                        hold: n.hold,
                        clock: PoissonClock::new(segments, rng),
                        next: None,
                    }
                })
                .collect(),
        };
        for index in 0..streams.endpoints.len() {
            streams.step(index);
        }
        streams
    }

    /// The next request of any endpoint (ties: the lowest-numbered endpoint).
    pub(super) fn peek(&self) -> Option<Arrival> {
        let (index, endpoint) = self
            .endpoints
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.next.map(|at| (i, e, at)))
            .min_by_key(|&(i, _, at)| (at, i))
            .map(|(i, e, _)| (i, e))?;
        Some(Arrival {
            at: endpoint.next?,
            hold: endpoint.hold,
            random_bits: 0,
            user: NO_USER,
            key: 0,
            endpoint: index as u16 + 1,
        })
    }

    /// Moves past the request `peek` returned.
    pub(super) fn advance(&mut self) {
        if let Some(index) = self.peek().map(|a| usize::from(a.endpoint - 1)) {
            self.step(index);
        }
    }

    fn step(&mut self, index: usize) {
        let endpoint = &mut self.endpoints[index];
        endpoint.next = endpoint.clock.next_time();
    }
}
