//! What `shardsim calibrate` and `validate` print and write: the calibration's table, the
//! validation's table, `validation.csv` and `planner.csv`, rendered from their results.

use crate::calibrate::validate::{Point, Tolerance, Validation, stability};
use crate::units::{self, wrap};

/// The calibration's table: every run measured against the fitted model, then the fit.
pub fn calibration_table(calibration: &crate::calibrate::Calibration) -> String {
    let mut out = format!(
        "{} ({})\n{:>6} {:>8} {:>12} {:>12} {:>7} {:>10} {:>10} {:>10} {:>9} {:>9}\n",
        calibration.server,
        calibration.durability,
        "rows",
        "clients",
        "measured/s",
        "fitted/s",
        "error",
        "p50",
        "fitted p50",
        "p99",
        "fsyncs/c",
        "fitted",
    );
    let fsyncs = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
    let mut open = Vec::new();
    for (run, kind) in calibration.every_run() {
        let summary = run.measured.responses.summary();
        let clients = match run.load.rate_per_s {
            None if kind == crate::calibrate::RunKind::Repeat => {
                format!("{} again", run.load.clients)
            }
            None => run.load.clients.to_string(),
            Some(rate) => {
                let steady = run.measured.steady_p99_ns.map_or(String::new(), |ns| {
                    format!(", steady p99 {}", super::units::duration(ns))
                });
                open.push(format!(
                    "{rate:.0}/s over {} connections{steady}",
                    run.load.clients
                ));
                format!("{}*", run.load.clients)
            }
        };
        out += &format!(
            "{:>6} {:>8} {:>12.0} {:>12.0} {:>6.1}% {:>10} {:>10} {:>10} {:>9} {:>9}\n",
            run.load.rows,
            clients,
            run.measured.tps,
            run.fitted.tps,
            100.0 * (run.fitted.tps / run.measured.tps.max(1.0) - 1.0),
            super::units::duration(summary.p50_ns),
            super::units::duration((run.fitted.p50_ms * 1e6).round() as u64),
            super::units::duration(summary.p99_ns),
            fsyncs(run.measured.fsyncs_per_commit),
            fsyncs(run.fitted.fsyncs_per_commit),
        );
    }
    if !open.is_empty() {
        let note = format!(
            "* open streams ({}): what a request on an idle connection costs. A stream's \
             steady p99 is the median of its {} windows' p99s, which a stall in one or two \
             does not move: far below its p99, stalls made its tail (the model has none, and \
             the fit takes the steady p99)",
            open.join("; "),
            crate::calibrate::load::WINDOWS
        );
        out += &wrap(&note, 100);
        out.push('\n');
    }
    if let Some(steadiness) = calibration.steadiness() {
        out += &format!("steadiness: {}\n", steadiness.describe());
    }
    if let Some(stalls) = calibration.stalled_stream() {
        out += &format!("stalls: {}\n", stalls.describe());
    }
    let m = &calibration.machine;
    out += &format!("fitted: {}\n", m.describe());
    let evidence = calibration.stall_evidence();
    if !evidence.is_empty() {
        out += &wrap(&evidence, 100);
        out.push('\n');
    }
    if let Some(spread) = &calibration.spread {
        out += &format!("spread: {}\n", spread.describe());
    }
    out
}

/// The validation's table: every point measured against its prediction, then how far the
/// repeats spread, the steady p99s and how far the database moved since calibrate.
pub fn validation_table(validation: &Validation, tolerance: &Tolerance) -> String {
    let mut out = validation_header(validation);
    out += &validation_points(validation, tolerance);
    out += &validation_spreads(validation, tolerance);
    if let Some(verdict) = validation.band_verdict() {
        out += &wrap(&verdict.describe(), 100);
        out.push('\n');
    }
    if let Some((steady, whole, streams)) = validation.steady_p99_within(tolerance) {
        out += &format!(
            "steady p99 (a repeat's median of its {} windows' p99s, which a stall in one or two \
             does not move; the model has no stalls): predicted within ±{:.0}% at {steady} of \
             {streams} stable open streams, against {whole} by their whole p99\n",
            crate::calibrate::load::WINDOWS,
            100.0 * tolerance.p99_rel,
        );
    }
    if let Some((overlapping, streams)) = validation.p99_overlaps(tolerance) {
        out += &format!(
            "p99 as distributions: the predicted p99's interval over {} replications overlaps \
             the measured repeats' range widened by {:.0}% at {overlapping} of {streams} stable \
             open streams\n",
            crate::calibrate::validate::PREDICTION_SEEDS.len(),
            100.0 * tolerance.p99_rel,
        );
    }
    out += &validation_drift(validation, tolerance);
    out += &planners_question(validation);
    out
}

/// The planner's question: for each target, the smallest row count the database met it with
/// beside the calibration's answer, and how many agree.
fn planners_question(validation: &Validation) -> String {
    let Some(first) = validation.planner.first() else {
        return String::new();
    };
    let rows = |n: Option<u32>| n.map_or("none".to_owned(), |n| units::plural(u64::from(n), "row"));
    let answers = validation.planner_answers();
    let mut out = format!(
        "\nthe planner's question: {:.0}/s ({:.0}% of one row's peak) over {} rows; the smallest row \
         count that keeps up in every repeat, and whose p99 response meets each target\n",
        first.load().rate_per_s.unwrap_or_default(),
        100.0 * first.load().rate_per_s.unwrap_or_default() / validation.one_row_peak,
        validation
            .planner
            .iter()
            .map(|p| p.load().rows.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    );
    for answer in &answers {
        let target = if answer.target_ms.is_finite() {
            format!("p99 ≤ {} ms", answer.target_ms)
        } else {
            "keeps up".to_owned()
        };
        out += &format!(
            "  {target}: measured {}, the calibration {}  {}\n",
            rows(answer.measured),
            rows(answer.predicted),
            match (answer.agrees(), answer.never_smaller()) {
                (true, _) => "agrees",
                (false, true) => "DIFFERS (larger)",
                (false, false) => "DIFFERS (smaller: optimistic)",
            }
        );
    }
    let agree = answers.iter().filter(|a| a.agrees()).count();
    let never_smaller = answers.iter().filter(|a| a.never_smaller()).count();
    out += &format!(
        "  {agree} of {} agree (the same count, or one larger); {never_smaller} of {} never smaller\n",
        answers.len(),
        answers.len()
    );
    out
}

/// The validation table's title lines and column heads.
fn validation_header(validation: &Validation) -> String {
    format!(
        "{} ({}); one row's peak by the calibration {:.0}/s\n\
         measured: {}, p99 also their range\n\
         {:<44} {:>10} {:>10} {:>7} {:>9} {:>19} {:>9} {:>9} {:>9} {:>10} {:>10}  ok\n",
        validation.server,
        validation.durability,
        validation.one_row_peak,
        match validation.points.first().map_or(0, |p| p.repeats().len()) {
            1 => "one measurement each".to_owned(),
            n => format!("the median of {n} repeats"),
        },
        "point",
        "measured/s",
        "predicted",
        "error",
        "p99",
        "range",
        "predicted",
        "p50",
        "predicted",
        "measured",
        "predicted",
    )
}

/// One line per validation point.
fn validation_points(validation: &Validation, tolerance: &Tolerance) -> String {
    let d = super::units::duration;
    let mut out = String::new();
    for point in &validation.points {
        out += &format!(
            "{:<44} {:>10.0} {:>10.0} {:>6.1}% {:>9} {:>19} {:>9} {:>9} {:>9} {:>10} {:>10}  {}\n",
            point.name(validation.one_row_peak),
            point.measured_tps(),
            point.predicted_tps(),
            100.0 * point.tps_error(),
            d(point.measured().p99_ns),
            format!("{}–{}", d(point.p99_range().0), d(point.p99_range().1)),
            d(point.predicted().p99_ns),
            d(point.measured().p50_ns),
            d(point.predicted().p50_ns),
            stability(point.measured_stable()),
            point.predicted_stability(),
            within(validation, point, tolerance),
        );
    }
    out
}

/// Whether a point passed: `yes` or `NO`; a closed loop judged by the calibration's band
/// says where its measured range lies and the band: `covered (band 1,400–1,700/s, 90%)`.
fn within(
    validation: &Validation,
    point: &crate::calibrate::validate::Point,
    tolerance: &Tolerance,
) -> String {
    let band = validation.judged_by_band(point);
    let (Some(band), Some(call)) = (band, band.and_then(|band| point.band_call(band))) else {
        return if point.miss(tolerance).is_none() {
            "yes"
        } else {
            "NO"
        }
        .to_owned();
    };
    let (low, high) = point.tps_band(band).unwrap_or_default();
    format!(
        "{} (band {}–{}/s, {:.0}%)",
        call.name(),
        units::quantity(low),
        units::quantity(high),
        100.0 * band.coverage.unwrap_or_default()
    )
}

/// How far the repeats of the widest closed loop and the widest stable open stream spread.
fn validation_spreads(validation: &Validation, tolerance: &Tolerance) -> String {
    let d = super::units::duration;
    let mut out = String::new();
    if let Some((point, spread)) = validation.widest(Point::tps_spread) {
        let (low, high) = point.tps_range();
        out += &repeats_line(
            format!(
                "a closed loop's fastest repeat is up to {} its slowest ({} rows: {}–{}/s)",
                how_far_above(spread),
                point.load().rows,
                super::units::quantity(low),
                super::units::quantity(high),
            ),
            spread,
            tolerance.tps_rel,
            "throughput",
        );
    }
    if let Some((point, spread)) = validation.widest(Point::p99_spread) {
        let (low, high) = point.p99_range();
        let streams = validation.points.iter().filter_map(Point::p99_spread);
        let (wide, all) = streams.fold((0, 0), |(wide, all), spread| {
            (wide + usize::from(spread > tolerance.p99_rel), all + 1)
        });
        out += &repeats_line(
            format!(
                "a stable open stream's highest p99 is up to {} its lowest ({}: {}–{}; \
                 {wide} of {all} such streams beyond the tolerance)",
                how_far_above(spread),
                point.name(validation.one_row_peak),
                d(low),
                d(high),
            ),
            spread,
            tolerance.p99_rel,
            "tail",
        );
    }
    out
}

/// How far the calibration's closed loops moved when measured again, with advice when the
/// database itself moved more than the tolerance.
fn validation_drift(validation: &Validation, tolerance: &Tolerance) -> String {
    let Some((drifts, largest)) = validation.drifts() else {
        return String::new();
    };
    let each: Vec<String> = drifts
        .iter()
        .map(|(point, drift)| format!("{} rows {:+.0}%", point.load().rows, 100.0 * drift))
        .collect();
    format!(
        "since calibrate (the same closed loops, measured again): {}{}\n",
        each.join(", "),
        if largest > tolerance.tps_rel {
            format!(
                "; the database itself moved by {:.0}%, more than the ±{:.0}% allowed: \
                 calibrate again on a quiet machine and validate right after",
                100.0 * largest,
                100.0 * tolerance.tps_rel
            )
        } else {
            String::new()
        }
    )
}

/// `spread` (a fraction of the lower figure) as words before "its lowest": "80% above", or
/// "3.8×" from twice on and "358×" from ten times.
fn how_far_above(spread: f64) -> String {
    match 1.0 + spread {
        times if times >= 10.0 => format!("{times:.0}×"),
        times if times >= 2.0 => format!("{times:.1}×"),
        _ => format!("{:.0}% above", 100.0 * spread),
    }
}

/// One `repeats:` line of the validation table: `sentence` says how far a point's repeats
/// spread; when `spread` is more than `allowed`, the line says that no prediction of the
/// database's `what` can be judged closer than that.
fn repeats_line(sentence: String, spread: f64, allowed: f64, what: &str) -> String {
    let warning = if spread > allowed {
        format!(
            ", more than the ±{:.0}% allowed: the database did not repeat its {what}, so no \
             prediction of it can be judged closer than that; validate again on a quiet machine",
            100.0 * allowed
        )
    } else {
        String::new()
    };
    format!("repeats: {sentence}{warning}\n")
}

/// `planner.csv`: the planner's question, one row count a line, measured (the median of
/// the repeats, and their p99's range: a stall in one repeat shows there) and predicted.
pub fn planner_csv(validation: &Validation) -> Vec<u8> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record([
        "rows",
        "offered_per_s",
        "measured_tps",
        "measured_p99_ms",
        "measured_p99_min_ms",
        "measured_p99_max_ms",
        "predicted_p99_ms",
        "measured",
        "predicted",
        "collapsed_repeats",
        "predicted_hidden_capacity_per_s",
        "predicted_trigger",
    ])
    .expect("writing to memory");
    let ms = |ns: u64| format!("{:.4}", crate::time::ns_to_ms(ns));
    for point in &validation.planner {
        let (low, high) = point.p99_range();
        out.write_record([
            point.load().rows.to_string(),
            format!("{:.1}", point.load().rate_per_s.unwrap_or_default()),
            format!("{:.1}", point.measured_tps()),
            ms(point.measured().p99_ns),
            ms(low),
            ms(high),
            ms(point.predicted().p99_ns),
            stability(point.measured_stable()).to_owned(),
            point.predicted_stability().to_owned(),
            point.collapsed_repeats().to_string(),
            point
                .predicted_hidden_per_s()
                .map_or(String::new(), |rate| format!("{rate:.1}")),
            point
                .predicted_tipped_by()
                .map_or(String::new(), |t| t.name().to_owned()),
        ])
        .expect("writing to memory");
    }
    out.into_inner().expect("flushing to memory")
}

/// `validation.csv`: every point measured and predicted, with the errors.
pub fn validation_csv(validation: &Validation, tolerance: &Tolerance) -> Vec<u8> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record([
        "point",
        "rows",
        "clients_or_connections",
        "offered_per_s",
        "measured_tps",
        "predicted_tps",
        "tps_error",
        "measured_p50_ms",
        "predicted_p50_ms",
        "measured_p99_ms",
        "predicted_p99_ms",
        "p99_error",
        "measured",
        "predicted",
        "within_tolerance",
        "repeats",
        "measured_tps_min",
        "measured_tps_max",
        "measured_p99_min_ms",
        "measured_p99_max_ms",
        "collapsed_repeats",
        "calibrate_measured_tps",
        "drift_since_calibrate",
        "measured_steady_p99_ms",
        "steady_p99_error",
        "stability_call",
        "predicted_p99_min_ms",
        "predicted_p99_max_ms",
        "predicted_hidden_capacity_per_s",
        "predicted_trigger",
        "predicted_tps_band_lo",
        "predicted_tps_band_hi",
        "band_call",
        "think_ms",
    ])
    .expect("writing to memory");
    let ms = |ns: u64| format!("{:.4}", crate::time::ns_to_ms(ns));
    for point in &validation.points {
        let band = validation.judged_by_band(point);
        let tps_band = band.and_then(|band| point.tps_band(band));
        let within = match band {
            Some(band) => point.band_miss(band).is_none(),
            None => point.miss(tolerance).is_none(),
        };
        out.write_record([
            point.name(validation.one_row_peak),
            point.load().rows.to_string(),
            point.load().clients.to_string(),
            point
                .load()
                .rate_per_s
                .map_or(String::new(), |r| format!("{r:.1}")),
            format!("{:.1}", point.measured_tps()),
            format!("{:.1}", point.predicted_tps()),
            format!("{:.4}", point.tps_error()),
            ms(point.measured().p50_ns),
            ms(point.predicted().p50_ns),
            ms(point.measured().p99_ns),
            ms(point.predicted().p99_ns),
            point
                .p99_error()
                .map_or(String::new(), |e| format!("{e:.4}")),
            stability(point.measured_stable()).into(),
            point.predicted_stability().into(),
            within.to_string(),
            point.repeats().len().to_string(),
            format!("{:.1}", point.tps_range().0),
            format!("{:.1}", point.tps_range().1),
            ms(point.p99_range().0),
            ms(point.p99_range().1),
            point.collapsed_repeats().to_string(),
            point
                .calibrated_tps()
                .map_or(String::new(), |tps| format!("{tps:.1}")),
            point
                .drift()
                .map_or(String::new(), |drift| format!("{drift:.4}")),
            point.measured_steady_p99_ns().map_or(String::new(), ms),
            point
                .steady_p99_error()
                .map_or(String::new(), |e| format!("{e:.4}")),
            point.stability_call().name().into(),
            ms(point.predicted_p99_range().0),
            ms(point.predicted_p99_range().1),
            point
                .predicted_hidden_per_s()
                .map_or(String::new(), |rate| format!("{rate:.1}")),
            point
                .predicted_tipped_by()
                .map_or(String::new(), |t| t.name().to_owned()),
            tps_band.map_or(String::new(), |(low, _)| format!("{low:.1}")),
            tps_band.map_or(String::new(), |(_, high)| format!("{high:.1}")),
            band.and_then(|band| point.band_call(band))
                .map_or(String::new(), |call| call.name().to_owned()),
            match point.load().rate_per_s {
                None => format!("{:.3}", point.load().think.as_secs_f64() * 1e3),
                Some(_) => String::new(),
            },
        ])
        .expect("writing to memory");
    }
    out.into_inner().expect("writing to memory")
}

#[cfg(test)]
mod tests;
