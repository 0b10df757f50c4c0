//! The shipped scenarios: each loads and says what it models; the seed example replays
//! exactly; the cricket final has the burst the seeds describe and shows its queue.

use std::fs;

use shardsim::scenario::{ArrivalPlan, Overrides, Scenario};

use crate::common::{repo, shardsim, simulate, stderr};

#[test]
fn every_scenario_loads_and_says_what_it_models() {
    let mut count = 0;
    for entry in fs::read_dir(repo("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let text = fs::read_to_string(&path).unwrap();
            assert!(
                text.starts_with("# "),
                "{} starts with a comment",
                path.display()
            );
            // A sweep (likes-table.toml) says it in its first configuration.
            let grid = Scenario::load_grid(&path, &Overrides::default()).unwrap();
            let scenario = &grid.configurations[0].scenario;
            assert!(
                !scenario.description().is_empty(),
                "{} has a description",
                path.display()
            );
            count += 1;
        }
    }
    assert!(count >= 3);
}

#[test]
fn the_seed_example_replays_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = repo("scenarios/seed-example.toml");
    let output = shardsim(
        dir.path(),
        &["run", scenario.to_str().unwrap(), "--events", "--quiet"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = fs::read_to_string(dir.path().join("output/seed-example/events.csv")).unwrap();
    // p@0, p@0, p@0 wait 0, 0, 10; q@0 waits 0 on its own rows; p@5 waits 5 on row 1;
    // p's count is then 4.
    assert_eq!(
        events,
        "shards,t_ms,key,user,slot,start_ms,wait_ms,hold_ms,key_count\n\
         2,0,p,,0,0,0,10,1\n\
         2,0,p,,1,0,0,10,2\n\
         2,0,p,,0,10,10,10,3\n\
         2,0,q,,0,0,0,10,1\n\
         2,5,p,,1,10,5,10,4\n"
    );
    let summary = fs::read_to_string(dir.path().join("output/seed-example/summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let value = |column: &str| -> f64 {
        let at = header.iter().position(|c| *c == column).unwrap();
        row[at].parse().unwrap()
    };
    // arrivals 5, completed 5, mean wait (0+0+10+0+5)/5 = 3 ms, max 10 ms, backlog max 2.
    assert_eq!(
        [
            "arrivals",
            "completed",
            "wait_mean_ms",
            "wait_max_ms",
            "backlog_max"
        ]
        .map(value),
        [5.0, 5.0, 3.0, 10.0, 2.0]
    );
}

#[test]
fn the_resolved_scenario_repeats_the_run_from_the_output_folder() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = repo("scenarios/seed-example.toml");
    assert!(
        shardsim(dir.path(), &["run", scenario.to_str().unwrap(), "--quiet"])
            .status
            .success()
    );
    let out = dir.path().join("output/seed-example");
    let again = shardsim(
        &out,
        &["run", "scenario.toml", "--out", "../again", "--quiet"],
    );
    assert!(again.status.success(), "{}", stderr(&again));
    let read = |folder: &str, file: &str| fs::read(dir.path().join(folder).join(file)).unwrap();
    assert_eq!(
        read("output/seed-example", "summary.csv"),
        read("output/again", "summary.csv")
    );
    assert_eq!(
        read("output/seed-example", "timeseries.csv"),
        read("output/again", "timeseries.csv")
    );
}

#[test]
fn the_final_offers_two_million_likes_peaking_at_5000_a_second() {
    let scenario = Scenario::load(&repo("scenarios/final.toml"), &Overrides::default()).unwrap();
    assert!(
        matches!(scenario.arrivals(), ArrivalPlan::Poisson { .. }),
        "a rate profile"
    );
    // Ten minutes at 2000, 2800, 3600, 4300, 5000, 4500, 3700, 3000, 2400, 2000 likes/s.
    assert_eq!(scenario.expected_arrivals(), 1_998_000);
    let expected = scenario.expected_arrivals() as f64;
    assert!((expected / 2e6 - 1.0).abs() <= 0.01, "{expected}");
    assert_eq!(scenario.peak_offered_per_s(), 5000.0);
    assert_eq!(scenario.duration_s(), 600.0);
    assert_eq!(scenario.hold().mean_ns(), 1e6);
    assert_eq!(scenario.shards(), [1, 2, 4, 8, 16, 32, 64]);
}

#[test]
fn in_the_final_one_row_drowns_and_sixteen_stay_calm() {
    let overrides = Overrides {
        shards: Some(vec![1, 4, 16]),
        ..Overrides::default()
    };
    let scenario = Scenario::load(&repo("scenarios/final.toml"), &overrides).unwrap();
    let runs = simulate(&scenario);
    let (one, four, sixteen) = (&runs[0], &runs[1], &runs[2]);
    // Poisson count: 1,998,000 expected, standard deviation about 1,400.
    assert!(
        (one.arrivals as f64 - 1.998e6).abs() < 7_000.0,
        "{}",
        one.arrivals
    );
    // One row completes 1,000 a second once busy: 600,000 holds fit in 600 s, less the one cut
    // by the horizon because the first like comes after t = 0; one hold is in progress at the
    // end and everything else is still queued.
    assert_eq!(one.completed, 599_999);
    assert_eq!(one.backlog_final, one.arrivals - one.completed - 1);
    // The backlog climbs in every window of the first row.
    assert!(
        one.windows
            .windows(2)
            .all(|pair| pair[1].backlog > pair[0].backlog)
    );
    // Four rows (4,000/s) are overloaded only in the busiest minutes, then drain.
    assert!(four.backlog_max > 50_000 && four.backlog_final == 0);
    // Sixteen rows: p99 below a millisecond, nothing left at the end.
    let waits = sixteen.waits.summary();
    assert!(
        waits.p99_ns < 1_000_000 && sixteen.backlog_final == 0,
        "{waits:?}"
    );
    // Only holds still running at the horizon are not completed: at most one per row.
    assert!(sixteen.arrivals - sixteen.completed <= 16);
}

mod arbitrary_input {
    use proptest::prelude::*;
    use shardsim::scenario::{Overrides, Scenario};

    /// Any TOML value a user might type where a number or list goes.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("nan".to_owned()),
            Just("inf".to_owned()),
            Just("-inf".to_owned()),
            Just("\"text\"".to_owned()),
            Just("[]".to_owned()),
            Just("[0]".to_owned()),
            Just("[1, 1]".to_owned()),
            Just("1e300".to_owned()),
            Just("18446744073709551615".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|x| format!("{x:?}")),
            (0u32..100).prop_map(|n| n.to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn parsing_never_panics_on_arbitrary_values(
            values in prop::collection::vec(value(), 12),
            dist in prop::sample::select(vec!["constant", "exponential", "lognormal", "uniform", "x"]),
        ) {
            let v = |i: usize| values[i].as_str();
            let text = format!(
                "shards = {}\nduration_s = {}\nwindow_s = {}\nseed = {}\n\
                 [hold]\ndist = \"{dist}\"\nms = {}\nmean_ms = {}\n\
                 [arrivals]\nrate_per_s = {}\n[keys]\ncount = {}\nzipf_s = {}\n[users]\ncount = {}\n",
                v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7), v(8), v(9)
            );
            let dir = tempfile::tempdir().unwrap();
            // Ok or a one-line error; never a panic.
            if let Err(err) = Scenario::parse(&dir.path().join("t.toml"), &text, &Overrides::default()) {
                prop_assert!(!err.to_string().contains('\n'), "{}", err);
            }
        }
    }
}

#[test]
fn many_keys_report_their_hottest_and_judge_by_the_busiest() {
    let dir = tempfile::tempdir().unwrap();
    let text = "shards = [2, 8]\nduration_s = 20\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 6000\n\
                [keys]\ncount = 2000000\nzipf_s = 1.2\nreport_top = 3\n";
    fs::write(dir.path().join("many.toml"), text).unwrap();
    let output = shardsim(dir.path(), &["run", "many.toml", "-q"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let keys = fs::read_to_string(dir.path().join("output/many/keys.csv")).unwrap();
    let lines: Vec<&str> = keys.lines().collect();
    assert_eq!(
        lines[0],
        "scenario,policy,shards,rank,key,arrivals,offered_per_s,utilization,wait_mean_ms,wait_p99_ms,wait_max_ms,mode,rows"
    );
    assert_eq!(lines.len(), 1 + 2 * 3, "three keys per shard count");
    // Zipf rank 1 is key 0, and ranks are ordered by arrivals.
    let field = |line: &str, i: usize| line.split(',').nth(i).unwrap().to_owned();
    assert_eq!(
        (field(lines[1], 3), field(lines[1], 4)),
        ("1".into(), "0".into())
    );
    let arrivals: Vec<u64> = lines[1..4]
        .iter()
        .map(|l| field(l, 5).parse().unwrap())
        .collect();
    assert!(arrivals.windows(2).all(|w| w[0] >= w[1]), "{arrivals:?}");

    let scenario = Scenario::load(&dir.path().join("many.toml"), &Overrides::default()).unwrap();
    let share: f64 = 1.0
        / (1..=2_000_000u32)
            .map(|k| f64::from(k).powf(-1.2))
            .sum::<f64>();
    assert!((scenario.hot_key_share() - share).abs() < 1e-12);
    let runs = simulate(&scenario);
    // Sparse keys: only the touched ones have rows. Of 2 million Zipf keys, 120,000 arrivals
    // touch Σ 1 − e^(−n·p_k) in expectation (about 17,400; its spread is about 100, so 3% is
    // over 5σ).
    let arrivals_n = 6000.0 * 20.0;
    let expected: f64 = (1..=2_000_000u32)
        .map(|k| -(-arrivals_n * f64::from(k).powf(-1.2) * share).exp_m1())
        .sum();
    let touched = runs[0].keys_touched as f64;
    assert!(
        (touched / expected - 1.0).abs() < 0.03,
        "{touched} keys touched, {expected:.0} expected"
    );
    let row = shardsim::figures::summarize(&scenario, &runs[0..1]);
    assert!((row.peak_offered_per_s - 6000.0 * share).abs() < 1e-6);
    let hot = &runs[0].hot_keys[0];
    assert!(
        (hot.arrivals as f64 / 20.0 / (6000.0 * share) - 1.0).abs() < 0.05,
        "{}",
        hot.arrivals
    );
}

#[test]
fn the_small_shipped_scenarios_match_their_committed_baselines_exactly() {
    // The runs are deterministic, so any change to what the engine computes — better or worse
    // — shows here and is re-baselined on purpose (`shardsim check --update`). CI checks every
    // shipped scenario the same way.
    for name in [
        "seed-example",
        "adaptive",
        "evening",
        "batched",
        "postgres-2core",
        "two-regions",
        "retry-storm",
    ] {
        let scenario = format!("scenarios/{name}.toml");
        let output = shardsim(
            &repo(""),
            &[
                "check", &scenario, "--strict", "--rel", "0", "--abs-ms", "0",
            ],
        );
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{name}: {text}{}", stderr(&output));
        assert!(
            text.contains(&format!("{name}: matches")) && text.contains("exactly"),
            "{text}"
        );
    }
}

#[test]
fn an_exact_check_fails_on_an_improvement_as_on_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        repo("scenarios/seed-example.toml"),
        dir.path().join("seed-example.toml"),
    )
    .unwrap();
    fs::copy(
        repo("scenarios/seed-example.csv"),
        dir.path().join("seed-example.csv"),
    )
    .unwrap();
    fs::create_dir(dir.path().join("baselines")).unwrap();
    let baseline = fs::read_to_string(repo("scenarios/baselines/seed-example.csv")).unwrap();
    let mut lines = baseline.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let wait = header.iter().position(|c| *c == "wait_max_ms").unwrap();
    let mut doubled = vec![header.join(",")];
    for line in lines {
        let mut cells: Vec<String> = line.split(',').map(str::to_owned).collect();
        if let Ok(ms) = cells[wait].parse::<f64>() {
            cells[wait] = (ms * 2.0).to_string();
        }
        doubled.push(cells.join(","));
    }
    // Every wait doubled in the baseline: as if the engine now halved them.
    fs::write(
        dir.path().join("baselines/seed-example.csv"),
        doubled.join("\n") + "\n",
    )
    .unwrap();
    let output = shardsim(
        dir.path(),
        &[
            "check",
            "seed-example.toml",
            "--strict",
            "--rel",
            "0",
            "--abs-ms",
            "0",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("wait_max_ms"),
        "{}",
        stderr(&output)
    );
}
