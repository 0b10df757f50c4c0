//! Timeouts, retries, write batching and the connection pool: hand-computable traces for each
//! behaviour, conservation of likes, and the timeout fraction against M/M/c+D theory.

use std::sync::Arc;

use shardsim::model::clients::{
    Batching, ClientPolicy, Crash, Features, Neighbour, OnTimeout, Pool,
};
use shardsim::model::{
    Arrival, EngineConfig, ExtendedRun, HoldDist, MachineModel, NO_USER, NoEvents, Pipeline,
    Policy, ShardRun, ms,
};
use shardsim::theory;

use crate::common;

fn config(shards: u32, features: Features) -> EngineConfig {
    let horizon = ms(10_000);
    EngineConfig {
        shards,
        policy: Policy::EarliestFree,
        skip_locked: shardsim::model::rows::SkipLocked::default(),
        horizon,
        window: ms(1000),
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

/// Runs the trace on the event-driven pipeline without a machine (the client behaviours
/// live there) and returns its figures.
fn run(config: EngineConfig, arrivals: &[Arrival]) -> (ShardRun, ExtendedRun) {
    let (run, _) = simulate(config, arrivals);
    let extended = run.extended.clone().expect("the features are on");
    (run, extended)
}

/// Simulates the trace on the pipeline without a machine.
fn simulate(config: EngineConfig, arrivals: &[Arrival]) -> (ShardRun, NoEvents) {
    let mut pipeline = Pipeline::new(config, Arc::new(MachineModel::default()), NoEvents);
    pipeline.feed(arrivals);
    pipeline.finish()
}

fn client(on_timeout: OnTimeout, retries: u32, backoff_ms: u64, idempotent: bool) -> Features {
    Features {
        client: Some(ClientPolicy {
            timeout: ms(5),
            on_timeout,
            retries,
            backoff: ms(backoff_ms),
            idempotent,
        }),
        ..Features::default()
    }
}

#[test]
fn a_cancelled_timeout_never_takes_the_row() {
    // One row, 10 ms holds, 5 ms patience. a@0 runs 0–10; b@1 and c@2 would wait 9 and 8 ms,
    // so they are abandoned and do not delay d@12, which finds the row free at 10.
    let (run, ext) = run(
        config(1, client(OnTimeout::Cancel, 0, 0, true)),
        &[like(0, 10), like(1, 10), like(2, 10), like(12, 10)],
    );
    let counts = ext.client.unwrap().counts;
    assert_eq!(
        (
            counts.likes,
            counts.timeouts,
            counts.failed,
            counts.succeeded,
            counts.executions
        ),
        (4, 2, 2, 2, 2)
    );
    assert_eq!(
        run.waits.max_ns(),
        0,
        "d did not wait behind the abandoned ones"
    );
    assert_eq!(run.backlog_max, 2, "b and c queue until their deadlines");
    assert_eq!(run.backlog_final, 0);
}

#[test]
fn an_orphan_still_holds_the_row() {
    // Orphans run anyway: b starts at 10, c at 20, d at 30 — each past its 5 ms patience.
    let (run, ext) = run(
        config(1, client(OnTimeout::Orphan, 0, 0, true)),
        &[like(0, 10), like(1, 10), like(2, 10), like(12, 10)],
    );
    let c = ext.client.unwrap();
    assert_eq!(
        (
            c.counts.timeouts,
            c.counts.failed,
            c.counts.succeeded,
            c.counts.executions
        ),
        (3, 3, 1, 4)
    );
    assert_eq!(run.waits.max_ns(), ms(18));
    assert_eq!(c.drift, 0);
}

#[test]
fn a_retry_lands_after_its_backoff() {
    // b@1 is abandoned at its deadline, 6 ms; with a zero backoff its retry comes at 6, waits
    // 4 ms for the row (free at 10) and succeeds.
    let (run, ext) = run(
        config(1, client(OnTimeout::Cancel, 1, 0, true)),
        &[like(0, 10), like(1, 10)],
    );
    let counts = ext.client.unwrap().counts;
    assert_eq!(
        (
            counts.attempts,
            counts.timeouts,
            counts.succeeded,
            counts.failed
        ),
        (3, 1, 2, 0)
    );
    assert_eq!(run.waits.max_ns(), ms(4));
}

#[test]
fn backoff_jitter_stays_within_its_cap() {
    // Every retry of a like that always times out waits at most backoff × 2^(n−1) after the
    // failure; with 3 retries of 40 ms backoff the last attempt comes by 5 + 40 + 5 + 80 + 5
    // + 160 ms, so a horizon of 300 ms leaves nothing pending.
    let features = Features {
        client: Some(ClientPolicy {
            timeout: ms(5),
            on_timeout: OnTimeout::Cancel,
            retries: 3,
            backoff: ms(40),
            idempotent: true,
        }),
        ..Features::default()
    };
    let mut config = config(1, features);
    config.horizon = ms(300);
    let arrivals: Vec<Arrival> = std::iter::once(like(0, 290))
        .chain((1..=50).map(|i| like(i, 1)))
        .collect();
    let (_, ext) = run(config, &arrivals);
    let counts = ext.client.unwrap().counts;
    assert_eq!(counts.pending, 0);
    assert_eq!(
        counts.failed, 50,
        "the row is busy until 290 ms: every retry times out"
    );
    assert_eq!(counts.attempts, 1 + 50 * 4);
}

#[test]
fn orphans_with_retries_count_twice_unless_idempotent() {
    // b@1 times out (it still runs at 10); its retry at 6 waits until 20: a second run.
    for (idempotent, drift, total) in [(false, 1, 3), (true, 0, 2)] {
        let (_, ext) = run(
            config(1, client(OnTimeout::Orphan, 1, 0, idempotent)),
            &[like(0, 10), like(1, 10)],
        );
        let c = ext.client.unwrap();
        assert_eq!(
            (c.counts.executions, c.counts.duplicates, c.drift),
            (3, 1, drift),
            "idempotent = {idempotent}"
        );
        // The rows' final total is the likes that ran plus the drift.
        assert_eq!(
            c.counts.distinct_executed + c.drift,
            total,
            "idempotent = {idempotent}"
        );
    }
}

fn batching(servers: u32, crashes: Vec<Crash>) -> Features {
    Features {
        batching: Some(Batching {
            servers,
            flush: ms(100),
            crashes,
            hold: HoldDist::Constant { hold_ns: ms(1) },
        }),
        ..Features::default()
    }
}

#[test]
fn a_flush_adds_k_in_one_update() {
    // One server flushes at 100 ms: one +3 update committing at 101 ms.
    let (run, _) = simulate(
        config(1, batching(1, vec![])),
        &[like(10, 1), like(20, 1), like(30, 1)],
    );
    let batch = run.extended.unwrap().batching.unwrap();
    assert_eq!(
        (
            batch.likes,
            batch.db_writes,
            batch.flushed_likes,
            batch.lost
        ),
        (3, 1, 3, 0)
    );
    assert_eq!(run.arrivals, 1, "the database sees one update");
    assert_eq!(batch.delays.max_ns(), ms(91));
    assert_eq!(batch.delays.summary().mean_ns, ms(81));
    assert_eq!(batch.at_risk_max, 3);
}

#[test]
fn a_crash_loses_exactly_the_unflushed_counts() {
    let config = config(
        1,
        batching(
            1,
            vec![Crash {
                at: ms(50),
                servers: 1,
            }],
        ),
    );
    let (run, _) = simulate(config, &[like(10, 1), like(20, 1), like(60, 1)]);
    let batch = run.extended.unwrap().batching.unwrap();
    assert_eq!((batch.lost, batch.flushed_likes, batch.pending), (2, 1, 0));
    assert_eq!(batch.db_writes, 1, "nothing flushed before the crash");
}

#[test]
fn a_neighbour_waits_while_likes_hold_the_pool() {
    // One connection. The like at 0 holds it until its commit at 10; the neighbour's request
    // at 1 waits 9 ms and holds it 10–12; a like at 5 gets it at 12 (its row is free at 10).
    let features = Features {
        pool: Some(Pool {
            size: 1,
            neighbours: vec![Neighbour {
                name: "feed".into(),
                rate_per_s: 0.0,
                hold: ms(2),
            }],
        }),
        ..Features::default()
    };
    let neighbour = Arrival {
        endpoint: 1,
        ..like(1, 2)
    };
    let (run, ext) = run(config(1, features), &[like(0, 10), neighbour, like(5, 10)]);
    let pool = ext.pool.unwrap();
    assert_eq!(pool.neighbour_waits[0].1.max_ns(), ms(9));
    assert_eq!(pool.like_waits.max_ns(), ms(7));
    assert_eq!(
        run.waits.max_ns(),
        ms(7),
        "the like's wait includes its wait for a connection"
    );
}

#[test]
fn every_like_is_counted_failed_lost_or_pending() {
    let dir = tempfile::tempdir().unwrap();
    for (on_timeout, idempotent) in [("cancel", true), ("orphan", true), ("orphan", false)] {
        let text = format!(
            "shards = [1, 2, 3]\nduration_s = 20\nseed = 4\n[hold]\ndist = \"exponential\"\nmean_ms = 1\n\
             [arrivals]\nrate_per_s = 1800\n[client]\ntimeout_ms = 3\non_timeout = \"{on_timeout}\"\n\
             retries = 2\nbackoff_ms = 5\nidempotent = {idempotent}\n"
        );
        for run in common::simulate(&common::scenario(dir.path(), &text)) {
            let c = run.extended.unwrap().client.unwrap();
            let n = c.counts;
            assert_eq!(
                n.likes,
                n.succeeded + n.failed + n.pending,
                "{on_timeout} at {} shards",
                run.shards
            );
            assert_eq!(n.executions, n.distinct_executed + n.duplicates);
            if idempotent {
                assert_eq!(c.drift, 0);
            } else {
                assert_eq!(c.drift, n.duplicates);
            }
            if on_timeout == "cancel" {
                assert_eq!(n.duplicates, 0, "cancelled updates never run");
            }
        }
    }
    let text = "shards = [2]\nduration_s = 20\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 3000\n\
                [batching]\nservers = 7\nflush_ms = 250\ncrash = [{ at_s = 5, servers = 3 }, { at_s = 12.3, servers = 7 }]\n";
    for run in common::simulate(&common::scenario(dir.path(), text)) {
        let total = run.extended.as_ref().unwrap();
        let b = total.batching.as_ref().unwrap();
        assert_eq!(b.likes, b.flushed_likes + b.lost + b.pending);
        assert!(b.lost > 0 && b.pending > 0);
    }
}

#[test]
fn cancelled_timeouts_follow_mmc_with_deterministic_patience() {
    // Earliest-free, exponential holds (mean 1 ms), 4 rows, 2 ms patience, no retries: the
    // fraction of timeouts is P(abandon) of M/M/4+D. Each case runs 6 replications of about
    // 500,000 likes; one replication's fraction varies by about 1.6% (ρ = 0.8) and 0.3%
    // (ρ = 1.2) of its value (measured), so the theory must fall inside the 95% interval over
    // replications, widened by 2% of its value for the finite run's start-up.
    let dir = tempfile::tempdir().unwrap();
    for rho in [0.8, 1.2] {
        let rate = rho * 4000.0;
        let text = format!(
            "shards = [4]\nduration_s = {}\nreplications = 6\n[hold]\ndist = \"exponential\"\nmean_ms = 1\n\
             [arrivals]\nrate_per_s = {rate}\n[client]\ntimeout_ms = 2\non_timeout = \"cancel\"\n",
            500_000.0 / rate
        );
        let scenario = common::scenario(dir.path(), &text);
        let (runs, _) = shardsim::sweep::run_replications(
            &scenario,
            vec![NoEvents],
            &shardsim::sweep::NoProgress,
        )
        .unwrap();
        let fractions: Vec<f64> = runs[0]
            .iter()
            .map(|run| {
                let c = run.extended.as_ref().unwrap().client.unwrap().counts;
                c.timeouts as f64 / c.attempts as f64
            })
            .collect();
        let (mean, half) = shardsim::stats::replications::mean_and_half_width(&fractions);
        let exact = theory::mmc_deterministic_patience_abandonment(4, rate / 1e3, 1.0, 2.0);
        let allowed = half.unwrap() + 0.02 * exact;
        assert!(
            (mean - exact).abs() <= allowed,
            "ρ = {rho}: simulated {mean} ± {half:?}, theory {exact}"
        );
    }
}

#[test]
fn the_behaviour_scenarios_write_their_charts_and_columns() {
    // Each column at 1 and 16 rows: the retry storm amplifies only where one row is
    // swamped (attempts / likes); the crashed app server loses its unflushed second
    // (about 1/20 of 5,000 likes a second) whatever the rows; the pool's neighbours wait
    // only behind one row.
    let dir = tempfile::tempdir().unwrap();
    type Check = fn(f64, f64) -> bool;
    let cases: [(&str, &[&str], &str, Check); 3] = [
        (
            "retry-storm",
            &["clients.png", "clients.svg"],
            "amplification",
            |one, sixteen| one > 2.0 && sixteen == 1.0,
        ),
        (
            "batched",
            &["at_risk.png", "at_risk.svg"],
            "lost_likes",
            |one, sixteen| one == sixteen && (100.0..=300.0).contains(&one),
        ),
        (
            "pool",
            &[
                "neighbours.png",
                "neighbours.svg",
                "neighbours.csv",
                "clients.svg",
            ],
            "neighbour_wait_p99_ms",
            |one, sixteen| one > 100.0 && sixteen == 0.0,
        ),
    ];
    for (name, files, column, check) in cases {
        let scenario = common::repo(&format!("scenarios/{name}.toml"));
        let output = common::shardsim(
            dir.path(),
            &[
                "run",
                scenario.to_str().unwrap(),
                "--shards",
                "1,16",
                "--out",
                name,
                "-q",
            ],
        );
        assert!(
            output.status.success(),
            "{name}: {}",
            common::stderr(&output)
        );
        for file in files {
            assert!(dir.path().join(name).join(file).is_file(), "{name}/{file}");
        }
        let summary = std::fs::read_to_string(dir.path().join(name).join("summary.csv")).unwrap();
        let mut lines = summary.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let at = header.iter().position(|h| *h == column).unwrap();
        let values: Vec<f64> = lines
            .map(|line| line.split(',').nth(at).unwrap().parse().unwrap())
            .collect();
        assert_eq!(values.len(), 2, "{name}");
        assert!(check(values[0], values[1]), "{name}: {column} {values:?}");
    }
}

#[test]
fn one_row_storms_while_sixteen_stay_calm() {
    let scenario = shardsim::scenario::Scenario::load(
        &common::repo("scenarios/retry-storm.toml"),
        &shardsim::scenario::Overrides {
            shards: Some(vec![1, 16]),
            ..Default::default()
        },
    )
    .unwrap();
    let runs = common::simulate(&scenario);
    let storm = runs[0].extended.as_ref().unwrap().client.unwrap();
    let calm = runs[1].extended.as_ref().unwrap().client.unwrap();
    assert!(
        storm.counts.attempts > 2 * storm.counts.likes,
        "amplification above 2"
    );
    assert!(
        storm.counts.failed > storm.counts.likes / 2,
        "most likes fail for the user"
    );
    assert!(
        storm.drift > 0,
        "orphans without idempotency count likes twice"
    );
    assert_eq!(
        (calm.counts.attempts, calm.counts.failed, calm.drift),
        (calm.counts.likes, 0, 0)
    );
}

mod reads {
    use super::*;
    use shardsim::model::clients::{READ_ENDPOINT, ReadMode, Reads};

    fn reads_config(mode: ReadMode, ttl_ms: u64, shards: u32) -> EngineConfig {
        let features = Features {
            reads: Some(Reads {
                mode,
                cache_ttl: ms(ttl_ms),
                feed_size: 1,
                lock: false,
                lock_hold: ms(1),
            }),
            ..Features::default()
        };
        config(shards, features)
    }

    fn read(at_ms: u64) -> Arrival {
        Arrival {
            endpoint: READ_ENDPOINT,
            ..like(at_ms, 0)
        }
    }

    #[test]
    fn a_cached_total_trails_by_the_likes_since_it_was_built() {
        // Likes at 0, 1, 2; a read at 3 builds the cache (3, fresh); a like at 4; a read at 5
        // hits the cache: shown 3, true 4, 2 ms old; the read at 14 is past the 10 ms TTL and
        // rebuilds it (fresh again).
        let arrivals = [
            like(0, 1),
            like(1, 1),
            like(2, 1),
            read(3),
            like(4, 1),
            read(5),
            read(14),
        ];
        let (_, ext) = run(reads_config(ReadMode::Cached, 10, 2), &arrivals);
        let reads = ext.reads.unwrap();
        assert_eq!(
            (reads.key_reads, reads.cache_hits, reads.rows_touched),
            (3, 1, 4)
        );
        assert_eq!(reads.staleness_likes.max_ns(), 1, "one like behind");
        assert_eq!(reads.staleness.max_ns(), ms(2));
        assert_eq!(
            reads.staleness.summary().mean_ns,
            (ms(2) as f64 / 3.0).round() as u64
        );
    }

    #[test]
    fn summing_reads_every_row_and_is_never_stale() {
        let arrivals: Vec<Arrival> = (0..100)
            .flat_map(|i| [like(i * 3, 1), read(i * 3 + 1)])
            .collect();
        let (_, ext) = run(reads_config(ReadMode::Sum, 0, 8), &arrivals);
        let reads = ext.reads.unwrap();
        assert_eq!(
            (reads.key_reads, reads.rows_touched, reads.cache_hits),
            (100, 800, 0),
            "8 rows per read exactly"
        );
        assert_eq!(
            (reads.staleness_likes.max_ns(), reads.staleness.max_ns()),
            (0, 0)
        );
    }

    #[test]
    fn a_steady_stream_sees_a_cache_half_its_ttl_old() {
        // Reads at 1,000/s on one key with a 2 s TTL: a cache is rebuilt by the first read after
        // it expires, so a read finds it uniformly aged over [0, 2 s): mean 1 s (less the ~1 ms
        // gap after each expiry). 60 s gives 60,000 reads over 30 cycles; the mean of 30
        // uniform cycles has a relative standard error near 0.3%, so 2% is ample.
        let dir = tempfile::tempdir().unwrap();
        let text = "shards = [4]\nduration_s = 60\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 100\n\
                    [reads]\nrate_per_s = 1000\nmode = \"cached\"\ncache_ttl_s = 2\n";
        let runs = common::simulate(&common::scenario(dir.path(), text));
        let reads = runs[0].extended.as_ref().unwrap().reads.as_ref().unwrap();
        let mean_s = reads.staleness.summary().mean_ns as f64 / 1e9;
        assert!((mean_s / 1.0 - 1.0).abs() < 0.02, "{mean_s}");
        // And the likes it trails: 100/s × 1 s on average.
        let likes = reads.staleness_likes.summary().mean_ns as f64;
        assert!((likes / 100.0 - 1.0).abs() < 0.05, "{likes}");
    }

    #[test]
    fn locking_reads_queue_with_the_writes() {
        // One row busy until 10 ms; a locking read at 1 waits 9 ms and holds it to 11; a like
        // at 2 then waits until 11.
        let features = Features {
            reads: Some(Reads {
                mode: ReadMode::Sum,
                cache_ttl: 0,
                feed_size: 1,
                lock: true,
                lock_hold: ms(1),
            }),
            ..Features::default()
        };
        let (run, ext) = run(config(1, features), &[like(0, 10), read(1), like(2, 1)]);
        assert_eq!(ext.reads.unwrap().lock_waits.max_ns(), ms(9));
        assert_eq!(run.waits.max_ns(), ms(9), "the like waits 11 − 2 = 9 ms");
    }
}
