//! Simulated time: integer nanoseconds since the start of the run, so sums never drift.

/// A point in simulated time, or a duration, in nanoseconds.
pub type SimTime = u64;

/// Nanoseconds in one millisecond.
pub const NS_PER_MS: u64 = 1_000_000;
/// Nanoseconds in one second.
pub const NS_PER_S: u64 = 1_000_000_000;

/// `n` whole milliseconds as a [`SimTime`].
pub const fn ms(n: u64) -> SimTime {
    n * NS_PER_MS
}

/// Converts a finite, non-negative number of milliseconds to nanoseconds, rounding to the
/// nearest nanosecond and saturating at `u64::MAX`.
pub fn ms_f64_to_ns(value_ms: f64) -> SimTime {
    debug_assert!(value_ms.is_finite() && value_ms >= 0.0);
    (value_ms * NS_PER_MS as f64).round() as u64
}

/// Converts a finite, non-negative number of seconds to nanoseconds, rounding to the nearest
/// nanosecond and saturating at `u64::MAX`.
pub fn s_f64_to_ns(value_s: f64) -> SimTime {
    debug_assert!(value_s.is_finite() && value_s >= 0.0);
    (value_s * NS_PER_S as f64).round() as u64
}

/// Formats nanoseconds as exact decimal milliseconds without trailing zeros: `10`, `0.5`,
/// `1.000001`.
pub fn fmt_ms(ns: u64) -> String {
    fmt_scaled(ns, NS_PER_MS, 6)
}

/// Formats nanoseconds as exact decimal seconds without trailing zeros: `1`, `0.25`.
pub fn fmt_s(ns: u64) -> String {
    fmt_scaled(ns, NS_PER_S, 9)
}

fn fmt_scaled(ns: u64, unit: u64, digits: usize) -> String {
    let whole = ns / unit;
    let frac = ns % unit;
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:0digits$}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_exact_milliseconds() {
        assert_eq!(fmt_ms(0), "0");
        assert_eq!(fmt_ms(ms(10)), "10");
        assert_eq!(fmt_ms(500_000), "0.5");
        assert_eq!(fmt_ms(1_000_001), "1.000001");
        assert_eq!(fmt_s(250_000_000), "0.25");
    }

    #[test]
    fn converts_fractions_to_the_nearest_nanosecond() {
        assert_eq!(ms_f64_to_ns(0.1), 100_000);
        assert_eq!(ms_f64_to_ns(1.0000004), 1_000_000);
        assert_eq!(s_f64_to_ns(600.0), 600 * NS_PER_S);
    }
}
