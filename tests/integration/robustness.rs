//! Every crash, abort and leak a new user met, reproduced and shown fixed: bounded memory,
//! saturated shard counts, output folders that keep the user's files, temporary folders that
//! go away on a signal, no inf or NaN, exit codes and flags in the tool's own words.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cli::{GOOD, rejects};
use crate::common::{csv_column, repo, run_text, shardsim, stderr};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn plans_adaptive_and_many_key_scenarios_without_panicking() {
    for name in ["adaptive", "many-posts"] {
        plans_without_panicking(name);
    }
}

#[test]
fn many_keys_with_a_warm_up_are_counted_from_its_end() {
    let dir = tempfile::tempdir().unwrap();
    // Keys first touched in the warm-up used to leave a gap in the per-key table (a panic).
    let text = "shards = [2]\nduration_s = 20\nwarmup_s = 10\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 500\n[keys]\ncount = 5000\n";
    let output = run_text(dir.path(), text, &["--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
    // 500 likes a second over the 10 measured seconds: about 5,000, not the run's 10,000,
    // and each key's offered rate is its likes over those 10 seconds.
    let summary = std::fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    let arrivals: f64 = csv_column(&summary, "arrivals")[0].parse().unwrap();
    assert!((arrivals / 5_000.0 - 1.0).abs() < 0.05, "{arrivals}");
    let keys = std::fs::read_to_string(dir.path().join("out/keys.csv")).unwrap();
    let likes = csv_column(&keys, "arrivals");
    let rates = csv_column(&keys, "offered_per_s");
    assert!(!likes.is_empty());
    for (likes, rate) in likes.iter().zip(&rates) {
        let likes: f64 = likes.parse().unwrap();
        let rate: f64 = rate.parse().unwrap();
        assert!(
            (rate * 10.0 - likes).abs() < 0.01,
            "{likes} likes at {rate}/s"
        );
    }
}

fn plans_without_panicking(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = repo(&format!("scenarios/{name}.toml"));
    let output = shardsim(
        dir.path(),
        &[
            "plan",
            scenario.to_str().unwrap(),
            "--p99-ms",
            "20",
            "--replications",
            "2",
            "--duration-s",
            "5",
            "--out",
            "p",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("answer:"));
}

#[test]
fn refuses_a_tiny_window_over_a_long_run_before_starting() {
    let text = "shards = [1, 2, 4, 8, 16, 32, 64]\nduration_s = 10000\nwindow_s = 0.001\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 1\n";
    let message = rejects(&[("test.toml", text)], &[]);
    assert!(
        message.contains("window_s") && message.contains("memory"),
        "{message}"
    );
}

#[test]
fn ten_thousand_replications_fit_in_a_small_budget() {
    // Each replication beyond the first keeps only its summary, so 10,000 of them (which used
    // to exhaust memory at 344 KiB of histogram each) fit in 128 MiB (about 80 MiB estimated).
    let dir = tempfile::tempdir().unwrap();
    let text = GOOD.replace("duration_s = 2", "duration_s = 1\nreplications = 10000");
    let output = run_text(dir.path(), &text, &["--quiet", "--max-memory", "128MiB"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let summary = fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    assert!(
        summary.contains(",10000,"),
        "10,000 replications behind each row"
    );
}

#[test]
fn refuses_a_retry_storm_that_cannot_finish() {
    let text = GOOD
        .replace("rate_per_s = 100", "rate_per_s = 1e9")
        .replace("duration_s = 2", "duration_s = 600")
        + "[client]\ntimeout_ms = 50\nretries = 3\nbackoff_ms = 100\n";
    let message = rejects(&[("test.toml", &text)], &[]);
    assert!(
        message.contains("requests") && message.contains("one run may take"),
        "{message}"
    );
}

#[test]
fn refuses_a_trace_that_is_not_a_file() {
    let text = GOOD
        .replace("rate_per_s = 100", "trace = \"/dev/zero\"")
        .replace("duration_s = 2\n", "");
    let message = rejects(&[("test.toml", &text)], &[]);
    assert!(
        message.contains("/dev/zero: is not a regular file"),
        "{message}"
    );
}

#[test]
fn refuses_an_empty_trace_name() {
    let text = GOOD.replace("rate_per_s = 100", "trace = \"\"");
    let message = rejects(&[("test.toml", &text)], &[]);
    assert!(message.contains("arrivals.trace: is empty"), "{message}");
}

#[test]
fn cuts_a_huge_trace_field_in_the_error() {
    let trace = format!("t_ms,user\n{},1\n", "9".repeat(10 << 20));
    let text = GOOD
        .replace("rate_per_s = 100", "trace = \"t.csv\"")
        .replace("duration_s = 2\n", "");
    let message = rejects(&[("test.toml", &text), ("t.csv", &trace)], &[]);
    assert!(message.len() < 600, "{} characters", message.len());
}

#[test]
fn refuses_absurd_thread_counts_in_its_own_words() {
    let message = rejects(&[("test.toml", GOOD)], &["--threads", "99999999999"]);
    assert!(
        message.contains("--threads: must be a whole number from 1 to 256"),
        "{message}"
    );
    let message = rejects(&[("test.toml", GOOD)], &["--threads", "0"]);
    assert!(message.contains("--threads:"), "{message}");
    let message = rejects(&[("test.toml", GOOD)], &["--shards", "abc"]);
    assert!(
        message.contains("--shards: must be whole numbers"),
        "{message}"
    );
}

#[test]
fn stops_a_swamped_shard_count_as_saturated_while_the_others_complete() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        "shards = [1, 2000]\nduration_s = 2\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 1000000\n";
    let output = run_text(
        dir.path(),
        text,
        &["--format", "json", "--max-memory", "64MiB"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows[0]["verdict"], "saturated");
    assert!(rows[0]["saturated_at_s"].as_f64().unwrap() < 2.0);
    assert!(
        rows[1]["saturated_at_s"].is_null(),
        "2,000 rows are not saturated"
    );
    assert_eq!(
        rows[1]["arrivals"], rows[0]["arrivals"],
        "every arrival is counted"
    );
}

#[test]
fn a_foreign_file_in_an_output_folder_survives() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    let run = || shardsim(dir.path(), &["run", "test.toml", "--out", "out", "--quiet"]);
    assert!(run().status.success());
    fs::write(dir.path().join("out/notes.txt"), "mine").unwrap();
    let output = run();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("notes.txt"), "{}", stderr(&output));
    assert_eq!(
        fs::read_to_string(dir.path().join("out/notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn an_empty_marker_does_not_let_a_run_replace_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    fs::create_dir(dir.path().join("out")).unwrap();
    fs::write(dir.path().join("out/.shardsim-output"), "").unwrap();
    fs::write(dir.path().join("out/thesis.tex"), "years of work").unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--out", "out"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(dir.path().join("out/thesis.tex").exists());
}

fn partials(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".partial."))
        .collect()
}

#[test]
fn an_interrupted_run_leaves_no_temporary_folder() {
    interrupt_with("-INT");
}

#[test]
fn a_terminated_run_leaves_no_temporary_folder() {
    interrupt_with("-TERM");
}

/// Starts a long run, sends it `signal` once it has begun writing, and checks that it left
/// nothing behind.
fn interrupt_with(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    // About ten seconds of work: long enough to interrupt in the middle.
    let text = "shards = [1, 2, 4, 8]\nduration_s = 4000\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 50000\n";
    fs::write(dir.path().join("test.toml"), text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardsim"))
        .args(["run", "test.toml", "--out", "out", "--quiet"])
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while partials(dir.path()).is_empty() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!partials(dir.path()).is_empty(), "the run started writing");
    let killed = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        partials(dir.path()).is_empty(),
        "{:?}",
        partials(dir.path())
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_dead_runs_temporary_folder_is_cleaned_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    // The name a run on this host with process id 999999999 gives its temporary folder.
    let host: String = fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dead = dir
        .path()
        .join(format!(".out.partial.{host}.999999999.0000abcd"));
    fs::create_dir(&dead).unwrap();
    fs::write(dead.join(".shardsim-staging"), "host\npid 999999999\n").unwrap();
    fs::write(dead.join("events.csv"), "x").unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--out", "out", "--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(partials(dir.path()).is_empty());
}

#[test]
fn a_second_writer_of_a_folder_is_refused_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    // Another host's run writing `out` (on a shared file system): this host cannot tell whether
    // it still runs, so it neither removes its folder nor writes beside it.
    let other = dir.path().join(".out.partial.node-7.4242.0000abcd");
    fs::create_dir(&other).unwrap();
    fs::write(other.join(".shardsim-staging"), "host node-7\npid 4242\n").unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--out", "out", "--quiet"]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    assert!(
        message
            .contains("another shardsim is writing this folder (host node-7, process 4242, into")
            && message.contains(".out.partial.node-7.4242.0000abcd"),
        "{message}"
    );
    assert!(other.is_dir() && !dir.path().join("out").exists());
    // Once that run's folder is gone (it ended, or the user removed it), the run goes ahead.
    fs::remove_dir_all(&other).unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--out", "out", "--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_run_over_its_cgroups_memory_limit_is_refused_naming_the_limit() {
    // A memory cgroup of 300 MiB of this test's own (v1 or v2), where the machine lets it make
    // one (root, a writable cgroup file system).
    let made = [
        ("/sys/fs/cgroup/memory", "memory.limit_in_bytes"),
        ("/sys/fs/cgroup", "memory.max"),
    ]
    .into_iter()
    .find_map(|(root, file)| {
        let group = Path::new(root).join(format!("shardsim-test-{}", std::process::id()));
        fs::create_dir(&group).ok()?;
        if fs::write(group.join(file), (300u64 << 20).to_string()).is_ok() {
            Some(group)
        } else {
            let _ = fs::remove_dir(&group);
            None
        }
    });
    let Some(group) = made else {
        // CI runs as root on a machine whose cgroups it may write: there the test must run.
        let root = fs::read_to_string("/proc/self/status").is_ok_and(|status| {
            status
                .lines()
                .any(|line| line.starts_with("Uid:") && line.split_whitespace().nth(1) == Some("0"))
        });
        assert!(
            !(crate::common::in_ci() && root),
            "CI as root could make no memory cgroup: the test cannot run"
        );
        eprintln!(
            "skipped: this machine lets the tests make no memory cgroup (not root, or no writable cgroup file system)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let big = GOOD.replace("duration_s = 2", "duration_s = 600\nwindow_s = 0.0005");
    fs::write(dir.path().join("big.toml"), big).unwrap();
    let output = Command::new("sh")
        .args([
            "-c",
            "echo $$ > \"$0/cgroup.procs\" && exec \"$1\" run big.toml --out out -q",
        ])
        .arg(&group)
        .arg(env!("CARGO_BIN_EXE_shardsim"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let _ = fs::remove_dir(&group);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains(
            "more than the default --max-memory (this process's cgroup memory limit) of 300 MiB"
        ),
        "{message}"
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn writes_no_inf_or_nan_for_a_zero_hold_or_a_run_without_arrivals() {
    let dir = tempfile::tempdir().unwrap();
    let zero = GOOD.replace("ms = 1", "ms = 0");
    let idle = GOOD.replace("rate_per_s = 100", "rate_per_s = 0")
        + "[adaptive]\nstart = 1\nmax = 8\ngrow_when = { p99_ms = 5 }\n";
    for (name, text) in [("zero", zero), ("idle", idle)] {
        fs::write(dir.path().join(format!("{name}.toml")), text).unwrap();
        let output = shardsim(
            dir.path(),
            &["run", &format!("{name}.toml"), "--out", name, "--quiet"],
        );
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        for file in ["summary.csv", "timeseries.csv"] {
            let csv = fs::read_to_string(dir.path().join(name).join(file)).unwrap();
            let lower = csv.to_lowercase();
            assert!(
                !lower.contains("inf") && !lower.contains("nan"),
                "{name}/{file}:\n{csv}"
            );
        }
    }
}

#[test]
fn check_rejects_a_non_finite_baseline() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    let update = shardsim(
        dir.path(),
        &["check", "test.toml", "--baseline", "b.csv", "--update"],
    );
    assert!(update.status.success(), "{}", stderr(&update));
    let text = fs::read_to_string(dir.path().join("b.csv")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let at = header.iter().position(|c| *c == "utilization").unwrap();
    let mut cells: Vec<String> = lines[1].split(',').map(str::to_owned).collect();
    cells[at] = "NaN".into();
    lines[1] = cells.join(",");
    fs::write(dir.path().join("b.csv"), lines.join("\n") + "\n").unwrap();
    let output = shardsim(dir.path(), &["check", "test.toml", "--baseline", "b.csv"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not a finite number"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn run_fails_when_no_shard_count_meets_the_target_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let text = GOOD.replace("rate_per_s = 100", "rate_per_s = 5000") + "[slo]\np99_ms = 1\n";
    fs::write(dir.path().join("test.toml"), text).unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--out", "a", "--quiet"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("no simulated shard count meets the target"));
    assert!(
        dir.path().join("a/summary.csv").exists(),
        "the results are still written"
    );
    let output = shardsim(
        dir.path(),
        &["run", "test.toml", "--out", "b", "--quiet", "--no-fail"],
    );
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn an_explicit_json_format_wins_over_quiet() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    let output = shardsim(
        dir.path(),
        &[
            "run",
            "test.toml",
            "--out",
            "o",
            "--quiet",
            "--format",
            "json",
        ],
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), 2);
    let quiet = shardsim(dir.path(), &["run", "test.toml", "--out", "o", "--quiet"]);
    assert!(quiet.stdout.is_empty());
}

#[test]
fn plan_rejects_flags_it_would_ignore_and_names_its_own_flags() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["plan", "test.toml", "--shards", "1,2", "--p99-ms", "5"],
            "--shards",
        ),
        (
            &["plan", "--rate", "nan", "--hold-ms", "1", "--p99-ms", "5"],
            "--rate: must be a finite number > 0",
        ),
        (
            &["plan", "--rate", "2e9", "--hold-ms", "1", "--p99-ms", "5"],
            "--rate: must be at most",
        ),
        (
            &[
                "plan",
                "test.toml",
                "--hold-dist",
                "exponential",
                "--p99-ms",
                "5",
            ],
            "--hold-dist",
        ),
    ];
    for (args, expected) in cases {
        let output = shardsim(dir.path(), args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert_eq!(message.lines().count(), 1, "{message}");
        assert!(message.contains(expected), "{args:?}: {message}");
    }
}

#[test]
fn an_unwritable_output_folder_exits_3_naming_the_users_path() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    fs::write(dir.path().join("file"), "not a folder").unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--out", "file/sub/out"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("file/sub/out") && !message.contains("partial"),
        "{message}"
    );
}

#[test]
fn prints_shell_completions() {
    let output = shardsim(Path::new("."), &["completions", "bash"]);
    assert!(output.status.success());
    assert!(stdout(&output).contains("shardsim"));
}

#[test]
fn a_tiny_plan_rate_is_refused_naming_the_rate_in_a_short_line() {
    let dir = tempfile::tempdir().unwrap();
    let output = shardsim(
        dir.path(),
        &[
            "plan",
            "--rate",
            "1e-300",
            "--hold-ms",
            "1",
            "--p99-ms",
            "20",
        ],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert_eq!(
        message.trim(),
        "error: --rate: must be at least 1e-6 per second (one in about eleven days), got 1e-300"
    );
}

#[test]
fn validate_names_a_device_a_pipe_or_a_folder_as_its_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    crate::common::mkfifo(&fifo);
    for (calibration, expected) in [
        (
            "/dev/zero",
            "/dev/zero: is not a regular file (a pipe or a device)",
        ),
        ("fifo", "fifo: is not a regular file (a pipe or a device)"),
        (".", ".: is a folder"),
        ("nope.toml", "nope.toml: no such file"),
    ] {
        let output = shardsim(
            dir.path(),
            &[
                "validate",
                "--calibration",
                calibration,
                "--db",
                "host=/nonexistent user=x",
            ],
        );
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{message}");
        assert!(message.contains(expected), "{calibration}: {message}");
    }
}

#[test]
fn an_unwritable_standard_error_is_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_shardsim"))
        .args(["run", "nope.toml"])
        .current_dir(dir.path())
        .stderr(full)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2), "bad input, not a panic's 101");
}

#[test]
fn periods_have_a_floor_so_a_run_never_spins() {
    let base = "shards = [1]\nduration_s = 1\n[hold]\ndist = \"constant\"\nms = 1\n[arrivals]\nrate_per_s = 100\n";
    let regions = format!(
        "{base}[regions]\nnames = [\"mumbai\", \"singapore\"]\nshares = [0.5, 0.5]\nreplication = \"g-counter\"\nsync_every_ms = 5e-324\nlag_ms = {{ dist = \"constant\", ms = 100 }}\n"
    );
    let likes = format!(
        "{base}[likes_table]\npartitions = 4\ninsert_hold = {{ dist = \"constant\", ms = 0.1 }}\n[reconcile]\nevery_s = 1e-12\nrows_per_s = 100000\n"
    );
    for (text, field) in [
        (regions, "regions.sync_every_ms"),
        (likes, "reconcile.every_s"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let output = run_text(dir.path(), &text, &[]);
        let message = stderr(&output);
        assert!(started.elapsed() < Duration::from_secs(20), "{field}");
        assert_eq!(output.status.code(), Some(2), "{field}: {message}");
        assert!(
            message.contains(field) && message.contains("0.001"),
            "{message}"
        );
    }
}

#[test]
fn an_output_that_names_no_folder_of_its_own_is_refused_before_any_work() {
    // `DIR/.` used to run the whole simulation, then fail with exit 3; `sub/..` was refused
    // up front. Each is refused at once, naming the flag's path, with nothing written.
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    for out in ["sub/.", "sub/..", ".", "sub/./"] {
        for command in [
            vec!["run", "test.toml", "--out", out],
            vec!["plan", "test.toml", "--p99-ms", "5", "--out", out],
        ] {
            let output = shardsim(dir.path(), &command);
            let message = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{command:?}: {message}");
            assert!(
                message.contains("name a file or folder of its own"),
                "{command:?}: {message}"
            );
        }
    }
    let mut left: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["sub", "test.toml"]);
    assert_eq!(fs::read_dir(dir.path().join("sub")).unwrap().count(), 0);
}

/// Mounts a tmpfs of `kib` KiB on `at`, when this process may (root, with `mount`); `false`
/// when it cannot, and the caller skips what needs it.
fn small_disk(at: &Path, kib: u32) -> bool {
    fs::create_dir_all(at).unwrap();
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
        .arg(at)
        .status()
        .is_ok_and(|status| status.success())
}

#[test]
fn a_full_disk_leaves_no_staging_folder_behind() {
    // On a file system with no room, run, plan and merge exit 3 and leave nothing beside
    // their output (before: an empty staging folder).
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    if !small_disk(&disk, 8) {
        eprintln!("skipped: cannot mount a small tmpfs here (not root, or no mount)");
        assert!(
            !crate::common::in_ci(),
            "CI mounts a small tmpfs for this test"
        );
        return;
    }
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    fs::write(
        dir.path().join("grid.toml"),
        format!("{GOOD}[sweep]\n\"hold.ms\" = [1, 2]\n"),
    )
    .unwrap();
    for slice in ["0/2", "1/2"] {
        let out = format!("parts/slice-{}", &slice[..1]);
        let made = shardsim(
            dir.path(),
            &[
                "run",
                "grid.toml",
                "--partition",
                slice,
                "--out",
                &out,
                "--quiet",
            ],
        );
        assert!(made.status.success(), "{}", stderr(&made));
    }
    // Fill what is left of the disk.
    let _ = fs::write(disk.join("filler"), vec![0u8; 8 << 10]);
    let runs: [&[&str]; 3] = [
        &["run", "test.toml", "--out", "disk/out"],
        &["plan", "test.toml", "--p99-ms", "5", "--out", "disk/plan"],
        &[
            "merge",
            "parts/slice-0",
            "parts/slice-1",
            "--out",
            "disk/merged",
        ],
    ];
    for command in runs {
        let output = shardsim(dir.path(), command);
        let left: Vec<String> = fs::read_dir(&disk)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "filler")
            .collect();
        assert!(
            !output.status.success() && left.is_empty(),
            "{command:?} (exit {:?}): left {left:?}: {}",
            output.status.code(),
            stderr(&output)
        );
    }
    let _ = Command::new("umount").arg(&disk).status();
}

#[test]
fn a_baseline_cut_short_of_one_of_a_features_columns_is_bad_input() {
    // A baseline with the clients' columns but without `amplification` (or user_failures,
    // count_drift, goodput_per_s) was a regression (exit 1); it is a malformed baseline, as
    // every other missing column is (exit 2).
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo("scenarios/retry-storm.toml"),
        dir.path().join("retry-storm.toml"),
    )
    .unwrap();
    fs::create_dir(dir.path().join("baselines")).unwrap();
    let baseline = fs::read_to_string(repo("scenarios/baselines/retry-storm.csv")).unwrap();
    for column in [
        "amplification",
        "user_failures",
        "count_drift",
        "goodput_per_s",
    ] {
        let mut lines = baseline.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let at = header.iter().position(|c| *c == column).unwrap();
        let cut = |line: &str| {
            let mut cells: Vec<&str> = line.split(',').collect();
            cells.remove(at);
            cells.join(",")
        };
        let text: Vec<String> = std::iter::once(cut(&header.join(",")))
            .chain(lines.map(cut))
            .collect();
        fs::write(
            dir.path().join("baselines/retry-storm.csv"),
            text.join("\n") + "\n",
        )
        .unwrap();
        let output = shardsim(dir.path(), &["check", "retry-storm.toml"]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{column}: {message}");
        assert!(
            message.contains(&format!("no {column} column")),
            "{message}"
        );
    }
}

#[test]
fn merge_counts_the_slices_it_was_given() {
    // Three slices of a run of four, one of them changed since it was written: the refusal
    // says three were given (it said two: the ones it could use).
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("grid.toml"),
        format!("{GOOD}[sweep]\n\"hold.ms\" = [1, 2, 3, 4]\n"),
    )
    .unwrap();
    for k in 0..3 {
        let made = shardsim(
            dir.path(),
            &[
                "run",
                "grid.toml",
                "--partition",
                &format!("{k}/4"),
                "--out",
                &format!("slice-{k}"),
                "--quiet",
            ],
        );
        assert!(made.status.success(), "{}", stderr(&made));
    }
    let runs = fs::read_dir(dir.path().join("slice-2"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("runs"))
        })
        .unwrap();
    let mut bytes = fs::read(&runs).unwrap();
    bytes.push(b'\n');
    fs::write(&runs, bytes).unwrap();
    let output = shardsim(
        dir.path(),
        &["merge", "slice-0", "slice-1", "slice-2", "--out", "merged"],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("(3 given;"), "{message}");
}
