//! A trace's time column: how its values are written, how a format is told from the first
//! value when the scenario does not name one, and how each value becomes nanoseconds.
//! Calendar times (RFC 3339, strftime patterns) are parsed by `jiff`; decimal counts from an
//! origin (`t_ms`, epoch units) exactly, digit by digit, so no float rounds a time.

use std::fmt;

/// How a trace writes its times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeFormat {
    /// Milliseconds from the start of the replay, fractions allowed: `12`, `12.5`.
    MsOffset,
    /// RFC 3339 / ISO 8601 with an offset: `2026-11-29T19:42:07.123+05:30`; a space for the
    /// `T` and a trailing `UTC` (or `Z`) for the zero offset are accepted.
    Rfc3339,
    /// A count of seconds, milli-, micro- or nanoseconds since 1970-01-01 UTC, fractions
    /// allowed: `1764425527.123` (nginx `$msec`), `1764425527123`.
    Epoch(EpochUnit),
    /// A strftime pattern that includes the zone or offset (`%z`, `%:z`, `%Q`), e.g.
    /// `%d/%b/%Y:%H:%M:%S %z`.
    Pattern(String),
}

/// The unit of an epoch count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochUnit {
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Millis,
    /// Microseconds.
    Micros,
    /// Nanoseconds.
    Nanos,
}

impl EpochUnit {
    const ALL: [EpochUnit; 4] = [
        EpochUnit::Seconds,
        EpochUnit::Millis,
        EpochUnit::Micros,
        EpochUnit::Nanos,
    ];

    /// Nanoseconds in one unit.
    fn ns(self) -> i128 {
        match self {
            EpochUnit::Seconds => 1_000_000_000,
            EpochUnit::Millis => 1_000_000,
            EpochUnit::Micros => 1_000,
            EpochUnit::Nanos => 1,
        }
    }

    /// Digits of the whole part of a count in this unit for a time between 2001-09-09 and
    /// 2286-11-20 (the ten-digit seconds).
    fn digits(self) -> usize {
        match self {
            EpochUnit::Seconds => 10,
            EpochUnit::Millis => 13,
            EpochUnit::Micros => 16,
            EpochUnit::Nanos => 19,
        }
    }

    fn name(self) -> &'static str {
        match self {
            EpochUnit::Seconds => "epoch-s",
            EpochUnit::Millis => "epoch-ms",
            EpochUnit::Micros => "epoch-us",
            EpochUnit::Nanos => "epoch-ns",
        }
    }
}

/// The formats `time_format` names, for messages.
pub const FORMAT_NAMES: &str = "auto, ms-offset, rfc3339, epoch-s, epoch-ms, epoch-us, epoch-ns or a strftime pattern with a zone (%z, %:z or %Q)";

/// The years an epoch count whose unit was guessed must fall in.
const PLAUSIBLE_YEARS: std::ops::RangeInclusive<i16> = 1990..=2100;

impl fmt::Display for TimeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeFormat::MsOffset => f.write_str("ms-offset"),
            TimeFormat::Rfc3339 => f.write_str("rfc3339"),
            TimeFormat::Epoch(unit) => f.write_str(unit.name()),
            TimeFormat::Pattern(pattern) => f.write_str(pattern),
        }
    }
}

impl TimeFormat {
    /// The format `time_format` names; `None` for `auto` (detect it from the first value).
    pub fn from_name(name: &str) -> Result<Option<TimeFormat>, String> {
        let format = match name {
            "auto" => return Ok(None),
            "ms-offset" => TimeFormat::MsOffset,
            "rfc3339" => TimeFormat::Rfc3339,
            pattern if pattern.contains('%') => {
                if !["%z", "%:z", "%::z", "%Q", "%:Q"]
                    .iter()
                    .any(|zone| pattern.contains(zone))
                {
                    return Err(format!(
                        "the pattern {pattern:?} has no zone: add %z (+0530), %:z (+05:30) or %Q (Asia/Kolkata), so its times are not read in a guessed zone"
                    ));
                }
                TimeFormat::Pattern(pattern.to_owned())
            }
            other => match EpochUnit::ALL.into_iter().find(|u| u.name() == other) {
                Some(unit) => TimeFormat::Epoch(unit),
                None => return Err(format!("is {other:?}; use {FORMAT_NAMES}")),
            },
        };
        Ok(Some(format))
    }

    /// Whether its times count from the replay's start (else from 1970: the replay starts at
    /// the earliest line).
    pub fn is_offset(&self) -> bool {
        *self == TimeFormat::MsOffset
    }

    /// `text` in nanoseconds: from the replay's start for [`TimeFormat::MsOffset`], else
    /// since 1970-01-01 UTC. `None` when it is not a time of this format.
    pub fn parse(&self, text: &[u8]) -> Option<i64> {
        match self {
            TimeFormat::MsOffset => {
                super::trace::parse_ms(text).and_then(|ns| i64::try_from(ns).ok())
            }
            TimeFormat::Epoch(unit) => parse_decimal(text, unit.ns()),
            TimeFormat::Rfc3339 => {
                let text = std::str::from_utf8(text).ok()?;
                let timestamp: jiff::Timestamp = match text.strip_suffix("UTC") {
                    Some(rest) => format!("{}Z", rest.trim_end()).parse().ok()?,
                    None => text.parse().ok()?,
                };
                i64::try_from(timestamp.as_nanosecond()).ok()
            }
            TimeFormat::Pattern(pattern) => {
                let text = std::str::from_utf8(text).ok()?;
                let timestamp = jiff::fmt::strtime::parse(pattern, text)
                    .ok()?
                    .to_timestamp()
                    .ok()?;
                i64::try_from(timestamp.as_nanosecond()).ok()
            }
        }
    }
}

/// The format of a time column named `column` whose first value is `value`, with how it was
/// told; an error, naming what was tried, when neither the name nor the value decides it.
pub fn detect(column: &str, value: &[u8]) -> Result<(TimeFormat, String), String> {
    let text = String::from_utf8_lossy(value);
    if column == "t_ms" {
        return Ok((TimeFormat::MsOffset, "the column t_ms".into()));
    }
    if let Some(unit) = unit_of_name(column) {
        let format = TimeFormat::Epoch(unit);
        return match format.parse(value) {
            Some(_) => Ok((format, format!("the column's name {column}"))),
            None => Err(format!(
                "{text:?} is not a count of {} (the column's name {column} says so); set arrivals.time_format ({FORMAT_NAMES})",
                unit.name()
            )),
        };
    }
    if TimeFormat::Rfc3339.parse(value).is_some() {
        return Ok((TimeFormat::Rfc3339, "the first value".into()));
    }
    let whole = value.split(|&b| b == b'.').next().unwrap_or_default();
    let guessed = EpochUnit::ALL
        .into_iter()
        .find(|unit| unit.digits() == whole.len());
    match guessed {
        Some(unit) if TimeFormat::Epoch(unit).parse(value).is_some() => {
            let ns = TimeFormat::Epoch(unit).parse(value).unwrap_or_default();
            check_plausible(&text, unit, ns)?;
            Ok((
                TimeFormat::Epoch(unit),
                format!("the first value's {} digits", whole.len()),
            ))
        }
        _ if whole.iter().all(u8::is_ascii_digit) && !whole.is_empty() => Err(format!(
            "{text:?} is ambiguous: a count of {} digits could be seconds, milliseconds, microseconds or nanoseconds since 1970; set arrivals.time_format ({FORMAT_NAMES})",
            whole.len()
        )),
        _ if text.contains(':') && text.contains('-') => Err(format!(
            "{text:?} has no offset, so its zone would be a guess: write it with one (Z, +05:30 or a trailing UTC), or set arrivals.time_format to a pattern with its zone (%Q for a zone name)"
        )),
        _ => Err(format!(
            "{text:?} is not a time in any format tried ({FORMAT_NAMES}): set arrivals.time_format"
        )),
    }
}

/// The epoch unit a column's name states: `*_s`, `*_ms`, `*_us`, `*_ns` (`t_ms` aside).
fn unit_of_name(column: &str) -> Option<EpochUnit> {
    let lower = column.to_ascii_lowercase();
    [
        ("_ns", EpochUnit::Nanos),
        ("_us", EpochUnit::Micros),
        ("_ms", EpochUnit::Millis),
        ("_s", EpochUnit::Seconds),
    ]
    .into_iter()
    .find(|(suffix, _)| lower.ends_with(suffix))
    .map(|(_, unit)| unit)
}

/// Refuses a guessed unit that puts `ns` outside [`PLAUSIBLE_YEARS`], naming a unit that
/// would not.
fn check_plausible(text: &str, unit: EpochUnit, ns: i64) -> Result<(), String> {
    let year = |ns: i128| {
        jiff::Timestamp::from_nanosecond(ns)
            .ok()
            .map(|t| jiff::tz::Offset::UTC.to_datetime(t).year())
    };
    let guessed_year = year(i128::from(ns));
    if guessed_year.is_some_and(|y| PLAUSIBLE_YEARS.contains(&y)) {
        return Ok(());
    }
    let count = i128::from(ns) / unit.ns();
    let better = EpochUnit::ALL
        .into_iter()
        .find(|other| year(count * other.ns()).is_some_and(|y| PLAUSIBLE_YEARS.contains(&y)));
    Err(format!(
        "{text:?} read as {} is in the year {}: {}set arrivals.time_format",
        unit.name(),
        guessed_year.map_or("out of range".to_owned(), |y| y.to_string()),
        better.map_or(String::new(), |b| format!(
            "as {} it would make sense; ",
            b.name()
        ))
    ))
}

/// A non-negative decimal count (`1764425527.123`) times `unit_ns`, exactly, digits beyond
/// the nanosecond rounded half up; `None` for anything else or a time past 2262.
fn parse_decimal(text: &[u8], unit_ns: i128) -> Option<i64> {
    let (whole, fraction) = match text.iter().position(|&b| b == b'.') {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &b""[..]),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if whole.is_empty() || whole.len() > 20 || !digits(whole) || !digits(fraction) {
        return None;
    }
    let whole: i128 = std::str::from_utf8(whole).ok()?.parse().ok()?;
    // The fraction's digits down to the nanosecond, and the next for rounding.
    let places = unit_ns.ilog10() as usize;
    let mut fraction_ns: i128 = 0;
    for i in 0..places {
        fraction_ns = fraction_ns * 10 + fraction.get(i).map_or(0, |d| i128::from(d - b'0'));
    }
    let round_up = fraction.get(places).is_some_and(|&d| d >= b'5');
    i64::try_from(whole * unit_ns + fraction_ns + i128::from(round_up)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NIGHT: i64 = 1_764_425_527_123_000_000; // 2025-11-29T14:12:07.123Z

    #[test]
    fn each_format_reads_the_same_instant() {
        let cases: [(TimeFormat, &str); 7] = [
            (TimeFormat::Rfc3339, "2025-11-29T19:42:07.123+05:30"),
            (TimeFormat::Rfc3339, "2025-11-29 14:12:07.123 UTC"),
            (TimeFormat::Rfc3339, "2025-11-29T14:12:07.123Z"),
            (TimeFormat::Epoch(EpochUnit::Seconds), "1764425527.123"),
            (TimeFormat::Epoch(EpochUnit::Millis), "1764425527123"),
            (TimeFormat::Epoch(EpochUnit::Micros), "1764425527123000"),
            (
                TimeFormat::Pattern("%d/%b/%Y:%H:%M:%S%.f %z".into()),
                "29/Nov/2025:19:42:07.123 +0530",
            ),
        ];
        for (format, text) in cases {
            assert_eq!(
                format.parse(text.as_bytes()),
                Some(NIGHT),
                "{format} {text}"
            );
        }
        assert_eq!(
            TimeFormat::Epoch(EpochUnit::Nanos).parse(b"1764425527123000000"),
            Some(NIGHT)
        );
        assert_eq!(TimeFormat::MsOffset.parse(b"12.5"), Some(12_500_000));
        // Digits past the nanosecond round half up.
        assert_eq!(
            TimeFormat::Epoch(EpochUnit::Seconds).parse(b"1.0000000005"),
            Some(1_000_000_001)
        );
    }

    #[test]
    fn detects_a_format_from_the_name_or_the_value_and_refuses_a_guess() {
        let detected = |column: &str, value: &str| detect(column, value.as_bytes()).map(|(f, _)| f);
        assert_eq!(detected("t_ms", "12"), Ok(TimeFormat::MsOffset));
        assert_eq!(
            detected("timestamp", "2025-11-29T19:42:07+05:30"),
            Ok(TimeFormat::Rfc3339)
        );
        assert_eq!(
            detected("time", "1764425527.123"),
            Ok(TimeFormat::Epoch(EpochUnit::Seconds))
        );
        assert_eq!(
            detected("ts", "1764425527123"),
            Ok(TimeFormat::Epoch(EpochUnit::Millis))
        );
        assert_eq!(
            detected("ts_us", "42"),
            Ok(TimeFormat::Epoch(EpochUnit::Micros))
        );
        // Seven digits: seconds? milliseconds? Not guessed.
        let ambiguous = detected("ts", "1764425").unwrap_err();
        assert!(ambiguous.contains("ambiguous"), "{ambiguous}");
        // Ten digits read as seconds land in 2128: said, with no other unit that would fit.
        let late = detected("ts", "5000000000").unwrap_err();
        assert!(late.contains("2128"), "{late}");
    }

    #[test]
    fn names_its_formats_and_refuses_a_pattern_without_a_zone() {
        assert_eq!(TimeFormat::from_name("auto"), Ok(None));
        assert_eq!(
            TimeFormat::from_name("epoch-us"),
            Ok(Some(TimeFormat::Epoch(EpochUnit::Micros)))
        );
        assert!(
            TimeFormat::from_name("%Y-%m-%d %H:%M:%S")
                .unwrap_err()
                .contains("no zone")
        );
        assert!(
            TimeFormat::from_name("seconds")
                .unwrap_err()
                .contains("rfc3339")
        );
        for bad in ["", "-1", "1e3", "abc", "1.2.3"] {
            assert_eq!(
                TimeFormat::Epoch(EpochUnit::Seconds).parse(bad.as_bytes()),
                None,
                "{bad}"
            );
        }
    }
}
