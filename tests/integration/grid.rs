//! Grid sweeps (`[sweep]`), partitions (`run --partition K/M`) and `shardsim merge`.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;

/// A grid of 5 hold times × 2 traffic levels = 10 configurations of 2 replications: 20 units
/// (3 and 7 divide neither).
fn grid_text(seed: u64) -> String {
    format!(
        "name = \"grid\"\nseed = {seed}\nshards = [1, 2, 4]\nduration_s = 2\nreplications = 2\npolicy = [\"earliest-free\", \"random\"]\n\
         [hold]\ndist = \"constant\"\nms = 1\n[arrivals]\nrate_per_s = 1500\n[slo]\np99_ms = 5\n\
         [sweep]\n\"hold.ms\" = [0.2, 0.5, 1, 1.5, 2]\n\"arrivals.scale\" = [1, 2]\n"
    )
}

/// A temporary folder holding `grid.toml` (the grid of [`grid_text`] with `seed`).
fn grid_folder(seed: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grid.toml"), grid_text(seed)).unwrap();
    dir
}

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file))
        .unwrap_or_else(|err| panic!("{}: {err}", dir.join(file).display()))
}

fn run_ok(dir: &Path, args: &[&str]) -> String {
    let output = common::shardsim(dir, args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        common::stderr(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_configurations_rows_are_those_of_its_own_scenario() {
    let dir = grid_folder(3);
    // Some configurations meet no target: exit 1, naming how many (unless --no-fail).
    let output = common::shardsim(dir.path(), &["run", "grid.toml", "--out", "all"]);
    assert_eq!(output.status.code(), Some(1), "{}", common::stderr(&output));
    assert!(common::stderr(&output).contains("configurations"));
    let stdout = run_ok(
        dir.path(),
        &[
            "run",
            "grid.toml",
            "--out",
            "all",
            "--no-fail",
            "--every-run",
        ],
    );
    assert!(stdout.contains("hold.ms \\ arrivals.scale"), "{stdout}");
    // hold.ms = 1.5 with arrivals.scale = 2, as a scenario of its own.
    let alone = grid_text(3)
        .split("[sweep]")
        .next()
        .unwrap()
        .replace("ms = 1\n", "ms = 1.5\n")
        .replace("rate_per_s = 1500\n", "rate_per_s = 1500\nscale = 2\n");
    std::fs::write(dir.path().join("alone.toml"), alone).unwrap();
    run_ok(
        dir.path(),
        &[
            "run",
            "alone.toml",
            "--out",
            "alone",
            "--quiet",
            "--no-fail",
        ],
    );
    for file in ["summary.csv", "timeseries.csv"] {
        let sweep = String::from_utf8(read(&dir.path().join("all"), file)).unwrap();
        let single = String::from_utf8(read(&dir.path().join("alone"), file)).unwrap();
        let mut sweep_lines = sweep.lines();
        let mut single_lines = single.lines();
        assert_eq!(
            sweep_lines.next().unwrap(),
            format!("hold.ms,arrivals.scale,{}", single_lines.next().unwrap())
        );
        let ours: Vec<&str> = sweep_lines
            .filter_map(|l| l.strip_prefix("1.5,2,"))
            .collect();
        let theirs: Vec<&str> = single_lines.collect();
        assert!(!theirs.is_empty());
        assert_eq!(ours, theirs, "{file}");
    }
    let sweep = String::from_utf8(read(&dir.path().join("all"), "sweep.csv")).unwrap();
    assert_eq!(
        sweep.lines().count(),
        1 + 10 * 2,
        "a row per configuration × policy"
    );
    assert!(dir.path().join("all/sweep-random.png").exists());
}

#[test]
fn merged_partitions_equal_the_single_run_byte_for_byte() {
    let dir = grid_folder(5);
    run_ok(
        dir.path(),
        &[
            "run",
            "grid.toml",
            "--out",
            "all",
            "--quiet",
            "--threads",
            "2",
            "--no-fail",
            "--every-run",
        ],
    );
    for slices in [1usize, 3, 7] {
        // The slices as separate processes, all at once (a job array's stand-in).
        let children: Vec<_> = (0..slices)
            .map(|k| {
                Command::new(env!("CARGO_BIN_EXE_shardsim"))
                    .args(["run", "grid.toml", "--quiet", "--threads", "1"])
                    .args(["--partition", &format!("{k}/{slices}")])
                    .args(["--out", &format!("m{slices}/parts/slice-{k}")])
                    .current_dir(dir.path())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success(), "{}", common::stderr(&output));
        }
        // Every slice named (in any order), or the folder that holds them.
        let mut args = vec!["merge".to_owned()];
        if slices == 3 {
            args.push(format!("m{slices}/parts"));
        } else {
            args.extend(
                (0..slices)
                    .rev()
                    .map(|k| format!("m{slices}/parts/slice-{k}")),
            );
        }
        args.extend([
            "--out".to_owned(),
            format!("m{slices}/merged"),
            "--quiet".to_owned(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_ok(dir.path(), &args);
        let merged = dir.path().join(format!("m{slices}/merged"));
        for file in [
            "summary.csv",
            "timeseries.csv",
            "sweep.csv",
            "sweep-earliest-free.png",
        ] {
            assert!(
                read(&merged, file) == read(&dir.path().join("all"), file),
                "{file} differs with {slices} slices"
            );
        }
    }
}

#[test]
fn merges_of_groups_of_slices_merge_like_one_merge() {
    let dir = grid_folder(5);
    let single = [
        "run",
        "grid.toml",
        "--out",
        "all",
        "--quiet",
        "--no-fail",
        "--every-run",
    ];
    run_ok(dir.path(), &single);
    // 20 units over 7 slices: each configuration's two replications lie in two slices, so a
    // group finishes some configurations and passes the others' units on.
    for k in 0..7 {
        let partition = format!("{k}/7");
        let out = format!("parts/slice-{k}");
        run_ok(
            dir.path(),
            &[
                "run",
                "grid.toml",
                "--partition",
                &partition,
                "--out",
                &out,
                "-q",
            ],
        );
    }
    let groups: [(&str, &[&str]); 3] = [
        ("g0", &["parts/slice-0", "parts/slice-1", "parts/slice-2"]),
        ("g1", &["parts/slice-3", "parts/slice-4"]),
        ("g2", &["parts/slice-5", "parts/slice-6"]),
    ];
    for (out, slices) in groups {
        let mut args = vec!["merge", "--partial", "--out", out, "-q"];
        args.extend_from_slice(slices);
        run_ok(dir.path(), &args);
    }
    let manifest = std::fs::read_to_string(dir.path().join("g0/partition.json")).unwrap();
    assert!(
        manifest.contains("\"finished\""),
        "g0 finished some: {manifest}"
    );
    assert!(manifest.contains("\"covers\""), "{manifest}");
    // A group of groups, then the final merge beside the last group.
    run_ok(
        dir.path(),
        &["merge", "--partial", "g0", "g1", "--out", "g01", "-q"],
    );
    run_ok(
        dir.path(),
        &["merge", "g01", "g2", "--out", "two-level", "-q"],
    );
    run_ok(
        dir.path(),
        &["merge", "g0", "g1", "g2", "--out", "one-level", "-q"],
    );
    for merged in ["two-level", "one-level"] {
        for file in [
            "summary.csv",
            "timeseries.csv",
            "sweep.csv",
            "sweep-random.png",
        ] {
            assert!(
                read(&dir.path().join(merged), file) == read(&dir.path().join("all"), file),
                "{merged}/{file} differs from the single run's"
            );
        }
    }
    // A group given beside one of its own slices, or without the others, is refused.
    let twice = common::shardsim(
        dir.path(),
        &["merge", "g0", "g2", "g1", "parts/slice-4", "--out", "x"],
    );
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        common::stderr(&twice).contains("holds slice 4 of 7"),
        "{}",
        common::stderr(&twice)
    );
    let short = common::shardsim(dir.path(), &["merge", "g0", "g2", "--out", "x"]);
    assert_eq!(short.status.code(), Some(2));
    assert!(
        common::stderr(&short).contains("slices 3, 4 of 7 are missing"),
        "{}",
        common::stderr(&short)
    );
    assert!(!dir.path().join("x").exists());
}

/// Rewrites a slice's `runs.jsonl` through `edit` (its lines as JSON) and re-fingerprints it in
/// `partition.json`, as a forger would: only the merge's own checks stand in the way.
fn forge_runs(slice: &Path, edit: impl Fn(&mut [serde_json::Value])) {
    let text = std::fs::read_to_string(slice.join("runs.jsonl")).unwrap();
    let mut units: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    edit(&mut units);
    let forged: String = units.iter().map(|u| format!("{u}\n")).collect();
    std::fs::write(slice.join("runs.jsonl"), &forged).unwrap();
    let mut hash = shardsim::partition::Fingerprint::new();
    hash.add(forged.as_bytes());
    let path = slice.join("partition.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["runs_fingerprint"] = hash.finish().into();
    std::fs::write(&path, manifest.to_string()).unwrap();
}

#[test]
fn merge_refuses_forged_runs_in_one_line_never_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let grid = "shards = [1, 2]\nduration_s = 2\nreplications = 2\n[hold]\ndist = \"constant\"\nms = 1\n\
        [arrivals]\nrate_per_s = 500\n[pool]\nsize = 4\n[[neighbours]]\nname = \"feed\"\nrate_per_s = 50\nhold_ms = 2\n\
        [sweep]\n\"hold.ms\" = [0.5, 1]\n";
    std::fs::write(dir.path().join("grid.toml"), grid).unwrap();
    let slice = |out: &str| {
        run_ok(
            dir.path(),
            &[
                "run",
                "grid.toml",
                "--partition",
                "0/1",
                "--out",
                out,
                "-q",
                "--no-fail",
            ],
        );
        dir.path().join(out)
    };
    // A later replication's pooled waits frozen, as only its own waits are.
    let frozen = slice("frozen");
    forge_runs(&frozen, |units| {
        let waits = units[1]["runs"][0]["waits"].clone();
        units[1]["runs"][0]["extended"]["pool"]["like_waits"] = waits;
    });
    let output = common::shardsim(dir.path(), &["merge", "frozen", "--out", "merged"]);
    let message = common::stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    assert!(
        message.contains("frozen/runs.jsonl: holds frozen statistics"),
        "{message}"
    );
    assert!(!dir.path().join("merged").exists());
    // A later replication naming more neighbours than the first: merged, not a panic.
    let extra = slice("extra");
    forge_runs(&extra, |units| {
        let list = units[1]["runs"][0]["extended"]["pool"]["neighbour_waits"]
            .as_array_mut()
            .unwrap();
        list.push(list[0].clone());
    });
    let output = common::shardsim(dir.path(), &["merge", "extra", "--out", "merged", "-q"]);
    assert!(output.status.success(), "{}", common::stderr(&output));
}

#[test]
fn merge_refuses_a_missing_a_repeated_or_a_foreign_slice() {
    let dir = grid_folder(5);
    std::fs::write(dir.path().join("other.toml"), grid_text(6)).unwrap();
    for (file, k) in [
        ("grid.toml", 0),
        ("grid.toml", 1),
        ("grid.toml", 2),
        ("other.toml", 2),
    ] {
        let out = format!("{}-{k}", &file[..file.len() - 5]);
        run_ok(
            dir.path(),
            &[
                "run",
                file,
                "--partition",
                &format!("{k}/3"),
                "--out",
                &out,
                "--quiet",
            ],
        );
    }
    let cases: [(&[&str], &str); 5] = [
        (
            &["grid-0", "grid-1"],
            "slice 2 of 3 is missing (2 given; slices are numbered 0 … 2): re-run it",
        ),
        (
            &["grid-1"],
            "slices 0, 2 of 3 are missing (1 given; slices are numbered 0 … 2): re-run them: rerun.sh --only 0,2",
        ),
        (
            &["grid-0", "grid-1", "grid-1", "grid-2"],
            "give each slice once",
        ),
        (&["grid-0", "grid-1", "other-2"], "another run"),
        (&["grid-0", "grid-1", "nowhere"], "is not a slice's output"),
    ];
    for (parts, expected) in cases {
        let mut args = vec!["merge"];
        args.extend_from_slice(parts);
        args.extend(["--out", "merged"]);
        if parts.len() == 1 {
            args.extend(["--rerun", "rerun.sh --only"]);
        }
        let output = common::shardsim(dir.path(), &args);
        let stderr = common::stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{parts:?}: {stderr}");
        assert!(stderr.contains(expected), "{parts:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1);
        assert!(!dir.path().join("merged").exists());
    }
    // Merging into one of the slices would delete it.
    let output = common::shardsim(
        dir.path(),
        &["merge", "grid-0", "grid-1", "grid-2", "--out", "grid-1"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", common::stderr(&output));
    assert!(common::stderr(&output).contains("would replace the slice"));
    assert!(dir.path().join("grid-1/runs.jsonl").is_file());
    // A slice whose runs were edited after it wrote them is refused, naming it.
    let runs = dir.path().join("grid-2/runs.jsonl");
    let edited = std::fs::read_to_string(&runs)
        .unwrap()
        .replacen("1", "2", 1);
    std::fs::write(&runs, edited).unwrap();
    let output = common::shardsim(
        dir.path(),
        &["merge", "grid-0", "grid-1", "grid-2", "--out", "merged"],
    );
    let stderr = common::stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("slice 2: its runs.jsonl changed since the slice wrote it"),
        "{stderr}"
    );
    assert!(!dir.path().join("merged").exists());
}

/// Runs the 4 slices of the test grid into `dir/parts/slice-K`.
fn four_slices(dir: &Path) {
    for k in 0..4 {
        run_ok(
            dir,
            &[
                "run",
                "grid.toml",
                "--partition",
                &format!("{k}/4"),
                "--out",
                &format!("parts/slice-{k}"),
                "--quiet",
            ],
        );
    }
}

/// `shardsim merge parts --out merged --rerun again.sh` plus `args`: its one error line.
fn merge_error(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["merge", "parts", "--out", "merged", "--rerun", "again.sh"];
    all.extend_from_slice(args);
    let output = common::shardsim(dir, &all);
    let stderr = common::stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(!dir.join("merged").exists());
    stderr
}

#[test]
fn merge_names_every_unusable_slice_at_once_with_one_command_to_re_run_them() {
    let dir = grid_folder(5);
    four_slices(dir.path());
    let parts = dir.path().join("parts");
    // Slice 0 lost its manifest, a file stands in slice 1's place, slice 2's runs changed and
    // slice 3 is missing.
    std::fs::remove_file(parts.join("slice-0/partition.json")).unwrap();
    std::fs::remove_dir_all(parts.join("slice-1")).unwrap();
    std::fs::write(parts.join("slice-1"), "not a folder").unwrap();
    let runs = parts.join("slice-2/runs.jsonl");
    let edited = std::fs::read_to_string(&runs)
        .unwrap()
        .replacen('1', "2", 1);
    std::fs::write(&runs, edited).unwrap();
    std::fs::remove_dir_all(parts.join("slice-3")).unwrap();
    let message = merge_error(dir.path(), &[]);
    for expected in [
        "slice 3 of 4 is missing; ",
        "slice 0: its partition.json is missing; ",
        "slice 1: a file stands in its folder's place; ",
        "slice 2: its runs.jsonl changed since the slice wrote it",
        "(3 given; slices are numbered 0 … 3): re-run them: again.sh 0,1,2,3",
    ] {
        assert!(message.contains(expected), "{expected}: {message}");
    }
}

#[test]
fn merge_with_no_slice_written_names_them_all_when_told_the_count() {
    let dir = grid_folder(5);
    std::fs::create_dir(dir.path().join("parts")).unwrap();
    let message = merge_error(dir.path(), &["--slices", "3"]);
    assert!(
        message.contains(
            "slices 0, 1, 2 of 3 are missing (0 given; slices are numbered 0 … 2): re-run them: again.sh 0,1,2"
        ),
        "{message}"
    );
    // Without the count, the one it could not read is named and the way to name them all.
    four_slices(dir.path());
    for k in 0..4 {
        std::fs::remove_file(dir.path().join(format!("parts/slice-{k}/partition.json"))).unwrap();
    }
    let message = merge_error(dir.path(), &[]);
    assert!(
        message.contains("no slice could be read") && message.contains("--slices M"),
        "{message}"
    );
    let message = merge_error(dir.path(), &["--slices", "4"]);
    assert!(
        message.contains("slices 0, 1, 2, 3: its partition.json is missing")
            && message.contains("re-run them: again.sh 0,1,2,3"),
        "{message}"
    );
}

#[test]
fn merge_refuses_a_device_or_a_pipe_as_a_slices_runs_at_once() {
    let dir = grid_folder(5);
    four_slices(dir.path());
    let runs = dir.path().join("parts/slice-1/runs.jsonl");
    std::fs::remove_file(&runs).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &runs).unwrap();
    let fifo = dir.path().join("parts/slice-2/runs.jsonl");
    std::fs::remove_file(&fifo).unwrap();
    crate::common::mkfifo(&fifo);
    let started = std::time::Instant::now();
    let message = merge_error(dir.path(), &[]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(
        message.contains("slices 1, 2: its runs.jsonl is not a regular file")
            && message.contains("re-run them: again.sh 1,2"),
        "{message}"
    );
}

#[test]
fn partition_auto_reads_the_schedulers_index() {
    let dir = grid_folder(5);
    run_ok(
        dir.path(),
        &[
            "run",
            "grid.toml",
            "--partition",
            "2/3",
            "--out",
            "explicit",
            "-q",
        ],
    );
    let auto = |vars: &[(&str, &str)], flag: &str, out: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_shardsim"))
            .args(["run", "grid.toml", "--partition", flag, "--out", out, "-q"])
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("JOB_COMPLETION_INDEX")
            .env_remove("SHARDSIM_PARTITIONS")
            .envs(vars.iter().copied())
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", common::stderr(&output));
        read(&dir.path().join(out), "runs.jsonl")
    };
    let explicit = read(&dir.path().join("explicit"), "runs.jsonl");
    assert!(!explicit.is_empty());
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "3"),
    ];
    assert_eq!(auto(&slurm, "auto/3", "slurm"), explicit);
    // A re-run of that one task: an array of one, the count given once by the script.
    let rerun = [
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_MIN", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "1"),
        ("SHARDSIM_PARTITIONS", "3"),
    ];
    assert_eq!(auto(&rerun, "auto", "rerun"), explicit);
    let k8s = [("JOB_COMPLETION_INDEX", "2")];
    assert_eq!(auto(&k8s, "auto/3", "k8s"), explicit);
}

#[test]
fn a_bad_sweep_entry_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let base = "shards = [1]\nduration_s = 1\n[hold]\ndist = \"constant\"\nms = 1\n[arrivals]\nrate_per_s = 100\n[sweep]\n";
    let cases = [
        ("\"hold.foo\" = [1, 2]", "hold.foo"),
        ("\"hold.ms\" = [\"fast\"]", "hold.ms"),
        ("\"hold.ms\" = []", "empty"),
        ("\"hold.ms\" = 1", "list"),
        ("shards = [[1], [2]]", "cannot be swept"),
        ("\"hold.ms\" = [-1, 1]", "hold.ms"),
        ("\"nothing.here\" = [1]", "nothing.here"),
        (
            "\"hold.ms.x\" = [1, 2]",
            "hold.ms is a single value, not a table",
        ),
        ("\"seed.x\" = [1, 2]", "seed"),
        ("\"shards.x\" = [1, 2]", "cannot be swept"),
    ];
    let with_seed = base.replace("shards = [1]\n", "shards = [1]\nseed = 3\n");
    let profile = base.replace(
        "rate_per_s = 100\n",
        "profile = [{ seconds = 1, rate_per_s = 100 }]\n",
    );
    let cases = cases
        .into_iter()
        .map(|(entry, expected)| (base.to_owned(), entry, expected))
        .chain([
            (
                with_seed.clone(),
                "\"seed.x\" = [1, 2]",
                "seed is a single value, not a table",
            ),
            (
                profile,
                "\"arrivals.profile.seconds\" = [1, 2]",
                "arrivals.profile is a list, whose items a [sweep] entry cannot reach",
            ),
        ]);
    for (base, entry, expected) in cases {
        let output = common::run_text(dir.path(), &format!("{base}{entry}\n"), &[]);
        let stderr = common::stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{entry}: {stderr}");
        assert!(stderr.contains(expected), "{entry}: {stderr}");
        assert!(stderr.contains("sweep"), "{entry}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!dir.path().join("out").exists());
    }
    // check compares a sweep configuration by configuration (tests/integration/likes.rs);
    // without its baseline it says how to make one.
    std::fs::write(
        dir.path().join("test.toml"),
        format!("{base}\"hold.ms\" = [1, 2]\n"),
    )
    .unwrap();
    let output = common::shardsim(dir.path(), &["check", "test.toml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(common::stderr(&output).contains("--update"));
}

#[test]
fn plan_over_a_sweep_answers_each_configuration_as_its_own_plan_would() {
    let dir = grid_folder(3);
    let flags = [
        "--duration-s",
        "2",
        "--replications",
        "3",
        "--max-shards",
        "64",
    ];
    let mut args = vec!["plan", "grid.toml", "--out", "plan"];
    args.extend_from_slice(&flags);
    let stdout = run_ok(dir.path(), &args);
    assert!(stdout.contains("hold.ms \\ arrivals.scale"), "{stdout}");
    let csv = String::from_utf8(read(&dir.path().join("plan"), "plan.csv")).unwrap();
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("hold.ms,arrivals.scale,policy,answer_shards,")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 10 * 2, "one row per configuration × policy");
    // hold.ms = 2 at twice the traffic, planned on its own.
    let alone = grid_text(3)
        .split("[sweep]")
        .next()
        .unwrap()
        .replace("ms = 1\n", "ms = 2\n")
        .replace("rate_per_s = 1500\n", "rate_per_s = 1500\nscale = 2\n");
    std::fs::write(dir.path().join("alone.toml"), alone).unwrap();
    let mut args = vec!["plan", "alone.toml", "--out", "alone"];
    args.extend_from_slice(&flags);
    run_ok(dir.path(), &args);
    let single = String::from_utf8(read(&dir.path().join("alone"), "plan.json")).unwrap();
    let single: serde_json::Value = serde_json::from_str(&single).unwrap();
    for (i, plan) in single["plans"].as_array().unwrap().iter().enumerate() {
        let ours = rows
            .iter()
            .filter(|r| r[0] == "2" && r[1] == "2")
            .nth(i)
            .unwrap();
        assert_eq!(ours[2], plan["policy"].as_str().unwrap());
        assert_eq!(ours[3], plan["answer_shards"].to_string(), "{ours:?}");
    }
}

#[test]
fn merge_refuses_slices_whose_scenario_changed() {
    let dir = grid_folder(5);
    for k in 0..2 {
        run_ok(
            dir.path(),
            &[
                "run",
                "grid.toml",
                "--partition",
                &format!("{k}/2"),
                "--out",
                &format!("p{k}"),
                "-q",
            ],
        );
    }
    std::fs::write(dir.path().join("grid.toml"), grid_text(6)).unwrap();
    let output = common::shardsim(dir.path(), &["merge", "p0", "p1", "--out", "merged"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(common::stderr(&output).contains("changed since the slices ran it"));
    assert!(!dir.path().join("merged").exists());
}

/// A grid over both policies, a hold distribution and a rate profile with a target, for
/// comparing the answer found alone with the answer of every run.
fn answer_grid(hold: &str, hold_field: &str) -> String {
    format!(
        "name = \"answers\"\nseed = 7\nshards = [1, 2, 3, 4, 6, 8, 16]\nduration_s = 20\n\
         replications = 2\npolicy = [\"earliest-free\", \"random\"]\n[hold]\n{hold}\n\
         [arrivals]\nprofile = [{{ seconds = 10, rate_per_s = 1500 }}, {{ seconds = 10, rate_per_s = 3000 }}]\n\
         [slo]\np99_ms = 8\n[sweep]\n\"{hold_field}\" = [0.5, 1, 2]\n\"arrivals.scale\" = [0.5, 1, 2, 4]\n"
    )
}

/// Runs `scenario` in a folder of its own, with `extra` flags; returns the folder and the
/// printed grid.
fn run_grid(scenario: &Path, extra: &[&str]) -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["run", scenario.to_str().unwrap(), "--out", "out"];
    args.extend_from_slice(extra);
    let output = common::shardsim(dir.path(), &args);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        common::stderr(&output)
    );
    (dir, [output.stdout, output.stderr].concat())
}

#[test]
fn the_answer_alone_is_the_answer_of_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut scenarios = vec![
        common::repo("scenarios/sweeps/final-grid.toml"),
        common::repo("scenarios/sweeps/pool-size.toml"),
    ];
    for (name, hold, field) in [
        ("constant", "dist = \"constant\"\nms = 1", "hold.ms"),
        (
            "exponential",
            "dist = \"exponential\"\nmean_ms = 1",
            "hold.mean_ms",
        ),
    ] {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, answer_grid(hold, field)).unwrap();
        scenarios.push(path);
    }
    for scenario in &scenarios {
        let (alone, printed_alone) = run_grid(scenario, &[]);
        let (every, printed_every) = run_grid(scenario, &["--every-run"]);
        let shown = scenario.display();
        assert_eq!(
            String::from_utf8_lossy(&printed_alone),
            String::from_utf8_lossy(&printed_every),
            "{shown}: the printed grid and exit message"
        );
        let out = |dir: &tempfile::TempDir| dir.path().join("out");
        let mut compared = 0;
        for entry in std::fs::read_dir(out(&every)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.starts_with("sweep") {
                assert!(
                    read(&out(&alone), &name) == read(&out(&every), &name),
                    "{shown}: {name} differs"
                );
                compared += 1;
            }
        }
        assert!(compared >= 3, "{shown}: sweep.csv and a chart compared");
        assert!(!out(&alone).join("summary.csv").exists());
        assert!(out(&every).join("summary.csv").exists());
    }
}
