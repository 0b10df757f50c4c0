//! The times of a Poisson process whose rate is constant within each segment of a profile (a
//! non-homogeneous Poisson process). Within a segment the gaps are exponential; at a segment's
//! end the pending gap is discarded and the next segment starts afresh, which is exact because
//! the exponential distribution is memoryless. Times are whole nanoseconds.

use rand_distr::{Distribution, Exp1};

use super::RateSegment;
use super::SimRng;
use crate::model::SimTime;
use crate::time::round_to_ns;

/// The successive event times of one Poisson stream.
#[derive(Debug)]
pub(super) struct PoissonClock {
    segments: Vec<RateSegment>,
    segment: usize,
    now: SimTime,
    rng: SimRng,
}

impl PoissonClock {
    /// A stream over consecutive `segments` from time 0, drawing its gaps from `rng`.
    pub(super) fn new(segments: Vec<RateSegment>, rng: SimRng) -> Self {
        PoissonClock {
            segments,
            segment: 0,
            now: 0,
            rng,
        }
    }

    /// The next event time, or `None` after the last segment.
    #[inline]
    pub(super) fn next_time(&mut self) -> Option<SimTime> {
        loop {
            let segment = *self.segments.get(self.segment)?;
            if segment.rate_per_s > 0.0 {
                let unit_gap: f64 = Exp1.sample(&mut self.rng);
                let gap_ns = round_to_ns(unit_gap * 1e9 / segment.rate_per_s);
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
