//! The calibration's band: how much slower or faster than fitted the database may be, at a
//! stated coverage, from the fit's own errors on loops it did not see and the database's own
//! run-to-run noise.
//!
//! A fit judged on the loops it was fitted to looks better than it is: every loop pulled the
//! parameters towards itself. So each closed loop is held out in turn and predicted by the
//! machine refitted to the others — one Gauss–Newton step from the full fit, all of them from
//! one Jacobian of the loops' simulated figures (the one-step jackknife) — and every
//! measurement of the loop (calibrate measures each twice, apart in time) is set against that
//! held-out prediction. The band's ends are the quantiles of those log ratios at the nominal
//! coverage, with the finite-sample ranks of split conformal prediction: with 30 measurements
//! a 90% band runs from the lowest to the highest. It is wide where the model misses loops it
//! did not see or the database does not repeat itself, and narrow where neither happens.
//!
//! The band is carried as the machine's speed: every time of it (hold, CPU, flush,
//! wake-ups, time outside the database) scaled by one factor, which moves a closed loop's
//! throughput by exactly its inverse. `run` and `plan` simulate both ends; `plan` answers by
//! the slower. The fitted machine always lies inside the band.

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use super::fit::{Machine, Observation, simulated_seconds};

/// The share of a loop's measurements the band is meant to hold by default (`--coverage`).
pub const DEFAULT_COVERAGE: f64 = 0.9;
/// The least and the most coverage a band may be asked for.
pub use crate::scenario::include::COVERAGE_RANGE;
/// The step of the Jacobian's central differences on the fit's log coordinates: 5% on each
/// time, wide enough that the simulated figures (counts and quantiles of a fixed-seed run)
/// move by many of their own steps.
const STEP: f64 = 0.05;
/// The Levenberg–Marquardt damping of the normal equations, as a share of each diagonal
/// entry (plus a floor for a coordinate no loop moves): a time the loops hardly see is not
/// moved far by leaving one of them out.
const DAMPING: f64 = 0.01;
/// The most a refit may move any coordinate from the full fit (a trust region on the log of
/// each time): a factor of 2. Where the loops left do not determine a time — fewer loops than
/// coordinates — the damped step along it is bounded by this rather than by the damping.
const TRUST: f64 = std::f64::consts::LN_2;
/// The band's widest factors, as a calibration's `[spread]` may hold them.
const WIDEST: f64 = 10.0;
/// The weights of a loop's figures, as the fit's misfit weighs them (throughput, median,
/// p99, syncs per commit), square-rooted onto the residuals.
const WEIGHTS: [f64; 4] = [3.0, 0.5, 0.2, 0.5];

/// One closed loop as calibrate measured it.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredLoop {
    /// Each measurement of it, in the order made.
    pub(crate) measurements: Vec<Observation>,
}

impl MeasuredLoop {
    /// What the fit takes for the loop: the geometric mean of its measurements' throughput,
    /// median and p99, and the mean of their syncs per commit.
    pub fn fitted_to(&self) -> Observation {
        let first = self.measurements[0];
        let n = self.measurements.len() as f64;
        let geometric = |of: fn(&Observation) -> f64| {
            (self
                .measurements
                .iter()
                .map(|m| of(m).max(1e-9).ln())
                .sum::<f64>()
                / n)
                .exp()
        };
        let syncs: Option<Vec<f64>> = self
            .measurements
            .iter()
            .map(|m| m.fsyncs_per_commit)
            .collect();
        Observation {
            rows: first.rows,
            clients: first.clients,
            tps: geometric(|m| m.tps),
            p50_ms: geometric(|m| m.p50_ms),
            p99_ms: geometric(|m| m.p99_ms),
            fsyncs_per_commit: syncs.map(|s| s.iter().sum::<f64>() / n),
        }
    }

    /// How far its first two measurements' throughputs are apart, as |log| of their ratio
    /// (`None` when measured once).
    pub fn noise(&self) -> Option<f64> {
        match self.measurements.as_slice() {
            [first, second, ..] => Some((second.tps.max(1e-9) / first.tps.max(1e-9)).ln().abs()),
            _ => None,
        }
    }
}

/// How much slower and faster than fitted the database may be, at a stated coverage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The slowest factor on every time of the machine (at least 1).
    pub(crate) slower: f64,
    /// The fastest factor (at most 1).
    pub(crate) faster: f64,
    /// The share of measurements the band is meant to hold.
    pub(crate) coverage: f64,
    /// The measured throughput over its held-out prediction at the band's low and high end.
    pub(crate) held_out: (f64, f64),
    /// The measurements the band was drawn from.
    pub(crate) measurements: usize,
    /// The median of the loops' run-to-run noise (|log| of the ratio of a loop's two
    /// measurements), when the loops were measured twice.
    pub(crate) noise: Option<f64>,
}

/// A band with each loop's held-out prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldOut {
    /// The band.
    pub(crate) spread: Spread,
    /// Each loop's throughput as the machine refitted without it predicts it, updates a second.
    pub(crate) predicted_tps: Vec<f64>,
}

impl Spread {
    /// The band of `machine` (fitted to `loops`) at `coverage`; `None` with fewer than three
    /// loops (one held out leaves too few to refit).
    pub fn fit(machine: &Machine, loops: &[MeasuredLoop], coverage: f64) -> Option<HeldOut> {
        if loops.len() < 3 {
            return None;
        }
        let predicted_tps = held_out_throughputs(machine, loops);
        let mut ratios: Vec<f64> = loops
            .iter()
            .zip(&predicted_tps)
            .flat_map(|(one, &predicted)| {
                one.measurements
                    .iter()
                    .map(move |m| (m.tps.max(1e-9) / predicted.max(1e-9)).ln())
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        let (low, high) = conformal_ends(&ratios, coverage);
        let noise = crate::stats::median(loops.iter().filter_map(MeasuredLoop::noise));
        let spread = Spread {
            slower: (-low).exp().clamp(1.0, WIDEST),
            faster: (-high).exp().clamp(1.0 / WIDEST, 1.0),
            coverage,
            held_out: (low.exp(), high.exp()),
            measurements: ratios.len(),
            noise,
        };
        Some(HeldOut {
            spread,
            predicted_tps,
        })
    }

    /// The band in words, for `calibration.toml` and the terminal.
    pub fn describe(&self) -> String {
        let noise = self.noise.map_or(String::new(), |noise| {
            format!(
                "; a loop's two measurements moved {:.0}% apart (the median)",
                100.0 * noise.exp_m1()
            )
        });
        format!(
            "at {:.0}% coverage the database may be {} to {} than fitted: each closed loop, held \
             out of the fit, measured {}–{} of its prediction ({} measurements){noise}",
            100.0 * self.coverage,
            percent_slower(self.faster),
            percent_slower(self.slower),
            factor(self.held_out.0),
            factor(self.held_out.1),
            self.measurements,
        )
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
            coverage: f64,
        }
        let four = |value: f64| (value * 1e4).round() / 1e4;
        toml::to_string(&SpreadFile {
            spread: SpreadTable {
                slower: four(self.slower),
                faster: four(self.faster),
                coverage: four(self.coverage),
            },
        })
        .expect("three numbers serialise")
    }
}

/// The low and high ends of a `coverage` band over ascending `sorted` values, by the ranks of
/// split conformal prediction (⌊α/2·(n+1)⌋ and ⌈(1−α/2)·(n+1)⌉, α = 1 − coverage), clamped to
/// the lowest and highest value when there are too few for them.
pub fn conformal_ends(sorted: &[f64], coverage: f64) -> (f64, f64) {
    let n = sorted.len();
    let tail = (1.0 - coverage) / 2.0;
    // A rank a rounding below a whole number is that number.
    let low = ((tail * (n + 1) as f64 + 1e-9).floor() as usize).clamp(1, n);
    let high = (((1.0 - tail) * (n + 1) as f64 - 1e-9).ceil() as usize).clamp(1, n);
    (sorted[low - 1], sorted[high - 1])
}

/// Each loop's throughput as predicted by `machine` refitted without it: the full fit's
/// figures linearised in its coordinates, and the damped Gauss–Newton step of the loops
/// without it set against the step of all of them (what leaving the loop out moves).
fn held_out_throughputs(machine: &Machine, loops: &[MeasuredLoop]) -> Vec<f64> {
    let split = machine.flush_ms.is_some() && machine.flush_cpu_ms > 0.0;
    let start = machine.to_point(split);
    let targets: Vec<Observation> = loops.iter().map(MeasuredLoop::fitted_to).collect();
    // Which figures each loop has: the syncs only where both sides know them.
    let simulated = simulate_all(machine, &targets);
    let kept: Vec<usize> = targets
        .iter()
        .zip(&simulated)
        .map(|(t, s)| {
            if t.fsyncs_per_commit.is_some() && s.fsyncs_per_commit.is_some() {
                4
            } else {
                3
            }
        })
        .collect();
    let figures = |observations: &[Observation]| -> Vec<f64> {
        observations
            .iter()
            .zip(&kept)
            .flat_map(|(o, &count)| weighted_logs(o).into_iter().take(count))
            .collect()
    };
    let at = figures(&simulated);
    let measured = figures(&targets);
    let moved: Vec<Vec<f64>> = (0..start.len() * 2)
        .into_par_iter()
        .map(|k| {
            let mut point = start.clone();
            point[k / 2] += if k % 2 == 0 { STEP } else { -STEP };
            figures(&simulate_all(&machine.with_point(&point, split), &targets))
        })
        .collect();
    let jacobian = DMatrix::from_fn(at.len(), start.len(), |row, column| {
        (moved[2 * column][row] - moved[2 * column + 1][row]) / (2.0 * STEP)
    });
    let residual = DVector::from_iterator(at.len(), at.iter().zip(&measured).map(|(s, m)| s - m));
    let normal = jacobian.transpose() * &jacobian;
    let gradient = jacobian.transpose() * &residual;
    let step = |normal: DMatrix<f64>, gradient: DVector<f64>| -> DVector<f64> {
        let mut damped = normal;
        for i in 0..damped.nrows() {
            damped[(i, i)] += DAMPING * damped[(i, i)] + 1e-9;
        }
        damped
            .cholesky()
            .map_or_else(|| DVector::zeros(gradient.len()), |c| -c.solve(&gradient))
    };
    let full = step(normal.clone(), gradient.clone());
    let mut first_row = 0;
    loops
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let rows = first_row..first_row + kept[i];
            first_row += kept[i];
            let block = jacobian.rows(rows.start, rows.len());
            let block_residual = residual.rows(rows.start, rows.len());
            let without = step(
                &normal - block.transpose() * block,
                &gradient - block.transpose() * block_residual,
            );
            let mut moved = &without - &full;
            let largest = moved.amax();
            if largest > TRUST {
                moved *= TRUST / largest;
            }
            // The throughput's row is the loop's first, weighted by √(its weight).
            let moved_log = (block.row(0) * moved)[(0, 0)] / WEIGHTS[0].sqrt();
            simulated[i].tps * moved_log.exp()
        })
        .collect()
}

/// Each of `targets`' loops simulated on `machine` (in parallel, in order).
fn simulate_all(machine: &Machine, targets: &[Observation]) -> Vec<Observation> {
    targets
        .par_iter()
        .map(|t| machine.simulate(t.rows, t.clients, simulated_seconds(t.tps)))
        .collect()
}

/// An observation's figures as the misfit weighs them: the logs of its throughput, median,
/// p99 and syncs per commit (0 when unknown), each times the square root of its weight.
fn weighted_logs(o: &Observation) -> [f64; 4] {
    let values = [
        o.tps,
        o.p50_ms,
        o.p99_ms,
        o.fsyncs_per_commit.unwrap_or(0.0) + 0.01,
    ];
    std::array::from_fn(|i| WEIGHTS[i].sqrt() * values[i].max(1e-9).ln())
}

/// A factor as its change of every time: `+8% slower`, `3% faster`, `as fast`.
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

/// A factor to two decimals: `×1.08`.
fn factor(value: f64) -> String {
    format!("×{value:.2}")
}

#[cfg(test)]
mod tests;
