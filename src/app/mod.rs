//! Orchestration: parse → resolve → run. Each subcommand loads and validates its scenario (with
//! the command line's overrides) before anything long happens, so bad input fails early and
//! leaves no output behind; then it simulates, writes its artefacts and prints.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::budget;
use crate::check::Tolerances;
use crate::cli::{
    CalibrateArgs, CheckArgs, Cli, ColorWhen, Command, Format, HoldShape, MergeArgs, PlanArgs,
    RunArgs, ScenarioFlags, ValidateArgs,
};
use crate::error::{Failed, InputError, IoFailure};
use crate::events::{self, EventLog};
use crate::figures::{SummaryRow, by_policy, summarize_each};
use crate::model::{NoEvents, ShardRun};
use crate::output::{Staging, write_file};
use crate::partition::Partition;
use crate::plan::PlanSettings;
use crate::progress::ProgressBars;
use crate::report::{self, chart, csv, json, terminal};
use crate::scenario::grid::Grid;
use crate::scenario::{MAX_HOLD_MS, MAX_RATE_PER_S, Overrides, Scenario, Slo};
use crate::stability::StabilitySettings;
use crate::sweep::{self, SweepProgress};
use crate::time::ms_f64_to_ns;

mod calibrate;
mod check;
mod plan;
mod run;

use calibrate::{calibrate_database, validate_calibration};
use check::check_baseline;
use plan::plan_capacity;
use run::{merge_slices, run_scenario};

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run_scenario(&args),
        Command::Plan(args) => plan_capacity(&args),
        Command::Check(args) => check_baseline(&args),
        Command::Calibrate(args) => calibrate_database(&args),
        Command::Validate(args) => validate_calibration(&args),
        Command::Merge(args) => merge_slices(&args),
        Command::Completions(args) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut command, "shardsim", &mut script);
            Ok(crate::stdout::print(script)?)
        }
    }
}

/// The command line's overrides for `run` and `check`, which take one `--traffic` level.
pub(super) fn overrides(
    shards: Option<&Vec<u32>>,
    flags: &ScenarioFlags,
) -> Result<Overrides, InputError> {
    let traffic = match flags.traffic.as_deref() {
        None => None,
        Some(&[one]) => Some(one),
        Some(_) => {
            return Err(InputError::flag(
                "--traffic",
                "run and check take one traffic level, e.g. --traffic 2; plan compares several (plan --traffic 1,1.5,2)",
            ));
        }
    };
    Ok(overrides_at(shards, flags, traffic))
}

/// The command line's overrides with the what-if traffic `traffic`.
pub(super) fn overrides_at(
    shards: Option<&Vec<u32>>,
    flags: &ScenarioFlags,
    traffic: Option<f64>,
) -> Overrides {
    Overrides {
        shards: shards.cloned(),
        seed: flags.seed,
        policy: flags.policy.clone(),
        replications: flags.replications,
        event_path: flags.engine == crate::cli::EngineChoice::Event,
        calibration: flags.calibration.clone(),
        traffic,
        calibration_scale: None,
        pool: None,
    }
}

/// The worker threads a run uses: `--threads`, else one per core.
pub(super) fn threads(flags: &ScenarioFlags) -> usize {
    flags.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    })
}

pub(super) fn thread_pool(flags: &ScenarioFlags) -> anyhow::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads(flags))
        .build()
        .context("cannot start the worker threads")
}

/// Refuses a run that would not fit in the memory budget or in reasonable time, bounds each
/// shard count's queue by what the budget leaves, and holds the process to the budget from
/// then on ([`budget::watch`]).
pub(super) fn admit(scenario: &mut Scenario, flags: &ScenarioFlags) -> Result<(), InputError> {
    let estimate = budget::estimate(scenario, threads(flags));
    let limit = budget::Budget::of(flags.max_memory);
    let limit_of_queue = budget::admit(scenario, &estimate, &limit)?;
    scenario.limit_queue(limit_of_queue);
    budget::watch(&limit);
    Ok(())
}

/// Whether standard output gets colours: `--color`, else `NO_COLOR` / `CLICOLOR_FORCE` and
/// whether it is a terminal (anstream's rules).
pub(super) fn colour(flags: &ScenarioFlags) -> bool {
    let choice = match flags.color {
        Some(ColorWhen::Always) => anstream::ColorChoice::Always,
        Some(ColorWhen::Never) => anstream::ColorChoice::Never,
        Some(ColorWhen::Auto) | None => anstream::ColorChoice::Auto,
    };
    choice.write_global();
    anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
}

/// What standard output shows: `--format`, else the table; `--quiet` silences the table but
/// not an explicitly asked-for JSON document.
pub(super) fn output_format(format: Option<Format>, quiet: bool) -> Option<Format> {
    match format {
        Some(Format::Json) => Some(Format::Json),
        _ if quiet => None,
        other => Some(other.unwrap_or(Format::Table)),
    }
}

/// Every replication of every shard count, summarised; `runs[i][0]` is the first replication.
pub(super) struct Simulated {
    runs: Vec<Vec<ShardRun>>,
    rows: Vec<SummaryRow>,
    /// With `[regions]`: each shard count's regions under each merge rule (first replication).
    regions: Vec<Vec<crate::model::regions::RegionsRun>>,
}

pub(super) fn simulate_quietly(
    scenario: &Scenario,
    flags: &ScenarioFlags,
) -> anyhow::Result<Simulated> {
    let pool = thread_pool(flags)?;
    let bars = ProgressBars::new(scenario, !flags.quiet && std::io::stderr().is_terminal());
    let result = pool.install(|| {
        sweep::run_replications(scenario, vec![NoEvents; scenario.variants().len()], &bars)
    });
    bars.finish();
    let (runs, _) = result?;
    let rows = pool.install(|| summarize_each(scenario, &runs, &StabilitySettings::default()))?;
    Ok(Simulated {
        runs,
        rows,
        regions: Vec::new(),
    })
}

pub(super) fn summary_csv(scenario: &Scenario, rows: &[SummaryRow]) -> Vec<u8> {
    csv::summary_csv(
        rows,
        scenario.seed(),
        crate::time::ns_to_s(scenario.warmup()),
    )
}
