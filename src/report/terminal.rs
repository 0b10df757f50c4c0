//! The summary table printed after a run: one aligned row per shard count with its verdict,
//! the recommended shard count highlighted, and a reading of the result. Colours only when
//! the caller says the output is a terminal that accepts them.

use std::fmt::Write;

use anstyle::{AnsiColor, Style};

use crate::calibrate::validate::{Point, Tolerance, Validation, stability};
use crate::model::machine::GrantOrder;
use crate::scenario::Scenario;

use super::extended::extended_tables;

use super::reading::reading;
use super::table::{HEADER, summary_lines};
use super::units::{self, count, quantity, wrap};
use crate::figures::{PolicyRows, SummaryRow, Verdict, by_policy};
use crate::units::compact;

/// The machine sections in a phrase (empty without them).
fn machine_phrase(scenario: &Scenario) -> String {
    let machine = &scenario.machine;
    let mut parts = Vec::new();
    if machine.per_waiter > 0 {
        parts.push(format!(
            "+{} per waiter",
            units::duration(machine.per_waiter)
        ));
    }
    if machine.grant_order == GrantOrder::Random {
        parts.push("rows handed to a random waiter".to_owned());
    }
    if machine.wake > 0 {
        parts.push(format!(
            "{} to wake a waiter",
            units::duration(machine.wake)
        ));
    }
    if machine.wake_cpu > 0 {
        parts.push(format!(
            "{} CPU per waiter woken",
            units::duration(machine.wake_cpu)
        ));
    }
    if machine.herd_cpu != 0 {
        parts.push(format!(
            "{} CPU {} per waiter woken for each woken with it",
            units::duration(machine.herd_cpu.unsigned_abs()),
            if machine.herd_cpu > 0 { "more" } else { "less" }
        ));
    }
    if let Some(cpu) = &machine.cpu {
        parts.push(format!(
            "{} CPU on {}",
            units::duration(cpu.demand.mean_ns().round() as u64),
            units::plural(u64::from(cpu.cores), "core")
        ));
    }
    if let Some(wal) = machine.wal {
        parts.push(format!(
            "{} flush{}",
            units::duration(wal.flush),
            if wal.group_commit {
                " with group commit"
            } else {
                " per commit"
            }
        ));
    }
    if machine.overhead.is_some() {
        parts.push(format!(
            "{} outside the database",
            units::duration(machine.overhead_ns().round() as u64)
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// The widest a reading's lines get, even on a wide terminal.
const MAX_LINE: usize = 100;

/// Renders the scenario line, then per policy the table and the reading; `colour` adds ANSI
/// styles.
pub fn render(scenario: &Scenario, rows: &[SummaryRow], colour: bool) -> String {
    let paint = |style: Style, text: &str| -> String {
        if colour {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    };
    let mut out = String::new();
    let arrivals = rows.first().map_or(0, |row| row.arrivals);
    let load = match &scenario.arrivals {
        crate::scenario::ArrivalPlan::Closed(closed) => format!(
            "{} in a closed loop, think {}, up to {}/s",
            units::plural(u64::from(closed.clients), "client"),
            units::duration(closed.think.mean_ns().round() as u64),
            quantity(scenario.peak_offered_per_s())
        ),
        _ => format!(
            "{}peak {}/s",
            if scenario.key_count() > 1 {
                "busiest key's "
            } else {
                ""
            },
            quantity(scenario.peak_offered_per_s())
        ),
    };
    // A closed loop's count differs per shard count (its load follows the rows).
    let amount = match &scenario.arrivals {
        crate::scenario::ArrivalPlan::Closed(_) => String::new(),
        _ => format!("{} increments over ", count(arrivals)),
    };
    let mut line = format!(
        "{}{}: {amount}{} s ({load}), mean hold {} ms{}, policy {}, seed {}",
        scenario.name,
        traffic_phrase(scenario),
        compact(scenario.duration_s()),
        compact(scenario.row_hold_ns() / 1e6),
        machine_phrase(scenario),
        scenario.policies_label(),
        scenario.seed
    );
    if scenario.slo.is_set() {
        let _ = write!(line, ", target {}", scenario.slo);
    }
    if let Some(width) = table_width() {
        line = wrap(&line, width.clamp(40, MAX_LINE));
    }
    let _ = writeln!(out, "{}", paint(Style::new().bold(), &line));
    if let Some(note) = calibration_note(scenario) {
        let _ = writeln!(out, "{}", wrap(&note, line_width()));
    }
    let groups = by_policy(scenario, rows);
    for group in &groups {
        if groups.len() > 1 {
            let _ = writeln!(
                out,
                "\n{}",
                paint(Style::new().bold(), &format!("policy {}", group.policy))
            );
        }
        policy_table(&mut out, scenario, group, colour);
    }
    out
}

/// Which of the scenario's own fields won over its calibration's, when any did.
pub fn calibration_note(scenario: &Scenario) -> Option<String> {
    (!scenario.calibration_kept.is_empty()).then(|| {
        format!(
            "note: the scenario sets {} itself, so the calibration's values of these are not used; \
             leave them out of the scenario to take the calibrated ones",
            scenario.calibration_kept.join(", ")
        )
    })
}

/// " at traffic ×2" (and a trace's speed-up) when the what-if traffic changes the arrivals.
pub fn traffic_phrase(scenario: &Scenario) -> String {
    let traffic = scenario.traffic;
    let mut phrase = String::new();
    if traffic.scale != 1.0 {
        let _ = write!(phrase, " at traffic ×{}", compact(traffic.scale));
    }
    if traffic.speed != 1.0 && matches!(scenario.arrivals, crate::scenario::ArrivalPlan::Trace(_)) {
        let _ = write!(phrase, ", trace sped up ×{}", compact(traffic.speed));
    }
    phrase
}

/// One policy's table, its reading and its behaviours' tables.
fn policy_table(out: &mut String, scenario: &Scenario, group: &PolicyRows, colour: bool) {
    let paint = |style: Style, text: &str| -> String {
        if colour {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    };
    let (rows, recommendation) = (group.rows, &group.recommendation);
    let lines = summary_lines(rows, recommendation);
    let cells: Vec<&[String; 11]> = lines.iter().map(|line| &line.cells).collect();
    let widths: Vec<usize> = (0..HEADER.len())
        .map(|i| {
            cells
                .iter()
                .map(|row| row[i].chars().count())
                .chain([HEADER[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let (shown, gap) = fit_columns(&widths, table_width());
    let gap = " ".repeat(gap);
    let pad = |text: &str, i: usize| {
        let width = widths[i];
        if i + 1 == HEADER.len() {
            format!("{text:<width$}")
        } else {
            format!("{text:>width$}")
        }
    };
    let pick = |cells: Vec<String>| -> Vec<String> {
        cells
            .into_iter()
            .enumerate()
            .filter(|(i, _)| shown.contains(i))
            .map(|(_, cell)| cell)
            .collect()
    };
    let header = pick(HEADER.iter().enumerate().map(|(i, h)| pad(h, i)).collect());
    let _ = writeln!(
        out,
        "{}",
        paint(Style::new().underline(), header.join(&gap).trim_end())
    );
    for line in &lines {
        let (recommended, cells) = (line.recommended, &line.cells);
        let verdict_style = match line.verdict {
            Verdict::Stable => AnsiColor::Green.on_default(),
            Verdict::NearCeiling | Verdict::Backlogged => AnsiColor::Yellow.on_default(),
            Verdict::Overloaded | Verdict::Saturated => AnsiColor::Red.on_default(),
        };
        let mut fields = pick(cells.iter().enumerate().map(|(i, c)| pad(c, i)).collect());
        let last = fields.len() - 1;
        fields[last] = paint(verdict_style, fields[last].trim_end());
        let mut text = fields.join(&gap);
        if recommended {
            text = format!(
                "{}  {}",
                paint(Style::new().bold(), &text),
                paint(Style::new().bold(), "◀ recommended")
            );
        }
        let _ = writeln!(out, "{text}");
    }
    let width = table_width().map_or_else(line_width, |w| w.clamp(40, MAX_LINE));
    let _ = writeln!(
        out,
        "{}",
        wrap(&reading(scenario, rows, recommendation), width)
    );
    for table in extended_tables(rows) {
        let _ = writeln!(out, "\n{}", paint(Style::new().bold(), &table.title));
        out.push_str(&aligned(&table.header, &table.rows));
    }
}

/// The summary table's columns in the order they give way on a narrow terminal: the average
/// utilization, the largest backlog, the longest and the p99.9 wait, then the ceiling. The
/// shard count, peak utilization, p50 and p99 waits, final backlog and verdict always stay.
const DROPPED_FIRST: [usize; 5] = [2, 8, 7, 6, 1];
/// Room the `◀ recommended` mark takes after a row.
const MARK_WIDTH: usize = 15;

/// Which of the summary table's columns (of `widths`) fit in `width` characters, and the gap
/// between them: two spaces, then one, then fewer columns. `None`: no limit.
pub fn fit_columns(widths: &[usize], width: Option<usize>) -> (Vec<usize>, usize) {
    let mut shown: Vec<usize> = (0..widths.len()).collect();
    let Some(width) = width else {
        return (shown, 2);
    };
    let total = |shown: &[usize], gap: usize| {
        shown.iter().map(|&i| widths[i]).sum::<usize>() + gap * (shown.len() - 1) + MARK_WIDTH
    };
    if total(&shown, 2) <= width {
        return (shown, 2);
    }
    for column in DROPPED_FIRST {
        if total(&shown, 1) <= width {
            break;
        }
        shown.retain(|&i| i != column);
    }
    (shown, 1)
}

/// The width the summary table must fit: the terminal's when standard output is one, else
/// `COLUMNS` when set; no limit otherwise (a pipe or a file gets every column).
fn table_width() -> Option<usize> {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal()
        && let Some((width, _)) = terminal_size::terminal_size_of(std::io::stdout())
    {
        return Some(usize::from(width.0));
    }
    std::env::var("COLUMNS").ok()?.trim().parse().ok()
}

/// Right-aligned columns, two spaces apart.
fn aligned(header: &[String], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|row| row.get(i))
                .chain([&header[i]])
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, &width)| format!("{cell:>width$}"))
            .collect();
        padded.join("  ")
    };
    let mut text = format!("{}\n", line(header));
    for row in rows {
        text.push_str(&line(row));
        text.push('\n');
    }
    text
}

/// The terminal's width (at most [`MAX_LINE`]), or [`MAX_LINE`] when it is not a terminal.
fn line_width() -> usize {
    terminal_size::terminal_size().map_or(MAX_LINE, |(width, _)| {
        usize::from(width.0).clamp(40, MAX_LINE)
    })
}

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
            None if kind == crate::calibrate::RunKind::Again => {
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
         count whose p99 response meets each target\n",
        first.load.rate_per_s.unwrap_or_default(),
        100.0 * first.load.rate_per_s.unwrap_or_default() / validation.one_row_peak,
        validation
            .planner
            .iter()
            .map(|p| p.load.rows.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    );
    for answer in &answers {
        out += &format!(
            "  p99 ≤ {} ms: measured {}, the calibration {}  {}\n",
            answer.target_ms,
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
        match validation.points.first().map_or(0, |p| p.repeats.len()) {
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
            point.measured_tps,
            point.predicted_tps,
            100.0 * point.tps_error(),
            d(point.measured.p99_ns),
            format!("{}–{}", d(point.p99_range().0), d(point.p99_range().1)),
            d(point.predicted.p99_ns),
            d(point.measured.p50_ns),
            d(point.predicted.p50_ns),
            stability(point.measured_stable),
            point.predicted_stability(),
            if point.miss(tolerance).is_none() {
                "yes"
            } else {
                "NO"
            },
        );
    }
    out
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
                point.load.rows,
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
        .map(|(point, drift)| format!("{} rows {:+.0}%", point.load.rows, 100.0 * drift))
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

/// The shard counts recommended over a calibration's spread, one line per policy: "over the
/// calibration's spread (every time ×0.95 to ×1.13): 8 as fitted, 6–10; choose 10 (the slow
/// end's)".
pub fn spread_recommendations(
    scenario: &crate::scenario::Scenario,
    spread: &crate::scenario::include::CalibrationSpread,
    fitted: &[Option<u32>],
    slow: &[Option<u32>],
    fast: &[Option<u32>],
) -> String {
    let name = |n: Option<u32>| n.map_or("none".to_owned(), |n| n.to_string());
    let mut out = String::new();
    for (index, policy) in scenario.policies.iter().enumerate() {
        let ends = [fast[index], fitted[index], slow[index]];
        let pessimistic = if ends.iter().any(Option::is_none) {
            None
        } else {
            ends.iter().flatten().max().copied()
        };
        let prefix = if scenario.policies.len() > 1 {
            format!("{policy}: ")
        } else {
            String::new()
        };
        let line = format!(
            "{prefix}over the calibration's spread (every time of its machine ×{:.2} to ×{:.2}): \
             {} shards recommended as fitted, {} at the fast end, {} at the slow end; by what the \
             database did during its calibration, choose {}",
            spread.faster,
            spread.slower,
            name(fitted[index]),
            name(fast[index]),
            name(slow[index]),
            pessimistic.map_or("none of those simulated".to_owned(), |n| n.to_string()),
        );
        out += &wrap(&line, 100);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::summarize;

    #[test]
    fn a_narrow_terminal_keeps_the_columns_that_answer_and_drops_the_rest_in_order() {
        // The final's widths: 11 columns, 104 characters two spaces apart.
        let widths = [6, 9, 4, 9, 8, 8, 10, 8, 11, 11, 10];
        assert_eq!(fit_columns(&widths, None), ((0..11).collect(), 2));
        assert_eq!(fit_columns(&widths, Some(140)), ((0..11).collect(), 2));
        let (shown, gap) = fit_columns(&widths, Some(100));
        assert_eq!(
            shown,
            [0, 1, 3, 4, 5, 6, 9, 10],
            "util, backlog max and max wait go first"
        );
        assert_eq!(gap, 1);
        let (shown, _) = fit_columns(&widths, Some(80));
        assert_eq!(shown, [0, 3, 4, 5, 9, 10]);
        let width: usize = shown.iter().map(|&i| widths[i]).sum::<usize>() + shown.len() - 1;
        assert!(width + MARK_WIDTH <= 80, "{width}");
    }
    use crate::scenario::Overrides;

    fn table(colour: bool) -> String {
        let text =
            "shards = [1, 4]\nduration_s = 2\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 2000\n";
        let scenario =
            Scenario::parse(std::path::Path::new("t.toml"), text, &Overrides::default()).unwrap();
        let runs = crate::sweep::run(
            &scenario,
            0,
            vec![crate::model::NoEvents; 2],
            &crate::sweep::NoProgress,
        )
        .unwrap();
        let rows: Vec<SummaryRow> = runs
            .iter()
            .map(|(run, _)| summarize(&scenario, std::slice::from_ref(run)))
            .collect();
        render(&scenario, &rows, colour)
    }

    #[test]
    fn a_spread_reads_as_a_percentage_below_twice_and_as_times_above() {
        assert_eq!(how_far_above(0.8), "80% above");
        assert_eq!(how_far_above(1.1), "2.1×");
        assert_eq!(how_far_above(356.9), "358×");
    }

    #[test]
    fn colours_only_when_asked() {
        assert!(table(true).contains("\u{1b}["));
        let plain = table(false);
        assert!(!plain.contains('\u{1b}'));
        assert!(plain.contains("overloaded") && plain.contains("◀ recommended"));
    }

    #[test]
    fn wraps_long_readings() {
        let text = wrap(&"word ".repeat(50), 20);
        assert!(text.lines().all(|line| line.len() <= 20));
        assert_eq!(text.split_whitespace().count(), 50);
    }
}
