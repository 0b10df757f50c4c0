//! The integration tests, in one binary: the exact model, queueing theory, determinism, the
//! command line, the shipped scenarios, real databases and a real Slurm.

mod behaviours;
mod cli;
mod clients;
mod closed;
mod columns;
mod commit;
mod common;
mod database;
mod determinism;
mod floors;
mod fuzzing;
mod grid;
mod likes;
mod machine;
mod memory;
mod metastable;
mod model;
mod newcomer;
mod planning;
mod policies;
mod queueing;
mod regions;
mod reports;
mod robustness;
mod row_stages;
mod scenarios;
mod scheduler;
mod slurm;
mod stalls;
mod trace_formats;
mod traffic;
mod validation;
