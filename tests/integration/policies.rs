//! Policies side by side: a run of several policies gives each policy's rows exactly as a run of
//! that policy alone; power-of-two lies between earliest-free and random and matches an
//! independent simulation of the two-choice model; skip-locked finds the one free row as
//! earliest-free does.

use rand::Rng;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use shardsim::model::{Policy, ShardRun};

use crate::common;

const PROFILE: &str = "seed = 7\nshards = [2, 4, 8]\nwindow_s = 0.5\n[hold]\ndist = \"exponential\"\nmean_ms = 1\n\
     [arrivals]\nprofile = [{ seconds = 2, rate_per_s = 2500 }, { seconds = 1, rate_per_s = 4500 }, { seconds = 2, rate_per_s = 2000 }]\n";

/// The rows of `file` in `out` whose second field (the policy) is `policy`, each as its
/// columns' names and values.
fn policy_rows(dir: &std::path::Path, file: &str, policy: &str) -> Vec<Vec<(String, String)>> {
    let text = std::fs::read_to_string(dir.join("out").join(file)).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .filter(|line| line.split(',').nth(1) == Some(policy))
        .map(|line| {
            header
                .iter()
                .zip(line.split(','))
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn each_policy_of_a_comparison_gives_the_rows_of_that_policy_run_alone() {
    let together = tempfile::tempdir().unwrap();
    let text = format!(
        "policy = [\"earliest-free\", \"random\", \"power-of-two\", \"skip-locked\"]\n{PROFILE}"
    );
    let output = common::run_text(together.path(), &text, &["--quiet"]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    for policy in ["earliest-free", "random", "power-of-two", "skip-locked"] {
        let alone = tempfile::tempdir().unwrap();
        let text = format!("policy = \"{policy}\"\n{PROFILE}");
        let output = common::run_text(alone.path(), &text, &["--quiet"]);
        assert!(output.status.success(), "{}", common::stderr(&output));
        // The same values in every column the policy's own run writes; a column another
        // policy's feature brings (skip-locked's tries per update) is empty in its rows.
        for file in ["summary.csv", "timeseries.csv"] {
            let expected = policy_rows(alone.path(), file, policy);
            assert_eq!(expected.len(), if file == "summary.csv" { 3 } else { 30 });
            let compared = policy_rows(together.path(), file, policy);
            assert_eq!(compared.len(), expected.len(), "{file}");
            for (row, own) in compared.iter().zip(&expected) {
                for (name, value) in row {
                    match own.iter().find(|(own_name, _)| own_name == name) {
                        Some((_, own_value)) => assert_eq!(value, own_value, "{file} {name}"),
                        None => assert_eq!(value, "", "{file} {name}"),
                    }
                }
                assert!(
                    own.iter()
                        .all(|(name, _)| row.iter().any(|(n, _)| n == name))
                );
            }
        }
    }
}

#[test]
fn a_comparison_draws_one_chart_of_the_policies_and_each_policys_own() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("policy = [\"earliest-free\", \"random\"]\n{PROFILE}");
    let output = common::run_text(dir.path(), &text, &["--quiet"]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    for chart in [
        "policies",
        "waits-earliest-free",
        "waits-random",
        "backlog-random",
    ] {
        assert!(
            dir.path()
                .join("out")
                .join(format!("{chart}.png"))
                .is_file(),
            "{chart}"
        );
    }
    assert!(!dir.path().join("out/waits.png").exists());
    // The comparison's legend names each policy's p99 and p99.9.
    let svg = std::fs::read_to_string(dir.path().join("out/policies.svg")).unwrap();
    let texts: Vec<&str> = svg
        .split("</text>")
        .filter_map(|piece| piece.rsplit('>').next())
        .map(str::trim)
        .collect();
    for series in [
        "earliest-free: p99",
        "earliest-free: p99.9",
        "random: p99",
        "random: p99.9",
    ] {
        assert!(
            texts
                .iter()
                .any(|text| *text == series || text.starts_with(&format!("{series} ("))),
            "{series} in {texts:?}"
        );
    }
}

/// The mean wait of one run, ms.
fn mean_ms(run: &ShardRun) -> f64 {
    run.waits.summary().mean_ns as f64 / 1e6
}

#[test]
fn power_of_two_waits_lie_between_earliest_free_and_random() {
    let dir = tempfile::tempdir().unwrap();
    let text = "seed = 3\nshards = [8]\npolicy = [\"earliest-free\", \"power-of-two\", \"random\"]\n\
                duration_s = 200\n[hold]\ndist = \"exponential\"\nmean_ms = 1\n[arrivals]\nrate_per_s = 6400\n";
    let runs = common::simulate(&common::scenario(dir.path(), text));
    let by = |policy: Policy| runs.iter().find(|r| r.policy == policy).unwrap();
    let (ideal, two, blind) = (
        by(Policy::EarliestFree),
        by(Policy::PowerOfTwo),
        by(Policy::Random),
    );
    assert!(mean_ms(ideal) < mean_ms(two) && mean_ms(two) < mean_ms(blind));
    let p99 = |run: &ShardRun| run.waits.summary().p99_ns;
    assert!(p99(ideal) < p99(two) && p99(two) < p99(blind));
    // An independent simulation of the two-choice model (its own random numbers): 8 rows,
    // utilization 0.8, exponential holds of 1 ms, two rows drawn with replacement, the one
    // free earlier taken.
    let independent = two_choice_mean_wait_ms(8, 6.4, 1.0, 1_280_000);
    let error = (mean_ms(two) / independent - 1.0).abs();
    assert!(
        error < 0.05,
        "power-of-two mean wait {:.5} ms against the independent simulation's {independent:.5} ms",
        mean_ms(two)
    );
}

/// Mean wait of the two-choice model by plain simulation: Poisson arrivals at `rate_per_ms`,
/// exponential holds of mean `hold_ms`, `rows` rows.
fn two_choice_mean_wait_ms(rows: usize, rate_per_ms: f64, hold_ms: f64, n: u64) -> f64 {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2024);
    let mut uniform = move || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let mut free = vec![0.0f64; rows];
    let (mut now, mut total) = (0.0f64, 0.0f64);
    for _ in 0..n {
        now += -uniform().ln() / rate_per_ms;
        let a = (uniform() * rows as f64) as usize;
        let b = (uniform() * rows as f64) as usize;
        let row = if free[b] < free[a] { b } else { a };
        let start = now.max(free[row]);
        total += start - now;
        free[row] = start - uniform().ln() * hold_ms;
    }
    total / n as f64
}

#[test]
fn skip_locked_with_free_tries_takes_the_one_free_row_as_earliest_free_does() {
    // Four rows held 10 ms each. Likes at 0, 1, 2 and 3 ms find every row they try free; the
    // likes at 10.5, 11.5, 12.5 and 13.5 ms each find exactly one row free, the one the like
    // 10 ms before them took. With tries ≥ rows and no cost per try, skip-locked must take that
    // row, as earliest-free does, and nobody waits.
    let dir = tempfile::tempdir().unwrap();
    let times = ["0", "1", "2", "3", "10.5", "11.5", "12.5", "13.5"];
    let trace: String = times.iter().map(|t| format!("{t},p\n")).collect();
    std::fs::write(dir.path().join("trace.csv"), format!("t_ms,key\n{trace}")).unwrap();
    let text = "shards = [4]\npolicy = [\"earliest-free\", \"skip-locked\"]\n[skip_locked]\ntries = 4\n\
                try_ms = 0\n[hold]\ndist = \"constant\"\nms = 10\n[arrivals]\ntrace = \"trace.csv\"\n";
    let output = common::run_text(dir.path(), text, &["--quiet", "--events"]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    let events = std::fs::read_to_string(dir.path().join("out/events.csv")).unwrap();
    let mut lines = events.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("policy,shards,t_ms,key,user,slot,start_ms,wait_ms")
    );
    let rows: Vec<Vec<String>> = lines
        .map(|line| line.split(',').map(str::to_owned).collect())
        .collect();
    for policy in ["earliest-free", "skip-locked"] {
        let of: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == policy).collect();
        assert_eq!(of.len(), 8, "{policy}");
        assert!(of.iter().all(|r| r[7] == "0"), "{policy}: nobody waits");
        let slots: Vec<&str> = of.iter().map(|r| r[5].as_str()).collect();
        assert_eq!(
            slots[4..],
            slots[..4],
            "{policy}: each late like takes the one free row"
        );
    }
    let slots = |policy: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| r[0] == policy)
            .map(|r| r[5].clone())
            .collect()
    };
    assert_eq!(
        slots("earliest-free"),
        ["0", "1", "2", "3", "0", "1", "2", "3"]
    );
}

#[test]
fn skip_locked_tries_cost_their_time_and_are_reported() {
    // One row held 10 ms, likes at 0 and 1 ms, tries of 2 ms each: with one row there is one
    // row to try, so the second like tries once (locked at 1 ms, costing 2 ms), then waits for
    // it from 3 ms: it starts at 10 ms, 9 ms after it came.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace.csv"), "t_ms,key\n0,p\n1,p\n").unwrap();
    let text = "shards = [1]\npolicy = \"skip-locked\"\n[skip_locked]\ntries = 2\ntry_ms = 2\n\
                [hold]\ndist = \"constant\"\nms = 10\n[arrivals]\ntrace = \"trace.csv\"\n";
    let runs = common::simulate(&common::scenario(dir.path(), text));
    assert_eq!(runs[0].tries, 2);
    assert_eq!(runs[0].waits.summary().max_ns, 9_000_000);
}
