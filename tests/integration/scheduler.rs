//! The cores as a time-slicing scheduler runs them (`[machine] scheduler = "shared"`) and the
//! CPU of a request before its row (`[machine] request_cpu_ms`): processor sharing against
//! its exact means (M/M/1-PS, M/D/1-PS, M/M/2-PS), a holder slowed down by the work that
//! shares its core, hand-computable, a request's CPU queued with everyone's, and the knee of
//! the shipped pool-size sweep.

use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex};

use shardsim::model::{Arrival, Grant, KeyCounts, Observer};
use shardsim::theory;

use crate::common::{csv_column, on_pipeline, repo, shardsim, simulate, stderr};

/// Each update's wait for its row and its response (no time outside the database: its
/// commit), by arrival.
#[derive(Default)]
struct Updates {
    waits: Vec<(u64, u64)>,
    commits: Vec<(u64, u64)>,
}

struct Recorder(Arc<Mutex<Updates>>);

impl Observer for Recorder {
    fn on_increment(&mut self, arrival: &Arrival, grant: &Grant, _: &dyn KeyCounts) {
        let wait = grant.start - arrival.at;
        self.0.lock().unwrap().waits.push((arrival.at, wait));
    }

    fn on_commit(&mut self, arrival: &Arrival, at: u64) {
        let response = at - arrival.at;
        self.0.lock().unwrap().commits.push((arrival.at, response));
    }
}

/// The waits and responses of `scenario`'s one shard count, in the order the updates arrived.
fn waits_and_responses(scenario: &shardsim::scenario::Scenario) -> (Vec<u64>, Vec<u64>) {
    let updates = Arc::new(Mutex::new(Updates::default()));
    let observers = vec![Recorder(Arc::clone(&updates))];
    shardsim::sweep::run(scenario, 0, observers, &shardsim::sweep::NoProgress).unwrap();
    let mut updates = updates.lock().unwrap();
    let in_order = |pairs: &mut Vec<(u64, u64)>| {
        pairs.sort();
        pairs.iter().map(|&(_, value)| value).collect::<Vec<u64>>()
    };
    let waits = in_order(&mut updates.waits);
    (waits, in_order(&mut updates.commits))
}

/// The mean response (arrival to answer) of `text`'s first shard count, ms, and its CPU
/// utilization.
fn mean_response_ms(text: &str) -> (f64, f64) {
    let run = &simulate(&on_pipeline(Path::new("."), text))[0];
    let machine = run.machine.as_ref().unwrap();
    let mean = machine.responses.as_ref().unwrap().summary().mean_ns as f64 / 1e6;
    (mean, machine.cpu_utilization().unwrap())
}

/// Updates on 4,096 rows (none ever busy at an arrival), no hold, for `seconds` (seed 5): only
/// the cores queue them.
fn cores_alone(cores: u32, scheduler: &str, cpu: &str, rate: f64, seconds: u32) -> String {
    format!(
        "shards = [4096]\nduration_s = {seconds}\nseed = 5\n[hold]\nms = 0\n[machine]\n\
         cores = {cores}\nscheduler = \"{scheduler}\"\n[machine.cpu]\n{cpu}\n[arrivals]\n\
         rate_per_s = {rate}\n"
    )
}

#[test]
fn shared_cores_give_processor_sharings_mean_whatever_the_cpus_shape() {
    // M/G/1-PS: the mean response is S / (1 − ρ) for any distribution of the CPU: 2 ms at
    // ρ = 0.5 and 5 ms at 0.8 for 1 ms, exponential or constant. First come, first served
    // with a constant 1 ms is M/D/1 instead: 1 + ρ / (2 (1 − ρ)) ms, 3 ms at 0.8.
    // 800,000 updates at ρ = 0.5 (1,600 s), 2.56 M at 0.8 (3,200 s): over ten seeds of 400 s
    // the mean moved by 0.86% and 1.35% (exponential), 0.50% and 0.79% (constant) at one
    // standard deviation, so 2% is at least 2.9 of them here.
    for cpu in [
        "dist = \"exponential\"\nmean_ms = 1",
        "dist = \"constant\"\nms = 1",
    ] {
        for (rate, seconds) in [(500.0, 1600), (800.0, 3200)] {
            let rho = rate / 1000.0;
            let text = cores_alone(1, "shared", cpu, rate, seconds);
            let (mean, utilization) = mean_response_ms(&text);
            let exact = 1.0 / (1.0 - rho);
            assert!(
                (mean / exact - 1.0).abs() < 0.02,
                "{cpu} at ρ = {rho}: {mean:.4} ms, M/G/1-PS {exact:.4} ms"
            );
            assert!((utilization - rho).abs() < 0.01, "cpu {utilization}");
        }
    }
    let (fifo, _) = mean_response_ms(&cores_alone(1, "fifo", "ms = 1", 800.0, 3200));
    let md1 = 1.0 + 0.8 / (2.0 * 0.2);
    assert!((fifo / md1 - 1.0).abs() < 0.02, "M/D/1 {fifo:.4} ms");
}

#[test]
fn two_shared_cores_hold_as_many_as_m_m_2() {
    // M/M/c-PS holds as many as M/M/c at every instant (a symmetric queue), so its mean
    // response is M/M/2's by Little's law: Erlang C's mean wait plus the 1 ms of CPU. Over ten
    // seeds of 400 s the mean moved by 1.08%; 1,600 s halves that, and 2% is 3.7 of them.
    let cpu = "dist = \"exponential\"\nmean_ms = 1";
    let (mean, utilization) = mean_response_ms(&cores_alone(2, "shared", cpu, 1500.0, 1600));
    let exact = theory::mmc_wait_mean(2, 1.5, 1.0) + 1.0;
    assert!(
        (mean / exact - 1.0).abs() < 0.02,
        "{mean:.4} ms, M/M/2 {exact:.4} ms"
    );
    assert!((utilization - 0.75).abs() < 0.01, "cpu {utilization}");
}

/// The waits and responses of a hand trace on one core with 1 ms of CPU per update.
fn one_core(scheduler: &str, trace: &str, request_cpu_ms: f64) -> (Vec<u64>, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("t.csv"), trace).unwrap();
    let text = format!(
        "shards = [1]\nduration_s = 1\n[hold]\nms = 0\n[machine]\ncores = 1\n\
         scheduler = \"{scheduler}\"\nrequest_cpu_ms = {request_cpu_ms}\n[machine.cpu]\nms = 1\n\
         [arrivals]\ntrace = \"t.csv\"\n"
    );
    waits_and_responses(&on_pipeline(dir.path(), &text))
}

#[test]
fn a_holder_shares_its_core_with_the_work_that_arrives_while_it_holds() {
    // A (key a) at 0 and B (key b) at 0.5 ms each need 1 ms of CPU holding their rows; C (key
    // a) at 0.1 ms waits for A's row. Shared: A runs alone to 0.5, then at half speed with B,
    // and commits at 1.5 (preempted for 0.5 ms while it holds the row); C waits 1.4 ms.
    // First come, first served: A keeps the core to 1.0; C waits 0.9 ms.
    let trace = "t_ms,key\n0,a\n0.1,a\n0.5,b\n";
    let (waits, responses) = one_core("shared", trace, 0.0);
    assert_eq!(waits, [0, 1_400_000, 0]);
    // B: 0.5 of its 1 ms by 1.5, then alone with C's share: C holds from 1.5 and shares.
    // B's last 0.5 ms at half speed ends at 2.5; C's last 0.5 ms alone ends at 3.0.
    assert_eq!(responses, [1_500_000, 2_900_000, 2_000_000]);
    let (waits, responses) = one_core("fifo", trace, 0.0);
    assert_eq!(waits, [0, 900_000, 0]);
    assert_eq!(responses, [1_000_000, 2_900_000, 1_500_000]);
}

#[test]
fn a_requests_cpu_queues_before_its_row_with_everyone_elses() {
    // 0.5 ms of CPU before the row, then 1 ms holding it, first come, first served on one
    // core. A (key a, at 0) prepares 0–0.5 and asks for the core again holding its row; B
    // (key b, at 0.2) queued its preparation at 0.2, ahead of A's: B prepares 0.5–1.0, and A,
    // holding its row, waits behind it: A's CPU 1.0–2.0, B's 2.0–3.0. The wait counts to the
    // row's grant, so it holds the preparation.
    let trace = "t_ms,key\n0,a\n0.2,b\n";
    let (waits, responses) = one_core("fifo", trace, 0.5);
    assert_eq!(waits, [500_000, 800_000]);
    assert_eq!(responses, [2_000_000, 2_800_000]);
}

#[test]
fn a_request_cancelled_during_its_cpu_leaves_and_is_told_once() {
    // One closed-loop client, 10 ms of request CPU on one core, a 5 ms timeout that cancels,
    // no retry: each like times out during its preparation and the client sends the next at
    // once, 200 in a second; the abandoned request leaves when its CPU ends, answering nobody.
    let text = "shards = [1]\nduration_s = 1\n[hold]\nms = 0\n[machine]\ncores = 1\n\
                request_cpu_ms = 10\n[machine.cpu]\nms = 0\n[arrivals]\nclients = 1\nthink_ms = 0\n\
                [client]\ntimeout_ms = 5\non_timeout = \"cancel\"\nretries = 0\n";
    let run = &simulate(&on_pipeline(Path::new("."), text))[0];
    let client = run.extended.as_ref().unwrap().client.as_ref().unwrap();
    assert_eq!((client.counts.likes, client.counts.timeouts), (200, 200));
    assert_eq!(run.completed, 0, "no cancelled request reaches its row");
}

#[test]
fn the_pool_size_sweep_shows_the_knee() {
    // The shipped sweep (8 rows at 40,000/s on 16 shared cores): throughput climbs to its
    // best at 32 connections and falls with every doubling beyond, to under a quarter of it at
    // 512, where the requests under way share the cores with the rows' holders; 32 is the only
    // pool that meets p99 ≤ 20 ms.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = shardsim(
        &repo(""),
        &[
            "run",
            "scenarios/sweeps/pool-size.toml",
            "--no-fail",
            "--every-run",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
    let pools = csv_column(&summary, "pool.size");
    let throughput: Vec<f64> = csv_column(&summary, "throughput_per_s")
        .iter()
        .map(|value| value.parse().unwrap())
        .collect();
    let best = (0..throughput.len())
        .max_by(|&a, &b| throughput[a].total_cmp(&throughput[b]))
        .unwrap();
    assert_eq!(pools[best], "32", "{pools:?} {throughput:?}");
    assert!(throughput[0] < 0.6 * throughput[best], "{throughput:?}");
    assert!(
        throughput[best..].windows(2).all(|pair| pair[1] < pair[0]),
        "{throughput:?}"
    );
    assert!(
        *throughput.last().unwrap() < 0.25 * throughput[best],
        "{throughput:?}"
    );
    let sweep = fs::read_to_string(out.join("sweep.csv")).unwrap();
    let meets: Vec<String> = csv_column(&sweep, "pool.size")
        .into_iter()
        .zip(csv_column(&sweep, "recommended_shards"))
        .filter(|(_, shards)| !shards.is_empty())
        .map(|(pool, _)| pool)
        .collect();
    assert_eq!(meets, ["32"]);
}
