//! The command line (clap derive only): subcommands and flags; each field's doc comment is its
//! help text. Nothing here runs anything: [`crate::app`] does. Every flag value is parsed by a
//! function of [`crate::cli::values`], so a bad value is reported in the tool's own words,
//! naming the flag.

pub mod values;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::model::Policy;

/// Simulates a hot counter's shard rows: how many rows it needs and what its users wait.
#[derive(Debug, Parser)]
#[command(name = "shardsim", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
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
    /// Measure a real PostgreSQL, MariaDB or MySQL under load and fit the machine model to it;
    /// writes calibration.toml (sections a scenario includes), calibration.csv and a chart.
    Calibrate(CalibrateArgs),
    /// Measure loads the calibration did not fit and compare each with its prediction; exit 1
    /// when a point is outside the tolerance.
    Validate(ValidateArgs),
    /// Join the slices of a partitioned sweep (run --partition K/M) into the output one run
    /// would have written.
    Merge(MergeArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on standard output.
    Completions(CompletionArgs),
}

/// Flags of `shardsim merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The slices' output folders, one per slice, in any order, or the folder that holds them
    /// as slice-0, slice-1, … (the deploy scripts' parts/), or partial merges' folders.
    #[arg(required = true, value_name = "PART_DIR")]
    pub(crate) parts: Vec<PathBuf>,

    /// Join only these slices into a folder a later merge takes in their place (a merge split
    /// over several jobs: merge groups of slices, then merge the merges).
    #[arg(long)]
    pub(crate) partial: bool,

    /// The merged output folder.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,

    /// The command that re-runs slices given their numbers (comma-separated, appended): named
    /// with the missing slices when some are (the deploy scripts pass their own).
    #[arg(long, value_name = "COMMAND")]
    pub(crate) rerun: Option<String>,

    /// How many slices the sweep has (the deploy scripts pass theirs): every missing slice is
    /// named even when none could be read.
    #[arg(long, value_name = "M", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(crate) slices: Option<u32>,

    /// Print nothing on success.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// `shardsim validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The database, as for calibrate (its own schema, dropped at the end).
    #[arg(long, value_name = "CONN")]
    pub(crate) db: String,

    /// The calibration to validate (calibration.toml from shardsim calibrate).
    #[arg(long, value_name = "FILE")]
    pub(crate) calibration: PathBuf,

    /// Output folder [default: output/validation].
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,

    /// Seconds measured per point, after a 1 s warm-up (0.5 to 60).
    #[arg(long, value_name = "S", default_value_t = 5.0, value_parser = values::calibration_seconds)]
    pub(crate) duration_s: f64,

    /// Measurements of every point (1 to 10), taken round by round; each point is judged by
    /// the median of its repeats, and a stable point's p99 by their range (a p99 made by rare
    /// stalls does not repeat): fewer than 5 make a range too narrow to judge a tail by.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = values::validation_repeats)]
    pub(crate) repeats: u32,

    /// Largest relative throughput error a point may have.
    #[arg(long, value_name = "R", default_value_t = 0.15, value_parser = values::positive)]
    pub(crate) tps_rel: f64,

    /// Largest relative p99-response error a stable point may have.
    #[arg(long, value_name = "R", default_value_t = 0.25, value_parser = values::positive)]
    pub(crate) p99_rel: f64,

    /// Print nothing but errors and misses.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// `shardsim calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The database. PostgreSQL: a libpq connection string ("host=/var/run/postgresql
    /// dbname=app") or a postgres:// URL, the password only from PGPASSWORD or ~/.pgpass.
    /// MariaDB or MySQL: a mysql:// or mariadb:// URL ("mysql://app@localhost/?socket=
    /// /run/mysqld/mysqld.sock"), the password only from MYSQL_PWD. It creates and drops a
    /// schema (database) of its own, shardsim_calibration, and touches nothing else.
    #[arg(long, value_name = "CONN")]
    pub(crate) db: String,

    /// Output folder [default: output/calibration].
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,

    /// Seconds measured per run, after a 1 s warm-up (0.5 to 60); each closed loop is measured
    /// twice, an open stream four times as long once.
    #[arg(long, value_name = "S", default_value_t = 2.5, value_parser = values::calibration_seconds)]
    pub(crate) duration_s: f64,

    /// Rows of the many-rows series (2 to 4096).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = values::calibration_rows)]
    pub(crate) max_rows: u32,

    /// The share of a loop's measurements the calibration's band is meant to hold (0.5 to
    /// 0.99, or 50% to 99%): run, plan and validate answer at its ends.
    #[arg(long, value_name = "SHARE", default_value = "0.9", value_parser = values::coverage)]
    pub(crate) coverage: f64,

    /// Client counts of each series, comma-separated (1 to 256 each).
    #[arg(long, value_name = "LIST", default_value = "1,2,4,8,16,32", value_delimiter = ',', value_parser = values::client_counts)]
    pub(crate) clients: Vec<u32>,

    /// The server's cores [default: this machine's, right for a local server].
    #[arg(long, value_name = "N", value_parser = values::cores)]
    pub(crate) cores: Option<u32>,

    /// After the runs, watch a light open stream this long for the rare long stalls short
    /// runs seldom meet, e.g. 10m or 600s (10 s to 24 h; opt-in: it adds that much time).
    #[arg(long, value_name = "DURATION", value_parser = values::watch)]
    pub(crate) watch: Option<f64>,

    /// The PostgreSQL server's log file (log_checkpoints = on, the default since 15): the
    /// checkpoints it logs while calibrate runs give each one's sync time [default: the
    /// server's counters' mean].
    #[arg(long, value_name = "FILE")]
    pub(crate) server_log: Option<PathBuf>,

    /// Print nothing but errors, and the warnings that the calibration cannot be trusted (the
    /// database moved by itself, the machine stalled).
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// Overrides of a scenario's settings and how to run it, shared by every simulating subcommand.
#[derive(Debug, Args)]
pub struct ScenarioFlags {
    /// Seed for every random draw instead of the scenario's.
    #[arg(long, value_parser = values::seed)]
    pub(crate) seed: Option<u64>,

    /// Slot-choice policies instead of the scenario's, comma-separated, run side by side:
    /// earliest-free, random, round-robin, hash-user, power-of-two, skip-locked.
    #[arg(long, value_name = "POLICY,...", value_parser = values::policy, value_delimiter = ',')]
    pub(crate) policy: Option<Vec<Policy>>,

    /// What-if traffic instead of the scenario's [arrivals] scale: 2 doubles every rate (a trace
    /// is replayed with copies; 0.5 thins it). plan takes a list (1,1.5,2) and answers each.
    #[arg(long, value_name = "SCALE,...", value_parser = values::traffic, value_delimiter = ',')]
    pub(crate) traffic: Option<Vec<f64>>,

    /// Independent replications per shard count instead of the scenario's (1 to 10000).
    #[arg(long, value_name = "R", value_parser = values::replications)]
    pub(crate) replications: Option<u32>,

    /// Which engine simulates: auto (the exact core's closed form unless the scenario has
    /// machine sections, client behaviours or a closed loop) or event (the event-driven
    /// pipeline always; the same results but for adaptive rows, slower).
    #[arg(long, value_enum, value_name = "ENGINE", default_value = "auto")]
    pub(crate) engine: EngineChoice,

    /// A calibration (from shardsim calibrate) whose [hold], [machine], [wal], [client] and
    /// [stalls] fill in what the scenario does not set.
    #[arg(long, value_name = "FILE")]
    pub(crate) calibration: Option<PathBuf>,

    /// Worker threads, 1 to 256 [default: one per core]; results are the same for any number.
    #[arg(long, value_name = "N", value_parser = values::threads)]
    pub(crate) threads: Option<usize>,

    /// Most memory the run may use, e.g. 4GiB or 512MiB [default: the least of half of the
    /// machine's memory, this process's cgroup limit and the memory Slurm gave the job].
    /// A run estimated to need more is refused before it starts.
    #[arg(long, value_name = "SIZE", value_parser = values::memory)]
    pub(crate) max_memory: Option<u64>,

    /// Print nothing on success (and no progress bars); an explicit --format json still prints.
    #[arg(long, short)]
    pub(crate) quiet: bool,

    /// When to colour the terminal output [default: auto: a terminal, unless NO_COLOR is set;
    /// CLICOLOR_FORCE forces it].
    #[arg(long, value_enum, value_name = "WHEN")]
    pub(crate) color: Option<ColorWhen>,
}

/// Which engine simulates a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// The closed form where it applies (no machine sections, client behaviours or closed
    /// loop), else the event-driven pipeline.
    Auto,
    /// The event-driven pipeline always.
    Event,
}

/// Flags of `shardsim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file (TOML), e.g. scenarios/final.toml.
    pub(crate) scenario: PathBuf,

    /// Shard counts to simulate instead of the scenario's, comma-separated (e.g. 1,4,16).
    #[arg(long, value_delimiter = ',', value_name = "N,N,...", value_parser = values::shard_count)]
    pub(crate) shards: Option<Vec<u32>>,

    /// Overrides of the scenario's settings.
    #[command(flatten)]
    pub(crate) flags: ScenarioFlags,

    /// Output folder [default: output/<scenario name>/].
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,

    /// Also write events.csv with every increment (for small traces; first replication).
    #[arg(long)]
    pub(crate) events: bool,

    /// Run only slice K of M of a [sweep]'s units, K from 0 (e.g. 3/8), or K from a
    /// scheduler: auto/M (Slurm's SLURM_ARRAY_TASK_ID or Kubernetes' JOB_COMPLETION_INDEX;
    /// auto alone takes M from SHARDSIM_PARTITIONS). Join slices with merge.
    #[arg(long, value_name = "K/M|auto")]
    pub(crate) partition: Option<String>,

    /// What to print on standard output: an aligned table, or the summary as JSON for scripts.
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,

    /// Exit 0 even when no shard count meets the scenario's [slo] (report only).
    #[arg(long)]
    pub(crate) no_fail: bool,

    /// A [sweep]: simulate every shard count of every configuration and write summary.csv and
    /// timeseries.csv too (by default only the shard counts that decide each configuration's
    /// answer are simulated, and sweep.csv holds the answers).
    #[arg(long)]
    pub(crate) every_run: bool,

    /// Check the scenario, the slice and the memory and work budgets, say what the run would
    /// simulate, and write nothing (the deploy scripts check a slice this way before
    /// submitting).
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// Flags of `shardsim plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The scenario file; leave it out and give --rate and --hold-ms instead.
    pub(crate) scenario: Option<PathBuf>,

    /// Overrides of the scenario's settings.
    #[command(flatten)]
    pub(crate) flags: ScenarioFlags,

    /// Without a scenario: the peak rate, increments per second.
    #[arg(long, value_name = "PER_S", value_parser = values::positive)]
    pub(crate) rate: Option<f64>,

    /// Without a scenario: the hold time in ms (the mean, for an exponential hold).
    #[arg(long, value_name = "MS", value_parser = values::positive)]
    pub(crate) hold_ms: Option<f64>,

    /// Without a scenario: the hold-time distribution, constant or exponential.
    #[arg(long, value_enum)]
    pub(crate) hold_dist: Option<HoldShape>,

    /// Target: the p99 wait in ms must not exceed this [default: the scenario's [slo]].
    #[arg(long, value_name = "MS", value_parser = values::positive)]
    pub(crate) p99_ms: Option<f64>,

    /// Target: the p99.9 wait in ms must not exceed this.
    #[arg(long, value_name = "MS", value_parser = values::positive)]
    pub(crate) p999_ms: Option<f64>,

    /// Target: the utilization at the peak must not exceed this (headroom), in (0, 1].
    #[arg(long, value_name = "U", value_parser = values::utilization)]
    pub(crate) max_utilization: Option<f64>,

    /// Pool sizes to plan for, comma-separated (e.g. 16,32,64): the scenario's `[pool] size`
    /// replaced by each in turn (a pool added when it has none). Where a database makes every
    /// commit dearer with more waiters, a smaller pool can need fewer rows.
    #[arg(long, value_delimiter = ',', value_name = "N,N,...", value_parser = values::pool_size)]
    pub(crate) pool: Option<Vec<u32>>,

    /// The largest shard count to consider (1 to 1048576).
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = values::shard_count)]
    pub(crate) max_shards: u32,

    /// Simulate every shard count the search tries, even those whose peak utilization rules
    /// them out before a run (by default they are judged without one, and listed as not
    /// simulated); the answer is the same.
    #[arg(long)]
    pub(crate) every_run: bool,

    /// Simulated seconds at the peak rate per replication (after the warm-up), 0.001 to 1000000.
    #[arg(long, value_name = "S", default_value_t = 60.0, value_parser = values::plan_duration)]
    pub(crate) duration_s: f64,

    /// Seconds simulated before measuring, so each replication starts in steady state (0 to 1000000).
    #[arg(long, value_name = "S", default_value_t = 5.0, value_parser = values::plan_warmup)]
    pub(crate) warmup_s: f64,

    /// Output folder for plan.csv and plan.json [default: output/<scenario name>-plan/].
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,

    /// What to print on standard output.
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
}

/// Flags of `shardsim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The scenario file.
    pub(crate) scenario: PathBuf,

    /// Shard counts to simulate instead of the scenario's, comma-separated (e.g. 1,4,16).
    #[arg(long, value_delimiter = ',', value_name = "N,N,...", value_parser = values::shard_count)]
    pub(crate) shards: Option<Vec<u32>>,

    /// Overrides of the scenario's settings.
    #[command(flatten)]
    pub(crate) flags: ScenarioFlags,

    /// The baseline summary [default: baselines/<scenario name>.csv beside the scenario file].
    #[arg(long, value_name = "FILE")]
    pub(crate) baseline: Option<PathBuf>,

    /// Relative tolerance of every column [default: the scenario's [check] rel, else 0.05].
    #[arg(long, value_name = "FRACTION", value_parser = values::non_negative)]
    pub(crate) rel: Option<f64>,

    /// Absolute tolerance of the wait columns, in ms [default: [check] abs_ms, else 0.05].
    #[arg(long, value_name = "MS", value_parser = values::non_negative)]
    pub(crate) abs_ms: Option<f64>,

    /// Absolute tolerance of the count columns (backlogs, likes) [default: [check] abs_count, else 2].
    #[arg(long, value_name = "COUNT", value_parser = values::non_negative)]
    pub(crate) abs_count: Option<f64>,

    /// Rewrite the baseline with this run's summary instead of comparing.
    #[arg(long)]
    pub(crate) update: bool,

    /// Fail on improvements beyond tolerance too (they mean the baseline is stale).
    #[arg(long)]
    pub(crate) strict: bool,

    /// Show every compared value, not only those that moved beyond tolerance.
    #[arg(long, short)]
    pub(crate) verbose: bool,

    /// What to print on standard output: the table of moved values, or one JSON document.
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,

    /// Also write a JUnit XML report here (one test case per shard count and column), for CI.
    /// An existing file is replaced only when it is a JUnit report of shardsim's.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,

    /// Let --update and --junit replace a file that does not look like one shardsim wrote.
    #[arg(long)]
    pub(crate) overwrite: bool,
}

/// Flags of `shardsim completions`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

/// What a subcommand prints on standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned tables and a reading.
    Table,
    /// One JSON document, and nothing else.
    Json,
}

/// When to colour terminal output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set (`CLICOLOR_FORCE` forces colour).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Hold-time shapes for `plan` without a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HoldShape {
    /// Every update holds exactly --hold-ms.
    Constant,
    /// Exponential holds with mean --hold-ms.
    Exponential,
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
