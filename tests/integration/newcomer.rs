//! What a new user and a fuzzer tried: a closed or full standard output, files the tool must
//! not overwrite, baselines and slices that were edited, and inputs that never end.

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{shardsim, stderr};

const GATE: &str = "name = \"gate\"\nshards = [2, 4]\nduration_s = 5\npolicy = \"random\"\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 2500\n";

/// Asserts that `output` is bad input (exit 2) whose one-line error says `says`.
fn assert_refused(output: &Output, says: &str) {
    let message = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains(says), "wanted {says:?}: {message}");
    assert_eq!(message.trim().lines().count(), 1, "{message}");
}

/// Runs `shardsim check gate.toml` in `dir` with `args`.
fn check_gate(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["check", "gate.toml"];
    all.extend_from_slice(args);
    shardsim(dir, &all)
}

fn gate(dir: &Path) {
    fs::write(dir.join("gate.toml"), GATE).unwrap();
}

/// Runs shardsim in `dir` with its standard output into `head -1`; returns its exit code
/// and what reached `head`.
fn into_head(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardsim"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let head = Command::new("head")
        .arg("-1")
        .stdin(child.stdout.take().unwrap())
        .output()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        !stderr(&output).contains("panicked"),
        "{args:?}: {}",
        stderr(&output)
    );
    (
        output.status.code(),
        String::from_utf8_lossy(&head.stdout).into_owned(),
    )
}

#[test]
fn every_subcommand_ends_quietly_when_its_reader_closes_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    gate(dir.path());
    assert!(
        shardsim(dir.path(), &["check", "gate.toml", "--update"])
            .status
            .success()
    );
    let cases: [&[&str]; 5] = [
        &["run", "gate.toml", "--out", "out"],
        &[
            "plan",
            "--rate",
            "3000",
            "--hold-ms",
            "1",
            "--p99-ms",
            "5",
            "--out",
            "plan",
        ],
        &["check", "gate.toml", "--verbose"],
        &["completions", "bash"],
        &["--help"],
    ];
    for args in cases {
        let (code, first) = into_head(dir.path(), args);
        assert_eq!(code, Some(0), "{args:?}");
        assert!(!first.is_empty(), "{args:?} printed its first line");
    }
}

#[test]
fn a_full_standard_output_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    gate(dir.path());
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_shardsim"))
        .args(["run", "gate.toml", "--out", "out"])
        .current_dir(dir.path())
        .stdout(full)
        .output()
        .unwrap();
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{message}");
    assert!(
        message.starts_with("error: standard output: cannot write"),
        "{message}"
    );
}

#[test]
fn check_writes_its_files_only_over_its_own() {
    let dir = tempfile::tempdir().unwrap();
    gate(dir.path());
    let check = |args: &[&str]| check_gate(dir.path(), args);
    assert!(check(&["--update"]).status.success());
    let baseline = dir.path().join("baselines/gate.csv");
    let original = fs::read(&baseline).unwrap();
    for (junit, says) in [
        ("gate.toml", "is the scenario"),
        ("baselines/gate.csv", "is the baseline"),
    ] {
        assert_refused(&check(&["--junit", junit]), says);
    }
    assert_eq!(
        fs::read_to_string(dir.path().join("gate.toml")).unwrap(),
        GATE
    );
    assert_eq!(fs::read(&baseline).unwrap(), original);
    fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    assert_refused(&check(&["--junit", "notes.txt"]), "--overwrite");
    assert_eq!(
        fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(check(&["--junit", "report.xml"]).status.success());
    assert!(
        check(&["--junit", "report.xml"]).status.success(),
        "its own report is replaced"
    );
    assert!(
        check(&["--junit", "notes.txt", "--overwrite"])
            .status
            .success()
    );
    // A scenario is no baseline to replace.
    assert_refused(
        &check(&["--update", "--baseline", "gate.toml"]),
        "not a baseline shardsim wrote",
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("gate.toml")).unwrap(),
        GATE
    );
}

#[test]
fn check_refuses_a_baseline_it_cannot_compare_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    gate(dir.path());
    let check = |args: &[&str]| check_gate(dir.path(), args);
    assert!(check(&["--update"]).status.success());
    assert_refused(
        &check(&["--policy", "earliest-free"]),
        "is for policy \"random\"",
    );
    let baseline = dir.path().join("baselines/gate.csv");
    let text = fs::read_to_string(&baseline).unwrap();
    // Columns in another order read the same.
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    let reversed: Vec<String> = rows
        .iter()
        .map(|row| row.iter().rev().copied().collect::<Vec<_>>().join(","))
        .collect();
    fs::write(&baseline, reversed.join("\n") + "\n").unwrap();
    assert!(check(&[]).status.success(), "{}", stderr(&check(&[])));
    // A column given twice is refused, naming it.
    let doubled: Vec<String> = rows
        .iter()
        .map(|row| format!("{},{}", row.join(","), row[row.len() - 1]))
        .collect();
    fs::write(&baseline, doubled.join("\n") + "\n").unwrap();
    assert_refused(&check(&[]), "twice");
}

#[test]
fn inputs_that_never_end_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    gate(dir.path());
    let fifo = dir.path().join("fifo");
    crate::common::mkfifo(&fifo);
    let cases: [&[&str]; 4] = [
        &["run", "/dev/zero"],
        &["check", "gate.toml", "--baseline", "/dev/zero"],
        &["check", "gate.toml", "--baseline", "fifo"],
        &["run", "fifo"],
    ];
    for args in cases {
        assert_refused(&shardsim(dir.path(), args), "not a regular file");
    }
}

#[test]
fn a_run_inside_an_earlier_output_does_not_stop_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    gate(dir.path());
    assert!(
        shardsim(dir.path(), &["run", "gate.toml", "--quiet"])
            .status
            .success()
    );
    let inner = dir.path().join("output/gate");
    let output = shardsim(&inner, &["run", "scenario.toml", "--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(inner.join("output/gate/summary.csv").is_file());
    let output = shardsim(dir.path(), &["run", "gate.toml", "--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_very_small_or_huge_rate_is_refused_in_a_short_line() {
    let dir = tempfile::tempdir().unwrap();
    for (rate, says) in [("5e-324", "must be 0 or from 1e-6"), ("1e308", "got 1e308")] {
        fs::write(
            dir.path().join("x.toml"),
            GATE.replace("rate_per_s = 2500", &format!("rate_per_s = {rate}")),
        )
        .unwrap();
        let output = shardsim(dir.path(), &["run", "x.toml"]);
        assert_refused(&output, says);
        assert!(stderr(&output).len() < 200, "{}", stderr(&output));
    }
}

#[test]
fn a_faster_commit_is_no_regression_its_waits_improve_and_its_capacity_changed() {
    let dir = tempfile::tempdir().unwrap();
    gate(dir.path());
    assert!(
        shardsim(dir.path(), &["check", "gate.toml", "--update"])
            .status
            .success()
    );
    fs::write(
        dir.path().join("gate.toml"),
        GATE.replace("ms = 1", "ms = 0.5"),
    )
    .unwrap();
    let output = shardsim(dir.path(), &["check", "gate.toml"]);
    let table = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "the baseline is stale: {table}"
    );
    assert!(!table.contains("REGRESSION"), "{table}");
    let line = |column: &str| {
        table
            .lines()
            .find(|l| l.contains(column))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line("wait_p99_ms").ends_with("improved"), "{table}");
    assert!(line("ceiling_per_s").ends_with("CHANGED"), "{table}");
    assert!(table.contains("--update the baseline"), "{table}");
}

#[test]
fn a_number_with_a_unit_and_a_duplicate_key_are_named_in_the_scenarios_words() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            GATE.replace("ms = 1", "ms = \"1ms\""),
            "hold.ms: must be a number of milliseconds",
        ),
        (
            GATE.replace("duration_s = 5\n", "duration_s = 5\nduration_s = 6\n"),
            "duplicate key `duration_s`",
        ),
    ];
    for (text, says) in cases {
        fs::write(dir.path().join("x.toml"), text).unwrap();
        assert_refused(&shardsim(dir.path(), &["run", "x.toml"]), says);
    }
}

/// A calibration as `shardsim calibrate` writes it (durable commits, two cores).
pub const CALIBRATION: &str = "[hold]\ndist = \"constant\"\nms = 0.004\ngrant_order = \"fifo\"\n\n\
[machine]\ncores = 2\nwake_ms = 0.010\nwake_cpu_ms = 0.012\n\n[machine.cpu]\ndist = \"constant\"\nms = 0.030\n\n\
[wal]\nflush_ms = 0.250\ngroup_commit = true\n\n\
[client.overhead]\ndist = \"lognormal\"\nmedian_ms = 0.080\np99_ms = 0.200\n";

#[test]
fn a_calibrated_run_takes_the_calibrated_commit_and_says_which_fields_the_scenario_kept() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("calibration.toml"), CALIBRATION).unwrap();
    let shipped = crate::common::repo("scenarios/calibrated/final.toml");
    let args = |scenario: &str, out: &str| -> Vec<String> {
        [
            "run",
            scenario,
            "--calibration",
            "calibration.toml",
            "--shards",
            "8",
            "--policy",
            "earliest-free",
            "--out",
            out,
            "--no-fail",
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        shardsim(dir.path(), &args)
    };
    // The shipped calibrated final: its commit is the calibration's, and nothing is kept.
    let output = run(args(shipped.to_str().unwrap(), "calibrated"));
    assert!(output.status.success(), "{}", stderr(&output));
    let resolved = fs::read_to_string(dir.path().join("calibrated/scenario.toml")).unwrap();
    assert!(
        resolved.contains("ms = 0.004") && resolved.contains("flush_ms = 0.25"),
        "{resolved}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("note:"));
    // final.toml sets [hold] itself: its 1 ms is kept, and the run says so.
    let output = run(args(
        crate::common::repo("scenarios/final.toml")
            .to_str()
            .unwrap(),
        "own",
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("note: the scenario sets hold.dist") && stdout.contains("hold.ms"),
        "{stdout}"
    );
    let resolved = fs::read_to_string(dir.path().join("own/scenario.toml")).unwrap();
    assert!(
        resolved.contains("over its calibration's for: hold.dist"),
        "{resolved}"
    );
    // Without a calibration, the calibrated final says where its hold comes from.
    assert_refused(
        &shardsim(dir.path(), &["run", shipped.to_str().unwrap()]),
        "--calibration FILE",
    );
}

#[test]
fn the_example_calibration_runs_the_calibrated_final_without_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let example = crate::common::repo("scenarios/calibrated/postgres15-2core.toml");
    let text = fs::read_to_string(&example).unwrap();
    assert!(
        text.starts_with("# An example calibration") && text.contains("PostgreSQL"),
        "its header says what it was fitted to"
    );
    assert!(text.contains("coverage = 0.9"), "a band of the new kind");
    let shipped = crate::common::repo("scenarios/calibrated/final.toml");
    let output = shardsim(
        dir.path(),
        &[
            "run",
            shipped.to_str().unwrap(),
            "--calibration",
            example.to_str().unwrap(),
            "--dry-run",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_closed_loops_backlog_chart_offers_no_rate_and_names_a_hidden_line() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = crate::common::repo("scenarios/postgres-2core.toml");
    let args = [
        "run",
        scenario.to_str().unwrap(),
        "--shards",
        "1,2",
        "--out",
        "out",
        "--quiet",
        "--no-fail",
    ];
    let output = shardsim(dir.path(), &args);
    assert!(output.status.success(), "{}", stderr(&output));
    let backlog = fs::read_to_string(dir.path().join("out/backlog.svg")).unwrap();
    assert!(
        !backlog.contains("likes offered"),
        "a closed loop offers no rate"
    );
    assert!(
        backlog.contains("N = 1 (under N = 2)"),
        "the hidden line is named"
    );
}

#[test]
fn the_report_page_sets_code_as_code_not_backticks() {
    let dir = tempfile::tempdir().unwrap();
    // Its reading names `shardsim plan` (the target is met between simulated counts).
    let text = GATE.replace("shards = [2, 4]", "shards = [1, 2, 8]") + "[slo]\np99_ms = 5\n";
    fs::write(dir.path().join("gate.toml"), text).unwrap();
    let output = shardsim(dir.path(), &["run", "gate.toml", "--out", "out", "--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let page = fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(!page.contains('`'), "no literal backticks");
    assert!(page.contains("<code>shardsim plan</code>"));
}

#[test]
fn a_million_keys_are_estimated_by_the_keys_the_run_touches() {
    // many-posts peaks at 86 MB of resident memory (measured with /usr/bin/time -v); the
    // estimate counted every key at its largest row count and said 4 GiB.
    let path = crate::common::repo("scenarios/many-posts.toml");
    let scenario =
        shardsim::scenario::Scenario::load(&path, &shardsim::scenario::Overrides::default())
            .unwrap();
    let estimate = shardsim::budget::estimate(&scenario, 2);
    let mib = estimate.fixed_bytes >> 20;
    assert!((80..400).contains(&mib), "{mib} MiB");
}

#[test]
fn a_target_no_row_count_can_meet_says_more_rows_will_not_help() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = crate::common::repo("scenarios/likes-table.toml");
    let output = shardsim(
        dir.path(),
        &["run", scenario.to_str().unwrap(), "--out", "out", "--quiet"],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(
        message.contains(
            "more rows will not help: the likes table's hot partition is at or near its ceiling"
        ),
        "{message}"
    );
    assert!(!message.contains("simulate more shards"), "{message}");
}

#[test]
fn plans_of_other_hold_shapes_and_policies_go_to_their_own_folders() {
    let dir = tempfile::tempdir().unwrap();
    let plan = |extra: &[&str]| {
        let mut args = vec![
            "plan",
            "--rate",
            "3000",
            "--hold-ms",
            "1",
            "--p99-ms",
            "5",
            "-q",
        ];
        args.extend_from_slice(extra);
        assert!(shardsim(dir.path(), &args).status.success(), "{extra:?}");
    };
    plan(&[]);
    plan(&["--hold-dist", "exponential"]);
    plan(&["--policy", "random"]);
    // Each folder holds its own plan: the policy and the theory of its hold shape.
    for (folder, policy, theory) in [
        (
            "rate-3000-hold-1-plan",
            "earliest-free",
            "M/D/c (Crommelin)",
        ),
        (
            "rate-3000-hold-1-exponential-plan",
            "earliest-free",
            "M/M/c (Erlang C)",
        ),
        ("rate-3000-hold-1-plan-random", "random", "M/D/1 per row"),
    ] {
        let csv = dir.path().join("output").join(folder).join("plan.csv");
        let text = std::fs::read_to_string(&csv).unwrap();
        let meeting = text.lines().find(|line| line.contains(",true,")).unwrap();
        assert!(
            meeting.contains(&format!(",{policy},")) && meeting.contains(theory),
            "{folder}: {meeting}"
        );
    }
}
