//! `shardsim validate`: loads the calibration did not fit — closed loops of 32 clients over
//! 1, 2, 4, 16 and 64 rows; open Poisson streams through 64 connections at 50% and 90% of one
//! row's peak over 1, 2, 4 and 8 rows, and a few of them again through 8 connections — measured
//! on the database and simulated with the calibration, side by side: throughput, p50 and p99
//! response, and whether the backlog stayed bounded.
//!
//! A real database stalls now and then (a checkpoint, a descheduled lock holder) and every
//! connection fills up behind the stall; an open stream that keeps up from an empty start but
//! cannot drain the queue a stall or a burst leaves collapses at the first one. So an open
//! stream is predicted by [`crate::stability`]: `metastable` (counted as collapsed) when a
//! trigger tips it. It is measured stable only when every repeat kept up: one that collapsed
//! in any repeat was tipped by something the database does.
//!
//! Four of the closed loops are loads `calibrate` measured too; with its `calibration.csv`
//! beside the calibration, each shows how far the database itself moved since: no prediction
//! can be closer than that.

use std::path::Path;
use std::time::Duration;

use super::backend::{DbFailure, Durability, Target};
use super::load::{self, Load, Measured};
use super::schema::OwnSchema;
use crate::error::InputError;
use crate::stats::WaitSummary;
use crate::units::plural;

/// Clients of the closed-loop points.
pub(crate) const CLOSED_CLIENTS: u32 = 32;
/// Rows of the closed-loop points at [`CLOSED_CLIENTS`] (1, 4, 16 and 64 are loads calibrate
/// measures too) …
const CLOSED_ROWS: [u32; 5] = [1, 2, 4, 16, 64];
/// … and the closed loops `(rows, clients, think ms)` calibrate never measures: other row
/// and client counts, and clients that think between updates (their connections idle), which
/// judge its band where it did not fit.
const HELD_OUT_LOOPS: [(u32, u32, f64); 8] = [
    (2, 8, 0.0),
    (8, 12, 0.0),
    (32, 16, 0.0),
    (1, 48, 0.0),
    (8, 48, 0.0),
    (1, 8, 1.0),
    (4, 16, 2.0),
    (16, 32, 5.0),
];
/// Rows of the open-stream points.
const OPEN_ROWS: [u32; 4] = [1, 2, 4, 8];
/// Offered rates of the open-stream points, as fractions of one row's peak.
const OPEN_LOADS: [f64; 2] = [0.5, 0.9];
/// Connections an open stream may use (its sends queue for one when all are busy).
pub const OPEN_CONNECTIONS: u32 = 64;
/// A small pool: the same streams through this many connections bound the waiters, which a
/// database whose commits get dearer with them recovers from where 64 do not.
pub const SMALL_POOL: u32 = 8;
/// The small pool's points, `(share of one row's peak, rows)`: each also measured through
/// [`OPEN_CONNECTIONS`] (among the open points or the planner's question).
const SMALL_POOL_POINTS: [(f64, u32); 4] = [(0.5, 1), (0.5, 4), (1.3, 2), (1.3, 4)];
/// Points of a validation.
pub const POINTS: usize = CLOSED_ROWS.len()
    + HELD_OUT_LOOPS.len()
    + OPEN_ROWS.len() * OPEN_LOADS.len()
    + SMALL_POOL_POINTS.len();
/// The planner's question: one open stream at this share of one row's peak …
const PLANNER_LOAD: f64 = 1.3;
/// … over these row counts …
pub const PLANNER_ROWS: [u32; 6] = [1, 2, 3, 4, 8, 16];
/// … and the smallest row count whose p99 response meets each of these targets, ms.
pub const PLANNER_TARGETS_MS: [f64; 3] = [2.0, 5.0, 20.0];
/// An open stream whose throughput stays below this share of its rate fell behind.
const KEEPS_UP: f64 = 0.9;
/// The full backlog a metastability check starts from arrives in this first part of the
/// warm-up, seconds.
const BACKLOG_ARRIVES_S: f64 = 0.001;
/// The fewest repeats whose range judges a stable point's p99 as a distribution.
pub const JUDGED_REPEATS: u32 = 5;
/// Seeds of a prediction's replications: the first makes its figures, all of them its p99's
/// interval.
pub const PREDICTION_SEEDS: [u64; 5] = [5, 6, 7, 8, 9];

/// How close a prediction must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Relative throughput error allowed.
    pub tps_rel: f64,
    /// Relative p99 response error allowed (stable points).
    pub p99_rel: f64,
}

/// One point: its load, what was measured and what the calibration predicts. Built by
/// [`point`] from its repeats (its measured figures are their medians) and read through
/// methods of its fields' names.
#[derive(Debug, Clone)]
pub struct Point {
    /// The load.
    load: Load,
    /// Measured throughput, updates a second: the median of the repeats.
    measured_tps: f64,
    /// Measured response times: each figure the median of the repeats'.
    measured: WaitSummary,
    /// Whether the database kept up in every repeat (open streams; closed loops always do).
    measured_stable: bool,
    /// Every measurement of the point, in the order taken.
    repeats: Vec<Repeat>,
    /// Predicted throughput.
    predicted_tps: f64,
    /// Predicted response times.
    predicted: WaitSummary,
    /// The lowest and highest predicted p99 response over [`PREDICTION_SEEDS`]'
    /// replications, ns.
    predicted_p99_range: (u64, u64),
    /// Whether the model keeps up, from an empty start and from a full backlog.
    predicted_stable: bool,
    /// Whether the model keeps up from an empty start but never drains a full backlog (the
    /// predicted figures are then the backlogged run's).
    predicted_metastable: bool,
    /// Whether the model keeps up as fitted but not at the slow end of the calibration's
    /// spread (counted as collapsed: `plan` answers by that end).
    predicted_marginal: bool,
    /// The throughput `calibrate` measured for the same load (a closed loop it ran too), from
    /// the `calibration.csv` beside the calibration.
    calibrated_tps: Option<f64>,
    /// An open stream's predicted hidden capacity, per second ([`Prediction::hidden_per_s`]).
    predicted_hidden_per_s: Option<f64>,
    /// The trigger predicted to tip it, when metastable.
    predicted_tipped_by: Option<crate::stability::Trigger>,
}

impl Point {
    /// A point from its repeats (at least one), its prediction and what `calibrate` measured for
    /// the same load.
    pub fn new(
        load: Load,
        repeats: Vec<Repeat>,
        predicted: Prediction,
        calibrated_tps: Option<f64>,
    ) -> Point {
        let measured_tps = median(repeats.iter().map(|r| r.tps));
        // A repeat that answered nothing sent in its measured seconds (it fell behind from its
        // start) has no response figures to take the median of.
        let answered = || repeats.iter().filter(|r| r.responses.count > 0);
        let figure = |of: fn(&WaitSummary) -> u64| {
            median(answered().map(|r| of(&r.responses) as f64)).round() as u64
        };
        let measured = WaitSummary {
            count: repeats.iter().map(|r| r.responses.count).sum(),
            mean_ns: figure(|s| s.mean_ns),
            p50_ns: figure(|s| s.p50_ns),
            p90_ns: figure(|s| s.p90_ns),
            p99_ns: figure(|s| s.p99_ns),
            p999_ns: figure(|s| s.p999_ns),
            max_ns: repeats
                .iter()
                .map(|r| r.responses.max_ns)
                .max()
                .unwrap_or(0),
        };
        // An open stream that fell behind in any repeat was tipped by something the database
        // does (a stall, a checkpoint): it is not stable there.
        let measured_stable = keeps_up(&load, measured_tps) && repeats.iter().all(|r| r.stable);
        Point {
            load,
            measured_tps,
            measured,
            measured_stable,
            repeats,
            predicted_tps: predicted.tps,
            predicted: predicted.responses,
            predicted_p99_range: predicted.p99_range,
            predicted_stable: predicted.stable,
            predicted_metastable: predicted.metastable,
            predicted_marginal: predicted.marginal,
            calibrated_tps,
            predicted_hidden_per_s: predicted.hidden_per_s,
            predicted_tipped_by: predicted.tipped_by,
        }
    }
}

/// The fields of a point, read-only.
impl Point {
    /// The load.
    pub fn load(&self) -> Load {
        self.load
    }

    /// Measured throughput, updates a second: the median of the repeats.
    pub fn measured_tps(&self) -> f64 {
        self.measured_tps
    }

    /// Measured response times: each figure the median of the repeats'.
    pub fn measured(&self) -> &WaitSummary {
        &self.measured
    }

    /// Whether the database kept up in every repeat (open streams; closed loops always do).
    pub fn measured_stable(&self) -> bool {
        self.measured_stable
    }

    /// Every measurement of the point, in the order taken.
    pub fn repeats(&self) -> &[Repeat] {
        &self.repeats
    }

    /// Predicted throughput.
    pub fn predicted_tps(&self) -> f64 {
        self.predicted_tps
    }

    /// Predicted response times.
    pub fn predicted(&self) -> &WaitSummary {
        &self.predicted
    }

    /// The lowest and highest predicted p99 response over [`PREDICTION_SEEDS`]'
    /// replications, ns.
    pub fn predicted_p99_range(&self) -> (u64, u64) {
        self.predicted_p99_range
    }

    /// Whether the model keeps up, from an empty start and from a full backlog.
    pub fn predicted_stable(&self) -> bool {
        self.predicted_stable
    }

    /// Whether the model keeps up from an empty start but never drains a full backlog (the
    /// predicted figures are then the backlogged run's).
    pub fn predicted_metastable(&self) -> bool {
        self.predicted_metastable
    }

    /// Whether the model keeps up as fitted but not at the slow end of the calibration's
    /// spread (counted as collapsed: `plan` answers by that end).
    pub fn predicted_marginal(&self) -> bool {
        self.predicted_marginal
    }

    /// The throughput `calibrate` measured for the same load (a closed loop it ran too), from
    /// the `calibration.csv` beside the calibration.
    pub fn calibrated_tps(&self) -> Option<f64> {
        self.calibrated_tps
    }

    /// An open stream's predicted hidden capacity: the highest rate at which the model
    /// recovers from every trigger, per second.
    pub fn predicted_hidden_per_s(&self) -> Option<f64> {
        self.predicted_hidden_per_s
    }

    /// The trigger predicted to tip it, when predicted metastable.
    pub fn predicted_tipped_by(&self) -> Option<crate::stability::Trigger> {
        self.predicted_tipped_by
    }
}

/// What the calibration predicts for one load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// Updates a second.
    pub tps: f64,
    /// Response times.
    pub responses: WaitSummary,
    /// The lowest and highest p99 response over [`PREDICTION_SEEDS`]' replications, ns.
    pub p99_range: (u64, u64),
    /// Whether it keeps up (from empty and from a full backlog).
    pub stable: bool,
    /// Whether it keeps up from empty only.
    pub metastable: bool,
    /// Whether it keeps up as fitted but not at the slow end of the calibration's spread
    /// (then not `stable`, with the fitted figures).
    pub marginal: bool,
    /// An open stream's hidden capacity: the highest rate at which it recovers from every
    /// trigger, per second (`None`: not probed).
    pub hidden_per_s: Option<f64>,
    /// The trigger that tips it, when metastable.
    pub tipped_by: Option<crate::stability::Trigger>,
}

impl Point {
    /// A short name: `closed 32 clients, 4 rows` or `open 50% of one row's peak (1,500/s),
    /// 4 rows` (`…, 4 rows, 8 connections` through a pool other than 64).
    pub fn name(&self, peak: f64) -> String {
        match self.load.rate_per_s {
            None if self.load.think.is_zero() => format!(
                "closed {}, {}",
                plural(u64::from(self.load.clients), "client"),
                plural(u64::from(self.load.rows), "row")
            ),
            None => format!(
                "closed {}, {}, think {}",
                plural(u64::from(self.load.clients), "client"),
                plural(u64::from(self.load.rows), "row"),
                crate::units::duration(self.load.think.as_nanos() as u64)
            ),
            Some(rate) => format!(
                "open {:.0}% of one row's peak ({rate:.0}/s), {}{}",
                100.0 * rate / peak,
                plural(u64::from(self.load.rows), "row"),
                if self.load.clients == OPEN_CONNECTIONS {
                    String::new()
                } else {
                    format!(", {}", plural(u64::from(self.load.clients), "connection"))
                }
            ),
        }
    }

    /// Relative throughput error.
    pub fn tps_error(&self) -> f64 {
        self.predicted_tps / self.measured_tps.max(1.0) - 1.0
    }

    /// Relative p99 error, where both are stable.
    pub fn p99_error(&self) -> Option<f64> {
        self.p99_error_against(self.measured.p99_ns)
    }

    /// Relative error of the predicted p99 against `measured_ns`, where both are stable.
    fn p99_error_against(&self, measured_ns: u64) -> Option<f64> {
        (self.measured_stable && self.predicted_stable)
            .then(|| self.predicted.p99_ns as f64 / (measured_ns.max(1) as f64) - 1.0)
    }

    /// An open stream's measured steady p99, ns: the median of its repeats' (each the median
    /// of the p99s of its [`super::load::WINDOWS`] windows, which a stall in one or two does
    /// not move); `None` for a closed loop.
    pub fn measured_steady_p99_ns(&self) -> Option<u64> {
        let steady: Vec<f64> = self
            .repeats
            .iter()
            .filter_map(|r| r.steady_p99_ns.map(|ns| ns as f64))
            .collect();
        (!steady.is_empty()).then(|| median(steady.into_iter()).round() as u64)
    }

    /// Relative error of the predicted p99 against the measured steady p99, where both are
    /// stable: how far the model is from the database's tail without its stalls (the model
    /// has none). A readout beside [`Point::p99_error`], which the tolerance judges.
    pub fn steady_p99_error(&self) -> Option<f64> {
        self.p99_error_against(self.measured_steady_p99_ns()?)
    }

    /// How the predicted stability compares with the measured one.
    pub fn stability_call(&self) -> StabilityCall {
        match (self.predicted_stable, self.measured_stable) {
            (true, false) => StabilityCall::Optimistic,
            (false, true) => StabilityCall::Conservative,
            _ => StabilityCall::Agrees,
        }
    }

    /// Why the point is outside `tolerance`, if it is.
    pub fn miss(&self, tolerance: &Tolerance) -> Option<String> {
        let call = self.stability_call();
        if call != StabilityCall::Agrees {
            return Some(format!(
                "measured {}, predicted {} ({})",
                stability(self.measured_stable),
                self.predicted_stability(),
                call.name()
            ));
        }
        if self.tps_error().abs() > tolerance.tps_rel {
            return Some(format!(
                "throughput off by {:+.0}% (allowed ±{:.0}%)",
                100.0 * self.tps_error(),
                100.0 * tolerance.tps_rel
            ));
        }
        let (low, high) = self.predicted_p99_range;
        let (measured_low, measured_high) = self.measured_p99_widened(tolerance)?;
        if high >= measured_low && low <= measured_high {
            return None;
        }
        let ms = crate::units::duration;
        let (repeats_low, repeats_high) = self.stable_p99_range();
        Some(format!(
            "p99 response off by {:+.0}%: predicted {}–{} over {} replications, measured {}–{} \
             over {} (widened by {:.0}%: {}–{})",
            100.0 * self.p99_error().unwrap_or_default(),
            ms(low),
            ms(high),
            PREDICTION_SEEDS.len(),
            ms(repeats_low),
            ms(repeats_high),
            plural(self.repeats.len().max(1) as u64, "repeat"),
            100.0 * tolerance.p99_rel,
            ms(measured_low),
            ms(measured_high),
        ))
    }

    /// The lowest and highest p99 response of the repeats that kept up, ns (of every repeat
    /// when none did; the median's when there are none).
    pub fn stable_p99_range(&self) -> (u64, u64) {
        let p99s = |stable_only: bool| {
            self.repeats
                .iter()
                .filter(move |r| (r.stable || !stable_only) && r.responses.count > 0)
                .map(|r| r.responses.p99_ns as f64)
        };
        let (low, high) = if p99s(true).next().is_some() {
            range(p99s(true))
        } else if !self.repeats.is_empty() {
            range(p99s(false))
        } else {
            let p99 = self.measured.p99_ns as f64;
            (p99, p99)
        };
        (low as u64, high as u64)
    }

    /// [`Point::stable_p99_range`] widened by `tolerance`'s p99 share each way, where both the
    /// database and the model keep up (`None` otherwise: a collapsed point's p99 is its queue,
    /// and only its stability is judged).
    pub fn measured_p99_widened(&self, tolerance: &Tolerance) -> Option<(u64, u64)> {
        (self.measured_stable && self.predicted_stable).then(|| {
            let (low, high) = self.stable_p99_range();
            (
                (low as f64 * (1.0 - tolerance.p99_rel)) as u64,
                (high as f64 * (1.0 + tolerance.p99_rel)).ceil() as u64,
            )
        })
    }
}

/// A prediction's stability against the measured one. An optimistic call (predicted to keep
/// up, measured collapsed) is the one a capacity planner cannot forgive: it would choose too
/// few rows. A conservative one costs rows, not users' waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StabilityCall {
    /// Both kept up, or both fell behind.
    Agrees,
    /// Predicted to keep up (from empty and from a full backlog), measured collapsed.
    Optimistic,
    /// Predicted collapsed or metastable, measured keeping up.
    Conservative,
}

impl StabilityCall {
    /// Its name in outputs: `agrees`, `optimistic`, `conservative`.
    pub fn name(self) -> &'static str {
        match self {
            StabilityCall::Agrees => "agrees",
            StabilityCall::Optimistic => "optimistic",
            StabilityCall::Conservative => "conservative",
        }
    }
}

/// One measurement of a point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Repeat {
    /// Updates committed a second.
    pub tps: f64,
    /// Response times.
    pub responses: WaitSummary,
    /// Whether the database kept up.
    pub stable: bool,
    /// An open stream's steady p99 response, ns ([`Measured::steady_p99_ns`]).
    pub steady_p99_ns: Option<u64>,
}

impl Point {
    /// The lowest and highest measured throughput over the repeats.
    pub fn tps_range(&self) -> (f64, f64) {
        range(self.repeats.iter().map(|r| r.tps))
    }

    /// The lowest and highest measured p99 response over the repeats, ns.
    pub fn p99_range(&self) -> (u64, u64) {
        let answered = self.repeats.iter().filter(|r| r.responses.count > 0);
        let (low, high) = range(answered.map(|r| r.responses.p99_ns as f64));
        (low as u64, high as u64)
    }

    /// The predicted stability: `stable`, `collapsed`, or `metastable` (keeps up from empty,
    /// never drains a full backlog).
    pub fn predicted_stability(&self) -> &'static str {
        if self.predicted_metastable {
            "metastable"
        } else if self.predicted_marginal {
            "marginal"
        } else {
            stability(self.predicted_stable)
        }
    }

    /// How far the measured throughput moved since `calibrate` measured the same load.
    pub fn drift(&self) -> Option<f64> {
        self.calibrated_tps
            .map(|then| self.measured_tps / then.max(1.0) - 1.0)
    }

    /// How far the fastest of a closed loop's repeats is above its slowest, as a fraction
    /// of the slowest (`None` for an open stream, whose throughput is its rate, or a single
    /// repeat): how well the database repeats its throughput.
    pub fn tps_spread(&self) -> Option<f64> {
        if self.load.rate_per_s.is_some() || self.repeats.len() < 2 {
            return None;
        }
        Some(spread(self.tps_range()))
    }

    /// How far the highest p99 of a stable open stream's repeats is above its lowest, as a
    /// fraction of the lowest (`None` for a closed loop, whose p99 is its queue, a collapsed
    /// stream, or a single repeat): how well the database repeats its tail.
    pub fn p99_spread(&self) -> Option<f64> {
        if self.load.rate_per_s.is_none() || !self.measured_stable || self.repeats.len() < 2 {
            return None;
        }
        let (low, high) = self.p99_range();
        Some(spread((low as f64, high as f64)))
    }

    /// How many repeats fell behind.
    pub fn collapsed_repeats(&self) -> usize {
        self.repeats.iter().filter(|r| !r.stable).count()
    }
}

/// The lowest and highest of `values` (0, 0 for none).
fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .fold(None, |acc: Option<(f64, f64)>, v| {
            Some(acc.map_or((v, v), |(low, high)| (low.min(v), high.max(v))))
        })
        .unwrap_or((0.0, 0.0))
}

/// How far `high` is above `low`, as a fraction of `low` (at least 1).
fn spread((low, high): (f64, f64)) -> f64 {
    high / low.max(1.0) - 1.0
}

/// `stable` or `collapsed`.
pub fn stability(stable: bool) -> &'static str {
    if stable { "stable" } else { "collapsed" }
}

/// A finished validation.
#[derive(Debug, Clone)]
pub struct Validation {
    /// The server as shown.
    pub(crate) server: String,
    /// Its commit durability (`synchronous_commit`, `innodb_flush_log_at_trx_commit`).
    pub(crate) durability: Durability,
    /// One row's peak by the calibration (the open streams' 100%), updates a second.
    pub(crate) one_row_peak: f64,
    /// Every point.
    pub(crate) points: Vec<Point>,
    /// The planner's question: one stream at `PLANNER_LOAD` of one row's peak over
    /// [`PLANNER_ROWS`], measured and predicted.
    pub(crate) planner: Vec<Point>,
    /// The calibration's band, when it has one ([`band`]).
    pub(crate) band: Option<band::CalibrationBand>,
}

/// For one p99 target, the smallest row count of the planner's question that meets it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlannerAnswer {
    /// The target on the p99 response, ms (infinite: keeping up at all).
    pub(crate) target_ms: f64,
    /// The smallest row count whose measured p99 meets it (stable), if any.
    pub(crate) measured: Option<u32>,
    /// The smallest row count whose predicted p99 meets it (stable), if any.
    pub(crate) predicted: Option<u32>,
}

impl PlannerAnswer {
    /// Whether the calibration's answer is never smaller than the database's: the same count
    /// or more, or none of the row counts where the database needed more than one of them;
    /// never "enough" where the database had none. The call a planner cannot forgive is the
    /// other one.
    pub fn never_smaller(&self) -> bool {
        match (self.measured, self.predicted) {
            (Some(measured), Some(predicted)) => predicted >= measured,
            (_, None) => true,
            (None, Some(_)) => false,
        }
    }

    /// Whether the calibration answers as the database does, or one row count larger — never
    /// smaller, and never "enough" where the database had none.
    pub fn agrees(&self) -> bool {
        let next = |rows: u32| PLANNER_ROWS.iter().copied().find(|&r| r > rows);
        match (self.measured, self.predicted) {
            (None, None) => true,
            (Some(measured), Some(predicted)) => {
                predicted == measured || Some(predicted) == next(measured)
            }
            (Some(_), None) | (None, Some(_)) => false,
        }
    }
}

impl Validation {
    /// The planner's question answered for each target: first the smallest row count that
    /// keeps up at all (whatever its p99: `target_ms` infinite), then each of
    /// [`PLANNER_TARGETS_MS`].
    pub fn planner_answers(&self) -> Vec<PlannerAnswer> {
        let smallest = |meets: &dyn Fn(&Point) -> bool| {
            self.planner
                .iter()
                .filter(|p| meets(p))
                .map(|p| p.load.rows)
                .min()
        };
        std::iter::once(f64::INFINITY)
            .chain(PLANNER_TARGETS_MS)
            .map(|target_ms| {
                let target_ns = if target_ms.is_finite() {
                    (target_ms * 1e6) as u64
                } else {
                    u64::MAX
                };
                PlannerAnswer {
                    target_ms,
                    measured: smallest(&|p| p.measured_stable && p.measured.p99_ns <= target_ns),
                    predicted: smallest(&|p| p.predicted_stable && p.predicted.p99_ns <= target_ns),
                }
            })
            .collect()
    }
}

/// Predicts each point once, then measures every point `repeats` times — round by round, so
/// a machine that drifts moves every point alike — and drops its schema.
pub fn validate(
    target: &Target,
    calibration: &Path,
    duration_s: f64,
    repeats: u32,
    progress: &(dyn Fn(&str) + Sync),
) -> anyhow::Result<Validation> {
    // The predictions first: a calibration that cannot be simulated is refused before the
    // database is touched, not after minutes of load.
    let one_row_peak = one_row_peak(calibration)?;
    let mut loads = loads(one_row_peak, duration_s);
    loads.extend(planner_loads(one_row_peak, duration_s));
    // The points' stability over the calibration's spread, and the planner's question at its
    // slow end: as `plan` answers it.
    let slower = spread_slower(calibration);
    let predictions = loads
        .iter()
        .enumerate()
        .map(|(index, load)| {
            progress(&format!("simulating point {}/{}", index + 1, loads.len()));
            if index < POINTS {
                predict_over_spread(calibration, load, slower)
            } else {
                predict(calibration, slower.unwrap_or(1.0), load)
            }
        })
        .collect::<Result<Vec<Prediction>, InputError>>()?;
    let durability = load::durability(target)?;
    let schema = OwnSchema::create(target, 64)?;
    let mut measured: Vec<Vec<Repeat>> = vec![Vec::new(); loads.len()];
    for round in 0..repeats {
        for (index, load) in loads.iter().enumerate() {
            progress(&format!(
                "measuring point {}/{} (round {}/{repeats})",
                index + 1,
                loads.len(),
                round + 1
            ));
            let seed = 101 + index as u64 + 1_000 * u64::from(round);
            measured[index].push(repeat(load, &load::run(target, load, seed)?));
        }
    }
    schema
        .drop_now()
        .map_err(|err: DbFailure| anyhow::anyhow!(err))?;
    let calibrated = calibrated_runs(calibration);
    let mut points = Vec::with_capacity(loads.len());
    for ((load, repeats), prediction) in loads.iter().zip(measured).zip(predictions) {
        let point = Point::new(
            *load,
            repeats,
            prediction,
            calibrated_tps(&calibrated, load),
        );
        points.push(point);
    }
    let planner = points.split_off(POINTS);
    Ok(Validation {
        server: target.shown().to_owned(),
        durability,
        one_row_peak,
        points,
        planner,
        band: band::CalibrationBand::read(calibration),
    })
}

/// What `calibration.toml` warns of (its `warnings`), as `validate` says it before it
/// measures; a file without them, or not TOML, warns of nothing.
pub fn calibration_warnings(calibration_toml: &str) -> Vec<String> {
    let Ok(table) = calibration_toml.parse::<toml::Table>() else {
        return Vec::new();
    };
    let Some(names) = table.get("warnings").and_then(toml::Value::as_array) else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(toml::Value::as_str)
        .filter_map(super::CalibrationWarning::of_key)
        .map(super::CalibrationWarning::said_by_validate)
        .collect()
}

/// The loads of the validation.
fn loads(one_row_peak: f64, duration_s: f64) -> Vec<Load> {
    let load = |rows, clients, rate_per_s| Load {
        rows,
        clients,
        rate_per_s,
        think: Duration::ZERO,
        warmup: Duration::from_secs(1),
        duration: Duration::from_secs_f64(duration_s),
    };
    let closed = CLOSED_ROWS
        .map(|rows| load(rows, CLOSED_CLIENTS, None))
        .into_iter()
        .chain(HELD_OUT_LOOPS.map(|(rows, clients, think_ms)| Load {
            think: Duration::from_secs_f64(think_ms / 1e3),
            ..load(rows, clients, None)
        }));
    let open = OPEN_LOADS.iter().flat_map(|&share| {
        OPEN_ROWS.map(|rows| load(rows, OPEN_CONNECTIONS, Some(share * one_row_peak)))
    });
    let small =
        SMALL_POOL_POINTS.map(|(share, rows)| load(rows, SMALL_POOL, Some(share * one_row_peak)));
    closed.chain(open).chain(small).collect()
}

/// The planner's question's loads: one open stream at `PLANNER_LOAD` of one row's peak over
/// each of [`PLANNER_ROWS`].
fn planner_loads(one_row_peak: f64, duration_s: f64) -> Vec<Load> {
    PLANNER_ROWS
        .iter()
        .map(|&rows| Load {
            rows,
            clients: OPEN_CONNECTIONS,
            rate_per_s: Some(PLANNER_LOAD * one_row_peak),
            think: Duration::ZERO,
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs_f64(duration_s),
        })
        .collect()
}

/// Whether `calibration` is one validate can simulate (its sections valid in a scenario):
/// checked before the database is reached, so that a bad file is bad input whatever the server.
pub fn check_calibration(calibration: &Path) -> Result<(), InputError> {
    one_row_peak(calibration).map(|_| ())
}

/// A closed loop `calibrate` measured: its rows, clients and throughput.
type CalibratedRun = (u32, u32, f64);

/// The closed loops in the `calibration.csv` beside `calibration` (none when there is no such
/// file: the drift is a readout, not a requirement; rows that do not parse are skipped).
fn calibrated_runs(calibration: &Path) -> Vec<CalibratedRun> {
    let path = calibration.with_file_name("calibration.csv");
    let Ok(mut reader) = csv::Reader::from_path(&path) else {
        return Vec::new();
    };
    let Ok(header) = reader.headers().cloned() else {
        return Vec::new();
    };
    let column = |name: &str| header.iter().position(|h| h == name);
    let (Some(rows), Some(clients), Some(offered), Some(tps)) = (
        column("rows"),
        column("clients_or_connections"),
        column("offered_per_s"),
        column("measured_tps"),
    ) else {
        return Vec::new();
    };
    reader
        .records()
        .filter_map(Result::ok)
        .filter(|record| record.get(offered).is_some_and(str::is_empty))
        .filter_map(|record| {
            Some((
                record.get(rows)?.parse().ok()?,
                record.get(clients)?.parse().ok()?,
                record.get(tps)?.parse().ok()?,
            ))
        })
        .collect()
}

/// What `calibrate` measured for `load`, if it ran the same closed loop (the mean of its
/// runs of it).
fn calibrated_tps(runs: &[CalibratedRun], load: &Load) -> Option<f64> {
    if load.rate_per_s.is_some() || !load.think.is_zero() {
        return None;
    }
    let same: Vec<f64> = runs
        .iter()
        .filter(|&&(rows, clients, _)| rows == load.rows && clients == load.clients)
        .map(|&(_, _, tps)| tps)
        .collect();
    (!same.is_empty()).then(|| same.iter().sum::<f64>() / same.len() as f64)
}

/// One measurement of `load`.
fn repeat(load: &Load, measured: &Measured) -> Repeat {
    Repeat {
        tps: measured.tps,
        responses: measured.responses.summary(),
        stable: keeps_up(load, measured.tps),
        steady_p99_ns: measured.steady_p99_ns,
    }
}

/// Whether `tps` keeps up with `load`: a closed loop always does, an open stream when it
/// commits at least [`KEEPS_UP`] of its rate.
fn keeps_up(load: &Load, tps: f64) -> bool {
    load.rate_per_s.is_none_or(|rate| tps >= KEEPS_UP * rate)
}

/// The median of `values` (the mean of the middle two for an even count; 0 for none).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    crate::stats::median(values).unwrap_or(0.0)
}

impl Validation {
    /// The loads `calibrate` measured too, with how far each moved since, and the largest
    /// move (`None` without them).
    pub fn drifts(&self) -> Option<(Vec<(&Point, f64)>, f64)> {
        let drifts: Vec<(&Point, f64)> = self
            .points
            .iter()
            .filter_map(|point| point.drift().map(|drift| (point, drift)))
            .collect();
        let largest = drifts.iter().map(|(_, d)| d.abs()).reduce(f64::max)?;
        Some((drifts, largest))
    }

    /// The point whose repeats spread the most by `spread` ([`Point::tps_spread`] or
    /// [`Point::p99_spread`]), with its spread; `None` when no point has one.
    pub fn widest(&self, spread: impl Fn(&Point) -> Option<f64>) -> Option<(&Point, f64)> {
        self.points
            .iter()
            .filter_map(|point| spread(point).map(|spread| (point, spread)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Of the open streams both measured and predicted stable: how many the predicted p99 is
    /// within `tolerance` of their measured steady p99, how many of their whole p99, and how
    /// many there are (`None` without any).
    pub fn steady_p99_within(&self, tolerance: &Tolerance) -> Option<(usize, usize, usize)> {
        let within = |error: Option<f64>| error.is_some_and(|e| e.abs() <= tolerance.p99_rel);
        let judged: Vec<&Point> = self
            .points
            .iter()
            .filter(|point| point.steady_p99_error().is_some())
            .collect();
        (!judged.is_empty()).then(|| {
            (
                judged
                    .iter()
                    .filter(|p| within(p.steady_p99_error()))
                    .count(),
                judged.iter().filter(|p| within(p.p99_error())).count(),
                judged.len(),
            )
        })
    }

    /// Of the open streams both measured and predicted stable: how many have a predicted p99
    /// interval that overlaps their measured repeats' range widened by `tolerance`, and how
    /// many there are (`None` without any).
    pub fn p99_overlaps(&self, tolerance: &Tolerance) -> Option<(usize, usize)> {
        let judged: Vec<&Point> = self
            .points
            .iter()
            .filter(|p| p.load.rate_per_s.is_some() && p.measured_p99_widened(tolerance).is_some())
            .collect();
        (!judged.is_empty()).then(|| {
            let overlapping = judged
                .iter()
                .filter(|p| {
                    p.miss(tolerance)
                        .is_none_or(|why| !why.starts_with("p99 response"))
                })
                .count();
            (overlapping, judged.len())
        })
    }

    /// The points predicted to keep up that the database did not.
    pub fn optimistic_calls(&self) -> usize {
        self.points
            .iter()
            .filter(|p| p.stability_call() == StabilityCall::Optimistic)
            .count()
    }

    /// The points outside `tolerance`, named, with why. A closed loop judged by the
    /// calibration's band ([`Validation::judged_by_band`]) misses only when it is measured
    /// entirely below it (optimistic); its band's coverage is judged over all of them
    /// ([`Validation::band_verdict`]).
    pub fn misses(&self, tolerance: &Tolerance) -> Vec<String> {
        self.points
            .iter()
            .filter_map(|p| {
                let why = match self.judged_by_band(p) {
                    Some(band) => p.band_miss(band),
                    None => p.miss(tolerance),
                };
                why.map(|why| format!("{}: {why}", p.name(self.one_row_peak)))
            })
            .collect()
    }
}

pub mod band;
mod predict;

use predict::{one_row_peak, predict, predict_over_spread, spread_slower};

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;
