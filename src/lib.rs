//! shardsim simulates a sharded counter under load: how long increments wait for their row's
//! lock, how the queue grows in a burst, and where each shard count's throughput ceiling lies.
//!
//! The data flows through the modules in order (`docs/design.md` maps them on floors: an
//! import never runs up one):
//!
//! - [`input`]: the user's files, read only when regular and not too large;
//! - [`scenario`]: the TOML scenario, parsed and validated into a resolved [`scenario::Scenario`];
//! - [`arrivals`]: the increments it offers (Poisson, a rate profile, or a replayed trace);
//! - [`model`]: the exact lock model (rows, slot choice, hold times) and the event-driven engine;
//! - [`stats`]: streaming, mergeable wait statistics and per-window time series;
//! - [`figures`]: what a run reports — each shard count's figures, verdict and recommendation —
//!   computed once from its runs;
//! - [`answer`]: a grid configuration's answer without the runs that cannot change it;
//! - [`plan`]: the smallest shard count that meets a target at the peak;
//! - [`check`]: a summary against a committed baseline (regression gates);
//! - [`budget`]: what a run will cost in memory and work, checked before it starts;
//! - [`stability`]: metastable points — whether a stream that keeps up from empty recovers
//!   from a stall or a burst — and each shard count's advertised and hidden capacity;
//! - [`sweep`]: every shard count fed the same arrival stream (common random numbers), in parallel;
//! - [`grid`] and [`partition`]: a `[sweep]` grid's configurations run in parallel, split into
//!   slices for a job array and merged back;
//! - [`report`]: the CSV files, charts, report page, JSON, the resolved scenario and the
//!   terminal tables, rendered from figures and results (bytes out, no I/O);
//! - [`output`]: the output folder, staged and swapped in whole; [`events`]: `events.csv`,
//!   streamed while the engines run;
//! - [`theory`]: exact queueing results (Erlang C, M/D/1, M/D/c) to check and explain the numbers;
//! - [`progress`]: progress bars while a sweep runs;
//! - [`stdout`]: standard output, where a closed pipe ends the program quietly;
//! - [`units`]: quantities in people's units;
//! - [`interrupt`] and [`faults`]: what Ctrl-C undoes, and the signals tests inject;
//! - [`cli`] and [`app`]: the command line and the orchestration behind it.
//!
//! The exact core is [`model::ShardedCounter`], which reproduces the model's reference example:
//!
//! ```
//! use shardsim::model::{ShardedCounter, ms};
//!
//! let mut counter = ShardedCounter::new(2, ms(10));
//! let waits: Vec<u64> = [("p", 0), ("p", 0), ("p", 0), ("p", 5)]
//!     .iter()
//!     .map(|&(key, now)| counter.increment(key, ms(now)).unwrap())
//!     .collect();
//! assert_eq!(waits, [0, 0, ms(10), ms(5)]);
//! assert_eq!(counter.get("p"), 4);
//! assert_eq!(counter.increment("q", ms(0)).unwrap(), 0);
//! ```

pub mod answer;
pub mod app;
pub mod arrivals;
pub mod budget;
pub mod calibrate;
pub mod check;
pub mod cli;
pub mod error;
pub mod events;
pub mod faults;
pub mod figures;
pub mod grid;
pub mod input;
pub mod interrupt;
pub mod merge;
pub mod model;
pub mod output;
pub mod partition;
pub mod plan;
pub mod progress;
pub mod report;
pub mod scenario;
pub mod stability;
pub mod stats;
pub mod stdout;
pub mod sweep;
pub mod theory;
pub mod time;
pub mod units;
