//! Stalls of the machine (`[stalls]`): a hand trace through one stall, the stall count and
//! time against their rate, the twin without stalls, the columns, what validation refuses.

use shardsim::calibrate::stalls::{FittedStalls, Timeline};
use shardsim::model::{Arrival, Grant, KeyCounts, Observer, ShardRun};

use crate::common::{on_pipeline, run_text, simulate, stderr};

fn stall_figures(run: &ShardRun) -> (u64, u64, Option<u64>) {
    let machine = run
        .machine
        .as_ref()
        .expect("stalls put the run on the pipeline");
    let stalls = machine.stalls.expect("the machine stalls");
    (
        stalls.stalls,
        stalls.stalled_ns,
        machine.wait_p99_without_stalls_ns,
    )
}

#[test]
fn work_due_during_a_stall_completes_when_it_ends() {
    // One row, 1 ms holds, a like every 10 ms from 5 ms on; a checkpoint stall at 100 ms
    // lasting 25 ms. The like at 95 ms would commit at 96 ms: on time. The like at 105 ms takes
    // the free row at once, but its hold's end (106 ms) falls in the stall: it commits at
    // 125 ms, and the like at 115 ms waits for the row from 115 to 125 ms (10 ms); at 125 ms
    // every later like is on time again.
    let dir = tempfile::tempdir().unwrap();
    let trace: String = (0..15).map(|i| format!("{}\n", 5 + 10 * i)).collect();
    std::fs::write(dir.path().join("likes.csv"), format!("t_ms\n{trace}")).unwrap();
    let scenario = on_pipeline(
        dir.path(),
        "shards = [1]\nduration_s = 0.15\nwindow_s = 0.05\n[hold]\nms = 1\n\
         [arrivals]\ntrace = \"likes.csv\"\n[stalls]\ncheckpoint_s = 0.1\nduration_ms = 25\n",
    );
    let runs = simulate(&scenario);
    let run = &runs[0];
    let waits = run.waits.summary();
    assert_eq!(waits.max_ns, 10_000_000, "the like at 115 ms waits 10 ms");
    assert_eq!(run.arrivals, 15);
    let (stalls, stalled_ns, _) = stall_figures(run);
    assert_eq!((stalls, stalled_ns), (1, 25_000_000));
}

#[test]
fn stalls_come_at_their_rate_and_the_twin_has_none() {
    // Poisson stalls every 2 s on average lasting 40 ms, over 400 s: 200 stalls expected
    // (a standard deviation of 14), 8 s stalled. 4 rows at 50% of their ceiling: without
    // stalls the p99 wait is small, with them the likes that arrive during a stall wait.
    let dir = tempfile::tempdir().unwrap();
    let scenario = on_pipeline(
        dir.path(),
        "shards = [4]\nduration_s = 400\nseed = 3\n[hold]\nmean_ms = 1\ndist = \"exponential\"\n\
         [arrivals]\nrate_per_s = 2000\n[stalls]\nevery_s = 2\nduration_ms = 40\n",
    );
    let runs = simulate(&scenario);
    let (stalls, stalled_ns, without) = stall_figures(&runs[0]);
    assert!(stalls.abs_diff(200) <= 56, "{stalls} stalls");
    let expected_ns = stalls as f64 * 40e6;
    // Overlapping stalls count their common time once.
    let share = stalled_ns as f64 / expected_ns;
    assert!(
        (0.97..=1.0).contains(&share),
        "stalled {share} of the stalls' durations"
    );
    let with = runs[0].waits.summary().p99_ns;
    let without = without.expect("the twin ran");
    // 1% of the time stalled: the p99 lands in a stall's queue (tens of ms). Without stalls
    // the twin is M/M/4 (earliest-free over 4 rows at ρ 0.5): its p99 wait from Erlang C, which
    // 800,000 waits estimate within about 2% (5% is over 2σ of the tail's spread and well
    // under what a wrong twin would give).
    assert!(with > 10_000_000, "p99 with stalls {with} ns");
    let theory_ns = shardsim::theory::mmc_wait_quantile(4, 2000.0, 1000.0, 0.99) * 1e9;
    assert!(
        (without as f64 / theory_ns - 1.0).abs() < 0.05,
        "p99 without stalls {without} ns against M/M/4's {theory_ns:.0} ns"
    );
}

#[test]
fn the_summary_reports_the_stalls_and_a_scenario_without_them_has_no_stall_columns() {
    let dir = tempfile::tempdir().unwrap();
    let output = run_text(
        dir.path(),
        "shards = [2]\nduration_s = 20\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 500\n\
         [stalls]\ncheckpoint_s = 5\n[stalls.duration]\ndist = \"constant\"\nms = 100\n",
        &["--quiet"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let summary = std::fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cell = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(cell("stalls"), "3.0", "at 5, 10 and 15 s");
    assert_eq!(cell("stalled_s"), "0.3");
    // 1.5% of the likes arrive in a stall and wait up to 100 ms; without the stalls two rows
    // at a quarter of their ceiling keep the p99 under a millisecond.
    let with: f64 = cell("wait_p99_ms").parse().unwrap();
    let without: f64 = cell("wait_p99_without_stalls_ms").parse().unwrap();
    assert!(
        with > 10.0 && without < 1.0,
        "p99 {with} ms, without stalls {without} ms"
    );
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = run_text(
        plain_dir.path(),
        "shards = [2]\nduration_s = 1\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 500\n",
        &["--quiet"],
    );
    assert!(plain.status.success(), "{}", stderr(&plain));
    let summary = std::fs::read_to_string(plain_dir.path().join("out/summary.csv")).unwrap();
    let header = summary.lines().next().unwrap();
    assert!(
        !header.split(',').any(|column| column.contains("stall")),
        "the stall columns are written only with [stalls]: {header}"
    );
}

#[test]
fn a_stall_section_needs_a_rate_and_a_duration() {
    let dir = tempfile::tempdir().unwrap();
    let base = "shards = [1]\nduration_s = 1\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 10\n";
    for (stalls, field) in [
        ("[stalls]\nduration_ms = 10\n", "stalls.every_s"),
        ("[stalls]\nevery_s = 1\n", "stalls.duration_ms"),
        ("[stalls]\nevery_s = 0\nduration_ms = 1\n", "stalls.every_s"),
        (
            "[stalls]\ncheckpoint_s = -1\nduration_ms = 1\n",
            "stalls.checkpoint_s",
        ),
        (
            "[stalls]\nevery_s = 1\nduration_ms = 1\n[stalls.duration]\nms = 1\n",
            "stalls.duration_ms",
        ),
    ] {
        let output = run_text(dir.path(), &format!("{base}{stalls}"), &[]);
        assert_eq!(output.status.code(), Some(2), "{stalls}");
        let message = stderr(&output);
        assert!(
            message.contains(&format!("{field}:")),
            "{stalls}: {message}"
        );
        assert_eq!(message.trim().lines().count(), 1, "{message}");
    }
}

/// Counts every send and commit of a simulated run in a calibration's timeline, as the load
/// driver does against a real database.
struct Recorder(std::sync::Arc<Timeline>);

impl Observer for Recorder {
    fn on_increment(&mut self, _: &Arrival, _: &Grant, _: &dyn KeyCounts) {}

    fn on_arrival(&mut self, arrival: &Arrival) {
        self.0.send(arrival.at);
    }

    fn on_commit(&mut self, _: &Arrival, at: u64) {
        self.0.commit(at);
    }
}

/// The stalls calibrate would fit from the scenario's run (its one shard count).
fn fitted_from_simulation(text: &str) -> Option<FittedStalls> {
    let dir = tempfile::tempdir().unwrap();
    let scenario = on_pipeline(dir.path(), text);
    let horizon = scenario.horizon();
    let timeline = std::sync::Arc::new(Timeline::new(std::time::Duration::from_nanos(horizon)));
    let observers = vec![Recorder(std::sync::Arc::clone(&timeline))];
    shardsim::sweep::run(&scenario, 0, observers, &shardsim::sweep::NoProgress).unwrap();
    let stalls = timeline.stalls(0, horizon);
    FittedStalls::fit(&[(stalls, horizon as f64 / 1e9)])
}

#[test]
fn the_fit_recovers_a_simulated_machines_stalls() {
    // Stalls every 5 s on average (two in a hundred overlap and merge), log-normal lengths with
    // median 100 ms and p99 400 ms, over 3,000 s (about 600 stalls): a closed loop of 4 clients keeps work outstanding always, an
    // open stream of 600/s over two rows most of the time. A stall shorter than 20 times the
    // service time (here 20 ms, 0.4% of them) cannot be told from a slow update.
    let stalls = "[stalls]\nevery_s = 5\n[stalls.duration]\ndist = \"lognormal\"\nmedian_ms = 100\np99_ms = 400\n";
    for (shards, load) in [(1, "clients = 4"), (2, "rate_per_s = 600")] {
        let text = format!(
            "shards = [{shards}]\nduration_s = 3000\nseed = 5\n[hold]\nmean_ms = 1\n\
             dist = \"exponential\"\n[arrivals]\n{load}\n{stalls}"
        );
        let fitted = fitted_from_simulation(&text).expect("stalls seen");
        let within = |got: f64, want: f64| (got / want - 1.0).abs() <= 0.10;
        assert!(
            within(fitted.every_s, 5.0),
            "{load}: every {} s",
            fitted.every_s
        );
        assert!(
            within(fitted.median_ms, 100.0),
            "{load}: median {} ms",
            fitted.median_ms
        );
        assert!(
            within(fitted.p99_ms, 400.0),
            "{load}: p99 {} ms",
            fitted.p99_ms
        );
    }
}

#[test]
fn a_machine_without_stalls_fits_none() {
    for (shards, load) in [(1, "clients = 4"), (2, "rate_per_s = 1500")] {
        let text = format!(
            "shards = [{shards}]\nduration_s = 300\nseed = 5\n[hold]\nmean_ms = 1\n\
             dist = \"exponential\"\n[arrivals]\n{load}\n"
        );
        assert_eq!(fitted_from_simulation(&text), None, "{load}");
    }
}

#[test]
fn plan_says_when_its_tail_rests_on_few_stalls() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = "shards = [1]\nduration_s = 60\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 3000\n\
                    [slo]\np99_ms = 20\n[stalls]\nevery_s = 5\nduration_ms = 30\n";
    let plan = |extra: &str| {
        std::fs::write(dir.path().join("test.toml"), format!("{scenario}{extra}")).unwrap();
        let out = format!("plan-{}", extra.len());
        let output = crate::common::shardsim(
            dir.path(),
            &["plan", "test.toml", "--color", "never", "--out", &out],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    let few = plan("seen = 7\n");
    assert!(few.contains("only 7 seen by the calibration"), "{few}");
    assert!(
        few.contains("(constant draw, with the machine's stalls)"),
        "{few}"
    );
    let enough = plan("seen = 400\n");
    assert!(enough.contains("fitted from 400 stalls"), "{enough}");
    assert!(!enough.contains("only"), "{enough}");
}
