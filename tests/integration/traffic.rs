//! What-if traffic: `[arrivals] scale`, `speed` and `jitter_ms`, `--traffic` on `run` and
//! `plan --traffic 1,1.5,2`.

use std::path::Path;

use crate::common;

/// Writes a trace of `lines` likes on one key, one every `gap_ms`, and returns its text.
fn write_trace(dir: &Path, lines: usize, gap_ms: f64) {
    let body: String = (0..lines)
        .map(|i| format!("{},p,{i}\n", i as f64 * gap_ms))
        .collect();
    std::fs::write(dir.join("trace.csv"), format!("t_ms,key,user\n{body}")).unwrap();
}

/// The (t_ms, user) of every event of `out/events.csv`.
fn events(dir: &Path) -> Vec<(f64, String)> {
    let text = std::fs::read_to_string(dir.join("out/events.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|&c| c == "t_ms").unwrap();
    let user = header.iter().position(|&c| c == "user").unwrap();
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields[at].parse().unwrap(), fields[user].to_owned())
        })
        .collect()
}

fn trace_scenario(arrivals_extra: &str) -> String {
    format!(
        "seed = 5\nshards = [2]\n[hold]\ndist = \"constant\"\nms = 0.1\n[arrivals]\ntrace = \"trace.csv\"\n{arrivals_extra}"
    )
}

#[test]
fn scale_two_on_a_trace_doubles_its_arrivals_with_jittered_copies() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 500, 2.0);
    let output = common::run_text(
        dir.path(),
        &trace_scenario("scale = 2\njitter_ms = 0.5\n"),
        &["--quiet", "--events"],
    );
    assert!(output.status.success(), "{}", common::stderr(&output));
    let events = events(dir.path());
    assert_eq!(events.len(), 1000, "every line arrives exactly twice");
    // In time order, and each line's copy within its jitter, as another user.
    assert!(events.windows(2).all(|w| w[0].0 <= w[1].0));
    for line in 0..500 {
        let at = line as f64 * 2.0;
        let near: Vec<&(f64, String)> = events
            .iter()
            .filter(|(t, _)| *t >= at && *t <= at + 0.5)
            .collect();
        assert_eq!(near.len(), 2, "line {line}: {near:?}");
        assert!(near.iter().any(|(t, u)| *t == at && *u == line.to_string()));
        assert!(near.iter().any(|(_, u)| *u != line.to_string()));
    }
    let resolved = std::fs::read_to_string(dir.path().join("out/scenario.toml")).unwrap();
    for recorded in ["scale = 2.0", "speed = 1.0", "jitter_ms = 0.5"] {
        assert!(resolved.contains(recorded), "{recorded} in\n{resolved}");
    }
}

#[test]
fn speed_two_on_a_trace_halves_its_duration() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 400, 5.0);
    let output = common::run_text(
        dir.path(),
        &trace_scenario("speed = 2\n"),
        &["--quiet", "--events"],
    );
    assert!(output.status.success(), "{}", common::stderr(&output));
    let events = events(dir.path());
    assert_eq!(events.len(), 400);
    for (i, (at, _)) in events.iter().enumerate() {
        assert_eq!(*at, i as f64 * 2.5, "line {i} at half its time");
    }
    let scenario = common::scenario(dir.path(), &trace_scenario(""));
    let fast = common::scenario(dir.path(), &trace_scenario("speed = 2\n"));
    assert_eq!(fast.horizon(), scenario.horizon() / 2);
    assert_eq!(fast.peak_total_per_s(), 2.0 * scenario.peak_total_per_s());
}

#[test]
fn a_scale_below_one_thins_a_trace_binomially() {
    // 20,000 lines kept with probability 0.3: 6,000 expected, standard deviation 65.
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 20_000, 0.5);
    let scenario = common::scenario(dir.path(), &trace_scenario("scale = 0.3\n"));
    let kept = common::simulate(&scenario)[0].arrivals;
    assert!((5_740..=6_260).contains(&kept), "kept {kept}");
    assert_eq!(scenario.expected_arrivals(), 6_000);
}

#[test]
fn a_scale_of_one_replays_the_trace_as_recorded_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 3_000, 0.05);
    let csvs = |extra: &str| {
        let output = common::run_text(dir.path(), &trace_scenario(extra), &["--quiet"]);
        assert!(output.status.success(), "{}", common::stderr(&output));
        ["summary.csv", "timeseries.csv"]
            .map(|name| std::fs::read(dir.path().join("out").join(name)).unwrap())
    };
    assert_eq!(csvs(""), csvs("scale = 1\nspeed = 1\n"));
}

#[test]
fn a_synthetic_scale_multiplies_every_rate() {
    // scale = 2 on a profile gives exactly the run of the profile with doubled rates.
    let dir = tempfile::tempdir().unwrap();
    let profile = |rates: [u32; 2], extra: &str| {
        format!(
            "seed = 3\nshards = [1, 4]\n[hold]\ndist = \"exponential\"\nmean_ms = 0.5\n[arrivals]\n{extra}\
             profile = [{{ seconds = 2, rate_per_s = {} }}, {{ seconds = 1, rate_per_s = {} }}]\n",
            rates[0], rates[1]
        )
    };
    let summary = |text: &str, args: &[&str]| {
        let mut all = vec!["--quiet"];
        all.extend_from_slice(args);
        let output = common::run_text(dir.path(), text, &all);
        assert!(output.status.success(), "{}", common::stderr(&output));
        std::fs::read(dir.path().join("out/summary.csv")).unwrap()
    };
    let doubled = summary(&profile([2000, 6000], ""), &[]);
    assert_eq!(summary(&profile([1000, 3000], "scale = 2\n"), &[]), doubled);
    assert_eq!(
        summary(&profile([1000, 3000], ""), &["--traffic", "2"]),
        doubled
    );
    // --traffic replaces the scenario's scale, and the resolved scenario records it.
    assert_eq!(
        summary(&profile([1000, 3000], "scale = 5\n"), &["--traffic", "2"]),
        doubled
    );
    let resolved = std::fs::read_to_string(dir.path().join("out/scenario.toml")).unwrap();
    assert!(resolved.contains("scale = 2.0"), "{resolved}");
    let again = common::shardsim(
        &dir.path().join("out"),
        &["run", "scenario.toml", "--out", "../again", "--quiet"],
    );
    assert!(again.status.success(), "{}", common::stderr(&again));
    assert_eq!(
        std::fs::read(dir.path().join("again/summary.csv")).unwrap(),
        doubled
    );
}

#[test]
fn bad_traffic_is_bad_input_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 10, 1.0);
    let rate = "shards = [1]\nduration_s = 1\n[hold]\ndist = \"constant\"\nms = 1\n[arrivals]\nrate_per_s = 100\n";
    let closed = "shards = [1]\nduration_s = 1\n[hold]\ndist = \"constant\"\nms = 1\n[arrivals]\nclients = 4\n";
    let cases: [(String, &[&str], &str); 7] = [
        (format!("{rate}scale = 0\n"), &[], "arrivals.scale"),
        (format!("{rate}scale = 5000\n"), &[], "arrivals.scale"),
        (format!("{rate}speed = 2\n"), &[], "arrivals.speed"),
        (format!("{closed}scale = 2\n"), &[], "arrivals.scale"),
        (
            trace_scenario("jitter_ms = -1\n"),
            &[],
            "arrivals.jitter_ms",
        ),
        (rate.to_owned(), &["--traffic", "1,2"], "--traffic"),
        (rate.to_owned(), &["--traffic", "0"], "--traffic"),
    ];
    for (text, args, field) in cases {
        let output = common::run_text(dir.path(), &text, args);
        let stderr = common::stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{field}: {stderr}");
        assert!(stderr.contains(field), "{field}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!dir.path().join("out").exists());
    }
    // A jittered copy must still fall inside an explicit duration.
    let text = format!(
        "duration_s = 0.0095\n{}",
        trace_scenario("scale = 2\njitter_ms = 1\n")
    );
    let output = common::run_text(dir.path(), &text, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", common::stderr(&output));
    assert!(common::stderr(&output).contains("jitter_ms"));
}

#[test]
fn plan_answers_each_traffic_level_in_one_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("test.toml"),
        "shards = [1]\nduration_s = 10\npolicy = [\"earliest-free\", \"random\"]\n[hold]\ndist = \"constant\"\nms = 1\n\
         [arrivals]\nrate_per_s = 2000\n[slo]\np99_ms = 5\n",
    )
    .unwrap();
    let output = common::shardsim(
        dir.path(),
        &[
            "plan",
            "test.toml",
            "--traffic",
            "1,2",
            "--duration-s",
            "2",
            "--replications",
            "3",
            "--out",
            "plan",
        ],
    );
    assert!(output.status.success(), "{}", common::stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let table = stdout
        .split("shards needed per traffic level")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(2)
        .take(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0][..2], ["×1", "2,000"], "{table}");
    assert_eq!(rows[1][..2], ["×2", "4,000"], "{table}");
    // Twice the traffic needs more rows, for each policy.
    for column in [2, 3] {
        let n = |row: usize| rows[row][column].parse::<u32>().unwrap();
        assert!(n(1) > n(0), "{table}");
    }
    let csv = std::fs::read_to_string(dir.path().join("plan/plan.csv")).unwrap();
    assert!(csv.starts_with("scenario,policy,traffic,pool,shards,"));
    assert!(csv.lines().any(|l| l.starts_with("test,random,2,,")));
    let json = std::fs::read_to_string(dir.path().join("plan/plan.json")).unwrap();
    let document: serde_json::Value = serde_json::from_str(&json).unwrap();
    let plans = document["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 4, "two policies × two levels");
    assert_eq!(plans[3]["traffic"], 2.0);
    assert_eq!(plans[3]["peak_per_s"], 4000.0);
    let repeated = common::shardsim(dir.path(), &["plan", "test.toml", "--traffic", "2,2"]);
    assert_eq!(repeated.status.code(), Some(2));
    assert!(common::stderr(&repeated).contains("--traffic"));
}
