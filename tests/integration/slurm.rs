//! `deploy/slurm-sweep.sh` on a real Slurm: the throwaway one-node cluster `.ci/run` makes,
//! named by `SHARDSIM_TEST_SLURM` (its `slurm.conf`). A sweep's merge equals one run byte for
//! byte; a cancelled task is named with the command that re-runs it, and that re-run completes
//! the merge; stepped arrays and index lists run their slices; a second sweep with another
//! slice count reuses the folder. Without the variable when the tests are built, the test
//! runner lists these tests as ignored, saying what they need.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{shardsim, stderr};

/// The tests share the cluster's two cores: one at a time.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The merged files compared with the single run's.
const FILES: [&str; 4] = [
    "summary.csv",
    "timeseries.csv",
    "sweep.csv",
    "sweep-random.svg",
];

/// The cluster's configuration, and the turn to use it.
struct Cluster {
    conf: String,
    dir: tempfile::TempDir,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl Cluster {
    /// The test cluster with a fresh folder holding `grid.toml` and its single run in `single/`.
    fn new() -> Cluster {
        let conf = std::env::var("SHARDSIM_TEST_SLURM")
            .expect("SHARDSIM_TEST_SLURM names the test cluster's slurm.conf (.ci/run sets it)");
        let turn = CLUSTER
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("grid.toml"), GRID).unwrap();
        let output = shardsim(
            dir.path(),
            &[
                "run",
                "grid.toml",
                "--out",
                "single",
                "--quiet",
                "--no-fail",
                // Slices keep every run, so the merge writes what every run does.
                "--every-run",
            ],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        Cluster {
            conf,
            dir,
            _turn: turn,
        }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// A command of the cluster's, run in the test's folder with the script's settings.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.dir.path())
            .env("SLURM_CONF", &self.conf)
            .env("SHARDSIM", env!("CARGO_BIN_EXE_shardsim"))
            .env("SHARDSIM_TASK_CPUS", "1")
            .env("SHARDSIM_TASK_MEM", "1G")
            .env("SHARDSIM_MERGE_MEM", "1G")
            .env_remove("SBATCH_HOLD");
        command
    }

    /// Runs the sweep script with `args`; with `held`, its jobs are submitted held.
    fn sweep(&self, args: &[&str], held: bool) -> Output {
        let script = crate::common::repo("deploy/slurm-sweep.sh");
        let mut command = self.command(script.to_str().unwrap());
        if held {
            command.env("SBATCH_HOLD", "1");
        }
        command.args(args).output().unwrap()
    }

    /// Runs the sweep script, expecting success; returns the array's and the merge's job ids.
    fn submit(&self, args: &[&str], held: bool) -> (String, String) {
        let output = self.sweep(args, held);
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{text}{}", stderr(&output));
        let id = |after: &str| {
            let start = text
                .find(after)
                .unwrap_or_else(|| panic!("{after:?} in {text}"))
                + after.len();
            text[start..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        };
        (id(": job "), id("merge: job "))
    }

    /// Runs a Slurm client command, expecting success; returns its standard output.
    fn slurm(&self, program: &str, args: &[&str]) -> String {
        let output = self.command(program).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "{program} {args:?}: {}",
            stderr(&output)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits until none of `jobs` is queued or running.
    fn wait(&self, jobs: &[&str]) {
        let started = Instant::now();
        loop {
            let listed = self.slurm("squeue", &["-h", "-o", "%i %T", "-j", &jobs.join(",")]);
            if listed.trim().is_empty() {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "jobs {jobs:?} still queued after 3 minutes:\n{listed}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Every merge log of the sweep folder `out`, oldest job first.
    fn merge_logs(&self, out: &str) -> String {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(self.path(out).join("logs"))
            .map(|entries| entries.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        logs.retain(|path| path.to_string_lossy().contains("/merge."));
        logs.sort();
        logs.iter()
            .map(|path| std::fs::read_to_string(path).unwrap_or_default())
            .collect()
    }

    /// Asserts that `folder`'s merged files equal the single run's.
    fn assert_merged_like_one_run(&self, folder: &str) {
        for file in FILES {
            let merged = std::fs::read(self.path(folder).join(file));
            let single = std::fs::read(self.path("single").join(file)).unwrap();
            assert!(
                merged.as_ref().is_ok_and(|merged| *merged == single),
                "{folder}/{file} is not the single run's ({merged:?}); the merges' logs: {}",
                self.merge_logs("out")
            );
        }
    }
}

/// A grid of 10 configurations × 2 policies, 2 replications: 20 units, a second's work.
const GRID: &str = "name = \"grid\"\nseed = 7\nshards = [1, 2, 4]\nduration_s = 2\nreplications = 2\n\
    policy = [\"earliest-free\", \"random\"]\n[hold]\ndist = \"constant\"\nms = 1\n\
    [arrivals]\nrate_per_s = 1500\n[slo]\np99_ms = 5\n\
    [sweep]\n\"hold.ms\" = [0.2, 0.5, 1, 1.5, 2]\n\"arrivals.scale\" = [1, 2]\n";

#[test]
#[cfg_attr(
    not(shardsim_test_slurm),
    ignore = "needs a Slurm: set SHARDSIM_TEST_SLURM to a cluster's slurm.conf when building the tests (.ci/run starts one)"
)]
fn a_sweep_on_slurm_then_another_count_into_the_same_folder_merge_like_one_run() {
    let cluster = Cluster::new();
    let (array, merge) = cluster.submit(&["grid.toml", "4", "out dir"], false);
    cluster.wait(&[&array, &merge]);
    for k in 0..4 {
        assert!(
            cluster
                .path(&format!("out dir/parts/slice-{k}/runs.jsonl"))
                .is_file()
        );
    }
    cluster.assert_merged_like_one_run("out dir/merged");
    // The same folder, another slice count: the old slices are cleared, not merged.
    let (array, merge) = cluster.submit(&["grid.toml", "3", "out dir"], false);
    cluster.wait(&[&array, &merge]);
    assert!(!cluster.path("out dir/parts/slice-3").exists());
    cluster.assert_merged_like_one_run("out dir/merged");
}

#[test]
#[cfg_attr(
    not(shardsim_test_slurm),
    ignore = "needs a Slurm: set SHARDSIM_TEST_SLURM to a cluster's slurm.conf when building the tests (.ci/run starts one)"
)]
fn a_cancelled_task_is_named_with_its_re_run_which_completes_the_merge() {
    let cluster = Cluster::new();
    let (array, merge) = cluster.submit(&["grid.toml", "4", "out"], true);
    cluster.slurm("scancel", &[&format!("{array}_2")]);
    cluster.slurm("scontrol", &["release", &array]);
    cluster.slurm("scontrol", &["release", &merge]);
    cluster.wait(&[&array, &merge]);
    assert!(!cluster.path("out/merged").exists());
    let report =
        std::fs::read_to_string(cluster.path(&format!("out/logs/merge.{merge}.out"))).unwrap();
    let script = crate::common::repo("deploy/slurm-sweep.sh");
    let rerun = format!(
        "slice 2 of 4 is missing (3 given; slices are numbered 0 … 3): re-run them: {} {} 4 {} --only 2",
        script.display(),
        cluster.path("grid.toml").display(),
        cluster.path("out").display()
    );
    assert!(report.contains(&rerun), "{report}\nshould hold\n{rerun}");
    // The command as printed, word for word.
    let words: Vec<&str> = rerun
        .rsplit_once("re-run them: ")
        .unwrap()
        .1
        .split(' ')
        .collect();
    let (again, merged) = cluster.submit(&words[1..], false);
    cluster.wait(&[&again, &merged]);
    cluster.assert_merged_like_one_run("out/merged");
    // The failure's report is kept beside the re-run's, and the slice's log of each.
    let logs = cluster.path("out/logs");
    assert!(logs.join(format!("merge.{merge}.out")).is_file());
    assert!(logs.join(format!("merge.{merged}.out")).is_file());
    assert!(logs.join(format!("slice-2.{again}.out")).is_file());
    assert!(logs.join(format!("slice-0.{array}.out")).is_file());
}

#[test]
#[cfg_attr(
    not(shardsim_test_slurm),
    ignore = "needs a Slurm: set SHARDSIM_TEST_SLURM to a cluster's slurm.conf when building the tests (.ci/run starts one)"
)]
fn a_sweep_with_no_slice_written_names_every_slice_with_one_re_run() {
    let cluster = Cluster::new();
    // Every task cancelled while pending: the merge runs and finds no slice at all.
    let (array, merge) = cluster.submit(&["grid.toml", "3", "out"], true);
    cluster.slurm("scancel", &[&array]);
    cluster.slurm("scontrol", &["release", &merge]);
    cluster.wait(&[&array, &merge]);
    let report =
        std::fs::read_to_string(cluster.path(&format!("out/logs/merge.{merge}.out"))).unwrap();
    assert!(
        report.contains(
            "slices 0, 1, 2 of 3 are missing (0 given; slices are numbered 0 … 2): re-run them: "
        ) && report.trim_end().ends_with("--only 0,1,2"),
        "{report}"
    );
}

#[test]
#[cfg_attr(
    not(shardsim_test_slurm),
    ignore = "needs a Slurm: set SHARDSIM_TEST_SLURM to a cluster's slurm.conf when building the tests (.ci/run starts one)"
)]
fn a_second_sweep_into_a_running_sweeps_folder_is_refused_naming_its_jobs() {
    let cluster = Cluster::new();
    let (array, merge) = cluster.submit(&["grid.toml", "4", "out"], true);
    let queued_before = cluster.slurm("squeue", &["-h"]);
    for args in [
        &["grid.toml", "5", "out"][..],
        &["grid.toml", "4", "out", "--only", "1"],
    ] {
        let output = cluster.sweep(args, false);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{message}");
        assert_eq!(message.trim().lines().count(), 1, "{message}");
        assert!(
            message.contains("is still queued or running (jobs")
                && message.contains(&array)
                && message.contains(&format!("scancel {array} {merge}")),
            "{message}"
        );
    }
    assert_eq!(
        cluster.slurm("squeue", &["-h"]),
        queued_before,
        "nothing submitted"
    );
    cluster.slurm("scontrol", &["release", &array]);
    cluster.slurm("scontrol", &["release", &merge]);
    cluster.wait(&[&array, &merge]);
    cluster.assert_merged_like_one_run("out/merged");
    // Once it is done, another sweep into the folder goes ahead.
    let (array, merge) = cluster.submit(&["grid.toml", "5", "out"], false);
    cluster.wait(&[&array, &merge]);
    cluster.assert_merged_like_one_run("out/merged");
}

#[test]
#[cfg_attr(
    not(shardsim_test_slurm),
    ignore = "needs a Slurm: set SHARDSIM_TEST_SLURM to a cluster's slurm.conf when building the tests (.ci/run starts one)"
)]
fn stepped_arrays_and_index_lists_run_their_slices_and_bad_ones_submit_nothing() {
    let cluster = Cluster::new();
    let script = crate::common::repo("deploy/slurm-sweep.sh");
    let script = script.to_str().unwrap();
    // sbatch called directly: a stepped array, then an index list, as slices of 4.
    let mut jobs = Vec::new();
    for array in ["--array=0-3:2", "--array=1,3"] {
        let id = cluster.slurm(
            "sbatch",
            &[
                "--parsable",
                array,
                "--cpus-per-task=1",
                "--mem=1G",
                "--output=log-%a.out",
                script,
                "grid.toml",
                "4",
                "direct",
            ],
        );
        jobs.push(id.trim().to_owned());
    }
    let ids: Vec<&str> = jobs.iter().map(String::as_str).collect();
    cluster.wait(&ids);
    let output = shardsim(
        cluster.dir.path(),
        &["merge", "direct/parts", "--out", "direct/merged", "--quiet"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    cluster.assert_merged_like_one_run("direct/merged");
    // Through the script: a step and a list re-run just those slices; a slice past the count,
    // or a spec Slurm would not take, is refused before anything is submitted.
    std::fs::remove_dir_all(cluster.path("direct/parts/slice-1")).unwrap();
    std::fs::remove_dir_all(cluster.path("direct/parts/slice-3")).unwrap();
    let (array, merge) = cluster.submit(&["grid.toml", "4", "direct", "--only", "1-3:2"], false);
    cluster.wait(&[&array, &merge]);
    cluster.assert_merged_like_one_run("direct/merged");
    let queued_before = cluster.slurm("squeue", &["-h"]);
    for (spec, expected) in [
        (
            "0-4",
            "names slice 4, but the slices are 0 … 3: nothing submitted",
        ),
        ("2-x", "is not an array spec"),
    ] {
        let output = cluster.sweep(&["grid.toml", "4", "direct", "--only", spec], false);
        assert_eq!(output.status.code(), Some(2), "{spec}");
        assert!(
            stderr(&output).contains(expected),
            "{spec}: {}",
            stderr(&output)
        );
    }
    assert_eq!(cluster.slurm("squeue", &["-h"]), queued_before);
    let wrong = cluster.sweep(&["grid.toml"], false);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(stderr(&wrong).contains("usage: deploy/slurm-sweep.sh SCENARIO SLICES"));
    assert!(Path::new(script).is_file());
}

#[test]
#[cfg_attr(
    not(shardsim_test_slurm),
    ignore = "needs a Slurm: set SHARDSIM_TEST_SLURM to a cluster's slurm.conf when building the tests (.ci/run starts one)"
)]
fn a_slice_over_its_jobs_memory_is_refused_before_any_work() {
    let cluster = Cluster::new();
    // 1.2 GiB of windows a configuration; the job gets 200 MiB and the script passes no
    // --max-memory (SHARDSIM_TASK_MEM unset), so shardsim takes SLURM_MEM_PER_NODE.
    let big = GRID.replace("duration_s = 2", "duration_s = 600\nwindow_s = 0.0005");
    std::fs::write(cluster.path("big.toml"), big).unwrap();
    let script = crate::common::repo("deploy/slurm-sweep.sh");
    let id = cluster
        .command("sbatch")
        .env_remove("SHARDSIM_TASK_MEM")
        .args([
            "--parsable",
            "--array=0",
            "--mem=200M",
            "--output=big-%a.out",
        ])
        .args([script.to_str().unwrap(), "big.toml", "4", "big"])
        .output()
        .unwrap();
    assert!(id.status.success(), "{}", stderr(&id));
    cluster.wait(&[String::from_utf8_lossy(&id.stdout).trim()]);
    let log = std::fs::read_to_string(cluster.path("big-0.out")).unwrap();
    assert!(
        log.contains("more than the default --max-memory (the Slurm job's memory, SLURM_MEM_PER_NODE) of 200 MiB"),
        "{log}"
    );
    assert!(!cluster.path("big/parts/slice-0").exists());
}

/// Runs the sweep script from `cwd` with `args` and `env`, a stand-in `sbatch` first on the
/// PATH that records being called; returns the output and whether anything was submitted.
fn script_without_a_cluster(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (Output, bool) {
    let bin = tempfile::tempdir().unwrap();
    let called = bin.path().join("called");
    let sbatch = bin.path().join("sbatch");
    std::fs::write(
        &sbatch,
        format!("#!/bin/sh\ntouch '{}'\nexit 99\n", called.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(crate::common::repo("deploy/slurm-sweep.sh"));
    command
        .args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env("SHARDSIM", env!("CARGO_BIN_EXE_shardsim"))
        .env_remove("SHARDSIM_TASK_MEM")
        .env_remove("SHARDSIM_TASK_CPUS");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    (output, called.exists())
}

#[test]
fn the_sweep_script_fails_early_in_one_line_on_what_it_can_check() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grid.toml"), GRID).unwrap();
    let missing_binary = dir.path().join("no/such/folder/shardsim");
    // (arguments, environment, what the one line says)
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 7] = [
        (
            &["scenarios/grid.toml", "4"],
            &[],
            "scenarios/grid.toml: no such scenario file",
        ),
        (
            &["grid.toml", "4"],
            &[("SHARDSIM", missing_binary.to_str().unwrap())],
            "no shardsim binary at",
        ),
        (
            &["grid.toml", "4", "out", "--only"],
            &[],
            "--only needs the slices to re-run",
        ),
        (
            &["grid.toml", "4", "out"],
            &[("SHARDSIM_TASK_MEM", "8M")],
            "slice 0 of 4 cannot run in a task of 2 cores and 8M: --max-memory",
        ),
        (
            &["grid.toml", "4", "out"],
            &[("SHARDSIM_TASK_MEM", "lots")],
            "SHARDSIM_TASK_MEM is 'lots'",
        ),
        (
            &["grid.toml", "21", "out"],
            &[],
            "21 slices for a grid of 20 units",
        ),
        (&["grid.toml", "0"], &[], "SLICES is '0'"),
    ];
    for (args, env, expected) in cases {
        let (output, submitted) = script_without_a_cluster(dir.path(), args, env);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert_eq!(message.trim().lines().count(), 1, "{args:?}: {message}");
        assert!(message.contains(expected), "{args:?}: {message}");
        assert!(!submitted, "{args:?}: sbatch was called");
    }
    // Run from outside the repository, with everything right, it gets as far as sbatch.
    let (output, submitted) = script_without_a_cluster(dir.path(), &["grid.toml", "4"], &[]);
    assert!(submitted, "{}", stderr(&output));
}
