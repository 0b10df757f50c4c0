//! Calibrations for the tests of calibrate and of what renders it.

use std::time::Duration;

use super::*;
use crate::model::machine::GrantOrder;

pub(crate) fn closed_run(rows: u32, clients: u32, tps: f64) -> CalibrationRun {
    CalibrationRun::measured_and_fitted(
        Load {
            rows,
            clients,
            rate_per_s: None,
            think: Duration::ZERO,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(1),
        },
        tps,
    )
}

pub(crate) fn measured_twice(first: f64, again: f64) -> Calibration {
    Calibration {
        server: "host=/tmp".into(),
        durability: Durability::postgres_off(),
        machine: fit::first_guess(&[], 1, false, GrantOrder::Fifo, 0.01),
        runs: vec![closed_run(1, 32, 20_000.0), closed_run(64, 32, first)],
        load_notice: None,
        repeats: vec![closed_run(64, 32, again)],
        full_pool: None,
        stalls: None,
        spread: None,
        checkpoints: None,
        watched_s: None,
    }
}

/// An open stream over 64 rows at `rate`, 98 of its 100 responses at `p50_us` and two
/// at `p99_us`.
pub(crate) fn open_run(rate: f64, p50_us: u64, p99_us: u64) -> CalibrationRun {
    let load = Load {
        rows: 64,
        clients: 64,
        rate_per_s: Some(rate),
        think: Duration::ZERO,
        warmup: Duration::ZERO,
        duration: Duration::from_secs(1),
    };
    let mut run = CalibrationRun::measured_and_fitted(load, rate);
    for response_us in [p50_us; 98].into_iter().chain([p99_us; 2]) {
        run.measured.responses.record(response_us * 1_000);
    }
    run
}

/// A calibration whose lightest open stream (1,258/s, median 400 µs) measured a p99 of
/// `lightest_p99_us`; the heaviest stream's long tail is its own queue.
pub(crate) fn lightest_stream_at(lightest_p99_us: u64) -> Calibration {
    Calibration {
        runs: vec![
            closed_run(64, 32, 40_000.0),
            open_run(7_616.0, 840, 130_000),
            open_run(1_258.0, 400, lightest_p99_us),
            open_run(3_095.0, 460, 2_000),
        ],
        ..measured_twice(40_000.0, 41_000.0)
    }
}
