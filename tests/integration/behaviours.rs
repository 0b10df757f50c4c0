//! The clients' behaviours on the event-driven pipeline, where a hold is known only when the
//! update commits: a timeout decided when its deadline passes (hand traces with a hold that
//! grows with the queue), the pool as M/M/c, batching and locking reads with the machine, and
//! adaptive rows that hand new rows to the updates waiting. (Where the closed form also
//! applies, `clients.rs` runs every trace on both paths and `machine.rs` every shipped
//! scenario.)

use std::path::Path;
use std::sync::Arc;

use shardsim::model::clients::{ClientCounts, ClientPolicy, Features, OnTimeout};
use shardsim::model::machine::MachineModel;
use shardsim::model::{Arrival, EngineConfig, NO_USER, NoEvents, Pipeline, Policy, ShardRun, ms};
use shardsim::scenario::{Overrides, Scenario};
use shardsim::theory;

use crate::common::simulate;

fn config(shards: u32, features: Features) -> EngineConfig {
    EngineConfig {
        shards,
        policy: Policy::EarliestFree,
        skip_locked: shardsim::model::rows::SkipLocked::default(),
        horizon: ms(1000),
        window: ms(100),
        key_hint: 1,
        measure_from: 0,
        features: Arc::new(features),
        seed: 3,
        hot_keys: 0,
        adaptive: None,
        hot_key: 0,
        queue_limit: u64::MAX,
        likes: None,
    }
}

fn like(at_ms: u64, hold_ms: u64) -> Arrival {
    Arrival {
        at: ms(at_ms),
        hold: ms(hold_ms),
        random_bits: 0,
        user: NO_USER,
        key: 0,
        endpoint: 0,
    }
}

/// A 20 ms timeout, one retry straight after it.
fn patient(on_timeout: OnTimeout) -> Features {
    Features {
        client: Some(ClientPolicy {
            timeout: ms(20),
            on_timeout,
            retries: 1,
            backoff: 0,
            idempotent: false,
        }),
        ..Features::default()
    }
}

/// One row whose hold grows by 5 ms per update still waiting for it when it is taken.
fn growing_hold() -> Arc<MachineModel> {
    Arc::new(MachineModel {
        per_waiter: ms(5),
        ..MachineModel::default()
    })
}

fn run_pipeline(
    config: EngineConfig,
    machine: Arc<MachineModel>,
    arrivals: &[Arrival],
) -> ShardRun {
    let mut pipeline = Pipeline::new(config, machine, NoEvents);
    pipeline.feed(arrivals);
    pipeline.finish().0
}

fn counts(run: &ShardRun) -> ClientCounts {
    run.extended.as_ref().unwrap().client.unwrap().counts
}

#[test]
fn a_timeout_is_decided_when_the_deadline_passes() {
    // A@0, B@1, C@2 on one row, 10 ms holds. A runs 0–10. B takes the row at 10 with C still
    // waiting, so its hold is 10 + 5 = 15 ms: B runs 10–25 — which nobody knew when C was
    // sent. C's deadline (22) passes while it waits: cancelled, it leaves the line and is
    // retried at once; the retry takes the row at 25 (wait 3) with nobody behind it.
    let trace = [like(0, 10), like(1, 10), like(2, 10)];
    let run = run_pipeline(
        config(1, patient(OnTimeout::Cancel)),
        growing_hold(),
        &trace,
    );
    let c = counts(&run);
    assert_eq!(
        (
            c.likes,
            c.attempts,
            c.timeouts,
            c.succeeded,
            c.failed,
            c.executions
        ),
        (3, 4, 1, 3, 0, 3)
    );
    let waits = run.waits.summary();
    assert_eq!(
        (waits.count, waits.max_ns),
        (3, ms(9)),
        "A 0, B 9, the retry 3 ms"
    );
    assert_eq!(waits.mean_ns, ms(12) / 3);
    assert_eq!(run.completed, 3);
    assert_eq!(run.extended.as_ref().unwrap().client.unwrap().drift, 0);
}

#[test]
fn an_orphan_stays_in_line_and_runs_for_nobody() {
    // As above, but C stays in line when its client gives up at 22 and its retry queues
    // behind it. C takes the row at 25 with the retry waiting (hold 15, to 40); the retry
    // takes it at 40, 18 ms after it was sent — inside its own deadline. The like ran twice.
    let trace = [like(0, 10), like(1, 10), like(2, 10)];
    let run = run_pipeline(
        config(1, patient(OnTimeout::Orphan)),
        growing_hold(),
        &trace,
    );
    let c = counts(&run);
    assert_eq!(
        (
            c.attempts,
            c.timeouts,
            c.succeeded,
            c.executions,
            c.duplicates
        ),
        (4, 1, 3, 4, 1)
    );
    let waits = run.waits.summary();
    assert_eq!((waits.count, waits.max_ns), (4, ms(23)), "C waited 2 → 25");
    assert_eq!(run.extended.as_ref().unwrap().client.unwrap().drift, 1);
}

#[test]
fn a_pool_in_front_of_uncontended_rows_is_m_m_c() {
    // 4 connections, 8 rows (never more than 4 updates hold rows, so none waits for one),
    // exponential holds of mean 1 ms, Poisson likes at 3,200/s: the pool is M/M/4 at ρ = 0.8
    // and a like's connection wait is Erlang C's. 2 M likes; ten seeds spread the mean by
    // about 1% — 4% is four standard deviations.
    let text = "shards = [8]\nduration_s = 625\nseed = 21\n[hold]\ndist = \"exponential\"\nmean_ms = 1\n\
                [arrivals]\nrate_per_s = 3200\n[pool]\nsize = 4\n";
    let run = &simulate(&on_pipeline(text))[0];
    let pool = run.extended.as_ref().unwrap().pool.as_ref().unwrap();
    let mean_ms = pool.like_waits.summary().mean_ns as f64 / 1e6;
    let theory_ms = theory::mmc_wait_mean(4, 3.2, 1.0);
    assert!(
        (mean_ms / theory_ms - 1.0).abs() < 0.04,
        "connection wait {mean_ms:.4} ms, Erlang C {theory_ms:.4} ms"
    );
    assert_eq!(
        run.waits.summary().mean_ns,
        pool.like_waits.summary().mean_ns,
        "the wait for the row is all connection wait"
    );
}

#[test]
fn timeouts_with_a_machine_keep_every_like_accounted_for() {
    // One row on a 2-core machine with a durable commit, overloaded: likes time out, are
    // retried, and the rest fail; each like ends succeeded or failed, or its retry is pending.
    let text = "shards = [1, 4]\nduration_s = 10\nseed = 4\n[hold]\nms = 0.1\nper_waiter_ms = 0.004\n\
                [machine]\ncores = 2\n[machine.cpu]\nms = 0.05\n[wal]\nflush_ms = 0.1\n\
                [arrivals]\nrate_per_s = 6000\n[client]\ntimeout_ms = 5\non_timeout = \"cancel\"\nretries = 2\nbackoff_ms = 1\n";
    let runs = simulate(&on_pipeline(text));
    for run in &runs {
        let c = counts(run);
        assert_eq!(c.likes, c.succeeded + c.failed + c.pending, "{c:?}");
        assert_eq!(
            c.attempts,
            c.executions + c.timeouts,
            "cancelled attempts never run"
        );
        assert!(run.machine.as_ref().unwrap().commits > 0);
    }
    let (one, four) = (counts(&runs[0]), counts(&runs[1]));
    assert!(one.timeouts > 1000, "one row collapses: {one:?}");
    assert!(
        four.timeouts < one.timeouts / 10,
        "four rows cope: {four:?}"
    );
}

#[test]
fn batching_flushes_commit_through_the_wal() {
    // Two servers flush every 10 ms; each flush is one update per key, held until its WAL
    // flush ends, so a like's count delay is at least its wait in memory plus hold and flush.
    let text = "shards = [1]\nduration_s = 10\nseed = 8\n[hold]\nms = 0.5\n[wal]\nflush_ms = 2\n\
                [arrivals]\nrate_per_s = 2000\n[batching]\nservers = 2\nflush_ms = 10\n";
    let run = &simulate(&on_pipeline(text))[0];
    let batching = run.extended.as_ref().unwrap().batching.as_ref().unwrap();
    assert_eq!(
        batching.likes,
        batching.flushed_likes + batching.lost + batching.pending
    );
    assert_eq!(batching.db_writes, 2 * 1000 - 1, "two servers, every 10 ms");
    assert!(batching.delays.summary().count > 19_000);
    // HDR keeps three significant digits: the least delay is the hold and the flush.
    let least = batching.delays.quantile_ns(0.0);
    assert!(
        least >= ms(25) / 10 * 999 / 1000,
        "hold + flush at least: {least}"
    );
    // On average half a flush interval in memory, then hold and flush (no queue at 200/s).
    let mean_ms = batching.delays.summary().mean_ns as f64 / 1e6;
    assert!((mean_ms - 7.5).abs() < 0.3, "{mean_ms}");
    let machine = run.machine.as_ref().unwrap();
    assert_eq!(
        machine.commits, batching.db_writes,
        "one commit per flush update"
    );
}

#[test]
fn a_locking_read_holds_every_row_through_the_flush_of_the_writes_before_it() {
    // Two rows, writes committed through a 3 ms WAL flush: writes at 0 on rows 0 and 1 finish
    // their work at 10; the first commit's flush starts at once (10–13), the second waits
    // for the next (13–16). A locking read at 1 has both rows at 16 (wait 15) and holds them
    // 1 ms; a write at 2 waits behind it until 17 (wait 15).
    let features = Features {
        reads: Some(shardsim::model::clients::Reads {
            mode: shardsim::model::clients::ReadMode::Sum,
            cache_ttl: 0,
            feed_size: 1,
            lock: true,
            lock_hold: ms(1),
        }),
        ..Features::default()
    };
    let machine = Arc::new(MachineModel {
        wal: Some(shardsim::model::machine::WalModel {
            flush: ms(3),
            cpu: 0,
            group_commit: true,
        }),
        ..MachineModel::default()
    });
    let read = Arrival {
        endpoint: shardsim::model::clients::READ_ENDPOINT,
        ..like(1, 0)
    };
    let run = run_pipeline(
        config(2, features),
        machine,
        &[like(0, 10), like(0, 10), read, like(2, 1)],
    );
    let reads = run.extended.as_ref().unwrap().reads.as_ref().unwrap();
    assert_eq!(reads.lock_waits.max_ns(), ms(15));
    assert_eq!(run.waits.max_ns(), ms(15), "the write at 2 waits until 17");
}

#[test]
fn adaptive_rows_grow_on_the_pipeline_and_take_the_waiting_line() {
    // One key starting on one row at 1,500 likes/s of 1 ms holds plus a 0.2 ms flush: it is
    // swamped, grows (p99 over 5 ms, writers see it 1 s later) and its line drains.
    let text = "shards = [1]\nduration_s = 30\nseed = 2\n[hold]\nms = 1\n[wal]\nflush_ms = 0.2\n\
                [arrivals]\nrate_per_s = 1500\n[adaptive]\nstart = 1\nmax = 8\nfactor = 2\n\
                grow_when = { p99_ms = 5 }\nsignal_window_s = 1\nwriter_cache_ttl_s = 1\n";
    let scenario = on_pipeline(text);
    let runs = simulate(&scenario);
    let adaptive = runs
        .iter()
        .find(|run| run.adaptive)
        .expect("an adaptive run");
    assert!(!adaptive.growths.is_empty());
    assert!(adaptive.max_key_rows >= 2, "{}", adaptive.max_key_rows);
    let last = adaptive.windows.last().unwrap();
    assert_eq!(last.backlog, 0, "the line drained once the key grew");
    let fixed = runs.iter().find(|run| !run.adaptive).unwrap();
    assert!(fixed.backlog_final > 1000, "one row alone never catches up");
}

/// A scenario from TOML text, on the event-driven pipeline.
fn on_pipeline(text: &str) -> Scenario {
    let overrides = Overrides {
        event_path: true,
        ..Overrides::default()
    };
    Scenario::parse(&Path::new(".").join("test.toml"), text, &overrides)
        .unwrap_or_else(|err| panic!("valid test scenario: {err}"))
}
