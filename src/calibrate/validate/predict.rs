//! What a calibration predicts for a load: simulated with its sections, with several seeds,
//! from empty; an open stream that keeps up is probed for metastability
//! ([`crate::stability`]), and one a trigger tips is predicted from a full backlog.

use std::path::{Path, PathBuf};

use super::{BACKLOG_ARRIVES_S, Load, PREDICTION_SEEDS, Prediction, keeps_up, range};
use crate::error::InputError;
use crate::model::{NoEvents, Policy};
use crate::scenario::file::{ArrivalsTable, PolicyList, PoolTable, ProfileSegment};
use crate::scenario::{Overrides, Scenario, ScenarioFile};
use crate::stability::{self, Stability, StabilitySettings};
use crate::stats::WaitSummary;
use crate::sweep;

/// The calibration applied to a scenario, every time of it `scale` times as fitted.
fn scenario(calibration: &Path, scale: f64, file: &ScenarioFile) -> Result<Scenario, InputError> {
    let overrides = Overrides {
        calibration: Some(PathBuf::from(calibration)),
        calibration_scale: Some(scale),
        ..Overrides::default()
    };
    Scenario::from_values(Path::new("validate.toml"), file, &overrides)
}

/// The slow end of the calibration's `[spread]`, when it has one.
pub(super) fn spread_slower(calibration: &Path) -> Option<f64> {
    crate::scenario::include::spread_of(calibration).map(|spread| spread.slower)
}

/// What the calibration predicts for `load` as fitted; an open stream that keeps up is
/// simulated again at the spread's slow end (`slower`), and one that falls behind there is
/// predicted `marginal` (collapsed), with the fitted figures: what `plan` answers by.
pub(super) fn predict_over_spread(
    calibration: &Path,
    load: &Load,
    slower: Option<f64>,
) -> Result<Prediction, InputError> {
    let fitted = predict(calibration, 1.0, load)?;
    let Some(slower) = slower.filter(|_| load.rate_per_s.is_some() && fitted.stable) else {
        return Ok(fitted);
    };
    let slow = predict(calibration, slower, load)?;
    Ok(if slow.stable {
        fitted
    } else {
        Prediction {
            stable: false,
            marginal: true,
            ..fitted
        }
    })
}

/// What the calibration predicts for `load`, every time of it `scale` times as fitted. An
/// open stream that keeps up from an empty start is probed for metastability: when a stall or
/// a burst that fills its pool tips it, it is `metastable` and its prediction is a run from
/// a full backlog (every connection busy).
pub(super) fn predict(
    calibration: &Path,
    scale: f64,
    load: &Load,
) -> Result<Prediction, InputError> {
    let from_empty = replicated(calibration, scale, load, false)?;
    let Some(rate) = load.rate_per_s else {
        return Ok(from_empty);
    };
    let stream = scenario(
        calibration,
        scale,
        &load_scenario(load, false, PREDICTION_SEEDS[0]),
    )?;
    let probed = stability::assess(
        &stream,
        Policy::Random,
        load.rows,
        rate,
        !from_empty.stable,
        &StabilitySettings::default(),
    )?;
    let Some(probed) = probed else {
        return Ok(from_empty);
    };
    let from_empty = Prediction {
        hidden_per_s: Some(probed.hidden_per_s()),
        tipped_by: probed.tipped_by(),
        ..from_empty
    };
    Ok(match probed.stability() {
        Stability::Stable => from_empty,
        Stability::Collapsed => Prediction {
            stable: false,
            ..from_empty
        },
        Stability::Metastable => Prediction {
            stable: false,
            metastable: true,
            hidden_per_s: from_empty.hidden_per_s,
            tipped_by: from_empty.tipped_by,
            ..replicated(calibration, scale, load, true)?
        },
    })
}

/// [`simulate`] with each of [`PREDICTION_SEEDS`]: the first seed's prediction with the
/// range of every seed's p99.
fn replicated(
    calibration: &Path,
    scale: f64,
    load: &Load,
    backlogged: bool,
) -> Result<Prediction, InputError> {
    let runs = PREDICTION_SEEDS
        .iter()
        .map(|&seed| simulate(calibration, scale, load, backlogged, seed))
        .collect::<Result<Vec<Prediction>, InputError>>()?;
    let (low, high) = range(runs.iter().map(|run| run.responses.p99_ns as f64));
    Ok(Prediction {
        p99_range: (low as u64, high as u64),
        ..runs[0]
    })
}

/// Simulates `load` with the calibration; an open stream starts with a full backlog
/// (`backlogged`: as many sends as it has connections in the first millisecond) or empty.
fn simulate(
    calibration: &Path,
    scale: f64,
    load: &Load,
    backlogged: bool,
    seed: u64,
) -> Result<Prediction, InputError> {
    let scenario = scenario(calibration, scale, &load_scenario(load, backlogged, seed))?;
    let (run, _) = sweep::run(&scenario, 0, vec![NoEvents], &sweep::NoProgress)?.remove(0);
    let tps = run.completed as f64 / load.duration.as_secs_f64();
    let responses = match (&run.closed, &run.machine) {
        (Some(closed), _) => closed.responses.summary(),
        (None, Some(machine)) => machine
            .responses
            .as_ref()
            .map(|r| r.summary())
            .unwrap_or_default(),
        _ => WaitSummary::default(),
    };
    Ok(Prediction {
        tps,
        responses,
        p99_range: (responses.p99_ns, responses.p99_ns),
        stable: keeps_up(load, tps),
        metastable: false,
        marginal: false,
        hidden_per_s: None,
        tipped_by: None,
    })
}

/// The scenario of `load` with `seed` (see [`simulate`]): a closed loop of its clients with its
/// constant think time, or its open stream through a pool of its connections.
fn load_scenario(load: &Load, backlogged: bool, seed: u64) -> ScenarioFile {
    let seconds = (load.warmup + load.duration).as_secs_f64();
    let arrivals = match load.rate_per_s {
        None => ArrivalsTable {
            clients: Some(load.clients),
            think_ms: Some(load.think.as_secs_f64() * 1e3),
            ..ArrivalsTable::default()
        },
        Some(rate) if backlogged => ArrivalsTable {
            profile: Some(vec![
                ProfileSegment {
                    seconds: BACKLOG_ARRIVES_S,
                    rate_per_s: rate + f64::from(load.clients) / BACKLOG_ARRIVES_S,
                },
                ProfileSegment {
                    seconds: seconds - BACKLOG_ARRIVES_S,
                    rate_per_s: rate,
                },
            ]),
            ..ArrivalsTable::default()
        },
        Some(rate) => ArrivalsTable {
            rate_per_s: Some(rate),
            ..ArrivalsTable::default()
        },
    };
    ScenarioFile {
        name: Some("validate".into()),
        seed: Some(seed),
        shards: Some(vec![load.rows]),
        policy: Some(PolicyList(vec![Policy::Random])),
        duration_s: Some(seconds),
        warmup_s: Some(load.warmup.as_secs_f64()),
        arrivals: Some(arrivals),
        pool: load.rate_per_s.map(|_| PoolTable {
            size: Some(load.clients),
        }),
        ..ScenarioFile::default()
    }
}

/// One row's peak by the calibration: updates back to back, each taken by a woken waiter.
pub(super) fn one_row_peak(calibration: &Path) -> Result<f64, InputError> {
    let file = ScenarioFile {
        shards: Some(vec![1]),
        duration_s: Some(1.0),
        arrivals: Some(ArrivalsTable {
            rate_per_s: Some(1.0),
            ..ArrivalsTable::default()
        }),
        ..ScenarioFile::default()
    };
    let scenario = scenario(calibration, 1.0, &file)?;
    Ok(1e9 / scenario.saturated_row_hold_ns().max(1.0))
}
