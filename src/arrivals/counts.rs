//! A dashboard's export as a profile: a CSV (plain, gzip or zstd) of a time and a count (or a
//! rate) per interval, read into consecutive Poisson segments. The time column is read as a
//! trace's is ([`super::timestamps`]); the intervals must follow each other exactly, so a gap
//! or a repeated interval is an error naming its line, never a silent hole in the night.

use std::path::Path;

use csv::{ByteRecord, ReaderBuilder, Trim};

use super::timestamps::TimeFormat;
use super::trace::{TIME_COLUMNS, TraceTime, open_decompressed};
use crate::error::InputError;
use crate::model::SimTime;

/// How a counts file is read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CountsSpec {
    /// The time column and its format (as a trace's; no reorder window).
    pub time: TraceTime,
    /// The count column's name (default `count`).
    pub count_column: Option<String>,
    /// The rate column's name, per second (default `rate`, used when there is no count column).
    pub rate_column: Option<String>,
    /// The interval each line covers, ns (`None`: the spacing of the first two lines).
    pub interval: Option<SimTime>,
}

/// What a counts file holds, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Counts {
    /// The interval each line covers, ns.
    pub interval: SimTime,
    /// Each interval's rate, per second, in time order from the first line's.
    pub rates_per_s: Vec<f64>,
    /// How its time column was read (the detected format filled in).
    pub time: TraceTime,
    /// The column the values came from, and whether they are counts (else rates).
    pub value_column: (String, bool),
}

/// The most intervals a counts file may hold (a year of seconds).
pub const MAX_INTERVALS: usize = 31_622_400;

/// Reads `path` as `spec` says; each error names the file and, for a line, the line.
pub fn read(path: &Path, spec: &CountsSpec) -> Result<Counts, InputError> {
    crate::input::check_regular(path, "the counts file")?;
    let mut reader = ReaderBuilder::new()
        .trim(Trim::All)
        .from_reader(open_decompressed(path)?);
    let header = reader
        .byte_headers()
        .map_err(|err| InputError::trace(path, 1, format!("malformed CSV: {err}")))?
        .clone();
    let find = |name: &str| header.iter().position(|field| field == name.as_bytes());
    let (time_index, time_column) = time_column(path, spec, &find)?;
    let (value_index, value_column, is_count) = value_column(path, spec, &find)?;
    let mut time = TraceTime {
        column: Some(time_column.clone()),
        ..spec.time.clone()
    };
    let mut record = ByteRecord::new();
    let mut rows: Vec<(u64, i64, f64)> = Vec::new();
    while reader.read_byte_record(&mut record).map_err(|err| {
        InputError::trace(path, rows.len() as u64 + 2, format!("malformed CSV: {err}"))
    })? {
        let line = record
            .position()
            .map_or(rows.len() as u64 + 2, |p| p.line());
        let at = |message: String| InputError::trace(path, line, message);
        let text = record.get(time_index).unwrap_or_default();
        let written = time.read(&time_column, text, line).map_err(at)?;
        let value_text = record.get(value_index).unwrap_or_default();
        let value = std::str::from_utf8(value_text)
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                at(format!(
                    "{value_column} {:?} is not a {} ≥ 0",
                    String::from_utf8_lossy(value_text),
                    if is_count { "count" } else { "rate" }
                ))
            })?;
        if rows.len() >= MAX_INTERVALS {
            return Err(at(format!("more than {MAX_INTERVALS} intervals")));
        }
        rows.push((line, written, value));
    }
    let Some(&(_, first, _)) = rows.first() else {
        return Err(InputError::trace(
            path,
            2,
            "the counts file holds no intervals: add lines after the header",
        ));
    };
    let interval = interval(path, spec, &rows)?;
    let mut rates_per_s = Vec::with_capacity(rows.len());
    for (index, &(line, written, value)) in rows.iter().enumerate() {
        let expected = i128::from(first) + index as i128 * i128::from(interval);
        if i128::from(written) != expected {
            return Err(InputError::trace(
                path,
                line,
                order_problem(&rows, index, expected, interval),
            ));
        }
        rates_per_s.push(if is_count {
            value / (interval as f64 / 1e9)
        } else {
            value
        });
    }
    time.start_ns = (!time.format.as_ref().is_some_and(TimeFormat::is_offset)).then_some(first);
    Ok(Counts {
        interval,
        rates_per_s,
        time,
        value_column: (value_column, is_count),
    })
}

/// Why line `index` is not at `expected`: a gap after the line before, a repeat of an
/// interval already counted, or a time out of order.
fn order_problem(
    rows: &[(u64, i64, f64)],
    index: usize,
    expected: i128,
    interval: SimTime,
) -> String {
    let written = i128::from(rows[index].1);
    let ms = |ns: i128| crate::time::fmt_ms(u64::try_from(ns.unsigned_abs()).unwrap_or(u64::MAX));
    if let Some(&(earlier, _, _)) = rows[..index]
        .iter()
        .find(|&&(_, time, _)| i128::from(time) == written)
    {
        return format!("repeats the interval of line {earlier}: each interval is counted once");
    }
    if written > expected {
        format!(
            "starts {} ms after the interval before it ends: a gap of {} intervals of {} ms (write a line with 0 for an interval without likes)",
            ms(written - expected),
            (written - expected) / i128::from(interval.max(1)),
            ms(i128::from(interval))
        )
    } else {
        format!(
            "starts {} ms before the interval before it ends: intervals follow each other, each {} ms, in time order",
            ms(expected - written),
            ms(i128::from(interval))
        )
    }
}

/// The interval `spec` gives, or the spacing of the first two lines (one line: an error).
fn interval(
    path: &Path,
    spec: &CountsSpec,
    rows: &[(u64, i64, f64)],
) -> Result<SimTime, InputError> {
    if let Some(interval) = spec.interval {
        return Ok(interval);
    }
    match rows {
        [(_, first, _), (_, second, _), ..] if second > first => {
            Ok(u64::try_from(second - first).unwrap_or(u64::MAX))
        }
        [_, (line, _, _), ..] => Err(InputError::trace(
            path,
            *line,
            "is not after the line before it, so the interval cannot be told from their spacing: set arrivals.interval_s",
        )),
        _ => Err(InputError::trace(
            path,
            2,
            "one line cannot tell its interval: set arrivals.interval_s",
        )),
    }
}

/// The time column: the one `spec` names, else the first of a trace's defaults.
fn time_column(
    path: &Path,
    spec: &CountsSpec,
    find: &dyn Fn(&str) -> Option<usize>,
) -> Result<(usize, String), InputError> {
    match &spec.time.column {
        Some(name) => find(name).map(|i| (i, name.clone())).ok_or_else(|| {
            InputError::trace(path, 1, format!("the header has no column {name:?} (arrivals.time_column)"))
        }),
        None => TIME_COLUMNS
            .iter()
            .find_map(|name| find(name).map(|i| (i, (*name).to_owned())))
            .ok_or_else(|| {
                InputError::trace(
                    path,
                    1,
                    "the header has no time column: call it timestamp, time, ts or t_ms, or name it in arrivals.time_column",
                )
            }),
    }
}

/// The value column: the count column, else the rate column; (index, name, is a count).
fn value_column(
    path: &Path,
    spec: &CountsSpec,
    find: &dyn Fn(&str) -> Option<usize>,
) -> Result<(usize, String, bool), InputError> {
    let named =
        |name: &Option<String>, default: &str| name.clone().unwrap_or_else(|| default.to_owned());
    let (count, rate) = (
        named(&spec.count_column, "count"),
        named(&spec.rate_column, "rate"),
    );
    let asked_rate = spec.rate_column.is_some() && spec.count_column.is_none();
    if !asked_rate && let Some(i) = find(&count) {
        return Ok((i, count, true));
    }
    if let Some(i) = find(&rate) {
        return Ok((i, rate, false));
    }
    Err(InputError::trace(
        path,
        1,
        format!(
            "the header has neither a count column ({count}) nor a rate column ({rate}): name one in arrivals.count_column or arrivals.rate_column"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str, spec: &CountsSpec) -> Result<Counts, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts.csv");
        std::fs::write(&path, text).unwrap();
        read(&path, spec).map_err(|e| e.to_string())
    }

    #[test]
    fn counts_per_interval_become_rates_and_the_interval_is_told_by_the_spacing() {
        let counts = read_text(
            "timestamp,count\n2025-11-29T14:12:00Z,120\n2025-11-29T14:13:00Z,300\n2025-11-29T14:14:00Z,0\n",
            &CountsSpec::default(),
        )
        .unwrap();
        assert_eq!(counts.interval, 60_000_000_000);
        assert_eq!(counts.rates_per_s, [2.0, 5.0, 0.0]);
        let rates = read_text(
            "ts,rate\n1764425520,2000\n1764425521,2500\n",
            &CountsSpec::default(),
        )
        .unwrap();
        assert_eq!(
            (rates.interval, rates.rates_per_s),
            (1_000_000_000, vec![2000.0, 2500.0])
        );
    }

    #[test]
    fn a_gap_a_repeat_and_a_negative_count_are_refused_naming_the_line() {
        let spec = CountsSpec::default();
        let gap = read_text(
            "ts,count\n1764425520,1\n1764425521,1\n1764425524,1\n",
            &spec,
        )
        .unwrap_err();
        assert!(
            gap.contains("line 4") && gap.contains("a gap of 2 intervals"),
            "{gap}"
        );
        let repeat = read_text(
            "ts,count\n1764425520,1\n1764425521,1\n1764425521,1\n",
            &spec,
        )
        .unwrap_err();
        assert!(
            repeat.contains("line 4") && repeat.contains("repeats the interval of line 3"),
            "{repeat}"
        );
        let negative = read_text("ts,count\n1764425520,1\n1764425521,-3\n", &spec).unwrap_err();
        assert!(
            negative.contains("line 3") && negative.contains("≥ 0"),
            "{negative}"
        );
        let lone = read_text("ts,count\n1764425520,1\n", &spec).unwrap_err();
        assert!(lone.contains("interval_s"), "{lone}");
    }
}
