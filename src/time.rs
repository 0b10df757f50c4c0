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
#[inline]
pub fn ms_f64_to_ns(value_ms: f64) -> SimTime {
    debug_assert!(value_ms.is_finite() && value_ms >= 0.0);
    round_to_ns(value_ms * NS_PER_MS as f64)
}

/// Converts a finite, non-negative number of seconds to nanoseconds, rounding to the nearest
/// nanosecond and saturating at `u64::MAX`.
#[inline]
pub fn s_f64_to_ns(value_s: f64) -> SimTime {
    debug_assert!(value_s.is_finite() && value_s >= 0.0);
    round_to_ns(value_s * NS_PER_S as f64)
}

/// Nanoseconds as (floating-point) seconds.
#[inline]
pub fn ns_to_s(ns: u64) -> f64 {
    ns as f64 / NS_PER_S as f64
}

/// Nanoseconds as (floating-point) milliseconds.
#[inline]
pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

/// `value.round() as u64` — the nearest integer, halves away from zero, 0 for NaN and below
/// zero, `u64::MAX` from 2⁶⁴ — bit for bit, without the call to `round` that x86-64's
/// baseline instruction set makes (it has no rounding instruction): below 2⁵² the fraction
/// `value − trunc(value)` is exact, so comparing it with one half decides exactly as `round`.
#[inline(always)]
pub fn round_to_ns(value: f64) -> u64 {
    const EVERY_DOUBLE_AN_INTEGER: f64 = 4_503_599_627_370_496.0; // 2^52
    if value.is_nan() || value < 0.0 {
        return 0;
    }
    if value >= EVERY_DOUBLE_AN_INTEGER {
        return value as u64;
    }
    let whole = value as u64;
    whole + u64::from(value - whole as f64 >= 0.5)
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
    fn rounds_exactly_as_the_standard_library() {
        let edges = [
            0.0,
            -0.0,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            -0.4,
            -2.5,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9_007_199_254_740_993.0,
            1.8446744073709552e19,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
        ];
        for value in edges {
            assert_eq!(round_to_ns(value), value.round() as u64, "{value:e}");
        }
        // Every binade from 2^-30 to 2^70, through a simple generator of mantissas.
        let mut bits = 0x9E37_79B9_7F4A_7C15u64;
        for exponent in -30..70 {
            for _ in 0..20_000 {
                bits ^= bits << 13;
                bits ^= bits >> 7;
                bits ^= bits << 17;
                let mantissa = 1.0 + (bits >> 12) as f64 / (1u64 << 52) as f64;
                let value = mantissa * 2f64.powi(exponent);
                for value in [value, (value * 2.0).round() / 2.0] {
                    assert_eq!(round_to_ns(value), value.round() as u64, "{value:e}");
                }
            }
        }
    }

    #[test]
    fn converts_fractions_to_the_nearest_nanosecond() {
        assert_eq!(ms_f64_to_ns(0.1), 100_000);
        assert_eq!(ms_f64_to_ns(1.0000004), 1_000_000);
        assert_eq!(s_f64_to_ns(600.0), 600 * NS_PER_S);
    }
}
