use std::time::Duration;

use super::*;
use crate::calibrate::fixtures::lightest_stream_at;
use crate::calibrate::load::Load;
use crate::calibrate::validate::fixtures::*;
use crate::calibrate::validate::*;

#[test]
fn a_spread_reads_as_a_percentage_below_twice_and_as_times_above() {
    assert_eq!(how_far_above(0.8), "80% above");
    assert_eq!(how_far_above(1.1), "2.1×");
    assert_eq!(how_far_above(356.9), "358×");
}

#[test]
fn the_planners_question_takes_the_smallest_row_count_meeting_each_target() {
    // Measured p99 (ms) and predicted p99 per row count of the question; 1 row falls
    // behind in both.
    let cases = [
        (1, 900, 950),
        (2, 30, 40),
        (3, 12, 9),
        (4, 4, 6),
        (8, 1, 3),
        (16, 1, 1),
    ];
    let planner = cases
        .iter()
        .map(|&(rows, measured, predicted)| {
            let stable = rows > 1;
            measured_point(
                Load {
                    rows,
                    ..open_load()
                },
                vec![measured_repeat(1_300.0, measured, stable)],
                predicted_at(1_300.0, predicted, stable),
            )
        })
        .collect();
    let validation = Validation {
        planner,
        ..validation_of(Vec::new())
    };
    let answers = validation.planner_answers();
    let pairs: Vec<(Option<u32>, Option<u32>, bool)> = answers
        .iter()
        .map(|a| (a.measured, a.predicted, a.agrees()))
        .collect();
    // Keeping up at all: 2 rows either way; 2 ms: 8 measured, 16 predicted (one larger:
    // agrees); 5 ms: 4 and 8 (agrees); 20 ms: 3 and 3.
    assert_eq!(
        pairs,
        [
            (Some(2), Some(2), true),
            (Some(8), Some(16), true),
            (Some(4), Some(8), true),
            (Some(3), Some(3), true)
        ]
    );
    let smaller = PlannerAnswer {
        target_ms: 5.0,
        measured: Some(4),
        predicted: Some(3),
    };
    assert!(
        !smaller.agrees(),
        "a plan below the database's answer is wrong"
    );
    let two_larger = PlannerAnswer {
        predicted: Some(16),
        ..smaller
    };
    assert!(!two_larger.agrees());
    let none_enough = PlannerAnswer {
        measured: None,
        ..smaller
    };
    assert!(!none_enough.agrees());
    // Never smaller: the same or more, or none where the database needed some — not less,
    // and not "enough" where it had none.
    assert!(!smaller.never_smaller() && !none_enough.never_smaller());
    assert!(two_larger.never_smaller());
    let none_predicted = PlannerAnswer {
        predicted: None,
        ..smaller
    };
    assert!(none_predicted.never_smaller() && !none_predicted.agrees());
    let csv = String::from_utf8(planner_csv(&validation)).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 7, "{csv}");
    assert!(
        lines[0].contains("measured_p99_min_ms,measured_p99_max_ms"),
        "{csv}"
    );
    assert!(
        lines[5].starts_with("8,1000.0,1300.0,1.0000,1.0000,1.0000,3.0000,stable,stable"),
        "{csv}"
    );
}

#[test]
fn the_widest_spread_of_the_closed_loops_repeats_says_how_well_the_database_repeats_itself() {
    let closed = |rows| Load {
        rows,
        clients: CLOSED_CLIENTS,
        rate_per_s: None,
        think: Duration::ZERO,
        warmup: Duration::from_secs(1),
        duration: Duration::from_secs(5),
    };
    let tps = |values: &[f64]| {
        values
            .iter()
            .map(|&tps| measured_repeat(tps, 2, true))
            .collect()
    };
    let validation = validation_of(vec![
        measured_point(
            closed(1),
            tps(&[16_137.0, 22_780.0, 21_587.0]),
            kept_up(20_000.0),
        ),
        measured_point(
            closed(2),
            tps(&[19_647.0, 35_356.0, 31_409.0]),
            kept_up(30_000.0),
        ),
        // An open stream's throughput is its rate whatever the database does.
        measured_point(open_load(), tps(&[100.0, 1_000.0]), kept_up(1_000.0)),
    ]);
    let (widest, spread) = validation
        .widest(Point::tps_spread)
        .expect("closed loops repeated");
    assert_eq!(widest.load().rows, 2);
    assert!((spread - 0.7996).abs() < 1e-3, "{spread}");
    assert_eq!(validation.points[2].tps_spread(), None);
    let once = measured_point(closed(1), tps(&[16_137.0]), kept_up(20_000.0));
    assert_eq!(once.tps_spread(), None);
    let table = validation_table(&validation, &TOLERANCE);
    assert!(
        table.contains(
            "up to 80% above its slowest (2 rows: 19,647–35,356/s), more than the ±15% allowed"
        ),
        "{table}"
    );
}

#[test]
fn the_spread_of_the_stable_open_streams_p99_says_how_well_the_database_repeats_its_tail() {
    // Three stable open streams: one whose p99 repeats within 10%, one whose repeats met a
    // stall (38 ms against 2 and 3), one collapsed (its p99 is its backlog: not counted).
    let p99s = |values: &[u64]| {
        values
            .iter()
            .map(|&ms| measured_repeat(1_000.0, ms, true))
            .collect()
    };
    let open = |rows| Load {
        rows,
        ..open_load()
    };
    let collapsed = collapsed(measured_point(
        open(1),
        p99s(&[900, 1_800]),
        kept_up(1_000.0),
    ));
    let validation = validation_of(vec![
        collapsed,
        measured_point(open(4), p99s(&[2, 38, 3]), kept_up(1_000.0)),
        measured_point(open(16), p99s(&[10, 11, 10]), kept_up(1_000.0)),
    ]);
    let (widest, spread) = validation.widest(Point::p99_spread).expect("open repeats");
    assert_eq!(widest.load().rows, 4);
    assert!((spread - 18.0).abs() < 1e-9, "{spread}");
    assert_eq!(validation.points[0].p99_spread(), None, "collapsed");
    assert!((validation.points[2].p99_spread().expect("stable") - 0.1).abs() < 1e-9);
    let table = validation_table(&validation, &TOLERANCE);
    assert!(
        table.contains(
            "a stable open stream's highest p99 is up to 19× its lowest (open 100% of one \
             row's peak (1000/s), 4 rows: 2 ms–38 ms; 1 of 2 such streams beyond the tolerance), \
             more than the ±25% allowed: the database did not repeat its tail"
        ),
        "{table}"
    );
}

#[test]
fn the_prediction_is_also_read_against_the_steady_p99_which_stalls_do_not_move() {
    // Four rows: a stall lifted one repeat's p99 (38 ms) and, a little, the median's (3
    // ms), not their steady p99s (2, 3, 2 ms); the model says 2.2 ms. Sixteen rows: the
    // model says 20 ms against 10 either way. A closed loop has no steady p99.
    let open = |rows, p99_and_steady_ms: &[(u64, u64)], predicted_p99_us: u64| {
        let repeats = p99_and_steady_ms
            .iter()
            .map(|&(p99, steady)| Repeat {
                steady_p99_ns: Some(steady * 1_000_000),
                ..measured_repeat(1_000.0, p99, true)
            })
            .collect();
        let mut prediction = kept_up(1_000.0);
        prediction.responses.p99_ns = predicted_p99_us * 1_000;
        prediction.p99_range = (predicted_p99_us * 1_000, predicted_p99_us * 1_000);
        measured_point(
            Load {
                rows,
                ..open_load()
            },
            repeats,
            prediction,
        )
    };
    let closed = Load {
        rows: 4,
        clients: CLOSED_CLIENTS,
        rate_per_s: None,
        ..open_load()
    };
    let validation = validation_of(vec![
        measured_point(
            closed,
            vec![measured_repeat(5_000.0, 30, true)],
            kept_up(5_000.0),
        ),
        open(4, &[(2, 2), (38, 3), (3, 2)], 2_200),
        open(16, &[(10, 10), (11, 10), (10, 11)], 20_000),
    ]);
    let four = &validation.points[1];
    assert_eq!(four.measured_steady_p99_ns(), Some(2_000_000));
    assert!((four.steady_p99_error().expect("stable") - 0.1).abs() < 1e-9);
    assert!((four.p99_error().expect("stable") + 0.2667).abs() < 1e-3);
    assert_eq!(validation.points[0].measured_steady_p99_ns(), None);
    assert_eq!(validation.points[0].steady_p99_error(), None);
    assert_eq!(validation.steady_p99_within(&TOLERANCE), Some((1, 0, 2)));
    let table = validation_table(&validation, &TOLERANCE);
    assert!(
        table.contains(
            "predicted within ±25% at 1 of 2 stable open streams, against 0 by their whole p99"
        ),
        "{table}"
    );
    let csv = validation_csv(&validation, &TOLERANCE);
    assert_eq!(column(&csv, "measured_steady_p99_ms")[..2], ["", "2.0000"]);
    assert_eq!(column(&csv, "steady_p99_error")[..2], ["", "0.1000"]);
    // As distributions: four rows' repeats at 2–38 ms (widened 1.5–47.5 ms) hold its 2.2 ms;
    // sixteen's at 10–11 ms (7.5–13.75 ms) do not hold 20 ms.
    assert_eq!(validation.p99_overlaps(&TOLERANCE), Some((1, 2)));
    assert_eq!(
        column(&csv, "predicted_p99_min_ms")[1..],
        ["2.2000", "20.0000"]
    );
    // Without any steady p99 (an older measurement), there is no line.
    let mut without = validation.clone();
    without.points = without.points.into_iter().map(without_steady_p99).collect();
    assert_eq!(without.steady_p99_within(&TOLERANCE), None);
}

#[test]
fn optimistic_calls_are_counted_apart_and_named_in_the_csv() {
    // Predicted to keep up, measured collapsed: optimistic; the reverse: conservative; a
    // collapse predicted as metastable agrees.
    let points = vec![
        measured_point(
            open_load(),
            vec![measured_repeat(600.0, 900, false)],
            predicted_at(1_000.0, 5, true),
        ),
        measured_point(
            open_load(),
            vec![measured_repeat(1_000.0, 5, true)],
            predicted_at(700.0, 900, false),
        ),
        measured_point(
            open_load(),
            vec![measured_repeat(600.0, 900, false)],
            Prediction {
                metastable: true,
                ..predicted_at(620.0, 950, false)
            },
        ),
    ];
    let validation = validation_of(points);
    assert_eq!(validation.optimistic_calls(), 1);
    let calls = column(&validation_csv(&validation, &TOLERANCE), "stability_call");
    assert_eq!(calls, ["optimistic", "conservative", "agrees"]);
}

#[test]
fn the_calibration_table_names_stalls_only_when_the_lightest_stream_stalled() {
    let quiet = calibration_table(&lightest_stream_at(3_600));
    assert!(!quiet.contains("stalls:"), "{quiet}");
    let stalled = calibration_table(&lightest_stream_at(224_000));
    assert!(
        stalled.contains("\nstalls: the lightest open stream"),
        "{stalled}"
    );
}
