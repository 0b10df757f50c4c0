use super::*;

#[test]
fn axes_turn_logarithmic_when_values_span_decades() {
    let linear = Axis::fit([0.0, 1.0, 20.0].into_iter());
    assert!(!linear.log);
    let log = Axis::fit([0.0, 0.3, 1200.0].into_iter());
    assert!(log.log && log.clamped);
    assert!(!Axis::fit([0.3, 1200.0].into_iter()).clamped);
    assert_eq!((log.floor, log.top), (0.1, 10_000.0));
    assert_eq!(log.to_plot(0.0), -1.0);
    assert_eq!(log.label(3.0), "1k");
    assert_eq!(
        log.label(-1.0),
        "0",
        "only zeros lie below a count axis' floor"
    );
    let ones = Axis::fit([0.0, 1.0, 100.0].into_iter());
    assert_eq!(ones.floor, 0.1, "a 1 stays above the zeros");
    assert_eq!(log.label(0.5), "");
}

#[test]
fn ticks_use_one_notation_and_waits_read_as_durations() {
    assert_eq!(number(100_000.0), "100k");
    assert_eq!(number(1e6), "1M");
    assert_eq!(number(2500.0), "2.5k");
    assert_eq!(number(0.25), "0.25");
    let waits = Axis::fit_waits([0.0, 0.0001, 0.3, 1.4e6].into_iter());
    assert!(waits.log);
    assert!(
        waits.floor >= 1e-3,
        "sub-microsecond waits sit on the floor"
    );
    assert_eq!(waits.label(3.0), "1 s");
    assert_eq!(waits.label(0.0), "1 ms");
    assert_eq!(waits.label(5.0), "100 s", "not 1.67 min");
    assert_eq!(waits.label(7.0), "10,000 s", "not 2.78 h");
}

#[test]
fn a_line_covered_by_a_later_one_is_named_under_it() {
    let lines = vec![vec![63.0, 63.0], vec![63.0, 63.05], vec![50.0, 51.0]];
    assert_eq!(hidden_under(&lines, 0, 0.1), Some(1));
    assert_eq!(hidden_under(&lines, 1, 0.1), None);
    assert_eq!(hidden_under(&lines, 2, 0.1), None);
}

fn sweep_row(values: &[&str], recommended: Option<u32>) -> crate::report::grid::SweepRow {
    crate::report::grid::SweepRow {
        values: values.iter().map(|v| (*v).to_owned()).collect(),
        policy: "random".into(),
        recommended,
        p99_ms: recommended.map(|_| 1.0),
    }
}

#[test]
fn sweep_charts_name_their_fields_key_their_colours_and_place_none() {
    let fields = vec!["hold.ms".to_owned(), "arrivals.scale".to_owned()];
    let rows = [
        sweep_row(&["1", "1"], Some(8)),
        sweep_row(&["1", "2"], Some(16)),
        sweep_row(&["2", "1"], Some(16)),
        sweep_row(&["2", "2"], None),
    ];
    let heat = &sweep_charts(&fields, &rows).unwrap()[0].svg;
    for text in [
        "mean hold of a row, ms (hold.ms)",
        "(arrivals.scale)",
        "8 shards",
        "16 shards",
        "none meets the target",
    ] {
        assert!(heat.contains(text), "{text}");
    }
    let one = [
        sweep_row(&["post"], None),
        sweep_row(&["post_user"], Some(8)),
    ];
    let fields = ["likes_table.partition_by".to_owned()];
    let line = &sweep_charts(&fields, &one).unwrap()[0].svg;
    for text in [
        "\nnone\n",
        "\n4\n",
        "\n8\n",
        "\n16\n",
        "likes table partitioned by",
    ] {
        assert!(line.contains(text), "{text}");
    }
}

#[test]
fn coinciding_lines_are_found() {
    assert!(coincide(&[1.0, 100.0], &[1.01, 100.5]));
    assert!(!coincide(&[1.0, 100.0], &[1.0, 90.0]));
}

#[test]
fn shard_axes_label_whole_counts_only() {
    assert_eq!(shard_label(4.0), "16");
    assert_eq!(shard_label(0.5), "");
}

#[test]
fn long_series_are_thinned_to_bucket_maxima() {
    let points: Vec<(f64, f64)> = (0..3000).map(|i| (i as f64, (i % 7) as f64)).collect();
    let thinned = thin(points);
    assert_eq!(thinned.len(), 1500);
    assert!(thinned.iter().all(|p| p.1 >= 1.0));
}
