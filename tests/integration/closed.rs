//! Closed-loop clients: a hand-computable loop, the machine-repairman model M/M/1//K against
//! its closed form, the uncontended limit, and what validation refuses.

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
            "set exactly one of rate_per_s, profile, trace or clients",
        ),
        (
            format!("{base}clients = 4\n[client]\ntimeout_ms = 5\n"),
            "client: is not simulated with a closed loop",
        ),
        (
            "shards = [1]\nduration_s = 1\n[hold]\nms = 0\n[arrivals]\nclients = 4\n".to_owned(),
            "arrivals.think_ms: with a zero hold (and no CPU, flush or overhead) a closed loop needs a think time > 0",
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
