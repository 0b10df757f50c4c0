//! The command line (clap derive only): subcommands and flags; each field's doc comment is its
//! help text. Nothing here runs anything: [`crate::app`] does.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::model::Policy;

/// Simulates a hot counter's shard rows: how many rows it needs and what its users wait.
#[derive(Debug, Parser)]
#[command(name = "shardsim", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate every shard count of a scenario; write CSVs, charts and a report under output/<name>/.
    Run(RunArgs),
    /// Find the smallest shard count that meets a wait target at the scenario's peak.
    Plan(PlanArgs),
    /// Run a scenario and compare its summary with a baseline; exit 1 on a regression.
    Check(CheckArgs),
}

/// Overrides of a scenario's settings, shared by every subcommand.
#[derive(Debug, Args)]
pub struct ScenarioFlags {
    /// Shard counts to simulate instead of the scenario's, comma-separated (e.g. 1,4,16).
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub shards: Option<Vec<u32>>,

    /// Seed for every random draw instead of the scenario's.
    #[arg(long)]
    pub seed: Option<u64>,

    /// Slot-choice policy instead of the scenario's: earliest-free, random, round-robin, hash-user.
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<Policy>,

    /// Independent replications per shard count instead of the scenario's.
    #[arg(long, value_name = "R")]
    pub replications: Option<u32>,

    /// Worker threads [default: one per core]; results are the same for any number.
    #[arg(long, value_name = "N")]
    pub threads: Option<NonZeroUsize>,

    /// Print nothing on success (and no progress bars).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Flags of `shardsim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file (TOML), e.g. scenarios/final.toml.
    pub scenario: PathBuf,

    /// Overrides of the scenario's settings.
    #[command(flatten)]
    pub flags: ScenarioFlags,

    /// Output folder [default: output/<scenario name>/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Also write events.csv with every increment (for small traces; first replication).
    #[arg(long)]
    pub events: bool,

    /// What to print on standard output: an aligned table, or the summary as JSON for scripts.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Flags of `shardsim plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The scenario file; leave it out and give --rate and --hold-ms instead.
    pub scenario: Option<PathBuf>,

    /// Overrides of the scenario's settings.
    #[command(flatten)]
    pub flags: ScenarioFlags,

    /// Without a scenario: the peak rate, increments per second.
    #[arg(long, value_name = "PER_S")]
    pub rate: Option<f64>,

    /// Without a scenario: the hold time in ms (the mean, for an exponential hold).
    #[arg(long, value_name = "MS")]
    pub hold_ms: Option<f64>,

    /// Without a scenario: the hold-time distribution, constant or exponential.
    #[arg(long, value_enum, default_value_t = HoldShape::Constant)]
    pub hold_dist: HoldShape,

    /// Target: the p99 wait in ms must not exceed this [default: the scenario's [slo]].
    #[arg(long, value_name = "MS")]
    pub p99_ms: Option<f64>,

    /// Target: the p99.9 wait in ms must not exceed this.
    #[arg(long, value_name = "MS")]
    pub p999_ms: Option<f64>,

    /// Target: the utilization at the peak must not exceed this (headroom), in (0, 1].
    #[arg(long, value_name = "U")]
    pub max_utilization: Option<f64>,

    /// The largest shard count to consider.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_shards: u32,

    /// Simulated seconds at the peak rate per replication (after the warm-up).
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub duration_s: f64,

    /// Seconds simulated before measuring, so each replication starts in steady state.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub warmup_s: f64,

    /// Output folder for plan.csv and plan.json [default: output/<scenario name>-plan/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// What to print on standard output.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Flags of `shardsim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The scenario file.
    pub scenario: PathBuf,

    /// Overrides of the scenario's settings.
    #[command(flatten)]
    pub flags: ScenarioFlags,

    /// The baseline summary [default: scenarios/baselines/<scenario name>.csv].
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// Relative tolerance of every column [default: the scenario's [check] rel, else 0.05].
    #[arg(long, value_name = "FRACTION")]
    pub rel: Option<f64>,

    /// Absolute tolerance of the wait columns, in ms [default: [check] abs_ms, else 0.05].
    #[arg(long, value_name = "MS")]
    pub abs_ms: Option<f64>,

    /// Rewrite the baseline with this run's summary instead of comparing.
    #[arg(long)]
    pub update: bool,

    /// Fail on improvements beyond tolerance too (they mean the baseline is stale).
    #[arg(long)]
    pub strict: bool,
}

/// What a subcommand prints on standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned tables and a reading.
    Table,
    /// One JSON document, and nothing else.
    Json,
}

/// Hold-time shapes for `plan` without a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HoldShape {
    /// Every update holds exactly --hold-ms.
    Constant,
    /// Exponential holds with mean --hold-ms.
    Exponential,
}

fn parse_policy(text: &str) -> Result<Policy, String> {
    text.parse()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
