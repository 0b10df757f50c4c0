//! One probe: a stream at a steady rate, simulated from empty while it settles, then hit by a
//! trigger, then watched until its queue is back where it was before the trigger — or the
//! recovery window ends. The pipeline is fed in slices of [`SLICE_NS`] and its backlog read
//! between them, so a probe stops as soon as its answer is known.

use std::sync::Arc;

use rand::Rng;

use super::triggers::Trigger;
use super::{KEEPS_UP, StabilitySettings};
use crate::arrivals::{ArrivalSource, Stream, stream_rng};
use crate::error::InputError;
use crate::model::stalls::StallPlan;
use crate::model::{Arrival, MachineModel, NO_USER, NoEvents, Pipeline, Policy, Rows};
use crate::scenario::{Scenario, Variant};
use crate::time::{SimTime, s_f64_to_ns};

/// How often a probe reads the queue, ns: 10 ms.
pub const SLICE_NS: SimTime = 10_000_000;
/// The first part of the settling seconds is left out of the queue's normal level (the stream
/// starts from an empty database), s.
const FROM_EMPTY_S: f64 = 0.5;

/// What one probe saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The stream fell behind before the trigger: in its settling seconds the database
    /// committed less than [`KEEPS_UP`] of what arrived.
    FellBehind,
    /// The queue was back at its level before the trigger this long after the trigger began.
    Recovered(SimTime),
    /// It was not by the end of the recovery window; the queue then.
    NotRecovered(u64),
}

/// A stream to probe: `rows` rows of `policy` at `rate_per_s` over all keys, with the
/// scenario's machine, pool and stream shape.
#[derive(Debug, Clone, Copy)]
pub struct Point<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The policy.
    pub policy: Policy,
    /// Rows per key.
    pub rows: u32,
    /// The stream's rate over all keys, per second.
    pub rate_per_s: f64,
}

impl Point<'_> {
    /// The same stream at another rate.
    pub fn at(&self, rate_per_s: f64) -> Self {
        Point {
            rate_per_s,
            ..*self
        }
    }
}

/// Probes `point` with `trigger` in its replication `replication`; without a trigger, whether
/// it keeps up from empty over the settling and recovery seconds (then
/// [`Outcome::Recovered`] says it did).
pub fn probe(
    point: &Point<'_>,
    trigger: Option<Trigger>,
    replication: u32,
    settings: &StabilitySettings,
) -> Result<Outcome, InputError> {
    let start = on_slice(s_f64_to_ns(settings.settle_s)).max(2 * SLICE_NS);
    let length = trigger.map_or(0, Trigger::length_ns);
    let horizon = on_slice(start + length + s_f64_to_ns(settings.recovery_s));
    let stream = point
        .scenario
        .at_steady_peak(point.rate_per_s, 0, horizon, 1)
        .with_shards(vec![point.rows]);
    let variant = Variant {
        policy: point.policy,
        rows: Rows::Fixed(point.rows),
    };
    let config = crate::sweep::engine_config(&stream, variant, replication);
    let seed = config.seed;
    let machine = machine_with(point.scenario.machine(), trigger, start);
    let mut pipeline = Pipeline::new(config, machine, NoEvents);
    let mut source = ArrivalSource::open(stream.stream_plan(), seed)?;
    let mut feed = Feed::new(trigger.map_or_else(Vec::new, |t| burst(&stream, t, start, seed)));
    let from_empty = on_slice(s_f64_to_ns(FROM_EMPTY_S)).min(start / 2 / SLICE_NS * SLICE_NS);
    let watch = match trigger {
        Some(_) => Watch {
            from_empty,
            start,
            trigger_end: Some(start + length),
            horizon,
        },
        None => Watch {
            from_empty,
            start: horizon,
            trigger_end: None,
            horizon,
        },
    };
    watch.run(&mut pipeline, &mut source, &mut feed)
}

/// `time` rounded up to a whole slice.
fn on_slice(time: SimTime) -> SimTime {
    time.div_ceil(SLICE_NS) * SLICE_NS
}

/// The scenario's machine, with `trigger`'s stall beside its own at `start`.
fn machine_with(
    machine: &Arc<MachineModel>,
    trigger: Option<Trigger>,
    start: SimTime,
) -> Arc<MachineModel> {
    let Some(Trigger::Stall { length_ns, .. }) = trigger else {
        return Arc::clone(machine);
    };
    let stalls = match machine.stalls.as_ref() {
        Some(plan) => plan.with_injected(start, length_ns),
        None => StallPlan::only_injected(start, length_ns),
    };
    Arc::new(MachineModel {
        stalls: Some(stalls),
        ..(**machine).clone()
    })
}

/// A burst trigger's requests, all at `start` on the hottest key, each with its own draws
/// from a stream of its own (the stream's own draws do not move).
fn burst(stream: &Scenario, trigger: Trigger, start: SimTime, seed: u64) -> Vec<Arrival> {
    let Trigger::Burst { requests } = trigger else {
        return Vec::new();
    };
    let mut rng = stream_rng(seed, Stream::Triggers);
    (0..requests)
        .map(|_| Arrival {
            at: start,
            hold: stream.hold().sample(&mut rng),
            random_bits: rng.next_u64(),
            user: if stream.users() > 0 {
                crate::model::random::bounded(rng.next_u64(), stream.users())
            } else {
                NO_USER
            },
            key: stream.hot_key(),
            endpoint: 0,
        })
        .collect()
}

/// The stream's arrivals slice by slice, with the burst merged in at its time.
struct Feed {
    chunk: Vec<Arrival>,
    next: usize,
    burst: Vec<Arrival>,
    slice: Vec<Arrival>,
    /// The likes fed so far.
    arrived: u64,
}

impl Feed {
    fn new(burst: Vec<Arrival>) -> Feed {
        Feed {
            chunk: Vec::new(),
            next: 0,
            burst,
            slice: Vec::new(),
            arrived: 0,
        }
    }

    /// The arrivals before `end`, in time order (a burst's after the stream's at its time).
    fn until(
        &mut self,
        end: SimTime,
        source: &mut ArrivalSource<'_>,
    ) -> Result<&[Arrival], InputError> {
        self.slice.clear();
        loop {
            if self.next == self.chunk.len() {
                source.fill(&mut self.chunk, 4096)?;
                self.next = 0;
                if self.chunk.is_empty() {
                    break;
                }
            }
            let arrival = self.chunk[self.next];
            if arrival.at >= end {
                break;
            }
            self.push_burst_before(arrival.at);
            self.slice.push(arrival);
            self.next += 1;
        }
        self.push_burst_before(end);
        // Only the likes commit: the neighbours' requests and the reads are not counted.
        self.arrived += self.slice.iter().filter(|a| a.endpoint == 0).count() as u64;
        Ok(&self.slice)
    }

    /// Moves the burst into the slice when it is due before `time`.
    fn push_burst_before(&mut self, time: SimTime) {
        if self.burst.first().is_some_and(|first| first.at < time) {
            self.slice.append(&mut self.burst);
        }
    }
}

/// The times that matter to a probe.
struct Watch {
    /// The queue's normal level is read from here to `start`.
    from_empty: SimTime,
    /// The trigger's start (without one, the end): whether the stream kept up from empty
    /// is judged here.
    start: SimTime,
    /// Its end: recovery is looked for from here (`None`: no trigger).
    trigger_end: Option<SimTime>,
    /// The recovery window's end.
    horizon: SimTime,
}

impl Watch {
    /// Feeds the pipeline slice by slice and reads its queue after each, until the answer is
    /// known.
    fn run(
        &self,
        pipeline: &mut Pipeline<NoEvents>,
        source: &mut ArrivalSource<'_>,
        feed: &mut Feed,
    ) -> Result<Outcome, InputError> {
        let mut normal = 0;
        let mut settled = (0, 0);
        let mut time = 0;
        while time < self.horizon {
            let end = (time + SLICE_NS).min(self.horizon);
            pipeline.feed(feed.until(end, source)?);
            pipeline.run_until(end);
            let backlog = pipeline.backlog();
            if pipeline.is_saturated() {
                return Ok(Outcome::NotRecovered(backlog));
            }
            if end == self.from_empty {
                settled = (feed.arrived, pipeline.completed());
            }
            if end > self.from_empty && end <= self.start {
                normal = normal.max(backlog);
            }
            if end == self.start {
                let arrived = feed.arrived - settled.0;
                let committed = pipeline.completed() - settled.1;
                if (committed as f64) < KEEPS_UP * arrived as f64 {
                    return Ok(Outcome::FellBehind);
                }
            }
            let Some(trigger_end) = self.trigger_end else {
                time = end;
                continue;
            };
            if end >= trigger_end && end > self.start && backlog <= normal {
                return Ok(Outcome::Recovered(end - self.start));
            }
            time = end;
        }
        Ok(match self.trigger_end {
            Some(_) => Outcome::NotRecovered(pipeline.backlog()),
            None => Outcome::Recovered(0),
        })
    }
}
