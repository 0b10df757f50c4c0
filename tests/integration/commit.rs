//! Nothing a user has is lost: a signal at any step of the commit leaves the output folder
//! holding either the whole previous output or the whole new one, and the message says which;
//! only what a run made itself is ever replaced; a killed run's leftovers are cleaned by the
//! next run. The signals are sent at named places through `SHARDSIM_FAULT` (src/faults.rs).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::cli::GOOD;
use crate::common::{shardsim, stderr};

/// The places of the commit where a signal is injected, in order.
const COMMIT_PLACES: [&str; 6] = [
    "commit-marked",
    "commit-unstamped",
    "commit-held",
    "commit-swapped",
    "commit-released",
    "commit-done",
];

/// Every file of an output folder and its bytes (the report page's date line left out).
fn contents(folder: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in fs::read_dir(folder).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let bytes = fs::read(entry.path()).unwrap();
        let bytes = if name == "report.html" {
            String::from_utf8_lossy(&bytes)
                .lines()
                .filter(|line| !line.contains("Written by shardsim"))
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        } else {
            bytes
        };
        files.insert(name, bytes);
    }
    files
}

/// Runs `shardsim run test.toml --out out --seed SEED --quiet` in `dir`, with `fault` in
/// `SHARDSIM_FAULT` when given.
fn run_seed(dir: &Path, seed: u64, fault: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_shardsim"));
    command
        .args(["run", "test.toml", "--out", "out", "--quiet", "--seed"])
        .arg(seed.to_string())
        .current_dir(dir)
        .env_remove("RAYON_NUM_THREADS");
    if let Some(fault) = fault {
        command.env("SHARDSIM_FAULT", fault);
    }
    command.output().unwrap()
}

/// Hidden siblings a run left beside `out`.
fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".out"))
        .collect()
}

/// Sends each signal at each place of the commit `rounds` times and checks every outcome.
fn signals_at_the_commit(rounds: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    // The two outputs a faulted run may leave: the previous (seed 1) and the new (seed 2).
    assert!(run_seed(dir.path(), 2, None).status.success());
    let new = contents(&dir.path().join("out"));
    assert!(run_seed(dir.path(), 1, None).status.success());
    let previous = contents(&dir.path().join("out"));
    assert_ne!(previous, new, "the two outputs differ");
    let mut sent = 0;
    for round in 0..rounds {
        for place in COMMIT_PLACES {
            for signal in ["INT", "TERM"] {
                let fault = format!("{place}:{signal}");
                let output = run_seed(dir.path(), 2, Some(&fault));
                sent += 1;
                let message = stderr(&output);
                assert_eq!(output.status.code(), Some(130), "{fault}: {message}");
                assert_eq!(message.trim().lines().count(), 1, "{fault}: {message}");
                let now = contents(&dir.path().join("out"));
                // Whatever the signal interrupted, nothing of either output is left beside it.
                assert_eq!(leftovers(dir.path()), Vec::<String>::new(), "{fault}");
                if now == new {
                    assert!(
                        message.contains("the new results are in place in out"),
                        "{fault}: {message}"
                    );
                    assert!(
                        !message.contains("nothing was written"),
                        "{fault}: {message}"
                    );
                } else {
                    assert!(
                        now == previous,
                        "{fault}: neither output whole: {:?}",
                        now.keys()
                    );
                    assert!(
                        message.contains(
                            "nothing was written; the previous results in out are untouched"
                        ),
                        "{fault}: {message}"
                    );
                }
                // Before the exchange begins the new results are always undone; from there on,
                // always kept.
                let held = COMMIT_PLACES.iter().position(|p| *p == place)
                    >= COMMIT_PLACES.iter().position(|p| *p == "commit-held");
                assert_eq!(now == new, held, "{fault} (round {round})");
                // Whatever was left beside it is gone after the next run, which starts over
                // from the previous output.
                assert!(run_seed(dir.path(), 1, None).status.success());
                assert!(
                    contents(&dir.path().join("out")) == previous,
                    "{fault}: rerun"
                );
                assert!(
                    leftovers(dir.path()).is_empty(),
                    "{:?}",
                    leftovers(dir.path())
                );
            }
        }
    }
    sent
}

/// Runs `shardsim run test.toml --out out` in `dir`, which succeeds and removes whatever an
/// earlier run left beside `out`.
fn the_next_run_leaves_nothing_beside_its_output(dir: &Path) {
    let output = shardsim(dir, &["run", "test.toml", "--out", "out", "--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(leftovers(dir).is_empty(), "{:?}", leftovers(dir));
}

#[test]
fn a_signal_at_any_step_of_the_commit_leaves_one_whole_output_and_says_which() {
    assert_eq!(signals_at_the_commit(1), 12);
}

#[test]
#[ignore = "204 signals at the commit, about half a minute: run by CI with --ignored"]
fn two_hundred_signals_at_the_commit_lose_nothing() {
    assert!(signals_at_the_commit(17) >= 200);
}

#[test]
fn an_interrupt_after_the_commit_says_the_results_are_in_place() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    // A new folder: there were no previous results to speak of.
    let output = run_seed(dir.path(), 1, Some("commit-held:INT"));
    assert_eq!(output.status.code(), Some(130));
    assert_eq!(
        stderr(&output).trim(),
        "error: interrupted; the new results are in place in out"
    );
    fs::remove_dir_all(dir.path().join("out")).unwrap();
    let output = run_seed(dir.path(), 1, Some("commit-unstamped:INT"));
    assert_eq!(
        stderr(&output).trim(),
        "error: interrupted; nothing was written"
    );
    assert!(!dir.path().join("out").exists() && leftovers(dir.path()).is_empty());
}

#[test]
fn a_users_folder_named_like_an_artefact_is_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    assert!(run_seed(dir.path(), 1, None).status.success());
    let artefact = fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|name| name.ends_with(".csv"))
        .unwrap();
    let theirs = dir.path().join("out").join(&artefact);
    fs::remove_file(&theirs).unwrap();
    fs::create_dir(&theirs).unwrap();
    fs::write(theirs.join("thesis.tex"), "years of work").unwrap();
    let output = run_seed(dir.path(), 1, None);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains(&artefact), "{}", stderr(&output));
    assert_eq!(
        fs::read_to_string(theirs.join("thesis.tex")).unwrap(),
        "years of work"
    );
}

#[test]
fn a_run_killed_as_its_staging_folder_is_made_leaves_nothing_the_next_run_keeps() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    let output = run_seed(dir.path(), 1, Some("staging-made:KILL"));
    assert_eq!(output.status.code(), None, "killed");
    assert_eq!(leftovers(dir.path()).len(), 1, "an empty folder, unstamped");
    the_next_run_leaves_nothing_beside_its_output(dir.path());
}

#[test]
fn a_writer_killed_a_moment_ago_and_not_yet_reaped_does_not_block_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("test.toml"), GOOD).unwrap();
    // Killed once its folder is stamped (the first write of an output file), and left
    // unreaped: a zombie still has its process id.
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardsim"))
        .args(["run", "test.toml", "--out", "out", "--quiet"])
        .current_dir(dir.path())
        .env("SHARDSIM_FAULT", "commit-marked:KILL")
        .spawn()
        .unwrap();
    let zombie = format!("/proc/{}/stat", child.id());
    let started = std::time::Instant::now();
    while !fs::read_to_string(&zombie).is_ok_and(|stat| stat.contains(") Z "))
        && started.elapsed() < std::time::Duration::from_secs(20)
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        fs::read_to_string(&zombie).unwrap().contains(") Z "),
        "a zombie"
    );
    assert_eq!(leftovers(dir.path()).len(), 1);
    the_next_run_leaves_nothing_beside_its_output(dir.path());
    child.wait().unwrap();
}
