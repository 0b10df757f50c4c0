//! Peak memory against run length: `cargo bench --bench memory -- N [KEYS]` simulates N
//! increments (Poisson at 12,000/s over one key, or KEYS Zipf keys with s = 1; constant 1 ms
//! hold, 16 rows, statistics and time series on) and prints the process's peak resident
//! memory. Statistics stream, so a 100 M increment run needs about what a 10 M one does (only
//! the time series grows, by one row a second): `tests/integration/memory.rs` asserts it
//! through the command line (`a_run_ten_times_longer_needs_about_the_same_memory`).

use std::path::Path;
use std::time::Instant;

use shardsim::model::NoEvents;
use shardsim::scenario::{Overrides, Scenario};
use shardsim::sweep;

fn main() {
    // Arguments: the number of increments, then optionally the number of Zipf keys.
    let numbers: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|arg| arg.parse().ok())
        .collect();
    let increments = numbers.first().copied().unwrap_or(10_000_000);
    let keys = numbers.get(1).copied().unwrap_or(1);
    let rate = 12_000;
    let text = format!(
        "shards = [16]\nduration_s = {}\n[hold]\ndist = \"constant\"\nms = 1\n[arrivals]\nrate_per_s = {rate}\n\
         [keys]\ncount = {keys}\nzipf_s = 1.0\n",
        increments / rate
    );
    let scenario = Scenario::parse(Path::new("memory.toml"), &text, &Overrides::default())
        .expect("valid scenario");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let started = Instant::now();
    let runs = pool
        .install(|| sweep::run(&scenario, 0, vec![NoEvents], &sweep::NoProgress))
        .expect("runs");
    let seconds = started.elapsed().as_secs_f64();
    let arrivals = runs[0].0.arrivals;
    println!(
        "keys {keys}  touched {}  increments {arrivals}  time {seconds:.2} s  rate {:.1} M/s  peak memory {} KiB",
        runs[0].0.keys_touched,
        arrivals as f64 / seconds / 1e6,
        peak_rss_kib().map_or("unknown".into(), |kib| kib.to_string())
    );
}

/// The process's peak resident set size (`VmHWM` in /proc/self/status), on Linux.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
