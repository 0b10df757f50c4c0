//! Points, predictions and validations for the tests of validate and of what renders it.

use std::time::Duration;

use super::*;

pub(crate) fn measured_repeat(tps: f64, p99_ms: u64, stable: bool) -> Repeat {
    Repeat {
        tps,
        responses: WaitSummary {
            count: 100,
            p50_ns: p99_ms * 100_000,
            p99_ns: p99_ms * 1_000_000,
            max_ns: p99_ms * 2_000_000,
            ..WaitSummary::default()
        },
        stable,
        steady_p99_ns: None,
    }
}

pub(crate) fn kept_up(tps: f64) -> Prediction {
    Prediction {
        tps,
        responses: WaitSummary::default(),
        p99_range: (0, 0),
        stable: true,
        metastable: false,
        marginal: false,
        hidden_per_s: None,
        tipped_by: None,
    }
}

/// `validate`'s default tolerance.
pub(crate) const TOLERANCE: Tolerance = Tolerance {
    tps_rel: 0.15,
    p99_rel: 0.25,
};

/// A validation of `points` with one row's peak at 1,000/s.
pub(crate) fn validation_of(points: Vec<Point>) -> Validation {
    Validation {
        server: "host=/tmp".into(),
        durability: Durability::postgres_on(),
        one_row_peak: 1_000.0,
        points,
        planner: Vec::new(),
        band: None,
    }
}

pub(crate) fn open_load() -> Load {
    Load {
        rows: 4,
        clients: OPEN_CONNECTIONS,
        rate_per_s: Some(1_000.0),
        think: Duration::ZERO,
        warmup: Duration::from_secs(1),
        duration: Duration::from_secs(5),
    }
}

pub(crate) fn predicted_at(tps: f64, p99_ms: u64, stable: bool) -> Prediction {
    Prediction {
        tps,
        responses: WaitSummary {
            p99_ns: p99_ms * 1_000_000,
            ..WaitSummary::default()
        },
        p99_range: (p99_ms * 1_000_000, p99_ms * 1_000_000),
        stable,
        metastable: false,
        marginal: false,
        hidden_per_s: None,
        tipped_by: None,
    }
}

/// The values of `validation.csv`'s column `name`, row by row.
pub(crate) fn column(csv: &[u8], name: &str) -> Vec<String> {
    let mut reader = csv::Reader::from_reader(csv);
    let index = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    reader
        .records()
        .map(|record| record.unwrap()[index].to_owned())
        .collect()
}

/// A point of `repeats` and `predicted` that `calibrate` did not measure.
pub(crate) fn measured_point(load: Load, repeats: Vec<Repeat>, predicted: Prediction) -> Point {
    Point::new(load, repeats, predicted, None)
}

/// `point` as if its median repeat had fallen behind.
pub(crate) fn collapsed(mut point: Point) -> Point {
    point.measured_stable = false;
    point
}

/// `point` as measured before repeats had a steady p99.
pub(crate) fn without_steady_p99(mut point: Point) -> Point {
    for repeat in &mut point.repeats {
        repeat.steady_p99_ns = None;
    }
    point
}
