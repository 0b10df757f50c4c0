//! The queued row stage (the event-driven pipeline's row locks) runs every policy: power-of-two
//! compares the two rows' queues as the database sees them, skip-locked tries rows one at a
//! time, each failed try costing its time and a round trip; both run with a machine, the likes
//! table and a calibration.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use shardsim::model::{Policy, ShardRun};

use crate::common;

fn by(runs: &[ShardRun], policy: Policy, shards: u32) -> &ShardRun {
    runs.iter()
        .find(|r| r.policy == policy && r.shards == shards)
        .unwrap()
}

fn mean_ms(run: &ShardRun) -> f64 {
    run.waits.summary().mean_ns as f64 / 1e6
}

#[test]
fn skip_locked_on_the_queued_stage_takes_the_one_free_row() {
    // Four rows held 10 ms each; the likes at 10.5 … 13.5 ms each find exactly one row free.
    // With tries ≥ rows and free tries, skip-locked must find it: nobody waits.
    let dir = tempfile::tempdir().unwrap();
    let times = ["0", "1", "2", "3", "10.5", "11.5", "12.5", "13.5"];
    let trace: String = times.iter().map(|t| format!("{t},p\n")).collect();
    std::fs::write(dir.path().join("trace.csv"), format!("t_ms,key\n{trace}")).unwrap();
    let text = "shards = [4]\npolicy = \"skip-locked\"\n[skip_locked]\ntries = 4\ntry_ms = 0\n\
                [hold]\ndist = \"constant\"\nms = 10\n[arrivals]\ntrace = \"trace.csv\"\n";
    let runs = common::simulate(&common::on_pipeline(dir.path(), text));
    assert!(runs[0].machine.is_some(), "ran on the queued stage");
    assert_eq!(runs[0].waits.summary().max_ns, 0);
    assert_eq!(runs[0].completed, 8);
}

#[test]
fn a_failed_skip_locked_try_costs_its_time_and_a_round_trip() {
    // Two rows held 10 ms (taken at 0 ms: with this seed the second like's first try is the
    // free row), a round trip of 1 ms outside the database, tries of 2 ms, two tries. The
    // like at 5 ms tries one row (locked), the other at 5 + 2 + 1 = 8 ms
    // (locked), and waits for it from 11 ms: it starts at 11 ms, 6 ms after it came. The exact
    // core, which has no round trip, starts it at 10 ms (waiting from 9 ms).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace.csv"), "t_ms,key\n0,p\n0,p\n5,p\n").unwrap();
    let text = "seed = 3\nshards = [2]\npolicy = \"skip-locked\"\n[skip_locked]\ntries = 2\ntry_ms = 2\n\
                [hold]\ndist = \"constant\"\nms = 10\n[arrivals]\ntrace = \"trace.csv\"\n\
                [client.overhead]\ndist = \"constant\"\nms = 1\n";
    let runs = common::simulate(&common::scenario(dir.path(), text));
    assert_eq!(runs[0].waits.summary().max_ns, 6_000_000);
    assert_eq!(runs[0].tries, 4, "1 + 1 + 2 rows tried");
    let exact = text.replace("[client.overhead]\ndist = \"constant\"\nms = 1\n", "");
    let runs = common::simulate(&common::scenario(dir.path(), &exact));
    assert_eq!(runs[0].waits.summary().max_ns, 5_000_000);
}

#[test]
fn power_of_two_on_the_queued_stage_joins_the_shorter_of_two_queues() {
    // 8 rows, utilization 0.8, exponential holds of 1 ms: the queued stage's power-of-two is
    // "join the shorter of two queues" (holder and waiters), checked against an independent
    // simulation of that model; it lies between one shared line and random rows.
    let dir = tempfile::tempdir().unwrap();
    let text = "seed = 3\nshards = [8]\npolicy = [\"earliest-free\", \"power-of-two\", \"random\"]\n\
                duration_s = 200\n[hold]\ndist = \"exponential\"\nmean_ms = 1\n[arrivals]\nrate_per_s = 6400\n";
    let runs = common::simulate(&common::on_pipeline(dir.path(), text));
    let (ideal, two, blind) = (
        by(&runs, Policy::EarliestFree, 8),
        by(&runs, Policy::PowerOfTwo, 8),
        by(&runs, Policy::Random, 8),
    );
    assert!(mean_ms(ideal) < mean_ms(two) && mean_ms(two) < mean_ms(blind));
    let independent = shorter_of_two_mean_wait_ms(8, 6.4, 1.0, 1_280_000);
    let error = (mean_ms(two) / independent - 1.0).abs();
    assert!(
        error < 0.05,
        "power-of-two mean wait {:.5} ms against the independent simulation's {independent:.5} ms",
        mean_ms(two)
    );
    // Comparing queues is not comparing free times: the exact core's power-of-two (which
    // knows when each row frees) waits less.
    let exact = common::simulate(&common::scenario(dir.path(), text));
    assert!(mean_ms(by(&exact, Policy::PowerOfTwo, 8)) < mean_ms(two));
}

/// Mean wait of "join the shorter of two queues" by plain simulation: Poisson arrivals at
/// `rate_per_ms`, exponential holds of mean `hold_ms`, `rows` first-come-first-served rows,
/// two drawn with replacement, the one with fewer updates on it taken (the first on ties).
fn shorter_of_two_mean_wait_ms(rows: usize, rate_per_ms: f64, hold_ms: f64, n: u64) -> f64 {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2025);
    let mut uniform = move || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    // Each row's departure times, in order: those after `now` are the updates on it.
    let mut departures: Vec<VecDeque<f64>> = vec![VecDeque::new(); rows];
    let (mut now, mut total) = (0.0f64, 0.0f64);
    for _ in 0..n {
        now += -uniform().ln() / rate_per_ms;
        let a = (uniform() * rows as f64) as usize;
        let b = (uniform() * rows as f64) as usize;
        for row in [a, b] {
            while departures[row].front().is_some_and(|&d| d <= now) {
                departures[row].pop_front();
            }
        }
        let row = if departures[b].len() < departures[a].len() {
            b
        } else {
            a
        };
        let start = departures[row].back().map_or(now, |&d| d.max(now));
        total += start - now;
        departures[row].push_back(start - uniform().ln() * hold_ms);
    }
    total / n as f64
}

/// 64 clients on a 2-core database with durable commits (as `scenarios/postgres-2core.toml`).
const MACHINE: &str = "seed = 11\nshards = [2, 4]\nduration_s = 5\nwarmup_s = 1\n\
    [hold]\ndist = \"constant\"\nms = 0\nper_waiter_ms = 0.0038\n[machine]\ncores = 2\n\
    [machine.cpu]\ndist = \"constant\"\nms = 0.111\n[wal]\nflush_ms = 0.087\ngroup_commit = true\n\
    [arrivals]\nclients = 64\nthink_ms = 0\n\
    [client.overhead]\ndist = \"lognormal\"\nmedian_ms = 0.3\np99_ms = 2.0\n";

#[test]
fn power_of_two_and_skip_locked_run_with_a_machine_and_beat_random_rows() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("policy = [\"random\", \"power-of-two\", \"skip-locked\"]\n{MACHINE}");
    let runs = common::simulate(&common::scenario(dir.path(), &text));
    let throughput = |policy, shards| by(&runs, policy, shards).completed as f64 / 4.0;
    for shards in [2, 4] {
        let random = throughput(Policy::Random, shards);
        for policy in [Policy::PowerOfTwo, Policy::SkipLocked] {
            let better = throughput(policy, shards);
            // Random rows leave a row idle while another has a line; a policy that looks at
            // the rows keeps them busier, up to the machine's 18,018/s (2 cores ÷ 111 µs).
            assert!(
                better > 1.2 * random && better <= 18_100.0,
                "{policy} at {shards} rows: {better:.0}/s against random's {random:.0}/s"
            );
        }
    }
    // Skip-locked tries cost a round trip each (0.3 ms median): its updates that found their
    // first row locked wait at least that long.
    let skip = by(&runs, Policy::SkipLocked, 4);
    assert!(
        skip.tries > skip.completed,
        "some updates tried more than one row"
    );
}

#[test]
fn power_of_two_runs_through_the_likes_table() {
    let dir = tempfile::tempdir().unwrap();
    let text = "seed = 5\nshards = [2]\npolicy = [\"random\", \"power-of-two\"]\nduration_s = 20\n\
        [hold]\ndist = \"exponential\"\nmean_ms = 0.5\n[arrivals]\nrate_per_s = 3000\n\
        [users]\nrepeat_fraction = 0.02\n\
        [likes_table]\npartitions = 16\npartition_by = \"post_user\"\nsame_transaction = false\n\
        insert_hold = { dist = \"constant\", ms = 0.15 }\n";
    let runs = common::simulate(&common::scenario(dir.path(), text));
    let (random, two) = (
        by(&runs, Policy::Random, 2),
        by(&runs, Policy::PowerOfTwo, 2),
    );
    for run in [random, two] {
        let likes = run.likes.as_ref().expect("the likes table ran");
        assert_eq!(
            likes.drift_final, 0,
            "{}: every stored like is counted",
            run.policy
        );
    }
    // About 0.74 of each row busy: random rows are two M/M/1 queues (mean wait 1.4–1.5 ms);
    // two choices of the shorter queue wait about 0.6 of that (the independent simulation of
    // the model without the likes table: 0.80 ms against 1.39 ms).
    let m = mean_ms(random);
    assert!((1.3..1.6).contains(&m), "random rows' mean wait {m:.3} ms");
    assert!(
        mean_ms(two) < 0.7 * m,
        "power-of-two {:.3} ms",
        mean_ms(two)
    );
}

#[test]
fn power_of_two_and_skip_locked_compare_on_a_calibrated_database() {
    // The comparison a calibration exists for: the policies real systems use, on the fitted
    // machine (durable commits, a 0.25 ms group-commit flush, 2 cores) at the final's peak,
    // on 4 rows (about 0.37 of each busy at the peak).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("calibration.toml"),
        crate::newcomer::CALIBRATION,
    )
    .unwrap();
    let scenario = common::repo("scenarios/calibrated/final.toml");
    let output = common::shardsim(
        dir.path(),
        &[
            "run",
            scenario.to_str().unwrap(),
            "--calibration",
            "calibration.toml",
            "--shards",
            "4",
            "--policy",
            "random,power-of-two,skip-locked",
            "--out",
            "out",
            "--quiet",
            "--no-fail",
        ],
    );
    assert!(output.status.success(), "{}", common::stderr(&output));
    let summary = std::fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (policy, p99) = (column("policy"), column("wait_p99_ms"));
    let p99_of = |name: &str| -> f64 {
        let line = summary
            .lines()
            .find(|l| l.split(',').nth(policy) == Some(name))
            .unwrap();
        line.split(',').nth(p99).unwrap().parse().unwrap()
    };
    let random = p99_of("random");
    for name in ["power-of-two", "skip-locked"] {
        // Measured: random 1.6 ms, power-of-two 0.75 ms, skip-locked 0.82 ms.
        assert!(
            p99_of(name) < 0.7 * random,
            "{name}: p99 {} ms against random's {random} ms",
            p99_of(name)
        );
    }
}
