//! The full pool: an open stream over a few rows through the most connections, started with a
//! burst that fills the pool, at a rate above what the pool then commits, so every connection
//! stays busy while it is measured. It measures what no closed loop of the design does — the
//! rows with the most waiters an application's pool can pile on them — which is where a
//! database whose commits get dearer with every waiter tips a stream into a metastable
//! collapse ([`crate::stability`]). The fit gives an update a longer hold for every update
//! waiting for its row (`[hold] per_waiter_ms`) until the model's full pool commits what the
//! database's did; it only ever slows the model, and keeps the closed loops' fit in view.

use rayon::prelude::*;

use super::machine::run_fit_scenario;
use super::{Machine, Observation, OpenStream, log_error, misfit, simulated_seconds};
use crate::scenario::file::{ArrivalsTable, PoolTable, ProfileSegment, ScenarioFile};

/// The burst that fills the pool arrives in this first part of the run, s.
const BURST_S: f64 = 0.001;
/// Simulated seconds of the full pool before its measurement (the burst's queue spreads over
/// the rows).
const FULL_POOL_WARMUP_S: f64 = 0.2;
/// Simulated seconds of the full pool per evaluation.
const FULL_POOL_S: f64 = 1.0;
/// The weight of the full pool's throughput beside the closed loops' summed misfit: it is
/// the one run that measures the regime, as many closed loops measure the rest.
const FULL_POOL_WEIGHT: f64 = 6.0;
/// The extra holds per waiter tried, ms: none, then 0.1 µs to about 0.4 ms in steps of a
/// factor of √2.
fn candidates() -> impl Iterator<Item = f64> {
    std::iter::once(0.0).chain((0..=24).map(|step| 1e-4 * 2f64.powf(f64::from(step) / 2.0)))
}

impl Machine {
    /// Simulates `stream` started with a burst of as many requests as it has connections, for
    /// `seconds` after a short warm-up; its throughput counts the measured seconds.
    pub fn simulate_full_pool(&self, stream: &OpenStream, seconds: f64) -> Observation {
        assert!(self.is_consistent(), "an inconsistent machine: {self:?}");
        let burst = f64::from(stream.connections) / BURST_S;
        let file = ScenarioFile {
            warmup_s: Some(FULL_POOL_WARMUP_S),
            arrivals: Some(ArrivalsTable {
                profile: Some(vec![
                    ProfileSegment {
                        seconds: BURST_S,
                        rate_per_s: stream.rate_per_s + burst,
                    },
                    ProfileSegment {
                        seconds: FULL_POOL_WARMUP_S + seconds - BURST_S,
                        rate_per_s: stream.rate_per_s,
                    },
                ]),
                ..ArrivalsTable::default()
            }),
            pool: Some(PoolTable {
                size: Some(stream.connections),
            }),
            ..self.fit_file(17, stream.rows, FULL_POOL_WARMUP_S + seconds)
        };
        let run = run_fit_scenario(&file);
        let responses = run
            .machine
            .as_ref()
            .and_then(|machine| machine.responses.as_ref())
            .map(|r| r.summary())
            .unwrap_or_default();
        self.observed(&run, stream.rows, stream.connections, seconds, &responses)
    }
}

/// `machine` with the extra hold per waiter (`per_waiter_ms`) that best matches the full
/// pool's measured throughput `measured` beside the closed loops `closed` it was fitted to.
/// The grid is first walked on the full pool alone (its runs are cheap) up to the first value
/// whose full pool commits no more than the database's; the joint misfit then chooses among
/// that value and the [`JOINT_CANDIDATES`] below it, and is narrowed between the best one's
/// neighbours. None when the fitted machine's full pool already commits no more than the
/// database's (the model is not made faster) or no value fits better than none.
pub fn fit_full_pool(
    machine: &Machine,
    stream: &OpenStream,
    measured: &Observation,
    closed: &[Observation],
) -> Machine {
    let simulated = machine.simulate_full_pool(stream, FULL_POOL_S);
    if simulated.tps <= measured.tps {
        return *machine;
    }
    let with = |per_waiter_ms: f64| Machine {
        per_waiter_ms,
        ..*machine
    };
    let grid: Vec<f64> = candidates().collect();
    let reach = grid
        .iter()
        .position(|&candidate| {
            candidate > 0.0
                && with(candidate).simulate_full_pool(stream, FULL_POOL_S).tps <= measured.tps
        })
        .unwrap_or(grid.len() - 1);
    let tried = &grid[reach.saturating_sub(JOINT_CANDIDATES)..=reach];
    let cost = |per_waiter_ms: f64| {
        let candidate = with(per_waiter_ms);
        let full = candidate.simulate_full_pool(stream, FULL_POOL_S);
        let loops: Vec<f64> = closed
            .par_iter()
            .map(|run| {
                let seconds = simulated_seconds(run.tps);
                misfit(&candidate.simulate(run.rows, run.clients, seconds), run)
            })
            .collect();
        FULL_POOL_WEIGHT * log_error(full.tps, measured.tps).powi(2) + loops.iter().sum::<f64>()
    };
    let mut best = (cost(0.0), 0.0);
    for &candidate in tried.iter().filter(|&&c| c > 0.0) {
        let value = cost(candidate);
        if value < best.0 {
            best = (value, candidate);
        }
    }
    if best.1 == 0.0 {
        return *machine;
    }
    // Between the grid's neighbours of the best value, a golden-section search on its log.
    let golden = (5f64.sqrt() - 1.0) / 2.0;
    let (mut low, mut high) = ((best.1 / 2f64.sqrt()).ln(), (best.1 * 2f64.sqrt()).ln());
    for _ in 0..REFINEMENTS {
        let left = high - golden * (high - low);
        let right = low + golden * (high - low);
        if cost(left.exp()) <= cost(right.exp()) {
            high = right;
        } else {
            low = left;
        }
    }
    let refined = ((low + high) / 2.0).exp();
    if cost(refined) < best.0 {
        with(refined)
    } else {
        with(best.1)
    }
}

/// Steps of the golden-section search: a factor of 2 narrowed to about 10%.
const REFINEMENTS: usize = 4;
/// Grid values below the one that reaches the measured full pool that the joint misfit
/// weighs (each a factor of √2 apart: down to an eighth of it).
const JOINT_CANDIDATES: usize = 6;
