//! Throughput of a grid sweep and its speed-up from a second thread: 10 commit times × 10
//! traffic levels over the final's busiest minute (5,000 likes/s for 60 s, about 300,000
//! increments at traffic ×1), each through 10 shard counts — 1,000 configuration × shard
//! count units — every run (`--every-run`), then the answer alone (a grid's default), whose
//! `sweep.csv` rows must be the same. Run with `cargo bench --bench grid`;
//! `SHARDSIM_BENCH_THREADS=1,2` (default) picks the thread counts.

use std::path::Path;
use std::time::Instant;

use shardsim::scenario::{Overrides, Scenario};

const GRID: &str = r#"
name = "grid-bench"
seed = 11
shards = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
duration_s = 60
[hold]
dist = "constant"
ms = 1
[arrivals]
rate_per_s = 5000
[slo]
p99_ms = 20
[sweep]
"hold.ms" = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
"arrivals.scale" = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9]
"#;

fn main() {
    let grid = Scenario::parse_grid(Path::new("grid-bench.toml"), GRID, &Overrides::default())
        .expect("the benchmark's grid is valid");
    let held: Vec<_> = grid.configurations.iter().collect();
    let units: usize = held.iter().map(|c| c.scenario.variants().len()).sum();
    let increments: u64 = held
        .iter()
        .map(|c| c.scenario.expected_arrivals() * c.scenario.variants().len() as u64)
        .sum();
    let threads: Vec<usize> = std::env::var("SHARDSIM_BENCH_THREADS")
        .unwrap_or_else(|_| "1,2".into())
        .split(',')
        .filter_map(|t| t.trim().parse().ok())
        .collect();
    println!(
        "grid: {} configurations × {} shard counts = {units} units, {:.0} M increments",
        held.len(),
        units / held.len(),
        increments as f64 / 1e6
    );
    let mut first_seconds = None;
    let mut reference = None;
    for &n in &threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .expect("a thread pool");
        let start = Instant::now();
        let blocks = pool
            .install(|| shardsim::grid::simulate_all(&grid, &held, &|| {}))
            .expect("the grid runs");
        let seconds = start.elapsed().as_secs_f64();
        // The same bytes whatever the thread count.
        match &reference {
            None => reference = Some(blocks),
            Some(first) => assert!(*first == blocks, "results differ between thread counts"),
        }
        let speedup = first_seconds.map_or(String::new(), |s: f64| {
            format!(", speed-up ×{:.2}", s / seconds)
        });
        first_seconds.get_or_insert(seconds);
        println!(
            "threads {n}: every run {seconds:.2} s, {:.1} M increments/s{speedup}",
            increments as f64 / seconds / 1e6
        );
        let start = Instant::now();
        let answers = pool
            .install(|| shardsim::grid::search_all(&held, &|_| {}))
            .expect("the grid runs");
        let answer_seconds = start.elapsed().as_secs_f64();
        let every = reference.as_ref().expect("every run is simulated first");
        for (answer, every) in answers.iter().zip(every) {
            assert_eq!(answer.sweep, every.sweep, "the answer alone differs");
        }
        println!(
            "threads {n}: the answer alone {answer_seconds:.2} s, ×{:.1} faster, the same answers",
            seconds / answer_seconds
        );
    }
}
