//! The command line: bad input of every class gives a one-line error naming the file and the
//! field or line, exit code 2, and leaves no output behind.

use std::fs;
use std::path::Path;

use crate::common::{shardsim, stderr};

pub(crate) const GOOD: &str = "shards = [1, 2]\nduration_s = 2\n[hold]\ndist = \"constant\"\nms = 1\n[arrivals]\nrate_per_s = 100\n";

/// Writes `files` into a fresh folder, runs `shardsim run test.toml --out out` plus `args`, and
/// checks the bad-input contract; returns the error line.
pub(crate) fn rejects(files: &[(&str, &str)], args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        fs::write(dir.path().join(name), text).unwrap();
    }
    let before = listing(dir.path());
    let mut all_args = vec!["run", "test.toml", "--out", "out"];
    all_args.extend_from_slice(args);
    let output = shardsim(dir.path(), &all_args);
    let message = stderr(&output);
    assert_eq!(
        output.status.code(),
        Some(2),
        "exit code for {files:?} {args:?}: {message}"
    );
    assert_eq!(message.lines().count(), 1, "one line: {message}");
    assert!(message.starts_with("error: "), "{message}");
    assert!(output.stdout.is_empty(), "nothing on stdout");
    assert_eq!(listing(dir.path()), before, "no output written");
    message
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn with_hold(hold: &str) -> String {
    GOOD.replace("dist = \"constant\"\nms = 1\n", hold)
}

pub(crate) fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "{message:?} should mention {part:?}"
        );
    }
}

#[test]
fn runs_a_good_scenario_and_writes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("backlog max"), "{stdout}");
    for file in ["summary.csv", "timeseries.csv", "scenario.toml"] {
        assert!(
            dir.path().join("output/test").join(file).is_file(),
            "{file}"
        );
    }
    assert!(!dir.path().join("output/test/events.csv").exists());
}

#[test]
fn prints_nothing_when_quiet() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--quiet"]);
    assert!(output.status.success());
    assert!(output.stdout.is_empty() && output.stderr.is_empty());
}

#[test]
fn fails_when_a_field_is_unknown() {
    let message = rejects(&[("test.toml", &format!("colour = 3\n{GOOD}"))], &[]);
    assert_mentions(&message, &["test.toml", "unknown field `colour`", "line 1"]);
}

#[test]
fn fails_when_a_nested_field_is_unknown() {
    let message = rejects(
        &[(
            "test.toml",
            &with_hold("dist = \"constant\"\nms = 1\nmss = 2\n"),
        )],
        &[],
    );
    assert_mentions(&message, &["test.toml", "hold", "unknown field `mss`"]);
}

#[test]
fn fails_when_a_number_is_missing() {
    let message = rejects(
        &[("test.toml", &with_hold("dist = \"exponential\"\n"))],
        &[],
    );
    assert_mentions(&message, &["test.toml: hold.mean_ms: missing"]);
}

#[test]
fn fails_when_a_number_is_negative() {
    let message = rejects(
        &[("test.toml", &with_hold("dist = \"constant\"\nms = -1\n"))],
        &[],
    );
    assert_mentions(&message, &["test.toml: hold.ms:", "≥ 0", "got -1"]);
}

#[test]
fn fails_when_a_number_is_not_finite() {
    for value in ["nan", "inf"] {
        let text = GOOD.replace("rate_per_s = 100", &format!("rate_per_s = {value}"));
        let message = rejects(&[("test.toml", &text)], &[]);
        assert_mentions(&message, &["test.toml: arrivals.rate_per_s:", "finite"]);
    }
}

#[test]
fn fails_when_a_number_has_the_wrong_type() {
    let text = GOOD.replace("duration_s = 2", "duration_s = \"two\"");
    let message = rejects(&[("test.toml", &text)], &[]);
    assert_mentions(&message, &["test.toml: duration_s:", "line 2"]);
}

#[test]
fn fails_when_a_distribution_is_unknown() {
    let message = rejects(&[("test.toml", &with_hold("dist = \"pareto\"\n"))], &[]);
    assert_mentions(
        &message,
        &["hold.dist", "constant, exponential, lognormal, uniform"],
    );
}

#[test]
fn fails_when_a_lognormal_p99_is_below_its_median() {
    let hold = "dist = \"lognormal\"\nmedian_ms = 2\np99_ms = 1\n";
    let message = rejects(&[("test.toml", &with_hold(hold))], &[]);
    assert_mentions(&message, &["hold.p99_ms", "greater than median_ms"]);
}

#[test]
fn fails_when_a_lognormal_is_absurdly_wide() {
    let hold = "dist = \"lognormal\"\nmedian_ms = 0.001\np99_ms = 100\n";
    let message = rejects(&[("test.toml", &with_hold(hold))], &[]);
    assert_mentions(&message, &["hold.p99_ms", "at most 1000 × median_ms"]);
}

#[test]
fn fails_when_the_simulated_period_is_empty() {
    let message = rejects(
        &[(
            "test.toml",
            &GOOD.replace("duration_s = 2", "duration_s = 1e-12"),
        )],
        &[],
    );
    assert_mentions(&message, &["test.toml: duration_s:", "at least 1000 ns"]);
}

#[test]
fn fails_when_shards_is_empty() {
    let message = rejects(&[("test.toml", &GOOD.replace("[1, 2]", "[]"))], &[]);
    assert_mentions(&message, &["test.toml: shards: is empty"]);
}

#[test]
fn fails_when_shards_contains_zero() {
    let message = rejects(&[("test.toml", &GOOD.replace("[1, 2]", "[1, 0]"))], &[]);
    assert_mentions(&message, &["test.toml: shards: 0 is not allowed"]);
}

#[test]
fn fails_when_shards_is_negative() {
    let message = rejects(&[("test.toml", &GOOD.replace("[1, 2]", "[1, -4]"))], &[]);
    assert_mentions(&message, &["test.toml: shards[1]:"]);
}

#[test]
fn fails_when_the_shards_flag_contains_zero() {
    let message = rejects(&[("test.toml", GOOD)], &["--shards", "4,0"]);
    assert_mentions(
        &message,
        &["--shards: must be whole numbers from 1 to 1048576, got 0"],
    );
}

#[test]
fn fails_when_the_policy_flag_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--policy", "fastest"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("earliest-free, random, round-robin, hash-user"));
}

#[test]
fn fails_when_arrivals_name_two_sources() {
    let text = GOOD.replace("rate_per_s = 100", "rate_per_s = 100\ntrace = \"t.csv\"");
    let message = rejects(&[("test.toml", &text)], &[]);
    assert_mentions(&message, &["test.toml: arrivals: set exactly one"]);
}

#[test]
fn fails_when_the_scenario_file_is_missing() {
    let message = rejects(&[], &[]);
    assert_mentions(&message, &["test.toml: cannot read the scenario"]);
}

const TRACE_SCENARIO: &str = "shards = [2]\n[hold]\nms = 10\n[arrivals]\ntrace = \"trace.csv\"\n";

#[test]
fn fails_when_the_trace_file_is_missing() {
    let message = rejects(&[("test.toml", TRACE_SCENARIO)], &[]);
    assert_mentions(&message, &["trace.csv: cannot read the trace"]);
}

#[test]
fn fails_when_a_trace_goes_back_in_time() {
    let trace = "t_ms,key\n0,p\n5,p\n4.5,p\n";
    let message = rejects(&[("test.toml", TRACE_SCENARIO), ("trace.csv", trace)], &[]);
    assert_mentions(
        &message,
        &[
            "trace.csv: line 4:",
            "0.5 ms before line 3's",
            "must not decrease",
        ],
    );
}

#[test]
fn fails_when_a_trace_leaves_a_quote_open_naming_its_line() {
    // Read leniently, the open quote would swallow the two arrivals after it into one key.
    for (trace, line) in [
        ("t_ms,key\n0,\"p\n1,q\n2,r\n", 2),
        ("t_ms,key\n0,p\n1,\"q\"\"x\"\n2,\"r", 4),
    ] {
        let message = rejects(&[("test.toml", TRACE_SCENARIO), ("trace.csv", trace)], &[]);
        assert_mentions(
            &message,
            &[
                &format!("trace.csv: line {line}:"),
                "a quote (\") is not closed before the end of the line",
            ],
        );
    }
}

#[test]
fn fails_when_a_trace_line_has_too_many_fields() {
    let trace = "t_ms,key\n0,p\n1,p,extra\n";
    let message = rejects(&[("test.toml", TRACE_SCENARIO), ("trace.csv", trace)], &[]);
    assert_mentions(
        &message,
        &["trace.csv: line 3:", "3 fields but the header has 2"],
    );
}

#[test]
fn fails_when_a_trace_time_is_not_a_number() {
    let trace = "t_ms,key\n0,p\nsoon,p\n";
    let message = rejects(&[("test.toml", TRACE_SCENARIO), ("trace.csv", trace)], &[]);
    assert_mentions(&message, &["trace.csv: line 3:", "\"soon\" is not a time"]);
}

#[test]
fn fails_when_a_trace_has_no_time_column() {
    let message = rejects(
        &[
            ("test.toml", TRACE_SCENARIO),
            ("trace.csv", "when,key\n0,p\n"),
        ],
        &[],
    );
    assert_mentions(&message, &["trace.csv: line 1:", "no time column"]);
}

#[test]
fn fails_when_a_trace_user_is_not_an_id() {
    let trace = "t_ms,user\n0,alice\n";
    let message = rejects(&[("test.toml", TRACE_SCENARIO), ("trace.csv", trace)], &[]);
    assert_mentions(&message, &["trace.csv: line 2:", "user \"alice\""]);
}

#[test]
fn fails_when_hash_user_has_no_users_in_the_trace() {
    let message = rejects(
        &[("test.toml", TRACE_SCENARIO), ("trace.csv", "t_ms\n0\n")],
        &["--policy", "hash-user"],
    );
    assert_mentions(
        &message,
        &["test.toml: policy: hash-user needs a user column"],
    );
}

#[test]
fn keeps_the_previous_output_when_the_input_is_bad() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    assert!(
        shardsim(dir.path(), &["run", "test.toml", "--out", "out"])
            .status
            .success()
    );
    let summary = fs::read(dir.path().join("out/summary.csv")).unwrap();
    fs::write(dir.path().join("test.toml"), GOOD.replace("[1, 2]", "[0]")).unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--out", "out"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        fs::read(dir.path().join("out/summary.csv")).unwrap(),
        summary
    );
    assert_eq!(listing(dir.path()), ["out", "test.toml"]);
}

#[test]
fn refuses_to_replace_a_folder_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    fs::create_dir(dir.path().join("out")).unwrap();
    fs::write(dir.path().join("out/notes.txt"), "mine").unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--out", "out"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("was not written by shardsim"));
    assert_eq!(
        fs::read_to_string(dir.path().join("out/notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn replaces_its_own_previous_output() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    assert!(
        shardsim(
            dir.path(),
            &["run", "test.toml", "--out", "out", "--events"]
        )
        .status
        .success()
    );
    assert!(dir.path().join("out/events.csv").exists());
    assert!(
        shardsim(dir.path(), &["run", "test.toml", "--out", "out"])
            .status
            .success()
    );
    assert!(
        !dir.path().join("out/events.csv").exists(),
        "a stale events.csv would mislead"
    );
    assert_eq!(listing(dir.path()), ["out", "test.toml"]);
}

#[test]
fn fails_when_batching_would_flush_too_often() {
    let text = format!("{GOOD}[batching]\nservers = 100000\nflush_ms = 1\n");
    let message = rejects(&[("test.toml", &text)], &[]);
    assert_mentions(
        &message,
        &["test.toml: batching.flush_ms:", "flushes, above the limit"],
    );
}

#[test]
fn fails_when_client_and_batching_are_combined() {
    let text = format!("{GOOD}[client]\ntimeout_ms = 5\n[batching]\nservers = 2\nflush_ms = 100\n");
    let message = rejects(&[("test.toml", &text)], &[]);
    assert_mentions(&message, &["test.toml: client: not used with [batching]"]);
}

#[test]
fn fails_when_an_adaptive_signal_is_ambiguous() {
    let text =
        format!("{GOOD}[adaptive]\nmax = 8\ngrow_when = {{ p99_ms = 1, utilization = 0.5 }}\n");
    let message = rejects(&[("test.toml", &text)], &[]);
    assert_mentions(
        &message,
        &["test.toml: adaptive.grow_when: set exactly one signal"],
    );
}

#[test]
fn fails_when_reads_come_with_a_trace() {
    let scenario = format!("{TRACE_SCENARIO}[reads]\nrate_per_s = 10\n");
    let message = rejects(
        &[("test.toml", &scenario), ("trace.csv", "t_ms,key\n0,p\n")],
        &[],
    );
    assert_mentions(
        &message,
        &[
            "test.toml: reads: need synthetic likes (rate_per_s, profile or clients): a trace has no read stream",
        ],
    );
}
