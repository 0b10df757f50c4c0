//! Numbers for people, shared by every layer (it imports nothing of the crate), on the
//! terminal and in `report.html` (the CSV and JSON files keep exact milliseconds): durations
//! in the unit that suits them (ns, µs, ms, s, min, h) with three significant digits, counts
//! with thousands separators, intervals as `±`, plurals, bytes in binary units.

/// A duration from nanoseconds: `0`, `850 ns`, `328 µs`, `1.95 ms`, `26.7 s`, `23.1 min`.
pub fn duration(ns: u64) -> String {
    if ns == 0 {
        return "0".into();
    }
    let (scale, unit) = unit_of(ns);
    format!("{} {unit}", significant(ns as f64 / scale))
}

/// A duration with the half-width of its 95% interval, in the duration's unit:
/// `1.95 ±0.06 ms`; without an interval, as [`duration`].
pub fn duration_within(ns: u64, half_width_ns: Option<f64>) -> String {
    match half_width_ns {
        Some(half) if ns > 0 => {
            let (scale, unit) = unit_of(ns);
            format!(
                "{} ±{} {unit}",
                significant(ns as f64 / scale),
                two_significant(half / scale)
            )
        }
        _ => duration(ns),
    }
}

/// The unit a duration shows in; the bounds sit where three significant digits would round
/// up to the next unit (999.6 ms shows as `1 s`, not `1000 ms`).
fn unit_of(ns: u64) -> (f64, &'static str) {
    match ns {
        0..999 => (1.0, "ns"),
        999..999_500 => (1e3, "µs"),
        999_500..999_500_000 => (1e6, "ms"),
        999_500_000..59_950_000_000 => (1e9, "s"),
        59_950_000_000..3_597_000_000_000 => (6e10, "min"),
        _ => (3.6e12, "h"),
    }
}

/// Three significant digits, without trailing zeros: `1.95`, `26.7`, `328`, `0.06`.
fn significant(value: f64) -> String {
    digits(value, 3)
}

/// Two significant digits, for the half-width of an interval: `0.028`, `40`.
fn two_significant(value: f64) -> String {
    digits(value, 2)
}

fn digits(value: f64, significant: i32) -> String {
    if value == 0.0 || !value.is_finite() {
        return "0".into();
    }
    let magnitude = value.abs().log10().floor() as i32;
    let places = (significant - 1 - magnitude).clamp(0, 6) as usize;
    trim_zeros(format!("{value:.places$}"))
}

/// A decimal without trailing zeros after its point: `2.50` → `2.5`, `3.000` → `3`.
pub fn trim_zeros(text: String) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// A number with precision that suits its size: `0.012`, `4.5`, `1250`; `inf` when unbounded.
pub fn compact(value: f64) -> String {
    if !value.is_finite() {
        return "inf".into();
    }
    let text = if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    };
    trim_zeros(text)
}

/// A whole number with thousands separators: `1,397,369`.
pub fn count(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A rate or other quantity: separators from 1,000 up, three significant digits below;
/// `unbounded` when infinite, `–` when undefined.
pub fn quantity(value: f64) -> String {
    if value.is_nan() {
        "–".into()
    } else if value.is_infinite() {
        "unbounded".into()
    } else if value.abs() >= 999.5 {
        let rounded = value.abs().round() as u64;
        let sign = if value < 0.0 { "-" } else { "" };
        format!("{sign}{}", count(rounded))
    } else {
        significant(value)
    }
}

/// A utilization or other ratio with two decimals; `–` when undefined.
pub fn ratio(value: f64) -> String {
    if value.is_finite() {
        format!("{value:.2}")
    } else {
        "–".into()
    }
}

/// A factor such as `5.00` or, below 0.01, its first significant digits (`0.0004`), so a
/// light load never reads as `0.00×`.
pub fn factor(value: f64) -> String {
    if value.is_finite() && value > 0.0 && value < 0.01 {
        significant(value)
    } else {
        ratio(value)
    }
}

/// `1 shard`, `4 shards`.
pub fn plural(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// Breaks text into lines of at most `width` characters at spaces.
pub fn wrap(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("there is always a line");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join("\n")
}

/// Bytes for people: `512 MiB`, `3.2 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", (b / 1024.0).ceil())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(human_bytes(4 << 30), "4.0 GiB");
        assert_eq!(human_bytes(512 << 20), "512 MiB");
        assert_eq!(human_bytes(1500), "2 KiB");
    }

    #[test]
    fn a_light_load_is_never_zero_times_the_ceiling() {
        assert_eq!(factor(5.0), "5.00");
        assert_eq!(factor(0.25), "0.25");
        assert_eq!(factor(0.0004), "0.0004");
        assert_eq!(plural(1, "row"), "1 row");
        assert_eq!(plural(4, "row"), "4 rows");
    }

    #[test]
    fn durations_take_the_unit_that_suits_them() {
        assert_eq!(duration(0), "0");
        assert_eq!(duration(850), "850 ns");
        assert_eq!(duration(328_191), "328 µs");
        assert_eq!(duration(1_949_000), "1.95 ms");
        assert_eq!(duration(26_676_000_000), "26.7 s");
        assert_eq!(duration(1_388_348_000_000), "23.1 min");
        assert_eq!(duration(999_990_000), "1 s", "no 1000 ms");
        assert_eq!(duration(59_990_000_000), "1 min");
        assert_eq!(duration_within(1_949_000, Some(60_000.0)), "1.95 ±0.06 ms");
    }

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_397_369), "1,397,369");
        assert_eq!(quantity(16_000.0), "16,000");
        assert_eq!(quantity(0.625), "0.625");
        assert_eq!(quantity(f64::INFINITY), "unbounded");
        assert_eq!(plural(1, "shard"), "1 shard");
        assert_eq!(plural(4, "shard"), "4 shards");
    }
}
