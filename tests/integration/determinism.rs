//! Same scenario and seed, same bytes: across runs, across thread counts; and every shard count
//! of a sweep sees the same arrivals and hold draws (common random numbers).

use std::fs;
use std::path::Path;

use crate::common::{repo, shardsim, stderr};

/// Runs the final scenario on a few shard counts into `dir/out`, returning the CSV bytes.
fn run_final(dir: &Path, out: &str, extra: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let scenario = repo("scenarios/final.toml");
    let mut args = vec![
        "run",
        scenario.to_str().unwrap(),
        "--shards",
        "1,4,16",
        "--out",
        out,
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let output = shardsim(dir, &args);
    assert!(output.status.success(), "{}", stderr(&output));
    let read = |file: &str| fs::read(dir.join(out).join(file)).unwrap();
    (read("summary.csv"), read("timeseries.csv"))
}

#[test]
fn two_runs_write_identical_csvs() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        run_final(dir.path(), "a", &[]),
        run_final(dir.path(), "b", &[])
    );
}

#[test]
fn one_thread_and_two_threads_write_identical_csvs() {
    let dir = tempfile::tempdir().unwrap();
    let one = run_final(dir.path(), "one", &["--threads", "1"]);
    let two = run_final(dir.path(), "two", &["--threads", "2"]);
    assert_eq!(one, two);
}

#[test]
fn another_seed_gives_other_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let base = run_final(dir.path(), "a", &[]);
    let other = run_final(dir.path(), "b", &["--seed", "43"]);
    assert_ne!(base.0, other.0);
}

#[test]
fn every_shard_count_sees_the_same_arrivals_and_holds() {
    // Exponential holds and Poisson arrivals: each shard count's events must list the same
    // arrival times and hold draws, in the same order.
    let dir = tempfile::tempdir().unwrap();
    let text = "shards = [1, 3]\nduration_s = 2\n[hold]\ndist = \"exponential\"\nmean_ms = 5\n[arrivals]\nrate_per_s = 300\n";
    fs::write(dir.path().join("test.toml"), text).unwrap();
    let output = shardsim(dir.path(), &["run", "test.toml", "--events", "--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let events = fs::read_to_string(dir.path().join("output/test/events.csv")).unwrap();
    let mut by_shards: [Vec<(String, String)>; 2] = Default::default();
    let mut waits: [u64; 2] = [0, 0];
    for line in events.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let index = usize::from(fields[0] == "3");
        // Columns: shards, t_ms, key, user, slot, start_ms, wait_ms, hold_ms, key_count.
        by_shards[index].push((fields[1].to_owned(), fields[7].to_owned()));
        waits[index] += u64::from(fields[6] != "0");
    }
    assert!(by_shards[0].len() > 500);
    assert_eq!(by_shards[0], by_shards[1]);
    assert!(waits[0] > waits[1], "more rows, fewer waits: {waits:?}");
}
