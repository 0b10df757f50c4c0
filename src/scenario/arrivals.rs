//! `[arrivals]`: a rate, a profile, a trace, a counts file or a closed loop, and the what-if
//! traffic over it, each resolved into an arrival plan with its horizon; each failure a
//! one-line message naming the field (or the file and line) and what is allowed.

use std::path::Path;

use super::fields::{
    FieldError, MAX_DURATION_S, MAX_HOLD_MS, MAX_JITTER_MS, MAX_RATE_PER_S, MAX_TRAFFIC_FACTOR,
    Min, check_rate, number,
};
use super::file::ArrivalsTable;
use super::{ArrivalPlan, RateSegment, Scenario};
use crate::arrivals::timestamps::TimeFormat;
use crate::arrivals::trace::{self, TraceInfo};
use crate::error::InputError;
use crate::model::{HoldDist, SimTime};
use crate::time::{ms_f64_to_ns, s_f64_to_ns};

/// The what-if traffic: `--traffic` (else `[arrivals] scale`), `speed` and `jitter_ms`.
pub(super) fn resolve_traffic(
    table: &ArrivalsTable,
    traffic: Option<f64>,
) -> Result<crate::arrivals::Traffic, FieldError> {
    let field = |name: &str| format!("arrivals.{name}");
    let scale = match traffic {
        Some(scale) => number(scale, Min::Above(0.0), MAX_TRAFFIC_FACTOR)
            .map_err(|m| ("--traffic".to_owned(), m))?,
        None => number(
            table.scale.unwrap_or(1.0),
            Min::Above(0.0),
            MAX_TRAFFIC_FACTOR,
        )
        .map_err(|m| (field("scale"), m))?,
    };
    let speed = number(
        table.speed.unwrap_or(1.0),
        Min::Above(0.0),
        MAX_TRAFFIC_FACTOR,
    )
    .map_err(|m| (field("speed"), m))?;
    let jitter_ms = number(
        table.jitter_ms.unwrap_or(1.0),
        Min::AtLeast(0.0),
        MAX_JITTER_MS,
    )
    .map_err(|m| (field("jitter_ms"), m))?;
    let is_trace = table.trace.is_some();
    if !is_trace && (table.speed.is_some() || table.jitter_ms.is_some()) {
        let name = if table.speed.is_some() {
            "speed"
        } else {
            "jitter_ms"
        };
        return Err((
            field(name),
            "speeds up or copies a trace: with rate_per_s or a profile, set the rates (and scale) instead".into(),
        ));
    }
    if table.clients.is_some() && scale != 1.0 {
        return Err((
            if traffic.is_some() {
                "--traffic".into()
            } else {
                field("scale")
            },
            "a closed loop's traffic follows its clients and rows: change arrivals.clients instead"
                .into(),
        ));
    }
    Ok(crate::arrivals::Traffic {
        scale,
        speed,
        jitter: ms_f64_to_ns(jitter_ms),
    })
}

pub(super) fn resolve_arrivals(
    path: &Path,
    table: &ArrivalsTable,
    duration_s: Option<f64>,
    window: SimTime,
    traffic: crate::arrivals::Traffic,
) -> Result<(ArrivalPlan, SimTime), InputError> {
    let (mut plan, horizon) = recorded_arrivals(path, table, duration_s, window, traffic)?;
    if let ArrivalPlan::Poisson { segments } = &mut plan {
        for segment in segments.iter_mut() {
            segment.rate_per_s *= traffic.scale;
        }
        if let Some(peak) = segments
            .iter()
            .map(|s| s.rate_per_s)
            .find(|&r| r > MAX_RATE_PER_S)
        {
            return Err(InputError::scenario(
                path,
                "arrivals.scale",
                format!(
                    "makes a rate of {peak:.0}/s, above the limit of {MAX_RATE_PER_S:.0}/s; use a smaller scale"
                ),
            ));
        }
    }
    Ok((plan, horizon))
}

/// The arrivals as the scenario states them (a trace is scanned with its speed-up).
fn recorded_arrivals(
    path: &Path,
    table: &ArrivalsTable,
    duration_s: Option<f64>,
    window: SimTime,
    traffic: crate::arrivals::Traffic,
) -> Result<(ArrivalPlan, SimTime), InputError> {
    let err = |field: &str, message: String| InputError::scenario(path, field, message);
    let given = [
        table.rate_per_s.is_some(),
        table.profile.is_some(),
        table.trace.is_some(),
        table.counts.is_some(),
        table.clients.is_some(),
    ];
    if given.iter().filter(|&&g| g).count() != 1 {
        return Err(err(
            "arrivals",
            "set exactly one of rate_per_s, profile, trace, counts or clients".into(),
        ));
    }
    let duration = duration_s
        .map(|d| number(d, Min::Above(0.0), MAX_DURATION_S).map_err(|m| err("duration_s", m)))
        .transpose()?;
    if table.clients.is_none() && (table.think_ms.is_some() || table.think_dist.is_some()) {
        return Err(err(
            "arrivals.think_ms",
            "think_ms and think_dist belong to a closed loop: set arrivals.clients too".into(),
        ));
    }
    let (is_trace, is_counts) = (table.trace.is_some(), table.counts.is_some());
    let file_only = [
        (
            "arrivals.time_column",
            table.time_column.is_some(),
            is_trace || is_counts,
        ),
        (
            "arrivals.time_format",
            table.time_format.is_some(),
            is_trace || is_counts,
        ),
        (
            "arrivals.reorder_window_s",
            table.reorder_window_s.is_some(),
            is_trace,
        ),
        (
            "arrivals.count_column",
            table.count_column.is_some(),
            is_counts,
        ),
        (
            "arrivals.rate_column",
            table.rate_column.is_some(),
            is_counts,
        ),
        ("arrivals.interval_s", table.interval_s.is_some(), is_counts),
    ];
    if let Some((field, _, _)) = file_only.iter().find(|(_, given, fits)| *given && !*fits) {
        let owner = if field.ends_with("column") && !field.contains("time")
            || field.ends_with("interval_s")
        {
            "a counts file's: set arrivals.counts too"
        } else if field.ends_with("reorder_window_s") {
            "a trace's: set arrivals.trace too"
        } else {
            "a trace's or a counts file's: set arrivals.trace or arrivals.counts too"
        };
        return Err(err(field, format!("is {owner}, or leave it out")));
    }
    if let Some(clients) = table.clients {
        let closed = resolve_closed_loop(clients, table).map_err(|(f, m)| err(&f, m))?;
        let duration = duration.ok_or_else(|| {
            err(
                "duration_s",
                "missing: arrivals.clients needs duration_s (seconds to simulate)".into(),
            )
        })?;
        return Ok((ArrivalPlan::Closed(closed), s_f64_to_ns(duration)));
    }
    if let Some(rate) = table.rate_per_s {
        let rate = check_rate(rate).map_err(|m| err("arrivals.rate_per_s", m))?;
        let duration = duration.ok_or_else(|| {
            err(
                "duration_s",
                "missing: arrivals.rate_per_s needs duration_s (seconds to simulate)".into(),
            )
        })?;
        let horizon = s_f64_to_ns(duration);
        return Ok((
            ArrivalPlan::Poisson {
                segments: vec![RateSegment {
                    end: horizon,
                    rate_per_s: rate,
                }],
            },
            horizon,
        ));
    }
    if let Some(profile) = &table.profile {
        return resolve_profile(path, profile, duration);
    }
    if let Some(name) = &table.counts {
        return resolve_counts(path, name, table, duration);
    }
    let trace_name = table.trace.as_deref().unwrap_or_default();
    if trace_name.trim().is_empty() {
        return Err(InputError::scenario(
            path,
            "arrivals.trace",
            "is empty: name a CSV file with a t_ms column, relative to the scenario",
        ));
    }
    let trace_path = path.parent().unwrap_or(Path::new(".")).join(trace_name);
    let explicit_horizon = duration.map(s_f64_to_ns);
    let time = trace_time(table).map_err(|(f, m)| err(&f, m))?;
    let info: TraceInfo = trace::scan(&trace_path, window, explicit_horizon, traffic, &time)?;
    let last = info.last_at + traffic.reach();
    let horizon = explicit_horizon.unwrap_or((last / window + 1) * window);
    Ok((ArrivalPlan::Trace(info), horizon))
}

/// A counts file's intervals as a profile (its rates checked line by line first).
fn resolve_counts(
    path: &Path,
    name: &str,
    table: &ArrivalsTable,
    duration: Option<f64>,
) -> Result<(ArrivalPlan, SimTime), InputError> {
    let err = |field: &str, message: String| InputError::scenario(path, field, message);
    if name.trim().is_empty() {
        return Err(err(
            "arrivals.counts",
            "is empty: name a CSV file of a time and a count (or rate) per interval, relative to the scenario".into(),
        ));
    }
    let interval = table
        .interval_s
        .map(|s| number(s, Min::Above(0.0), MAX_DURATION_S))
        .transpose()
        .map_err(|m| err("arrivals.interval_s", m))?
        .map(s_f64_to_ns);
    let spec = crate::arrivals::counts::CountsSpec {
        time: trace_time(table).map_err(|(f, m)| err(&f, m))?,
        count_column: table.count_column.clone(),
        rate_column: table.rate_column.clone(),
        interval,
    };
    let counts_path = path.parent().unwrap_or(Path::new(".")).join(name);
    let counts = crate::arrivals::counts::read(&counts_path, &spec)?;
    let seconds = counts.interval as f64 / 1e9;
    let mut profile = Vec::with_capacity(counts.rates_per_s.len());
    for (index, &rate) in counts.rates_per_s.iter().enumerate() {
        check_rate(rate).map_err(|m| {
            InputError::trace(
                &counts_path,
                index as u64 + 2,
                format!("its rate per second {m}"),
            )
        })?;
        profile.push(super::file::ProfileSegment {
            seconds,
            rate_per_s: rate,
        });
    }
    resolve_profile(path, &profile, duration)
}

/// The longest reorder window a trace may have, s (its lines wait in memory for that long).
pub const MAX_REORDER_WINDOW_S: f64 = 3_600.0;

/// How `[arrivals]` says its trace's times are read.
fn trace_time(table: &ArrivalsTable) -> Result<trace::TraceTime, FieldError> {
    let format = match table.time_format.as_deref() {
        Some(name) => {
            TimeFormat::from_name(name).map_err(|m| ("arrivals.time_format".into(), m))?
        }
        None => None,
    };
    let reorder_window_s = table
        .reorder_window_s
        .map(|s| number(s, Min::AtLeast(0.0), MAX_REORDER_WINDOW_S))
        .transpose()
        .map_err(|m| ("arrivals.reorder_window_s".into(), m))?
        .unwrap_or(0.0);
    if let Some(column) = &table.time_column
        && column.trim().is_empty()
    {
        return Err((
            "arrivals.time_column".into(),
            "is empty: name the trace's time column".into(),
        ));
    }
    Ok(trace::TraceTime {
        column: table.time_column.clone(),
        format,
        detected_by: None,
        reorder_window: s_f64_to_ns(reorder_window_s),
        start_ns: None,
    })
}

/// The most clients a closed loop may have.
pub const MAX_CLIENTS: u32 = 100_000;

fn resolve_closed_loop(
    clients: u32,
    table: &ArrivalsTable,
) -> Result<super::ClosedLoop, FieldError> {
    if clients == 0 || clients > MAX_CLIENTS {
        return Err((
            "arrivals.clients".into(),
            format!("must be from 1 to {MAX_CLIENTS}, got {clients}"),
        ));
    }
    let think_ms = number(
        table.think_ms.unwrap_or(0.0),
        Min::AtLeast(0.0),
        MAX_HOLD_MS,
    )
    .map_err(|m| ("arrivals.think_ms".to_owned(), m))?;
    let think = match table.think_dist.unwrap_or(super::file::ThinkDist::Constant) {
        super::file::ThinkDist::Constant => HoldDist::Constant {
            hold_ns: ms_f64_to_ns(think_ms),
        },
        super::file::ThinkDist::Exponential if think_ms > 0.0 => {
            HoldDist::Exponential { mean_ms: think_ms }
        }
        super::file::ThinkDist::Exponential => {
            return Err((
                "arrivals.think_ms".into(),
                "an exponential think time needs a mean > 0".into(),
            ));
        }
    };
    Ok(super::ClosedLoop { clients, think })
}

/// What a closed loop cannot be combined with, and a zero cycle that would never advance.
pub(super) fn check_closed_loop(scenario: &Scenario) -> Result<(), FieldError> {
    let ArrivalPlan::Closed(closed) = &scenario.arrivals else {
        return Ok(());
    };
    if closed.think.mean_ns() + scenario.unqueued_response_ns() <= 0.0 {
        return Err((
            "arrivals.think_ms".into(),
            "with a zero hold (and no CPU, request CPU, flush or overhead) a closed loop needs a think time > 0, or its clients never let time pass".into(),
        ));
    }
    if scenario.features.batching.is_some() {
        return Err((
            "batching".into(),
            "cannot be used with a closed loop of clients (arrivals.clients): a batching server answers each like at once and writes it later, so its clients would never wait for the rows; use rate_per_s, profile or trace".into(),
        ));
    }
    Ok(())
}

fn resolve_profile(
    path: &Path,
    profile: &[super::file::ProfileSegment],
    duration: Option<f64>,
) -> Result<(ArrivalPlan, SimTime), InputError> {
    let err = |field: String, message: String| InputError::scenario(path, field, message);
    if profile.is_empty() {
        return Err(err(
            "arrivals.profile".into(),
            "is empty: list segments like { seconds = 60, rate_per_s = 2000 }".into(),
        ));
    }
    let mut segments = Vec::with_capacity(profile.len() + 1);
    let mut total_s = 0.0;
    for (i, segment) in profile.iter().enumerate() {
        let field = |name: &str| format!("arrivals.profile[{i}].{name}");
        number(segment.seconds, Min::Above(0.0), MAX_DURATION_S)
            .map_err(|m| err(field("seconds"), m))?;
        check_rate(segment.rate_per_s).map_err(|m| err(field("rate_per_s"), m))?;
        total_s += segment.seconds;
        segments.push(RateSegment {
            end: s_f64_to_ns(total_s),
            rate_per_s: segment.rate_per_s,
        });
    }
    if total_s > MAX_DURATION_S {
        return Err(err(
            "arrivals.profile".into(),
            format!("lasts {total_s} s in all, above the limit of {MAX_DURATION_S} s"),
        ));
    }
    let horizon = match duration {
        Some(d) if d < total_s => {
            return Err(err(
                "duration_s".into(),
                format!(
                    "must be ≥ the profile's {total_s} s (the time after the profile has no arrivals), got {d}"
                ),
            ));
        }
        Some(d) => s_f64_to_ns(d),
        None => s_f64_to_ns(total_s),
    };
    if horizon > segments.last().map_or(0, |s| s.end) {
        segments.push(RateSegment {
            end: horizon,
            rate_per_s: 0.0,
        });
    }
    Ok((ArrivalPlan::Poisson { segments }, horizon))
}
