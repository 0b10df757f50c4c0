//! Closed-loop clients: a hand-computable loop, the machine-repairman model M/M/1//K against
//! its closed form, the uncontended limit, what validation refuses, and the loop with the
//! clients' behaviours — timeouts, retries, the pool, reads and many keys — against numbers
//! that follow from the loop alone (a saturated row's rate, a pool's cycle, mean-value
//! analysis of a closed network).

use std::fs;

use crate::common::{run_text, scenario, shardsim, simulate, stderr};

#[test]
fn two_clients_on_one_row_take_turns() {
    let dir = tempfile::tempdir().unwrap();
    // Two clients, no think time, a constant 10 ms hold: client 0 commits at 10, 20 (after
    // waiting 10), …; client 1 waits 10 ms every time. One row commits 100 a second and every
    // update after the first waits 10 ms: a response of 20 ms.
    let text = "shards = [1, 2]\nduration_s = 1\n[hold]\nms = 10\n[arrivals]\nclients = 2\n";
    let runs = simulate(&scenario(dir.path(), text));
    let (one, two) = (&runs[0], &runs[1]);
    assert_eq!(one.completed, 100);
    assert_eq!(
        one.arrivals, 101,
        "the 101st update is sent at 990 ms and commits after 1 s"
    );
    let responses = one.closed.as_ref().unwrap().responses.summary();
    assert_eq!(responses.p50_ns, 20_000_000);
    assert_eq!(responses.max_ns, 20_000_000);
    assert_eq!(one.waits.summary().max_ns, 10_000_000);
    // Two rows: nobody ever waits, 200 commits a second, every response is the hold.
    assert_eq!(two.completed, 200);
    assert_eq!(two.waits.summary().max_ns, 0);
    assert_eq!(
        two.closed.as_ref().unwrap().responses.summary().max_ns,
        10_000_000
    );
}

/// The machine-repairman model M/M/1//K: K clients with exponential think time Z, one server
/// with exponential service S. With r = S/Z, p0 = 1 / Σₙ₌₀ᴷ K!/(K−n)! rⁿ, throughput
/// X = (1 − p0)/S and mean response R = K/X − Z (Little's law over the loop).
/// (Kleinrock, Queueing Systems I, §3.9; Lazowska et al., Quantitative System Performance, ch. 7.)
fn machine_repairman(clients: u32, think_ms: f64, service_ms: f64) -> (f64, f64) {
    let r = service_ms / think_ms;
    let mut term = 1.0;
    let mut sum = 1.0;
    for n in 1..=clients {
        term *= f64::from(clients - n + 1) * r;
        sum += term;
    }
    let p0 = 1.0 / sum;
    let throughput_per_ms = (1.0 - p0) / service_ms;
    (
        throughput_per_ms * 1e3,
        f64::from(clients) / throughput_per_ms - think_ms,
    )
}

#[test]
fn a_closed_loop_on_one_row_is_the_machine_repairman_model() {
    let dir = tempfile::tempdir().unwrap();
    for (clients, think_ms) in [(5u32, 4.0f64), (20, 10.0)] {
        let text = format!(
            "shards = [1]\nduration_s = 600\nseed = 3\n[hold]\ndist = \"exponential\"\nmean_ms = 1\n\
             [arrivals]\nclients = {clients}\nthink_ms = {think_ms}\nthink_dist = \"exponential\"\n"
        );
        let run = &simulate(&scenario(dir.path(), &text))[0];
        let (throughput, response_ms) = machine_repairman(clients, think_ms, 1.0);
        let simulated = run.completed as f64 / 600.0;
        let mean_ms = run.closed.as_ref().unwrap().responses.summary().mean_ns as f64 / 1e6;
        // About 480,000 and 600,000 cycles. Ten seeds spread by a standard deviation of
        // 0.11–0.17% on X and 0.30–0.38% on R (largest deviation 0.7%): 1% and 2% are about
        // six standard deviations.
        assert!(
            (simulated / throughput - 1.0).abs() < 0.01,
            "K = {clients}: throughput {simulated:.1}/s, theory {throughput:.1}/s"
        );
        assert!(
            (mean_ms / response_ms - 1.0).abs() < 0.02,
            "K = {clients}: response {mean_ms:.4} ms, theory {response_ms:.4} ms"
        );
    }
}

#[test]
fn uncontended_clients_cycle_at_think_plus_hold() {
    let dir = tempfile::tempdir().unwrap();
    // 8 clients on 64 rows never meet: each cycles every 2 + 1 ms, 8 / 3 ms = 2,666.7/s.
    let text =
        "shards = [64]\nduration_s = 30\n[hold]\nms = 1\n[arrivals]\nclients = 8\nthink_ms = 2\n";
    let run = &simulate(&scenario(dir.path(), text))[0];
    assert_eq!(run.waits.summary().max_ns, 0);
    assert_eq!(
        run.completed, 80_000,
        "8 clients × 10,000 cycles of 3 ms in 30 s"
    );
}

#[test]
fn validation_refuses_what_a_closed_loop_does_not_do() {
    let dir = tempfile::tempdir().unwrap();
    let base = "shards = [1]\nduration_s = 1\n[hold]\nms = 1\n[arrivals]\n";
    let cases = [
        (
            format!("{base}clients = 0\n"),
            "arrivals.clients: must be from 1 to 100000",
        ),
        (
            format!("{base}rate_per_s = 5\nthink_ms = 1\n"),
            "arrivals.think_ms: think_ms and think_dist belong to a closed loop",
        ),
        (
            format!("{base}clients = 4\nrate_per_s = 5\n"),
            "set exactly one of rate_per_s, profile, trace, counts or clients",
        ),
        (
            format!("{base}clients = 4\n[batching]\nservers = 2\nflush_ms = 100\n"),
            "batching: cannot be used with a closed loop of clients (arrivals.clients): a batching server answers each like at once",
        ),
        (
            format!("{base}clients = 4\n[reads]\nper_write = 2\n"),
            "reads.per_write: scales the like rate, which a closed loop of clients does not fix in advance",
        ),
        (
            "shards = [1]\nduration_s = 1\n[hold]\nms = 0\n[arrivals]\nclients = 4\n".to_owned(),
            "arrivals.think_ms: with a zero hold (and no CPU, request CPU, flush or overhead) a closed loop needs a think time > 0",
        ),
        (
            format!("{base}clients = 4\nthink_dist = \"exponential\"\n"),
            "an exponential think time needs a mean > 0",
        ),
    ];
    for (text, expected) in cases {
        let output = run_text(dir.path(), &text, &[]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{text}: {message}");
        assert!(message.contains(expected), "{text}: {message}");
        assert!(!dir.path().join("out").exists());
    }
    fs::write(
        dir.path().join("test.toml"),
        format!("{base}clients = 4\n[slo]\np99_ms = 5\n"),
    )
    .unwrap();
    let output = shardsim(dir.path(), &["plan", "test.toml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("compare shard counts with shardsim run"));
}

#[test]
fn the_summary_carries_response_times_and_clients() {
    let dir = tempfile::tempdir().unwrap();
    let text = "shards = [1, 2]\nduration_s = 1\n[hold]\nms = 10\n[arrivals]\nclients = 2\n";
    let output = run_text(dir.path(), text, &["--format", "json", "--no-fail"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows[0]["clients"], 2);
    assert_eq!(rows[0]["response_p50_ms"], 20.0);
    assert_eq!(rows[1]["response_p99_ms"], 10.0);
    assert_eq!(rows[1]["throughput_per_s"], 200.0);
}

/// The measured seconds of a run of `duration_s` with a 1 s warm-up.
fn rate(count: u64, duration_s: f64) -> f64 {
    count as f64 / (duration_s - 1.0)
}

#[test]
fn a_closed_loop_with_timeouts_keeps_its_row_busy_and_never_waits_past_the_deadline() {
    // 20 clients, no think time, one row held 1 ms: the row is never idle, so it commits
    // 1,000 a second whatever the clients do. Under `cancel` a like still waiting at its
    // 5 ms deadline leaves its line (nothing waits longer) and every commit is a success;
    // under `orphan` it runs for nobody, so the row's 1,000 commits a second include the
    // orphans and the successes are fewer.
    let dir = tempfile::tempdir().unwrap();
    let base = "shards = [1]\nduration_s = 21\nwarmup_s = 1\nseed = 9\n[hold]\nms = 1\n\
                [arrivals]\nclients = 20\n[client]\ntimeout_ms = 5\nretries = 3\nbackoff_ms = 2\n";
    let cancel = &simulate(&scenario(
        dir.path(),
        &format!("{base}on_timeout = \"cancel\"\n"),
    ))[0];
    let orphan = &simulate(&scenario(
        dir.path(),
        &format!("{base}on_timeout = \"orphan\"\n"),
    ))[0];
    for run in [cancel, orphan] {
        let commits = rate(run.completed, 21.0);
        assert!((commits / 1000.0 - 1.0).abs() < 0.001, "{commits}/s");
    }
    assert!(cancel.waits.summary().max_ns <= 5_000_000);
    let counts =
        |run: &shardsim::model::ShardRun| run.extended.as_ref().unwrap().client.unwrap().counts;
    let (c, o) = (counts(cancel), counts(orphan));
    assert!(c.timeouts > 0 && o.timeouts > 0);
    // Each client has one like at a time: every like is done or still in flight.
    for n in [c, o] {
        assert!(n.likes - n.succeeded - n.failed <= 20, "{n:?}");
        assert!(n.attempts > n.likes, "timed-out likes were retried: {n:?}");
    }
    // The clients' counts cover the whole 21 s, warm-up included.
    let whole = |count: u64| count as f64 / 21.0;
    assert!(
        (whole(c.succeeded) / 1000.0 - 1.0).abs() < 0.01,
        "cancel: every commit answers a client: {c:?}"
    );
    assert!(
        whole(o.succeeded) < 900.0,
        "orphan: {} successes of {} commits",
        o.succeeded,
        orphan.completed
    );
}

#[test]
fn a_closed_loop_through_a_pool_cycles_at_the_pools_pace() {
    // 64 clients, no think time, a pool of 8 connections, 16 rows held 1 ms: at most 8
    // updates are in the database, each finds a free row, so 8,000 commit a second and a
    // client's cycle is 64 / 8,000 s = 8 ms, 7 of them waiting for a connection.
    let dir = tempfile::tempdir().unwrap();
    let text = "shards = [16]\nduration_s = 11\nwarmup_s = 1\n[hold]\nms = 1\n\
                [arrivals]\nclients = 64\n[pool]\nsize = 8\n";
    let run = &simulate(&scenario(dir.path(), text))[0];
    assert!((rate(run.completed, 11.0) / 8000.0 - 1.0).abs() < 0.001);
    let response = run.closed.as_ref().unwrap().responses.summary().mean_ns as f64 / 1e6;
    assert!(
        (response / 8.0 - 1.0).abs() < 0.01,
        "response {response} ms"
    );
    let pool = run.extended.as_ref().unwrap().pool.as_ref().unwrap();
    let waited = pool.like_waits.summary().mean_ns as f64 / 1e6;
    assert!(
        (waited / 7.0 - 1.0).abs() < 0.01,
        "connection wait {waited} ms"
    );
}

#[test]
fn a_closed_loop_over_many_keys_is_a_closed_queueing_network() {
    // 8 clients, no think time, 4 equally popular keys (zipf_s = 0) of one row each, holds
    // exponential of 1 ms: a closed network of 4 identical first-come-first-served stations,
    // each visited with probability 1/4. Mean-value analysis gives, by symmetry, a response
    // R(n) = S (1 + (n − 1)/4) and a throughput X(n) = n / R(n): 2.75 ms and 2,909/s.
    let dir = tempfile::tempdir().unwrap();
    let text = "shards = [1]\nduration_s = 301\nwarmup_s = 1\nseed = 5\n\
                [hold]\ndist = \"exponential\"\nmean_ms = 1\n\
                [arrivals]\nclients = 8\n[keys]\ncount = 4\nzipf_s = 0\n";
    let run = &simulate(&scenario(dir.path(), text))[0];
    assert_eq!(run.keys_touched, 4);
    let throughput = rate(run.completed, 301.0);
    let response = run.closed.as_ref().unwrap().responses.summary().mean_ns as f64 / 1e6;
    assert!((throughput / 2909.1 - 1.0).abs() < 0.01, "{throughput}/s");
    assert!((response / 2.75 - 1.0).abs() < 0.01, "{response} ms");
}

#[test]
fn locking_reads_take_their_share_of_a_closed_loops_row() {
    // 16 clients, no think time, one row held 1 ms, and 200 locking reads a second that hold
    // it 1 ms each: the row is never idle and the reads take 20% of it, so the clients
    // commit 800 a second.
    let dir = tempfile::tempdir().unwrap();
    let text = "shards = [1]\nduration_s = 61\nwarmup_s = 1\nseed = 2\n[hold]\nms = 1\n\
                [arrivals]\nclients = 16\n\
                [reads]\nrate_per_s = 200\nreads_lock = true\nlock_hold_ms = 1\n";
    let run = &simulate(&scenario(dir.path(), text))[0];
    let reads = run.extended.as_ref().unwrap().reads.as_ref().unwrap();
    let read_rate = rate(reads.key_reads, 61.0);
    assert!(
        (read_rate / 200.0 - 1.0).abs() < 0.03,
        "{read_rate} reads/s"
    );
    let commits = rate(run.completed, 61.0);
    let expected = 1000.0 * (1.0 - read_rate / 1000.0);
    assert!(
        (commits / expected - 1.0).abs() < 0.005,
        "{commits}/s against {expected}/s"
    );
}
