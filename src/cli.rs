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
    /// Simulate every shard count of a scenario; write CSVs under output/<name>/ and print a summary.
    Run(RunArgs),
}

/// Flags of `shardsim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file (TOML), e.g. scenarios/final.toml.
    pub scenario: PathBuf,

    /// Shard counts to simulate instead of the scenario's, comma-separated (e.g. 1,4,16).
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub shards: Option<Vec<u32>>,

    /// Seed for every random draw instead of the scenario's.
    #[arg(long)]
    pub seed: Option<u64>,

    /// Slot-choice policy instead of the scenario's: earliest-free, random, round-robin, hash-user.
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<Policy>,

    /// Output folder [default: output/<scenario name>/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Also write events.csv with every increment (for small traces).
    #[arg(long)]
    pub events: bool,

    /// Print nothing on success (and no progress bars).
    #[arg(long, short)]
    pub quiet: bool,

    /// What to print on standard output: an aligned table, or the summary as JSON for scripts.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Worker threads [default: one per core]; results are the same for any number.
    #[arg(long, value_name = "N")]
    pub threads: Option<NonZeroUsize>,
}

/// What `run` prints on standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The summary table with verdicts and a reading.
    Table,
    /// The summary as one JSON document, and nothing else.
    Json,
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
