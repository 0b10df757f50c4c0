use super::fixtures::*;
use super::*;
use crate::model::machine::GrantOrder;

#[test]
fn the_plan_names_the_middle_row_counts_only_when_there_are_some() {
    let design = |max_rows| Design {
        clients: vec![1, 32],
        max_rows,
        duration_s: 5.0,
        cores: 2,
        watch_s: None,
        server_log: None,
        coverage: 0.9,
    };
    assert!(
        design(64)
            .describe()
            .contains("then the row counts between at 32")
    );
    // One row at 1, 32 and 64 clients (the herd), 64 rows at 1 and 32, then 4 and 16 rows,
    // and 16 rows at 64.
    assert_eq!(design(64).loads().len(), 3 + 2 + 2 + 1);
    let many_waiters = design(64).loads()[7];
    assert_eq!(
        (many_waiters.rows, many_waiters.clients),
        (16, HERD_CLIENTS)
    );
    assert!(
        design(64)
            .describe()
            .contains("then the row counts between at 32 and 16 rows at 64")
    );
    assert!(!design(4).describe().contains("row counts between"));
    assert_eq!(design(4).loads().len(), 3 + 2);
    let herd = (design(4).loads()[2].rows, design(4).loads()[2].clients);
    assert_eq!(herd, (1, HERD_CLIENTS));
    assert!(design(4).describe().contains(", one row at 64 (the herd"));
    let to_64 = Design {
        clients: vec![1, 64],
        ..design(4)
    };
    assert_eq!(to_64.loads().len(), 2 + 2, "64 clients are a count already");
    let to_64_many = Design {
        clients: vec![1, 64],
        ..design(64)
    };
    assert!(
        to_64_many.loads().iter().all(|load| load.clients <= 64),
        "no run beyond 64 clients when they are a count already"
    );
    assert!(!to_64.describe().contains("the herd"));
    // Every closed loop is measured again after the open streams, and the plan says so: 8
    // loops twice, 3 open streams, the full pool.
    assert!(
        design(64).describe().starts_with("20 runs"),
        "{}",
        design(64).describe()
    );
    assert!(design(64).describe().contains(
        "then every closed loop again (the database's own noise, and the band at 90% coverage)"
    ));
}

#[test]
fn the_busiest_loop_measured_twice_says_how_far_the_database_moved_by_itself() {
    let steady = measured_twice(46_826.0, 44_000.0);
    let moved = steady.steadiness().expect("measured again");
    assert!((moved.moved() + 0.0604).abs() < 1e-3, "{moved:?}");
    assert!(moved.is_steady());
    assert!(
        !moved.describe().contains("quiet machine"),
        "{}",
        moved.describe()
    );
    assert!(steady.warnings().is_empty(), "{:?}", steady.warnings());
    // A move past ±15% is a warning, in the table, the TOML's comments and the lines
    // `--quiet` still prints.
    let shaky = measured_twice(46_826.0, 26_112.0);
    let moved = shaky.steadiness().expect("measured again");
    assert!(!moved.is_steady());
    assert_eq!(
        shaky.warnings(),
        [format!("steadiness: {}", moved.describe())]
    );
    assert!(moved.describe().contains("-44%"), "{}", moved.describe());
    assert!(
        moved
            .describe()
            .contains("calibrate again on a quiet machine")
    );
    let toml = shaky.toml();
    assert!(
        toml.contains("# Steadiness: the busiest closed loop"),
        "{toml}"
    );
    assert!(toml.lines().all(|line| line.len() <= 90), "{toml}");
    assert!(toml.contains("# shardsim calibrate: 3 runs"), "{toml}");
    // `validate` reads the warning back from the comments; a steady move is none.
    let read_back = validate::calibration_warnings(&toml);
    assert_eq!(read_back.len(), 1, "{read_back:?}");
    assert!(read_back[0].contains("moved by itself"), "{read_back:?}");
    assert!(validate::calibration_warnings(&steady.toml()).is_empty());
    // Measured in order, the repeat last and named so in the CSV.
    let csv = String::from_utf8(shaky.csv()).expect("UTF-8");
    let kinds: Vec<&str> = csv
        .lines()
        .map(|line| line.rsplit(',').next().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["run", "closed", "closed", "repeat"]);
    // Without a repeat there is nothing to say.
    let once = Calibration {
        repeats: Vec::new(),
        ..shaky
    };
    assert_eq!(once.steadiness(), None);
    assert!(!once.toml().contains("Steadiness"));
}

#[test]
fn a_light_stream_whose_tail_is_hundreds_of_times_its_median_says_the_machine_stalled() {
    // The heaviest stream's long tail is its own queue: only the lightest stream counts.
    let calibration = lightest_stream_at;
    let quiet = calibration(3_600);
    assert_eq!(quiet.stalled_stream(), None, "9 times its median");
    assert!(!quiet.toml().contains("Stalls"));
    let stalled = calibration(224_000);
    let stalls = stalled.stalled_stream().expect("560 times its median");
    assert_eq!(stalls.rate_per_s, 1_258.0);
    let said = stalls.describe();
    assert!(quiet.warnings().is_empty());
    assert_eq!(stalled.warnings(), [format!("stalls: {said}")]);
    assert!(
        said.starts_with("the lightest open stream (1,258/s) measured a p99 of 224 ms, 560 times its median of 400 µs"),
        "{said}"
    );
    assert!(
        said.ends_with("calibrate again on a quiet machine"),
        "{said}"
    );
    let toml = stalled.toml();
    assert!(
        toml.contains("# Stalls: the lightest open stream"),
        "{toml}"
    );
    let read_back = validate::calibration_warnings(&toml);
    assert_eq!(read_back.len(), 1, "{read_back:?}");
    assert!(read_back[0].contains("stalled"), "{read_back:?}");
    assert!(validate::calibration_warnings(&quiet.toml()).is_empty());
    assert!(toml.lines().all(|line| line.len() <= 90), "{toml}");
    // Just past the threshold.
    assert_eq!(calibration(7_900).stalled_stream(), None);
    assert!(calibration(8_100).stalled_stream().is_some());
    // With a steady p99, the fit takes it, and so does the check: a stall in a window or
    // two (steady 0.95 ms) is not named; stalls in most windows (steady 129 ms) are.
    let with_steady = |steady_us: u64| {
        let mut calibration = calibration(224_000);
        calibration.runs[2].measured.steady_p99_ns = Some(steady_us * 1_000);
        calibration
    };
    assert_eq!(with_steady(950).stalled_stream(), None);
    let said = with_steady(129_000)
        .stalled_stream()
        .expect("steady 322 times")
        .describe();
    assert!(
        said.starts_with(
            "the lightest open stream (1,258/s) measured a steady p99 of 129 ms (the median \
             of its windows'; 224 ms over the whole stream), 322 times its median of 400 µs"
        ),
        "{said}"
    );
}

#[test]
fn the_fit_sees_an_open_streams_steady_p99_and_a_closed_loops_whole_p99() {
    // A stall lifted the stream's p99 to 22.7 ms; its windows' median p99 is 0.95 ms.
    let mut open = open_run(1_735.0, 406, 22_700);
    open.measured.steady_p99_ns = Some(950_000);
    let seen = observation(&open.load, &open.measured, true);
    assert_eq!(seen.p99_ms, 0.95);
    assert!((seen.p50_ms - 0.406).abs() < 0.001, "{seen:?}");
    let mut closed = open_run(1_735.0, 406, 22_700);
    closed.load.rate_per_s = None;
    let seen = observation(&closed.load, &closed.measured, true);
    assert!((seen.p99_ms - 22.7).abs() < 0.1, "{seen:?}");
}

#[test]
fn a_load_notice_is_kept_in_the_calibration_as_comment_lines() {
    let calibration = |load_notice| Calibration {
        server: "host=/tmp".into(),
        durability: Durability::postgres_off(),
        machine: fit::first_guess(&[], 1, false, GrantOrder::Fifo, 0.01),
        runs: Vec::new(),
        load_notice,
        repeats: Vec::new(),
        full_pool: None,
        stalls: None,
        spread: None,
        checkpoints: None,
        watched_s: None,
    };
    let plain = calibration(None).toml();
    let noted = calibration(Some(host::AUTOGROUP_NOTICE)).toml();
    assert!(!plain.contains("autogroup"), "{plain}");
    assert!(
        noted.contains("# note: the load runs on the server's machine"),
        "{noted}"
    );
    assert!(noted.lines().all(|line| line.len() <= 90), "{noted}");
    let without_comments = |text: &str| {
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(without_comments(&noted), without_comments(&plain));
}
