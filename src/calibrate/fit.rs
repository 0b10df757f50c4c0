//! Fitting the machine model to measured runs: the parameters — the row's hold with nobody
//! waiting (h0), its growth per waiter, the CPU of an update on the server's cores, the WAL
//! flush (durable commits) and the time outside the database (log-normal: its median and
//! p99) — are those whose simulated closed loops best reproduce the measured throughput,
//! median and p99 response and WAL syncs per commit of every run. The cores are the fit's
//! too, up to the server's: a load driver on the same machine takes part of them. The
//! simulation is the pipeline itself, with fixed seeds, so the fit is deterministic; the
//! search is Nelder–Mead over the logarithms of the parameters, for each core count.

use std::path::Path;

use rayon::prelude::*;

use crate::model::NoEvents;
use crate::scenario::{Overrides, Scenario};
use crate::sweep;

/// Simulated seconds per run and evaluation (enough for thousands of commits at the slowest).
const SIMULATED_S: f64 = 1.5;
/// Smallest value a fitted time may take, ms (the logarithms need a floor).
const FLOOR_MS: f64 = 1e-5;
/// Evaluations the search may spend.
const MAX_EVALUATIONS: usize = 300;

/// The machine model's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// The row's hold with nobody waiting, beyond CPU and flush, ms.
    pub hold_ms: f64,
    /// The hold's growth per update waiting for the same row, ms.
    pub per_waiter_ms: f64,
    /// CPU of one update, ms.
    pub cpu_ms: f64,
    /// The server's cores (given, not fitted).
    pub cores: u32,
    /// The WAL flush of a durable commit, ms; `None` when commits do not wait for it.
    pub flush_ms: Option<f64>,
    /// Time outside the database per request (round trip, scheduling): its median, ms.
    pub overhead_ms: f64,
    /// Its 99th percentile, ms (above the median: a log-normal).
    pub overhead_p99_ms: f64,
}

/// One measured (or simulated) closed-loop run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Counter rows.
    pub rows: u32,
    /// Clients.
    pub clients: u32,
    /// Updates a second.
    pub tps: f64,
    /// Median response, ms.
    pub p50_ms: f64,
    /// 99th-percentile response, ms.
    pub p99_ms: f64,
    /// WAL syncs per commit, when known.
    pub fsyncs_per_commit: Option<f64>,
}

impl Machine {
    /// The scenario sections of this machine (`[hold]`, `[machine]`, `[wal]`, `[client]`).
    pub fn sections(&self) -> String {
        let mut text = format!(
            "[hold]\ndist = \"constant\"\nms = {:.6}\nper_waiter_ms = {:.6}\n\n\
             [machine]\ncores = {}\n\n[machine.cpu]\ndist = \"constant\"\nms = {:.6}\n\n",
            self.hold_ms, self.per_waiter_ms, self.cores, self.cpu_ms
        );
        if let Some(flush) = self.flush_ms {
            text += &format!("[wal]\nflush_ms = {flush:.6}\ngroup_commit = true\n\n");
        }
        text += &format!(
            "[client.overhead]\ndist = \"lognormal\"\nmedian_ms = {:.6}\np99_ms = {:.6}\n",
            self.overhead_ms,
            self.overhead_p99_ms.max(self.overhead_ms * 1.001)
        );
        text
    }

    /// Simulates a closed loop of `clients` on `rows` rows of this machine.
    pub fn simulate(&self, rows: u32, clients: u32, seconds: f64) -> Observation {
        let text = format!(
            "name = \"fit\"\nseed = 11\nshards = [{rows}]\npolicy = \"random\"\nduration_s = {seconds}\n\
             [arrivals]\nclients = {clients}\nthink_ms = 0\n\n{}",
            self.sections()
        );
        let scenario = Scenario::parse(Path::new("fit.toml"), &text, &Overrides::default())
            .expect("fitted parameters make a valid scenario");
        let (run, _) = sweep::run(&scenario, 0, vec![NoEvents], &sweep::NoProgress)
            .expect("a closed loop runs")
            .remove(0);
        let machine = run.machine.as_ref().expect("the machine sections are on");
        let responses = run
            .closed
            .as_ref()
            .expect("a closed loop")
            .responses
            .summary();
        Observation {
            rows,
            clients,
            tps: run.completed as f64 / seconds,
            p50_ms: responses.p50_ns as f64 / 1e6,
            p99_ms: responses.p99_ns as f64 / 1e6,
            fsyncs_per_commit: machine.fsyncs_per_commit(self.flush_ms.is_some()),
        }
    }

    fn to_point(self) -> Vec<f64> {
        let mut point = vec![
            self.hold_ms.max(FLOOR_MS).ln(),
            self.per_waiter_ms.max(FLOOR_MS).ln(),
            self.cpu_ms.max(FLOOR_MS).ln(),
            self.overhead_ms.max(FLOOR_MS).ln(),
            (self.overhead_p99_ms / self.overhead_ms)
                .max(1.001)
                .ln()
                .ln(),
        ];
        if let Some(flush) = self.flush_ms {
            point.push(flush.max(FLOOR_MS).ln());
        }
        point
    }

    fn with_point(&self, point: &[f64]) -> Machine {
        let ms = |x: f64| x.exp().clamp(FLOOR_MS, 1_000.0);
        let overhead_ms = ms(point[3]);
        // The spread p99 ÷ median is above 1: its log is fitted on a log scale.
        let spread = point[4].exp().exp().clamp(1.001, 100.0);
        Machine {
            hold_ms: ms(point[0]),
            per_waiter_ms: ms(point[1]),
            cpu_ms: ms(point[2]),
            overhead_ms,
            overhead_p99_ms: overhead_ms * spread,
            flush_ms: self.flush_ms.map(|_| ms(point[5])),
            cores: self.cores,
        }
    }
}

/// How far `simulated` is from `measured`: squared log errors of throughput and median
/// response, and of the syncs per commit when both know them.
pub fn misfit(simulated: &Observation, measured: &Observation) -> f64 {
    let log_error = |a: f64, b: f64| (a.max(1e-9) / b.max(1e-9)).ln();
    let mut sum = log_error(simulated.tps, measured.tps).powi(2)
        + 0.5 * log_error(simulated.p50_ms, measured.p50_ms).powi(2)
        + 0.2 * log_error(simulated.p99_ms, measured.p99_ms).powi(2);
    if let (Some(a), Some(b)) = (simulated.fsyncs_per_commit, measured.fsyncs_per_commit) {
        sum += 0.5 * log_error(a + 0.01, b + 0.01).powi(2);
    }
    sum
}

/// A first guess from the measurements: the CPU from the best throughput on many rows, the
/// time outside the database from one client's response, small hold terms.
pub fn first_guess(observations: &[Observation], cores: u32, durable: bool) -> Machine {
    let best = observations.iter().map(|o| o.tps).fold(1.0_f64, f64::max);
    let lone = observations
        .iter()
        .filter(|o| o.clients == 1)
        .map(|o| o.p50_ms)
        .fold(f64::INFINITY, f64::min);
    let lone = if lone.is_finite() { lone } else { 0.5 };
    Machine {
        hold_ms: 0.02,
        per_waiter_ms: 0.002,
        cpu_ms: 1000.0 * f64::from(cores) / best,
        cores,
        flush_ms: durable.then_some(0.1),
        overhead_ms: (lone * 0.6).max(0.01),
        overhead_p99_ms: (lone * 1.5).max(0.02),
    }
}

/// The machine whose simulation best matches `observations`, with `cores` at most the
/// server's (each core count fitted from its own first guess), and its misfit.
pub fn fit_with_cores(observations: &[Observation], cores: u32, durable: bool) -> (Machine, f64) {
    let mut candidates: Vec<u32> =
        std::iter::successors(Some(cores), |&c| (c > 1).then_some(c / 2)).collect();
    candidates.dedup();
    candidates
        .into_iter()
        .map(|cores| {
            let machine = fit(
                observations,
                first_guess(observations, cores, durable),
                &|| {},
            );
            let cost = total_misfit(&machine, observations);
            (machine, cost)
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one core count")
}

/// The summed misfit of `machine` over `observations`.
pub fn total_misfit(machine: &Machine, observations: &[Observation]) -> f64 {
    observations
        .par_iter()
        .map(|measured| {
            let simulated = machine.simulate(measured.rows, measured.clients, SIMULATED_S);
            misfit(&simulated, measured)
        })
        .sum()
}

/// The machine whose simulation best matches `observations`, from `guess` (its cores kept);
/// `progress` hears each evaluation.
pub fn fit(observations: &[Observation], guess: Machine, progress: &(dyn Fn() + Sync)) -> Machine {
    let cost = |point: &[f64]| -> f64 {
        progress();
        total_misfit(&guess.with_point(point), observations)
    };
    // A second, smaller simplex from the first one's best escapes a collapsed simplex.
    let best = nelder_mead(&cost, &guess.to_point(), 0.7, MAX_EVALUATIONS);
    let best = nelder_mead(&cost, &best, 0.15, MAX_EVALUATIONS);
    guess.with_point(&best)
}

/// Minimises `cost` from `start` with the Nelder–Mead simplex (standard coefficients), the
/// first simplex `step` away along each axis; stops after `budget` evaluations or when the
/// simplex's costs agree to 1e-9.
fn nelder_mead(cost: &dyn Fn(&[f64]) -> f64, start: &[f64], step: f64, budget: usize) -> Vec<f64> {
    let n = start.len();
    let mut simplex: Vec<(Vec<f64>, f64)> = (0..=n)
        .map(|i| {
            let mut point = start.to_vec();
            if i > 0 {
                point[i - 1] += step;
            }
            let value = cost(&point);
            (point, value)
        })
        .collect();
    let mut evaluations = n + 1;
    while evaluations < budget {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        if simplex[n].1 - simplex[0].1 < 1e-9 {
            break;
        }
        let centroid: Vec<f64> = (0..n)
            .map(|d| simplex[..n].iter().map(|(p, _)| p[d]).sum::<f64>() / n as f64)
            .collect();
        let along = |t: f64| -> Vec<f64> {
            centroid
                .iter()
                .zip(&simplex[n].0)
                .map(|(c, w)| c + t * (c - w))
                .collect()
        };
        let reflected = along(1.0);
        let reflected_cost = cost(&reflected);
        evaluations += 1;
        if reflected_cost < simplex[0].1 {
            let expanded = along(2.0);
            let expanded_cost = cost(&expanded);
            evaluations += 1;
            simplex[n] = if expanded_cost < reflected_cost {
                (expanded, expanded_cost)
            } else {
                (reflected, reflected_cost)
            };
        } else if reflected_cost < simplex[n - 1].1 {
            simplex[n] = (reflected, reflected_cost);
        } else {
            let contracted = along(if reflected_cost < simplex[n].1 {
                0.5
            } else {
                -0.5
            });
            let contracted_cost = cost(&contracted);
            evaluations += 1;
            if contracted_cost < simplex[n].1.min(reflected_cost) {
                simplex[n] = (contracted, contracted_cost);
            } else {
                let best = simplex[0].0.clone();
                for vertex in simplex.iter_mut().skip(1) {
                    vertex.0 = best
                        .iter()
                        .zip(&vertex.0)
                        .map(|(b, v)| b + 0.5 * (v - b))
                        .collect();
                    vertex.1 = cost(&vertex.0);
                    evaluations += 1;
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex.swap_remove(0).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nelder_mead_finds_a_quadratic_bowls_bottom() {
        let cost = |p: &[f64]| (p[0] - 1.5).powi(2) + 3.0 * (p[1] + 0.5).powi(2);
        let best = nelder_mead(&cost, &[0.0, 0.0], 0.5, 400);
        assert!(
            (best[0] - 1.5).abs() < 1e-3 && (best[1] + 0.5).abs() < 1e-3,
            "{best:?}"
        );
    }
}

#[cfg(test)]
mod recovery {
    use super::*;

    #[test]
    fn the_fit_recovers_the_machine_that_generated_the_data() {
        // The PostgreSQL: a row held ~0.2 ms with nobody waiting (here 0.1 ms of it
        // beyond CPU and flush), 4 µs more per waiter, CPU on 2 cores, an 0.09 ms flush.
        let truth = Machine {
            hold_ms: 0.1,
            per_waiter_ms: 0.004,
            cpu_ms: 0.11,
            cores: 2,
            flush_ms: Some(0.09),
            overhead_ms: 0.3,
            overhead_p99_ms: 1.2,
        };
        let mut observations = Vec::new();
        for rows in [1, 64] {
            for clients in [1, 2, 4, 8, 16, 32] {
                observations.push(truth.simulate(rows, clients, 3.0));
            }
        }
        observations.push(truth.simulate(4, 32, 3.0));
        observations.push(truth.simulate(16, 32, 3.0));
        let guess = first_guess(&observations, 2, true);
        let fitted = fit(&observations, guess, &|| {});
        eprintln!("truth {truth:?}\nfitted {fitted:?}");
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 0.05;
        assert!(close(fitted.cpu_ms, truth.cpu_ms), "{fitted:?}");
        assert!(close(fitted.overhead_ms, truth.overhead_ms), "{fitted:?}");
        assert!(
            (fitted.overhead_p99_ms / 1.2 - 1.0).abs() < 0.1,
            "{fitted:?}"
        );
        assert!(close(fitted.flush_ms.unwrap(), 0.09), "{fitted:?}");
        assert!(close(fitted.hold_ms, truth.hold_ms), "{fitted:?}");
        assert!(
            close(fitted.per_waiter_ms, truth.per_waiter_ms),
            "{fitted:?}"
        );
    }
}
