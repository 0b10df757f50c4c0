//! Engine throughput in increments per second: one key, Poisson arrivals at 12,000/s, constant
//! 1 ms hold, 16 rows (utilization 0.75), wait histogram and 1 s time series on.
//!
//! `cargo bench --bench throughput` reports two figures:
//! - `engine`: the engine alone, fed pre-generated arrivals (the per-shard-count cost of a sweep);
//! - `hand_tight`: the least any simulator of this model must do per increment, over the same
//!   arrivals: a 16-row min-heap of free times and an HDR histogram of the waits, nothing else
//!   (the yardstick for `engine`: the target is at least 0.8 of it);
//! - `hand_tight_prefetched`: the same loop asking for each arrival 32 ahead to be fetched into
//!   the cache, as `engine` does: a 2 M-arrival stream does not fit in the caches, and both
//!   loops otherwise wait on loading arrivals for a large part of their time. The stricter
//!   yardstick, reported beside the issue's;
//! - `sweep`: a whole one-shard-count sweep, arrival generation included;
//! - `sweep_with_progress`: the same with the progress bars counting (drawn nowhere), to show
//!   that progress reporting costs nothing measurable;
//! - `pipeline`: the event-driven pipeline fed the same arrivals (same results as `engine`);
//! - `pipeline_machine`: the pipeline with the machine on: +1.5 µs per waiter, 36 µs of CPU on
//!   2 cores and a 87 µs group-commit flush (every update takes four resources);
//! - `pipeline_shared_cores`: the same machine with its cores shared (processor sharing) and
//!   20 µs of CPU per request before its row (two pieces of CPU per update).
//!
//! The group `calibrated` runs what a team that calibrated its database runs, on the example
//! calibration `scenarios/calibrated/postgres15-2core.toml` (a real PostgreSQL 15 on 2 cores:
//! stalls, idle-connection overheads drawn from distributions, the herd's costs, the page scan
//! and the WAL): whole one-shard-count runs, arrival generation included, each reported in
//! increments a second on one core beside `hand_tight` above:
//! - `open_pool_8_rows`: an open stream of 2,064/s over 8 rows through a pool of 64;
//! - `open_64_rows`: the final's busiest minute (5,000/s) over 64 rows, no pool;
//! - `closed_32_clients_4_rows` and `closed_32_clients_64_rows`: closed loops of 32 clients.

use std::hint::black_box;
use std::path::Path;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use shardsim::arrivals::ArrivalSource;
use shardsim::model::{Arrival, Engine, NoEvents, Pipeline};
use shardsim::progress::ProgressBars;
use shardsim::scenario::{Overrides, Scenario};
use shardsim::sweep;

const INCREMENTS: u64 = 2_000_000;
const RATE_PER_S: u64 = 12_000;

fn scenario() -> Scenario {
    let text = format!(
        "shards = [16]\nduration_s = {}\n[hold]\ndist = \"constant\"\nms = 1\n[arrivals]\nrate_per_s = {RATE_PER_S}\n",
        INCREMENTS / RATE_PER_S
    );
    Scenario::parse(Path::new("bench.toml"), &text, &Overrides::default()).expect("valid scenario")
}

fn arrivals(scenario: &Scenario) -> Vec<Arrival> {
    let mut source = ArrivalSource::open(scenario.stream_plan(), scenario.seed()).expect("opens");
    let mut all = Vec::new();
    source
        .fill(&mut all, usize::MAX)
        .expect("synthetic arrivals never fail");
    all
}

fn throughput(c: &mut Criterion) {
    let scenario = scenario();
    let arrivals = arrivals(&scenario);
    let mut group = c.benchmark_group("increments");
    group.throughput(Throughput::Elements(arrivals.len() as u64));
    group.sample_size(10);
    group.bench_function("engine", |b| {
        b.iter_batched(
            || {
                Engine::new(
                    sweep::engine_config(&scenario, scenario.variants()[0], 0),
                    NoEvents,
                )
            },
            |mut engine| {
                engine.feed(black_box(&arrivals));
                black_box(engine.finish())
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("hand_tight", |b| {
        b.iter(|| {
            let mut free = [0u64; 16];
            let mut waits =
                hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1 << 50, 3).expect("bounds");
            for arrival in black_box(&arrivals) {
                let start = arrival.at.max(free[0]);
                waits.saturating_record(start - arrival.at);
                free[0] = start + arrival.hold;
                sift_down(&mut free);
            }
            black_box(waits.len())
        })
    });
    group.bench_function("hand_tight_prefetched", |b| {
        b.iter(|| hand_tight_prefetched(black_box(&arrivals)))
    });
    for (name, machine) in [
        ("pipeline", String::new()),
        (
            "pipeline_machine",
            "[machine]\ncores = 2\n[machine.cpu]\nms = 0.036\n[wal]\nflush_ms = 0.087\n".into(),
        ),
        (
            "pipeline_shared_cores",
            "[machine]\ncores = 2\nscheduler = \"shared\"\nrequest_cpu_ms = 0.02\n\
             [machine.cpu]\nms = 0.036\n[wal]\nflush_ms = 0.087\n"
                .into(),
        ),
    ] {
        let text = format!(
            "shards = [16]\nduration_s = {}\n[hold]\nms = 1\nper_waiter_ms = {}\n[arrivals]\nrate_per_s = {RATE_PER_S}\n{machine}",
            INCREMENTS / RATE_PER_S,
            if machine.is_empty() { "0" } else { "0.0015" }
        );
        let overrides = Overrides {
            event_path: true,
            ..Overrides::default()
        };
        let on_pipeline =
            Scenario::parse(Path::new("bench.toml"), &text, &overrides).expect("valid scenario");
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    Pipeline::new(
                        sweep::engine_config(&on_pipeline, on_pipeline.variants()[0], 0),
                        std::sync::Arc::clone(on_pipeline.machine()),
                        NoEvents,
                    )
                },
                |mut pipeline| {
                    pipeline.feed(black_box(&arrivals));
                    black_box(pipeline.finish())
                },
                BatchSize::LargeInput,
            )
        });
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    group.bench_function("sweep", |b| {
        b.iter(|| {
            pool.install(|| {
                black_box(
                    sweep::run(&scenario, 0, vec![NoEvents], &sweep::NoProgress).expect("runs"),
                )
            })
        })
    });
    let bars = ProgressBars::new(&scenario, false);
    group.bench_function("sweep_with_progress", |b| {
        b.iter(|| {
            pool.install(|| {
                black_box(sweep::run(&scenario, 0, vec![NoEvents], &bars).expect("runs"))
            })
        })
    });
    group.finish();
}

/// The `hand_tight` loop asking for each arrival 32 ahead to be fetched into the cache; returns
/// the number of waits recorded.
fn hand_tight_prefetched(arrivals: &[Arrival]) -> u64 {
    let mut free = [0u64; 16];
    let mut waits = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1 << 50, 3).expect("bounds");
    for (index, arrival) in arrivals.iter().enumerate() {
        if let Some(ahead) = arrivals.get(index + 32) {
            prefetch(ahead);
        }
        let start = arrival.at.max(free[0]);
        waits.saturating_record(start - arrival.at);
        free[0] = start + arrival.hold;
        sift_down(&mut free);
    }
    black_box(waits.len())
}

/// Asks the processor to bring `arrival` into its cache (as the engine's one-key loop does).
#[inline(always)]
fn prefetch(arrival: &Arrival) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((arrival as *const Arrival).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = arrival;
}

/// Restores the min-heap order of `heap` after its top grew.
#[inline(always)]
fn sift_down(heap: &mut [u64]) {
    let mut at = 0;
    loop {
        let left = 2 * at + 1;
        if left >= heap.len() {
            return;
        }
        let right = left + 1;
        let child = if right < heap.len() && heap[right] < heap[left] {
            right
        } else {
            left
        };
        if heap[child] >= heap[at] {
            return;
        }
        heap.swap(at, child);
        at = child;
    }
}

/// The example calibration the `calibrated` group includes.
const EXAMPLE_CALIBRATION: &str = "scenarios/calibrated/postgres15-2core.toml";

/// A one-shard-count scenario on the example calibration: `body` after its include.
fn calibrated_scenario(body: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/calibrated/bench.toml");
    let text = format!(
        "include = \"{}\"\nseed = 7\n{body}",
        Path::new(EXAMPLE_CALIBRATION)
            .file_name()
            .and_then(|name| name.to_str())
            .expect("a file name")
    );
    Scenario::parse(&path, &text, &Overrides::default()).expect("valid scenario")
}

fn calibrated(c: &mut Criterion) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let mut group = c.benchmark_group("calibrated");
    group.sample_size(10);
    for (name, body) in [
        (
            "open_pool_8_rows",
            "shards = [8]\nduration_s = 60\n[arrivals]\nrate_per_s = 2064\n[pool]\nsize = 64\n",
        ),
        (
            "open_64_rows",
            "shards = [64]\nduration_s = 60\n[arrivals]\nrate_per_s = 5000\n",
        ),
        (
            "closed_32_clients_4_rows",
            "shards = [4]\nduration_s = 20\n[arrivals]\nclients = 32\n",
        ),
        (
            "closed_32_clients_64_rows",
            "shards = [64]\nduration_s = 20\n[arrivals]\nclients = 32\n",
        ),
    ] {
        let scenario = calibrated_scenario(body);
        let run = || {
            pool.install(|| sweep::run(&scenario, 0, vec![NoEvents], &sweep::NoProgress))
                .expect("runs")
        };
        let increments: u64 = run().iter().map(|(shard_run, _)| shard_run.completed).sum();
        group.throughput(Throughput::Elements(increments));
        group.bench_function(name, |b| b.iter(|| black_box(run())));
    }
    group.finish();
}

criterion_group!(benches, throughput, calibrated);
criterion_main!(benches);
