//! The rules every scenario field is checked by: the limits, number ranges, the hold
//! distributions, and the one-line error of a field. Each section's resolver uses them.

use super::file::HoldTable;
use crate::model::HoldDist;
use crate::model::hold::MAX_HOLD_NS;
use crate::time::SimTime;
use crate::time::ms_f64_to_ns;

/// Longest simulated period, in seconds (about 115 days).
pub const MAX_DURATION_S: f64 = 1e7;
/// Shortest simulated period, in nanoseconds.
pub const MIN_HORIZON_NS: SimTime = 1_000;
/// Longest hold parameter, in milliseconds (one hour).
pub const MAX_HOLD_MS: f64 = 3.6e6;
/// Largest ratio of a log-normal hold's p99 to its median: beyond it the mean is dominated
/// by draws so rare that no simulation of sane length sees them.
pub const MAX_LOGNORMAL_SPREAD: f64 = 1000.0;
/// Highest arrival rate, per second.
pub const MAX_RATE_PER_S: f64 = 1e9;
/// Most rows per key.
pub const MAX_SHARDS: u32 = 1 << 20;
/// Most synthetic keys.
pub const MAX_KEYS: u32 = 10_000_000;
/// Most rows one sweep may create: keys × the sum of the shard counts.
pub const MAX_TOTAL_ROWS: u64 = 1 << 27;
/// Most time-series windows.
pub const MAX_WINDOWS: u64 = 10_000_000;
/// Hottest keys listed in `keys.csv` when `[keys] report_top` is not set, and the most allowed.
pub(super) const DEFAULT_REPORT_TOP: u32 = 20;
pub(super) const MAX_REPORT_TOP: u32 = 10_000;
/// Most replications per shard count.
pub const MAX_REPLICATIONS: u32 = 10_000;
/// Seed used when a scenario sets none.
pub const DEFAULT_SEED: u64 = 1;
/// Synthetic users when `[users]` sets none.
pub const DEFAULT_USERS: u64 = 1_000_000;

/// Most a what-if `scale` or `speed` may multiply the traffic by.
pub const MAX_TRAFFIC_FACTOR: f64 = 1000.0;
/// Longest jitter of a trace's extra copies, ms.
pub const MAX_JITTER_MS: f64 = 1000.0;

/// The lower bound of an allowed range.
#[derive(Clone, Copy)]
pub(super) enum Min {
    /// `value ≥ bound`.
    AtLeast(f64),
    /// `value > bound`.
    Above(f64),
}

/// A required number of `field`: `missing` says what to write when it is absent (after
/// "missing: "), and [`number`] checks its range.
pub(super) fn required_number(
    value: Option<f64>,
    field: &str,
    missing: &str,
    min: Min,
    max: f64,
) -> Result<f64, FieldError> {
    let value = value.ok_or_else(|| (field.to_owned(), format!("missing: {missing}")))?;
    number(value, min, max).map_err(|m| (field.to_owned(), m))
}

/// Checks that `value` is finite and within range; the message says what is allowed.
pub(super) fn number(value: f64, min: Min, max: f64) -> Result<f64, String> {
    let in_range = value.is_finite()
        && value <= max
        && match min {
            Min::AtLeast(bound) => value >= bound,
            Min::Above(bound) => value > bound,
        };
    if in_range {
        return Ok(value);
    }
    let lower = match min {
        Min::AtLeast(bound) => format!("≥ {}", shown(bound)),
        Min::Above(bound) => format!("> {}", shown(bound)),
    };
    Err(format!(
        "must be a finite number {lower} and ≤ {}, got {}",
        shown(max),
        shown(value)
    ))
}

/// The lowest rate above zero: one arrival in about eleven days. A rate below it would draw
/// gaps past what simulated time can hold, and means no traffic.
pub const MIN_RATE_PER_S: f64 = 1e-6;

/// Checks a rate per second: 0 (no traffic) or from [`MIN_RATE_PER_S`] to
/// [`MAX_RATE_PER_S`].
pub(super) fn check_rate(value: f64) -> Result<f64, String> {
    let value = number(value, Min::AtLeast(0.0), MAX_RATE_PER_S)?;
    if value > 0.0 && value < MIN_RATE_PER_S {
        return Err(format!(
            "must be 0 or from {MIN_RATE_PER_S:e} (one in about eleven days) to {}, got {}",
            shown(MAX_RATE_PER_S),
            shown(value)
        ));
    }
    Ok(value)
}

/// A number as an error message repeats it: plainly, or in scientific notation when it is
/// very large or very small (1e308 is not 309 digits).
pub fn shown(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-6..1e15).contains(&magnitude) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// A field's path and what is wrong with it.
pub(super) type FieldError = (String, String);

fn required(value: Option<f64>, field: &str, dist: &str) -> Result<f64, FieldError> {
    value.ok_or_else(|| {
        (
            field.to_owned(),
            format!("missing: dist = \"{dist}\" needs {field}"),
        )
    })
}

fn hold_ms(value: f64, field: &str, min: Min) -> Result<f64, FieldError> {
    number(value, min, MAX_HOLD_MS).map_err(|m| (field.to_owned(), m))
}

/// The first field set in `table` that only `[hold]` itself takes (`per_waiter_ms`,
/// `grant_order`: they describe a row's lock), for the tables that borrow `[hold]`'s fields.
pub(super) fn hold_only_field(table: &HoldTable) -> Option<&'static str> {
    if table.per_waiter_ms.is_some() {
        Some("per_waiter_ms")
    } else if table.grant_order.is_some() {
        Some("grant_order")
    } else {
        None
    }
}

/// Resolves a distribution table with `[hold]`'s fields (the fields only `[hold]` takes are
/// checked by the caller, with [`hold_only_field`]).
pub(super) fn resolve_hold(table: &HoldTable) -> Result<HoldDist, FieldError> {
    let dist = table.dist.as_deref().unwrap_or("constant");
    let used: &[&str] = match dist {
        "constant" => &["ms"],
        "exponential" => &["mean_ms"],
        "lognormal" => &["median_ms", "p99_ms"],
        "uniform" => &["min_ms", "max_ms"],
        other => {
            return Err((
                "dist".into(),
                format!(
                    "unknown distribution {other:?}: allowed are constant, exponential, lognormal, uniform"
                ),
            ));
        }
    };
    refuse_unused_hold_fields(table, dist, used)?;
    // A field `dist` needs, in milliseconds, at least (or above) `min`.
    let field =
        |value: Option<f64>, name: &str, min: Min| hold_ms(required(value, name, dist)?, name, min);
    Ok(match dist {
        "constant" => HoldDist::Constant {
            hold_ns: ms_f64_to_ns(field(table.ms, "ms", Min::AtLeast(0.0))?).min(MAX_HOLD_NS),
        },
        "exponential" => HoldDist::Exponential {
            mean_ms: field(table.mean_ms, "mean_ms", Min::Above(0.0))?,
        },
        "lognormal" => log_normal_hold(
            field(table.median_ms, "median_ms", Min::Above(0.0))?,
            field(table.p99_ms, "p99_ms", Min::Above(0.0))?,
        )?,
        _ => uniform_hold(
            field(table.min_ms, "min_ms", Min::AtLeast(0.0))?,
            field(table.max_ms, "max_ms", Min::AtLeast(0.0))?,
        )?,
    })
}

/// A field of the hold table that `dist` does not use (it takes `used`) is an error.
fn refuse_unused_hold_fields(
    table: &HoldTable,
    dist: &str,
    used: &[&str],
) -> Result<(), FieldError> {
    let fields = [
        ("ms", table.ms),
        ("mean_ms", table.mean_ms),
        ("median_ms", table.median_ms),
        ("p99_ms", table.p99_ms),
        ("min_ms", table.min_ms),
        ("max_ms", table.max_ms),
    ];
    match fields
        .iter()
        .find(|(f, v)| v.is_some() && !used.contains(f))
    {
        Some((field, _)) => Err((
            field.to_string(),
            format!(
                "not used by dist = \"{dist}\", which takes {}",
                used.join(" and ")
            ),
        )),
        None => Ok(()),
    }
}

/// A log-normal hold of `median` and `p99` ms: the p99 above the median, at most
/// [`MAX_LOGNORMAL_SPREAD`] times it.
fn log_normal_hold(median: f64, p99: f64) -> Result<HoldDist, FieldError> {
    if p99 > median * MAX_LOGNORMAL_SPREAD {
        return Err((
            "p99_ms".to_owned(),
            format!("must be at most {MAX_LOGNORMAL_SPREAD} × median_ms ({median}), got {p99}"),
        ));
    }
    HoldDist::log_normal(median, p99).ok_or_else(|| {
        (
            "p99_ms".to_owned(),
            format!("must be greater than median_ms ({median}), got {p99}"),
        )
    })
}

/// A uniform hold from `min` to `max` ms.
fn uniform_hold(min: f64, max: f64) -> Result<HoldDist, FieldError> {
    if max < min {
        return Err((
            "max_ms".into(),
            format!("must be ≥ min_ms ({min}), got {max}"),
        ));
    }
    Ok(HoldDist::Uniform {
        min_ns: ms_f64_to_ns(min),
        max_ns: ms_f64_to_ns(max),
    })
}
