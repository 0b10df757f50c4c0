//! The calibration's spread: how much slower or faster than fitted the database could have
//! been, from what it did while it was measured.
//!
//! A database repeats itself only so well: the same closed loop measured twice during one
//! calibration here moved by 15%, and a fit that sits between its runs says nothing of that.
//! The spread is the fitted machine's *speed* — every time of it (hold, CPU, flush, wake-ups,
//! time outside the database) scaled by one factor — refitted two ways:
//!
//! - a bootstrap over the measured closed loops: [`REPLICATES`] resamples of the runs with
//!   replacement, each refitted to the factor whose simulated runs best match it; their 5th
//!   and 95th percentiles bound how far the runs' scatter around the fit moves it;
//! - each measurement of the repeated loop alone (`calibrate` measures its busiest loop again
//!   at the end): the speed the database had at each time.
//!
//! The spread is the widest of both. Its slower end is what `plan` answers by: an answer that
//! may be conservative, never optimistic about what this database did.

use rand::{RngExt, SeedableRng};
use rayon::prelude::*;

use super::fit::{Machine, Observation, misfit, simulated_seconds};
use crate::model::random::SimRng;

/// Bootstrap resamples of the runs.
pub const REPLICATES: usize = 400;
/// The factors each run is simulated at: ratio [`STEP`] apart from [`SLOWEST`] down to
/// 1/[`SLOWEST`].
const STEP: f64 = 1.02;
/// The widest factor a refit may take (beyond it the refit says "at least").
const SLOWEST: f64 = 1.5;
/// The bootstrap's interval, as its lower and upper quantiles.
const QUANTILES: (f64, f64) = (0.05, 0.95);
/// The seed of the resampling.
const SEED: u64 = 0x5eed_5b8e_ad00_0001;

/// How much slower and faster than fitted the database could have been.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The slowest factor on every time of the machine (at least 1).
    pub(crate) slower: f64,
    /// The fastest factor (at most 1).
    pub(crate) faster: f64,
    /// The bootstrap's interval of the factor.
    pub(crate) bootstrap: (f64, f64),
    /// The factor refitted to each measurement of the repeated loop (first, again), when
    /// there is one.
    pub(crate) repeated: Option<(f64, f64)>,
}

impl Spread {
    /// The spread of `machine` (fitted to `runs`), with `repeated` the indices in `runs` of
    /// one loop's two measurements; `None` with fewer than two runs.
    pub fn fit(
        machine: &Machine,
        runs: &[Observation],
        repeated: Option<(usize, usize)>,
    ) -> Option<Spread> {
        if runs.len() < 2 {
            return None;
        }
        let factors = factors();
        let table = misfit_table(machine, runs, &factors);
        let refit = |weights: &[f64]| refit(&factors, &table, weights);
        let mut boot: Vec<f64> = resamples(runs.len()).iter().map(|w| refit(w)).collect();
        boot.sort_by(f64::total_cmp);
        let bootstrap = (quantile(&boot, QUANTILES.0), quantile(&boot, QUANTILES.1));
        let alone = |index: usize| {
            let mut weights = vec![0.0; runs.len()];
            weights[index] = 1.0;
            refit(&weights)
        };
        let repeated = repeated.map(|(first, again)| (alone(first), alone(again)));
        let (mut faster, mut slower) = bootstrap;
        if let Some((first, again)) = repeated {
            slower = slower.max(first).max(again);
            faster = faster.min(first).min(again);
        }
        Some(Spread {
            slower: slower.max(1.0),
            faster: faster.min(1.0),
            bootstrap,
            repeated,
        })
    }

    /// The spread in words, for `calibration.toml` and the terminal.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "the database could have been {} to {} than fitted: the bootstrap of the closed \
             loops ({REPLICATES} resamples) puts its speed at {}–{}",
            percent_slower(self.faster),
            percent_slower(self.slower),
            factor(self.bootstrap.0),
            factor(self.bootstrap.1),
        );
        if let Some((first, again)) = self.repeated {
            text += &format!(
                ", and the loop measured twice refits to {} and then {}",
                factor(first),
                factor(again)
            );
        }
        text
    }

    /// `[spread]` for `calibration.toml`, each factor to four decimals.
    pub fn toml(&self) -> String {
        /// The file's `[spread]` table, as `scenario::include` reads it.
        #[derive(serde::Serialize)]
        struct SpreadFile {
            spread: SpreadTable,
        }
        #[derive(serde::Serialize)]
        struct SpreadTable {
            slower: f64,
            faster: f64,
        }
        let four = |value: f64| (value * 1e4).round() / 1e4;
        toml::to_string(&SpreadFile {
            spread: SpreadTable {
                slower: four(self.slower),
                faster: four(self.faster),
            },
        })
        .expect("two numbers serialise")
    }
}

/// A factor as its change of every time: `+8% slower`, `3% faster`, `as fitted`.
fn percent_slower(factor: f64) -> String {
    let percent = 100.0 * (factor - 1.0);
    if percent.abs() < 0.5 {
        "as fast".to_owned()
    } else if percent > 0.0 {
        format!("{percent:.0}% slower")
    } else {
        format!("{:.0}% faster", -percent)
    }
}

/// A factor on every time, to two decimals: `×1.08`.
fn factor(value: f64) -> String {
    format!("×{value:.2}")
}

/// [`REPLICATES`] bootstrap resamples of `n` runs, each as how many times it takes each run
/// (from [`SEED`]: the same resamples every time).
fn resamples(n: usize) -> Vec<Vec<f64>> {
    let mut rng = SimRng::seed_from_u64(SEED);
    (0..REPLICATES)
        .map(|_| {
            let mut weights = vec![0.0; n];
            for _ in 0..n {
                weights[rng.random_range(0..n)] += 1.0;
            }
            weights
        })
        .collect()
}

/// The factors each run is simulated at, ascending, 1 among them.
fn factors() -> Vec<f64> {
    let steps = (SLOWEST.ln() / STEP.ln()).round() as i32;
    (-steps..=steps).map(|k| STEP.powi(k)).collect()
}

/// `table[f][r]`: the misfit of run `r` simulated on `machine` with every time scaled by
/// `factors[f]` (simulated in parallel; the same table whatever the thread count).
fn misfit_table(machine: &Machine, runs: &[Observation], factors: &[f64]) -> Vec<Vec<f64>> {
    factors
        .par_iter()
        .map(|&factor| {
            let scaled = machine.scaled(factor);
            runs.iter()
                .map(|run| {
                    let simulated =
                        scaled.simulate(run.rows, run.clients, simulated_seconds(run.tps));
                    misfit(&simulated, run)
                })
                .collect()
        })
        .collect()
}

/// The factor whose runs, weighted by `weights`, fit best: the lowest of `table`'s sums,
/// placed between its neighbours by the parabola through the three.
fn refit(factors: &[f64], table: &[Vec<f64>], weights: &[f64]) -> f64 {
    let sums: Vec<f64> = table
        .iter()
        .map(|row| row.iter().zip(weights).map(|(m, w)| m * w).sum())
        .collect();
    let best = (0..sums.len())
        .min_by(|&a, &b| sums[a].total_cmp(&sums[b]))
        .expect("at least one factor");
    if best == 0 || best == sums.len() - 1 {
        return factors[best];
    }
    let (left, middle, right) = (sums[best - 1], sums[best], sums[best + 1]);
    let curvature = left - 2.0 * middle + right;
    let offset = if curvature > 0.0 {
        (0.5 * (left - right) / curvature).clamp(-0.5, 0.5)
    } else {
        0.0
    };
    factors[best] * STEP.powf(offset)
}

/// The `q` quantile of ascending `sorted` values (the nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests;
