//! The summary table printed after a run: one aligned row per shard count with its verdict,
//! the recommended shard count highlighted, and a reading of the result. Colours only when
//! the caller says the output is a terminal that accepts them.

use std::fmt::Write;

use anstyle::{AnsiColor, Style};

use crate::model::machine::GrantOrder;
use crate::scenario::Scenario;

use super::extended::extended_tables;
use super::headline::{Headline, Load};

use super::reading::reading;
use super::table::{HEADER, summary_lines};
use super::units::{self, count, quantity, wrap};
use crate::figures::{PolicyRows, SummaryRow, Verdict, by_policy};
use crate::units::compact;

/// The machine sections in a phrase (empty without them).
fn machine_phrase(scenario: &Scenario) -> String {
    let machine = &scenario.machine();
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
    let headline = Headline::of(scenario, rows);
    let (amount, load) = match headline.load {
        Load::Closed {
            clients,
            think_ns,
            max_per_s,
        } => (
            // A closed loop's count differs per shard count (its load follows the rows).
            String::new(),
            format!(
                "{} in a closed loop, think {}, up to {}/s",
                units::plural(u64::from(clients), "client"),
                units::duration(think_ns.round() as u64),
                quantity(max_per_s)
            ),
        ),
        Load::Open {
            increments,
            many_keys,
            peak_per_s,
        } => (
            format!("{} increments over ", count(increments)),
            format!(
                "{}peak {}/s",
                if many_keys { "busiest key's " } else { "" },
                quantity(peak_per_s)
            ),
        ),
    };
    let mut line = format!(
        "{}{}: {amount}{} s ({load}), mean hold {} ms{}, policy {}, seed {}",
        scenario.name(),
        traffic_phrase(&headline),
        compact(headline.duration_s),
        compact(headline.hold_ns / 1e6),
        machine_phrase(scenario),
        headline.policies,
        headline.seed
    );
    if let Some(slo) = headline.slo {
        let _ = write!(line, ", target {slo}");
    }
    if let Some(width) = table_width() {
        line = wrap(&line, width.clamp(40, MAX_LINE));
    }
    let _ = writeln!(out, "{}", paint(Style::new().bold(), &line));
    if let Some(note) = calibration_note(scenario) {
        let _ = writeln!(out, "{}", wrap(&note, line_width()));
    }
    if let Some(note) = trace_note(scenario) {
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
    (!scenario.calibration_kept().is_empty()).then(|| {
        format!(
            "note: the scenario sets {} itself, so the calibration's values of these are not used; \
             leave them out of the scenario to take the calibrated ones",
            scenario.calibration_kept().join(", ")
        )
    })
}

/// How a trace's times were read, when not as plain `t_ms` in order.
pub fn trace_note(scenario: &Scenario) -> Option<String> {
    let crate::scenario::ArrivalPlan::Trace(info) = scenario.arrivals() else {
        return None;
    };
    info.time().describe().map(|text| format!("note: {text}"))
}

/// " at traffic ×2" (and a trace's speed-up) when the what-if traffic changes the arrivals.
fn traffic_phrase(headline: &Headline) -> String {
    let mut phrase = String::new();
    if let Some(scale) = headline.scale {
        let _ = write!(phrase, " at traffic ×{}", compact(scale));
    }
    if let Some(speed) = headline.speed {
        let _ = write!(phrase, ", trace sped up ×{}", compact(speed));
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
            Verdict::Metastable | Verdict::Overloaded | Verdict::Saturated => {
                AnsiColor::Red.on_default()
            }
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
    for (index, policy) in scenario.policies().iter().enumerate() {
        let ends = [fast[index], fitted[index], slow[index]];
        let pessimistic = if ends.iter().any(Option::is_none) {
            None
        } else {
            ends.iter().flatten().max().copied()
        };
        let prefix = if scenario.policies().len() > 1 {
            format!("{policy}: ")
        } else {
            String::new()
        };
        let line = format!(
            "{prefix}over {}: {} shards recommended at the slow end, {} as fitted, {} at the \
             optimistic end; choose {}",
            super::band_name(spread.faster, spread.slower, spread.coverage),
            name(slow[index]),
            name(fitted[index]),
            name(fast[index]),
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
