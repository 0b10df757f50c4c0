//! The flow-equivalent server of a shard count (Chandy, Herzog and Woo, 1975): the rate its
//! rows commit with `n` updates always in the database, for `n` from 1 to the pool's size. An
//! open stream at rate λ drains a queue of `n` at `μ(n) − λ`: it keeps up from empty while
//! λ is below the curve's top, and recovers from a full pool only while λ is below the curve
//! everywhere from its top to the pool's size. Where `μ(n)` falls with `n` — waiters that
//! cost every commit more — the two differ, and the rates between are metastable
//! (`../shared/research/cpu-and-lock-convoy.md`, §3).

use std::sync::Arc;

use super::probe::Point;
use crate::model::closed::ClosedLoop;
use crate::model::{HoldDist, MachineModel, NoEvents, Pipeline, Rows};
use crate::scenario::Variant;
use crate::time::SimTime;

/// Each population's closed loop runs this long before it is measured, ns: 50 ms.
const WARMUP_NS: SimTime = 50_000_000;
/// … and is measured until this many commits (or [`LONGEST_NS`]).
const COMMITS: f64 = 2_000.0;
/// The longest measured period of one population, ns: 2 s.
const LONGEST_NS: SimTime = 2_000_000_000;

/// `μ(n)` at a geometric series of populations up to the largest.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// `(n, commits a second)`, ascending `n`, the largest last.
    pub(crate) points: Vec<(u32, f64)>,
}

impl Curve {
    /// The most the rows commit at any population: the rate a stream keeps up with from
    /// empty (a closed benchmark's best).
    pub fn top(&self) -> f64 {
        self.points
            .iter()
            .map(|&(_, rate)| rate)
            .fold(0.0, f64::max)
    }

    /// The least the rows commit at any population from the top's to the largest: the
    /// rate a stream still drains at once every connection is busy.
    pub fn floor_after_top(&self) -> f64 {
        let top = self
            .points
            .iter()
            .position(|&(_, rate)| rate == self.top())
            .unwrap_or(0);
        self.points[top..]
            .iter()
            .map(|&(_, rate)| rate)
            .fold(f64::INFINITY, f64::min)
    }

    /// The rate at the largest population (every connection busy).
    pub fn full(&self) -> f64 {
        self.points.last().map_or(0.0, |&(_, rate)| rate)
    }

    /// The largest population.
    pub fn population(&self) -> u32 {
        self.points.last().map_or(0, |&(n, _)| n)
    }

    /// The population the curve peaks at (the smallest, on a tie) and its rate.
    pub fn best(&self) -> (u32, f64) {
        self.points.iter().copied().fold(
            (0, f64::MIN),
            |best, next| if next.1 > best.1 { next } else { best },
        )
    }
}

/// The populations measured up to `largest`: 1, 2, 4, … and `largest`.
fn populations(largest: u32) -> Vec<u32> {
    let mut all: Vec<u32> = std::iter::successors(Some(1u32), |&n| n.checked_mul(2))
        .take_while(|&n| n < largest)
        .collect();
    all.push(largest.max(1));
    all
}

/// `point`'s rows (its rate is not used) with up to `largest` updates in the database.
pub fn curve(point: &Point<'_>, largest: u32, replication: u32) -> Curve {
    let points = populations(largest)
        .into_iter()
        .map(|n| (n, rate_at(point, n, replication)))
        .collect();
    Curve { points }
}

/// What a closed loop's rows commit at each client count up to its own `clients` (1, 2, 4, …
/// and `clients`), each client thinking and spending its time outside the database as the
/// scenario's do, on the calm machine: where the loop's throughput peaks — its knee — and
/// what the clients beyond it cost.
pub fn client_curve(point: &Point<'_>, closed: &ClosedLoop, replication: u32) -> Curve {
    let machine = Arc::new(MachineModel {
        stalls: None,
        ..(**point.scenario.machine()).clone()
    });
    let points = populations(closed.clients)
        .into_iter()
        .map(|clients| {
            let loop_of = ClosedLoop {
                clients,
                think: closed.think.clone(),
            };
            (clients, committed(point, &loop_of, &machine, replication))
        })
        .collect();
    Curve { points }
}

/// What `point`'s rows commit with `population` updates always in the database: a closed
/// loop of that many clients with no think time and nothing outside the database (in a
/// full pool a freed connection takes the next update at once), on the calm machine (its
/// stalls are triggers, not the curve).
fn rate_at(point: &Point<'_>, population: u32, replication: u32) -> f64 {
    let machine = point.scenario.machine();
    let calm = Arc::new(MachineModel {
        stalls: None,
        overhead: None,
        idle_overhead: None,
        ..(**machine).clone()
    });
    let closed = ClosedLoop {
        clients: population,
        think: HoldDist::Constant { hold_ns: 0 },
    };
    committed(point, &closed, &calm, replication)
}

/// What `point`'s rows commit a second under the closed loop `closed` on `machine`, measured
/// after a short warm-up until about [`COMMITS`] commits.
fn committed(
    point: &Point<'_>,
    closed: &ClosedLoop,
    machine: &Arc<MachineModel>,
    replication: u32,
) -> f64 {
    let rows_ceiling =
        f64::from(point.rows) * 1e9 / point.scenario.saturated_row_hold_ns().max(1.0);
    let estimate = machine
        .ceiling_per_s()
        .map_or(rows_ceiling, |(ceiling, _)| ceiling.min(rows_ceiling))
        .min(closed.max_rate_per_s(point.scenario.unqueued_response_ns()))
        .clamp(1.0, 1e9);
    let measured = ((COMMITS / estimate) * 1e9) as SimTime;
    let measured = measured.clamp(WARMUP_NS, LONGEST_NS);
    let horizon = WARMUP_NS + measured;
    let scenario = point
        .scenario
        .at_steady_peak(1.0, WARMUP_NS, horizon, 1)
        .with_shards(vec![point.rows]);
    let variant = Variant {
        policy: point.policy,
        rows: Rows::Fixed(point.rows),
    };
    let config = crate::sweep::engine_config(&scenario, variant, replication);
    let seed = config.seed;
    let pipeline = Pipeline::new(config, Arc::clone(machine), NoEvents);
    let (run, _) = pipeline.run_closed(closed, scenario.hold(), None, seed, &mut |_| {});
    run.completed as f64 / (measured as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_populations_double_up_to_the_largest() {
        assert_eq!(populations(1), [1]);
        assert_eq!(populations(64), [1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(populations(50), [1, 2, 4, 8, 16, 32, 50]);
    }

    #[test]
    fn the_floor_is_read_after_the_top() {
        let curve = Curve {
            points: vec![(1, 100.0), (2, 300.0), (4, 250.0), (8, 120.0), (16, 150.0)],
        };
        assert_eq!(curve.top(), 300.0);
        assert_eq!(curve.floor_after_top(), 120.0);
        assert_eq!(curve.full(), 150.0);
        assert_eq!(curve.population(), 16);
    }
}
