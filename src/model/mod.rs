//! The lock model and the engine that runs it.
//!
//! - [`calendar`]: the event calendar, ordered by (time, sequence number);
//! - [`rows`]: each key's shard rows, and the slot-choice policies (free rows in `heaps`);
//! - [`hold`]: hold-time distributions;
//! - [`adaptive`]: row counts that grow when a key gets hot;
//! - [`random`]: the seeded random streams;
//! - [`clients`]: timeouts, retries, write batching and the connection pool;
//! - [`closed`]: closed-loop clients, each sending its next update when its last commits;
//! - [`counter`]: [`ShardedCounter`], the exact model as a small library API;
//! - [`engine`]: the discrete-event simulation of one shard count, deciding each start at
//!   arrival (the fast path), with its tightest loop for one key in `fast`;
//! - [`machine`]: what a real database adds (per-waiter holds, shared CPU, the WAL flush,
//!   time outside the database);
//! - the pipeline's resources, one file each, granting, queueing and releasing jobs in the
//!   lines of [`resources`]: [`locks`] (the rows), [`servers`] (the CPU cores, the pool's
//!   connections), [`wal`] (the WAL flush), [`likes`] (the likes table's insert paths);
//! - [`pipeline`]: the event-driven simulation on those resources, the chain after a hold
//!   built once from the machine;
//! - [`likes`]: the likes table in front of the rows, and its reconciliation;
//! - [`stalls`]: spells during which the machine completes nothing.

pub mod adaptive;
pub mod calendar;
pub mod clients;
pub mod closed;
pub mod config;
pub mod cores;
pub mod counter;
pub mod engine;
mod extended;
mod fast;
mod heaps;
pub mod hold;
pub mod likes;
pub mod locks;
pub mod machine;
pub mod pipeline;
pub mod random;
pub mod regions;
pub mod resources;
pub mod rows;
pub mod run;
pub mod servers;
pub mod stalls;
pub mod wal;

pub use crate::time::{SimTime, ms};
pub use config::{Arrival, EngineConfig, KeyCounts, NO_USER, NoEvents, Observer};
pub use counter::ShardedCounter;
pub use engine::Engine;
pub use extended::{BatchRun, ClientRun, ExtendedRun, PoolRun, ReadRun};
pub use hold::HoldDist;
pub use machine::{Bottleneck, MachineModel, MachineRun};
pub use pipeline::Pipeline;
pub use rows::{DrawNeeds, Grant, Policy, RowTable};
pub use run::{Rows, ShardRun};
