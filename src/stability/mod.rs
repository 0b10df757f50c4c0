//! Metastable points: a stream that keeps up from empty but never drains the queue a trigger
//! leaves (Bronson et al., "Metastable Failures in Distributed Systems", HotOS 2021; Huang
//! et al., "Metastable Failures in the Wild", OSDI 2022). Below its advertised capacity a
//! database can be *vulnerable*: healthy from empty, but a stall or a burst fills its pool,
//! and where every waiting update makes each commit dearer (waiters woken and re-queued at
//! every commit, cores shared with them) the full pool commits less than the stream offers,
//! so the queue never drains.
//!
//! For an open stream on a machine, each shard count is asked three things:
//! - **its capacities** ([`curve`]): the advertised one, the most its rows commit at any
//!   number of updates in flight up to the pool's size (what a stream keeps up with from
//!   empty), and the hidden one, the highest rate at which it recovers from every trigger,
//!   found by probing ([`probe`]) between bounds the curve gives;
//! - **its stability at the rate judged** (the peak): `collapsed` when it falls behind from
//!   empty, `metastable` when it keeps up but does not recover within the recovery window
//!   from one of the [`triggers`] (the mildest such is what tips it), else `stable`, with the
//!   slowest recovery;
//! - the two agree: a rate above the hidden capacity is never called stable.
//!
//! Every probe is seeded from the scenario, so the figures are the same on every run and
//! thread count.

pub mod curve;
pub mod probe;
pub mod triggers;

use rayon::prelude::*;

use crate::error::InputError;
use crate::model::Policy;
use crate::scenario::{ArrivalPlan, Scenario};
use crate::time::SimTime;
pub use curve::Curve;
pub use probe::{Outcome, Point};
pub use triggers::{StallKind, Trigger, triggers};

/// A stream whose database commits less than this share of what arrives has fallen behind
/// (the same share `validate` judges a real stream by).
pub const KEEPS_UP: f64 = 0.9;
/// The hidden capacity is found to within this share of the advertised one.
const PRECISION: f64 = 0.01;
/// The most updates a pool-less stream's curve is measured at.
const MOST_IN_FLIGHT: u32 = 4_096;

/// How streams are probed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StabilitySettings {
    /// Seconds a stream runs from empty before its trigger (the first part, up to half a
    /// second, sets nothing; the rest gives the queue's normal level).
    pub settle_s: f64,
    /// Seconds after a trigger's end within which the queue must be back at its normal level.
    pub recovery_s: f64,
    /// Independent probes of every trigger (each seed its own stream and stalls): a point is
    /// stable only if every one recovers.
    pub replications: u32,
}

impl Default for StabilitySettings {
    fn default() -> Self {
        StabilitySettings {
            settle_s: 2.0,
            recovery_s: 10.0,
            replications: 2,
        }
    }
}

/// A stream's stability at one rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stability {
    /// It keeps up from empty and recovers from every trigger.
    Stable,
    /// It keeps up from empty, but a trigger leaves a queue it does not drain.
    Metastable,
    /// It falls behind from empty.
    Collapsed,
}

impl Stability {
    /// Its name in outputs: `stable`, `metastable`, `collapsed`.
    pub fn name(self) -> &'static str {
        match self {
            Stability::Stable => "stable",
            Stability::Metastable => "metastable",
            Stability::Collapsed => "collapsed",
        }
    }

    /// The stability of its name.
    pub fn from_name(name: &str) -> Option<Stability> {
        [
            Stability::Stable,
            Stability::Metastable,
            Stability::Collapsed,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// Its rank, worst last: 0 stable, 1 metastable, 2 collapsed.
    pub fn rank(self) -> u8 {
        self as u8
    }
}

/// A shard count's stability and capacities at the rate judged.
#[derive(Debug, Clone, PartialEq)]
pub struct StabilityFigures {
    /// The rate judged, over all keys, per second.
    pub(crate) rate_per_s: f64,
    /// Its stability there.
    pub(crate) stability: Stability,
    /// The mildest trigger it did not recover from (metastable).
    pub(crate) tipped_by: Option<Trigger>,
    /// The trigger it took longest to recover from, and how long (stable).
    pub(crate) slowest: Option<(Trigger, SimTime)>,
    /// The most its rows commit at any number of updates in flight up to the pool's: the
    /// rate it keeps up with from empty, per second.
    pub(crate) advertised_per_s: f64,
    /// The highest rate at which it recovers from every trigger, per second.
    pub(crate) hidden_per_s: f64,
    /// What its rows commit with every connection busy, per second.
    pub(crate) full_pool_per_s: f64,
    /// The updates in flight with every connection busy (the pool's size).
    pub(crate) population: u32,
    /// The recovery window, s.
    pub(crate) recovery_s: f64,
}

impl StabilityFigures {
    /// Its stability at the rate judged.
    pub fn stability(&self) -> Stability {
        self.stability
    }

    /// The highest rate at which it recovers from every trigger, per second.
    pub fn hidden_per_s(&self) -> f64 {
        self.hidden_per_s
    }

    /// The rate it keeps up with from empty, per second.
    pub fn advertised_per_s(&self) -> f64 {
        self.advertised_per_s
    }

    /// The rate judged, per second.
    pub fn rate_per_s(&self) -> f64 {
        self.rate_per_s
    }

    /// The mildest trigger it did not recover from, when metastable.
    pub fn tipped_by(&self) -> Option<Trigger> {
        self.tipped_by
    }

    /// The trigger it took longest to recover from and how long, when stable.
    pub fn slowest(&self) -> Option<(Trigger, SimTime)> {
        self.slowest
    }

    /// What its rows commit with every connection busy, per second.
    pub fn full_pool_per_s(&self) -> f64 {
        self.full_pool_per_s
    }

    /// The updates in flight with every connection busy.
    pub fn population(&self) -> u32 {
        self.population
    }

    /// The recovery window, s.
    pub fn recovery_s(&self) -> f64 {
        self.recovery_s
    }

    /// The trigger its `trigger` column names: what tipped it, else the slowest recovery.
    pub fn trigger(&self) -> Option<Trigger> {
        self.tipped_by.or(self.slowest.map(|(trigger, _)| trigger))
    }

    /// The rate judged over the capacity that binds it — the hidden one, or the advertised
    /// one when it is lower: above 1, the stream does not hold.
    pub fn utilization(&self) -> f64 {
        let binding = self.hidden_per_s.min(self.advertised_per_s);
        if binding > 0.0 {
            self.rate_per_s / binding
        } else {
            f64::INFINITY
        }
    }
}

/// A closed loop's knee: the number of its clients at which its rows commit the most, beside
/// what all of its clients commit. A closed loop never collapses (a client waits for its
/// answer before it asks again), but past its knee every client more only adds waiters that
/// make each commit dearer: the same effect that tips an open stream's full pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientKnee {
    /// The loop's clients.
    pub(crate) clients: u32,
    /// The client count (of 1, 2, 4, … and the loop's own) at which the rows commit the most.
    pub(crate) best_clients: u32,
    /// What they commit there, per second.
    pub(crate) best_per_s: f64,
    /// What the loop's own clients commit, measured the same way, per second.
    pub(crate) at_clients_per_s: f64,
}

impl ClientKnee {
    /// The client count at which the rows commit the most.
    pub fn best_clients(&self) -> u32 {
        self.best_clients
    }

    /// What they commit there, per second.
    pub fn best_per_s(&self) -> f64 {
        self.best_per_s
    }

    /// The loop's own clients, and what they commit, per second.
    pub fn at_clients(&self) -> (u32, f64) {
        (self.clients, self.at_clients_per_s)
    }
}

/// The knee of `rows` rows of `policy` under `scenario`'s closed loop, when it is a closed loop
/// alone on a machine (`None` otherwise).
pub fn knee(scenario: &Scenario, policy: Policy, rows: u32) -> Option<ClientKnee> {
    let ArrivalPlan::Closed(closed) = scenario.arrivals() else {
        return None;
    };
    if !scenario.pipeline() || scenario.machine().is_empty() || scenario.has_open_requests() {
        return None;
    }
    let point = Point {
        scenario,
        policy,
        rows,
        rate_per_s: 0.0,
    };
    let curve = curve::client_curve(&point, closed, 0);
    let (best_clients, best_per_s) = curve.best();
    Some(ClientKnee {
        clients: closed.clients,
        best_clients,
        best_per_s,
        at_clients_per_s: curve.full(),
    })
}

/// Whether `scenario`'s shard counts are probed for metastability: an open stream on a
/// machine (`[machine]`, `[wal]`, `[stalls]`, …) with at least one trigger (`[stalls]` or
/// `[pool]`). The seed's lock model commits at the same rate whatever waits, so it has no
/// metastable points.
pub fn applies(scenario: &Scenario) -> bool {
    !matches!(scenario.arrivals(), ArrivalPlan::Closed(_))
        && scenario.pipeline()
        && !scenario.machine().is_empty()
        && !triggers(scenario, 1.0).is_empty()
}

/// The stability and capacities of `rows` rows of `policy` at `rate_per_s` over all keys;
/// `collapsed` when the run from empty already fell behind (it is not probed again). `None`
/// when the scenario is not probed ([`applies`]).
pub fn assess(
    scenario: &Scenario,
    policy: Policy,
    rows: u32,
    rate_per_s: f64,
    collapsed: bool,
    settings: &StabilitySettings,
) -> Result<Option<StabilityFigures>, InputError> {
    if !applies(scenario) {
        return Ok(None);
    }
    let point = Point {
        scenario,
        policy,
        rows,
        rate_per_s,
    };
    let all = triggers(scenario, rate_per_s);
    let population = population(scenario, &all, rate_per_s);
    let curve = curve::curve(&point, population, 0);
    let advertised = advertised_capacity(&point, &curve, settings)?;
    let capacity = hidden_capacity(&point, &curve, advertised, &all, settings)?;
    let judged = if collapsed {
        Judgement::collapsed()
    } else {
        judge(&point, &all, settings)?
    };
    let judged = judged.held_to(rate_per_s, &capacity);
    Ok(Some(StabilityFigures {
        rate_per_s,
        stability: judged.stability,
        tipped_by: judged.tipped_by,
        slowest: judged.slowest,
        advertised_per_s: advertised,
        hidden_per_s: capacity.rate_per_s,
        full_pool_per_s: curve.full(),
        population,
        recovery_s: settings.recovery_s,
    }))
}

/// The updates in flight when every connection is busy: the pool's size, or without a pool
/// the largest queue a trigger leaves at `rate_per_s` (at least one).
fn population(scenario: &Scenario, triggers: &[Trigger], rate_per_s: f64) -> u32 {
    match scenario.features().pool.as_ref() {
        Some(pool) => pool.size,
        None => triggers
            .iter()
            .map(|t| t.queue_left(rate_per_s).ceil())
            .fold(1.0, f64::max)
            .min(f64::from(MOST_IN_FLIGHT)) as u32,
    }
}

/// What the probes at one rate found.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Judgement {
    stability: Stability,
    tipped_by: Option<Trigger>,
    slowest: Option<(Trigger, SimTime)>,
}

impl Judgement {
    fn collapsed() -> Judgement {
        Judgement {
            stability: Stability::Collapsed,
            tipped_by: None,
            slowest: None,
        }
    }

    /// The judgement no better than the hidden capacity allows: a stable call above it
    /// becomes metastable, tipped by what tipped the capacity's search.
    fn held_to(self, rate_per_s: f64, capacity: &Capacity) -> Judgement {
        if self.stability != Stability::Stable || rate_per_s <= capacity.rate_per_s {
            return self;
        }
        Judgement {
            stability: Stability::Metastable,
            tipped_by: capacity.tipped_by,
            slowest: None,
        }
    }
}

/// Probes `point` with every trigger, mildest first, in every replication.
fn judge(
    point: &Point<'_>,
    triggers: &[Trigger],
    settings: &StabilitySettings,
) -> Result<Judgement, InputError> {
    let per_replication: Vec<Judgement> = (0..settings.replications)
        .into_par_iter()
        .map(|replication| judge_one(point, triggers, replication, settings))
        .collect::<Result<_, _>>()?;
    let worst = per_replication
        .iter()
        .map(|j| j.stability)
        .max()
        .unwrap_or(Stability::Stable);
    let tipped_by = per_replication
        .iter()
        .filter_map(|j| j.tipped_by)
        .min_by(|a, b| {
            a.queue_left(point.rate_per_s)
                .total_cmp(&b.queue_left(point.rate_per_s))
        });
    let slowest = per_replication
        .iter()
        .filter_map(|j| j.slowest)
        .max_by_key(|&(_, after)| after);
    Ok(Judgement {
        stability: worst,
        tipped_by: (worst == Stability::Metastable)
            .then_some(tipped_by)
            .flatten(),
        slowest: (worst == Stability::Stable).then_some(slowest).flatten(),
    })
}

/// One replication's probes, mildest trigger first, stopping at the first it does not
/// recover from.
fn judge_one(
    point: &Point<'_>,
    triggers: &[Trigger],
    replication: u32,
    settings: &StabilitySettings,
) -> Result<Judgement, InputError> {
    let mut slowest: Option<(Trigger, SimTime)> = None;
    for &trigger in triggers {
        match probe::probe(point, Some(trigger), replication, settings)? {
            Outcome::FellBehind => return Ok(Judgement::collapsed()),
            Outcome::NotRecovered(_) => {
                return Ok(Judgement {
                    stability: Stability::Metastable,
                    tipped_by: Some(trigger),
                    slowest: None,
                });
            }
            Outcome::Recovered(after) => {
                if slowest.is_none_or(|(_, longest)| after > longest) {
                    slowest = Some((trigger, after));
                }
            }
        }
    }
    Ok(Judgement {
        stability: Stability::Stable,
        tipped_by: None,
        slowest,
    })
}

/// The highest rate found to recover from every trigger, and what tipped the lowest rate
/// found not to.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Capacity {
    rate_per_s: f64,
    tipped_by: Option<Trigger>,
}

/// The highest rate up to `top` at which `fails` finds nothing (bisected within `step`,
/// starting from a bracket of ±10% around `guess`, widened downwards by halving when its
/// lower end fails too), with what failed at the lowest rate found failing.
fn highest_passing<T, F>(
    top: f64,
    guess: f64,
    step: f64,
    fails: F,
) -> Result<(f64, Option<T>), InputError>
where
    F: Fn(f64) -> Result<Option<T>, InputError>,
{
    let Some(at_top) = fails(top)? else {
        return Ok((top, None));
    };
    let guess = guess.clamp(0.0, top);
    let (mut high, mut failed) = ((guess * 1.1).min(top), at_top);
    if high < top {
        match fails(high)? {
            Some(failure) => failed = failure,
            None => high = top,
        }
    }
    let mut low = (guess * 0.9).min(high);
    loop {
        if low < step {
            return Ok((0.0, Some(failed)));
        }
        match fails(low)? {
            None => break,
            Some(failure) => {
                (high, failed) = (low, failure);
                low /= 2.0;
            }
        }
    }
    while high - low > step {
        let middle = (low + high) / 2.0;
        match fails(middle)? {
            None => low = middle,
            Some(failure) => (high, failed) = (middle, failure),
        }
    }
    Ok((low, Some(failed)))
}

/// The highest rate up to the curve's top at which `point`'s rows keep up from empty in every
/// replication (the machine's own stalls included).
fn advertised_capacity(
    point: &Point<'_>,
    curve: &Curve,
    settings: &StabilitySettings,
) -> Result<f64, InputError> {
    let top = curve.top();
    let fails = |rate: f64| -> Result<Option<()>, InputError> {
        let outcomes: Vec<Outcome> = (0..settings.replications)
            .into_par_iter()
            .map(|replication| probe::probe(&point.at(rate), None, replication, settings))
            .collect::<Result<_, _>>()?;
        Ok(outcomes.contains(&Outcome::FellBehind).then_some(()))
    };
    let (rate, _) = highest_passing(top, top, (PRECISION * top).max(1e-6), fails)?;
    Ok(rate)
}

/// The highest rate up to `advertised` at which `point`'s rows recover from every trigger:
/// bisected from a bracket around the curve's floor after its top (the fluid model's
/// answer), within [`PRECISION`] of the advertised capacity.
fn hidden_capacity(
    point: &Point<'_>,
    curve: &Curve,
    advertised: f64,
    triggers: &[Trigger],
    settings: &StabilitySettings,
) -> Result<Capacity, InputError> {
    let guess = curve.floor_after_top();
    let step = (PRECISION * advertised).max(1e-6);
    let fails = |rate: f64| failing_trigger(&point.at(rate), triggers, settings);
    let (rate_per_s, tipped_by) = highest_passing(advertised, guess, step, fails)?;
    Ok(Capacity {
        rate_per_s,
        tipped_by,
    })
}

/// The first trigger, most severe first, that some replication of `point` does not recover
/// from (falling behind from empty counts as the most severe's); `None` when every one
/// recovers in every replication.
fn failing_trigger(
    point: &Point<'_>,
    triggers: &[Trigger],
    settings: &StabilitySettings,
) -> Result<Option<Trigger>, InputError> {
    let failures: Vec<Option<Trigger>> = (0..settings.replications)
        .into_par_iter()
        .map(|replication| {
            for &trigger in triggers.iter().rev() {
                match probe::probe(point, Some(trigger), replication, settings)? {
                    Outcome::Recovered(_) => continue,
                    Outcome::FellBehind | Outcome::NotRecovered(_) => return Ok(Some(trigger)),
                }
            }
            Ok(None)
        })
        .collect::<Result<_, InputError>>()?;
    Ok(failures.into_iter().flatten().next())
}
