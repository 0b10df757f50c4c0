//! `validate`'s verdict on one point, on both sides of every rule: the throughput within 15%,
//! a stable point's predicted p99 interval overlapping its measured repeats' range widened by
//! 25%, and the measured and predicted stability equal —
//! an optimistic call (predicted stable, measured collapsed) and a conservative one (the
//! reverse) both a miss.

use std::time::Duration;

use shardsim::calibrate::load::Load;
use shardsim::calibrate::validate::{Point, Prediction, Repeat, StabilityCall, Tolerance};
use shardsim::stats::WaitSummary;

/// `validate`'s default tolerance.
const DEFAULT: Tolerance = Tolerance {
    tps_rel: 0.15,
    p99_rel: 0.25,
};

/// A point measured once at 1,000/s with a 10 ms p99 (offered 1,000/s when it kept up,
/// 1,500/s when it fell behind), predicted at `tps` and `p99_ms`, with the predicted stability
/// given.
fn point(tps: f64, p99_ms: f64, measured_stable: bool, predicted_stable: bool) -> Point {
    let offered = if measured_stable { 1000.0 } else { 1500.0 };
    let measured = Repeat {
        tps: 1000.0,
        responses: summary(10.0),
        stable: measured_stable,
        steady_p99_ns: None,
    };
    Point::new(
        load(offered),
        vec![measured],
        prediction(tps, p99_ms, p99_ms, predicted_stable),
        None,
    )
}

/// An open stream of `rate_per_s` over 4 rows.
fn load(rate_per_s: f64) -> Load {
    Load {
        rows: 4,
        clients: 32,
        rate_per_s: Some(rate_per_s),
        think: Duration::ZERO,
        warmup: Duration::from_secs(1),
        duration: Duration::from_secs(5),
    }
}

/// 1,000 responses with a p99 of `p99_ms`.
fn summary(p99_ms: f64) -> WaitSummary {
    WaitSummary {
        count: 1000,
        p99_ns: (p99_ms * 1e6) as u64,
        ..WaitSummary::default()
    }
}

/// A prediction of `tps` with p99s from `low_ms` to `high_ms` over its replications.
fn prediction(tps: f64, low_ms: f64, high_ms: f64, stable: bool) -> Prediction {
    Prediction {
        tps,
        responses: summary(low_ms),
        p99_range: ((low_ms * 1e6) as u64, (high_ms * 1e6) as u64),
        stable,
        metastable: false,
        marginal: false,
        hidden_per_s: None,
        tipped_by: None,
    }
}

#[test]
fn throughput_within_fifteen_percent_passes_and_beyond_it_misses_either_way() {
    for (tps, misses) in [
        (1000.0, false),
        (1149.0, false),
        (851.0, false),
        (1151.0, true),
        (849.0, true),
    ] {
        let verdict = point(tps, 10.0, true, true).miss(&DEFAULT);
        assert_eq!(verdict.is_some(), misses, "{tps}/s: {verdict:?}");
        if misses {
            assert!(verdict.unwrap().contains("throughput off by"));
        }
    }
}

#[test]
fn a_stable_points_p99_within_twenty_five_percent_passes_and_beyond_it_misses() {
    for (p99_ms, misses) in [(12.4, false), (7.6, false), (12.6, true), (7.4, true)] {
        let verdict = point(1000.0, p99_ms, true, true).miss(&DEFAULT);
        assert_eq!(verdict.is_some(), misses, "{p99_ms} ms: {verdict:?}");
        if misses {
            assert!(verdict.unwrap().contains("p99 response off by"));
        }
    }
    // A collapsed point's p99 is not judged: only its stability is.
    assert_eq!(point(1000.0, 500.0, false, false).miss(&DEFAULT), None);
}

#[test]
fn stability_must_agree_and_an_optimistic_call_is_a_miss_as_a_conservative_one_is() {
    let optimistic = point(1000.0, 10.0, false, true);
    assert_eq!(optimistic.stability_call(), StabilityCall::Optimistic);
    assert_eq!(
        optimistic.miss(&DEFAULT).unwrap(),
        "measured collapsed, predicted stable (optimistic)"
    );
    let conservative = point(1000.0, 10.0, true, false);
    assert_eq!(conservative.stability_call(), StabilityCall::Conservative);
    assert_eq!(
        conservative.miss(&DEFAULT).unwrap(),
        "measured stable, predicted collapsed (conservative)"
    );
    for (measured, predicted) in [(true, true), (false, false)] {
        let agrees = point(1000.0, 10.0, measured, predicted).stability_call();
        assert_eq!(agrees, StabilityCall::Agrees);
    }
    // Stability is judged before the throughput and the tail.
    assert!(
        point(2000.0, 50.0, false, true)
            .miss(&DEFAULT)
            .unwrap()
            .starts_with("measured")
    );
}

#[test]
fn a_stable_points_p99_interval_must_overlap_its_repeats_range_widened_by_twenty_five_percent() {
    // Repeats kept up at 8, 10 and 14 ms (widened: 6–17.5 ms).
    let repeat = |p99_ms: f64, stable: bool| Repeat {
        tps: if stable { 1500.0 } else { 900.0 },
        responses: WaitSummary {
            count: 1000,
            p99_ns: (p99_ms * 1e6) as u64,
            ..WaitSummary::default()
        },
        stable,
        steady_p99_ns: None,
    };
    let with = |low_ms: f64, high_ms: f64| {
        let repeats = vec![repeat(8.0, true), repeat(10.0, true), repeat(14.0, true)];
        Point::new(
            load(1500.0),
            repeats,
            prediction(1500.0, low_ms, high_ms, true),
            None,
        )
    };
    assert_eq!(with(8.0, 8.0).stable_p99_range(), (8_000_000, 14_000_000));
    assert_eq!(
        with(8.0, 8.0).measured_p99_widened(&DEFAULT),
        Some((6_000_000, 17_500_000))
    );
    for (low, high, misses) in [
        (17.0, 20.0, false),
        (17.6, 20.0, true),
        (3.0, 6.1, false),
        (3.0, 5.9, true),
        (1.0, 40.0, false),
    ] {
        let verdict = with(low, high).miss(&DEFAULT);
        assert_eq!(verdict.is_some(), misses, "{low}–{high} ms: {verdict:?}");
        if let Some(why) = verdict {
            assert!(
                why.contains("over 3 repeats (widened by 25%: 6 ms–17.5 ms)"),
                "{why}"
            );
        }
    }
    // One more repeat that fell behind (900 ms): a stall tipped it, so the point is collapsed
    // and a stable prediction of it is optimistic, whatever its tail.
    let tipped = Point::new(
        load(1500.0),
        vec![
            repeat(8.0, true),
            repeat(10.0, true),
            repeat(900.0, false),
            repeat(14.0, true),
        ],
        prediction(1500.0, 8.0, 8.0, true),
        None,
    );
    assert!(!tipped.measured_stable());
    assert_eq!(tipped.stability_call(), StabilityCall::Optimistic);
}
