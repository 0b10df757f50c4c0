//! Orchestration: parse → resolve → run. Each subcommand loads and validates its scenario (with
//! the command line's overrides) before anything long happens, so bad input fails early and
//! leaves no output behind; then it simulates, writes its artefacts and prints.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::budget;
use crate::check::{self, Tolerances};
use crate::cli::{
    CalibrateArgs, CheckArgs, Cli, ColorWhen, Command, Format, HoldShape, MergeArgs, PlanArgs,
    RunArgs, ScenarioFlags, ValidateArgs,
};
use crate::error::{Failed, InputError, IoFailure};
use crate::model::time::ms_f64_to_ns;
use crate::model::{NoEvents, ShardRun};
use crate::partition::Partition;
use crate::plan::{self, PlanSettings};
use crate::progress::ProgressBars;
use crate::report::events::{self, EventLog};
use crate::report::output::{Staging, write_file};
use crate::report::summary::describe_slo;
use crate::report::{self, SummaryRow, by_policy, chart, csv, html, json, summarize, terminal};
use crate::scenario::grid::Grid;
use crate::scenario::{ArrivalPlan, MAX_HOLD_MS, MAX_RATE_PER_S, Overrides, Scenario, Slo};
use crate::sweep::{self, SweepProgress};

/// Traces up to this size are copied into the output folder so that it reproduces the run
/// alone; larger ones are referred to by absolute path.
const MAX_TRACE_COPY_BYTES: u64 = 64 << 20;
/// Replications `plan` uses when neither the scenario nor `--replications` asks for more.
const PLAN_REPLICATIONS: u32 = 10;

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
fn overrides(shards: Option<&Vec<u32>>, flags: &ScenarioFlags) -> Result<Overrides, InputError> {
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
fn overrides_at(
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
    }
}

/// The worker threads a run uses: `--threads`, else one per core.
fn threads(flags: &ScenarioFlags) -> usize {
    flags.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    })
}

fn thread_pool(flags: &ScenarioFlags) -> anyhow::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads(flags))
        .build()
        .context("cannot start the worker threads")
}

/// Refuses a run that would not fit in the memory budget or in reasonable time, and bounds
/// each shard count's queue by what the budget leaves.
fn admit(scenario: &mut Scenario, flags: &ScenarioFlags) -> Result<(), InputError> {
    let estimate = budget::estimate(scenario, threads(flags));
    let limit = flags.max_memory.unwrap_or_else(budget::default_budget);
    scenario.queue_limit = budget::admit(scenario, &estimate, limit, flags.max_memory.is_some())?;
    Ok(())
}

/// Whether standard output gets colours: `--color`, else `NO_COLOR` / `CLICOLOR_FORCE` and
/// whether it is a terminal (anstream's rules).
fn colour(flags: &ScenarioFlags) -> bool {
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
fn output_format(format: Option<Format>, quiet: bool) -> Option<Format> {
    match format {
        Some(Format::Json) => Some(Format::Json),
        _ if quiet => None,
        other => Some(other.unwrap_or(Format::Table)),
    }
}

/// Every replication of every shard count, summarised; `runs[i][0]` is the first replication.
struct Simulated {
    runs: Vec<Vec<ShardRun>>,
    rows: Vec<SummaryRow>,
    /// With `[regions]`: each shard count's regions under each merge rule (first replication).
    regions: Vec<Vec<crate::model::regions::RegionsRun>>,
}

fn simulate_quietly(scenario: &Scenario, flags: &ScenarioFlags) -> anyhow::Result<Simulated> {
    let pool = thread_pool(flags)?;
    let bars = ProgressBars::new(scenario, !flags.quiet && std::io::stderr().is_terminal());
    let result = pool.install(|| {
        sweep::run_replications(scenario, vec![NoEvents; scenario.variants().len()], &bars)
    });
    bars.finish();
    let (runs, _) = result?;
    let rows = runs.iter().map(|reps| summarize(scenario, reps)).collect();
    Ok(Simulated {
        runs,
        rows,
        regions: Vec::new(),
    })
}

fn run_scenario(args: &RunArgs) -> anyhow::Result<()> {
    let overrides = overrides(args.shards.as_ref(), &args.flags)?;
    let partition = args
        .partition
        .as_deref()
        .map(|text| Partition::parse(text, &|name| std::env::var(name).ok()))
        .transpose()?;
    let mut grid = Scenario::load_grid(&args.scenario, &overrides)?;
    if grid.is_sweep() {
        return run_grid(args, grid, partition, &overrides);
    }
    if partition.is_some() {
        return Err(InputError::flag(
            "--partition",
            "splits the configurations of a [sweep]; this scenario has one configuration",
        )
        .into());
    }
    let mut scenario = grid.configurations.remove(0).scenario;
    admit(&mut scenario, &args.flags)?;
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&scenario.name));
    let staging = Staging::prepare(&out_dir)?;
    let pool = thread_pool(&args.flags)?;
    let bars = ProgressBars::new(
        &scenario,
        !args.flags.quiet && std::io::stderr().is_terminal(),
    );
    let simulated = pool.install(|| simulate(&scenario, &staging, args.events, &bars));
    bars.finish();
    let simulated = simulated?;
    write_outputs(&scenario, &staging, &simulated)
        .map_err(|err| IoFailure::new(&out_dir, format!("cannot write the results: {err:#}")))?;
    staging.commit()?;
    let rows = &simulated.rows;
    let out = out_dir.display().to_string();
    match output_format(args.format, args.flags.quiet) {
        Some(Format::Json) => crate::stdout::print(json::render(&scenario, rows, &out))?,
        Some(Format::Table) => {
            crate::stdout::print(terminal::render(&scenario, rows, colour(&args.flags)))?;
            if scenario.regions.is_some() {
                crate::stdout::print(report::regions::render(
                    &scenario.variants(),
                    &simulated.regions,
                ))?;
            }
            crate::stdout::print(format!("wrote {out}\n"))?;
        }
        None => {}
    }
    let groups = by_policy(&scenario, rows);
    let none_meets = groups
        .iter()
        .all(|g| g.recommendation.meets_target.is_none());
    if scenario.slo.is_set() && none_meets && !args.no_fail {
        return Err(Failed(format!(
            "no simulated shard count meets the target of [slo] ({}); the results are in {out}; \
             {}, or pass --no-fail to only report",
            describe_slo(&scenario.slo),
            report::summary::remedy(rows)
        ))
        .into());
    }
    Ok(())
}

/// Runs a `[sweep]` grid (or the partition's slice of it).
fn run_grid(
    args: &RunArgs,
    mut grid: Grid,
    partition: Option<Partition>,
    overrides: &Overrides,
) -> anyhow::Result<()> {
    if args.events {
        return Err(InputError::flag(
            "--events",
            "a sweep writes no events.csv; run one configuration as its own scenario for them",
        )
        .into());
    }
    for configuration in &mut grid.configurations {
        admit(&mut configuration.scenario, &args.flags)?;
    }
    // A slice's work: its share of each configuration's replications.
    let units = crate::partition::units(&grid);
    let held: Vec<budget::Estimate> = grid
        .configurations
        .iter()
        .filter_map(|c| {
            let reps = units
                .iter()
                .enumerate()
                .filter(|(u, (config, _))| {
                    *config == c.index && partition.is_none_or(|p| p.holds(*u))
                })
                .count();
            let mut estimate = budget::estimate(&c.scenario, threads(&args.flags));
            estimate.requests *= reps as f64 / f64::from(c.scenario.replications);
            (reps > 0).then_some(estimate)
        })
        .collect();
    budget::admit_grid(
        &args.scenario,
        &held,
        threads(&args.flags),
        args.flags.max_memory.unwrap_or_else(budget::default_budget),
    )?;
    let text = crate::input::read_text(
        &args.scenario,
        crate::input::MAX_SCENARIO_BYTES,
        "the scenario",
    )?;
    let name = grid.configurations[0].scenario.name.clone();
    let out_dir = args.out.clone().unwrap_or_else(|| match partition {
        Some(p) => Path::new("output").join(format!("{name}-slice-{}-of-{}", p.slice, p.slices)),
        None => Path::new("output").join(&name),
    });
    if matches!(args.format, Some(Format::Json)) {
        return Err(InputError::flag(
            "--format",
            "a sweep prints its grid as a table; its results are in sweep.csv and summary.csv",
        )
        .into());
    }
    let run = crate::grid::GridRun {
        path: &args.scenario,
        text: &text,
        overrides,
        partition,
        out_dir: &out_dir,
        print: output_format(args.format, args.flags.quiet).is_some(),
        no_fail: args.no_fail,
    };
    let pool = thread_pool(&args.flags)?;
    pool.install(|| crate::grid::run(&grid, &run))
}

fn merge_slices(args: &MergeArgs) -> anyhow::Result<()> {
    crate::grid::merge(&args.parts, &args.out, !args.quiet)
}

/// Runs every replication, streaming the first one's `events.csv` into the staging folder when
/// asked.
fn simulate(
    scenario: &Scenario,
    staging: &Staging,
    with_events: bool,
    progress: &dyn SweepProgress,
) -> anyhow::Result<Simulated> {
    let mut regions = Vec::new();
    let runs = if let Some(plan) = &scenario.regions {
        if with_events {
            return Err(InputError::flag(
                "--events",
                "is not written with [regions] yet; leave out --events (regions.csv has each region's figures)",
            )
            .into());
        }
        let observers = scenario
            .variants()
            .iter()
            .map(|_| {
                crate::model::regions::RegionObserver::new(
                    std::sync::Arc::clone(plan),
                    scenario.horizon,
                    scenario.replication_seed(0),
                    scenario.pipeline,
                )
            })
            .collect();
        let (runs, observers) = sweep::run_replications(scenario, observers, progress)?;
        regions = observers.into_iter().map(|o| o.finish()).collect();
        runs
    } else if with_events {
        let variants = scenario.variants();
        let parts: Vec<PathBuf> = variants
            .iter()
            .enumerate()
            .map(|(index, variant)| {
                staging.path(&format!("events-{index}-{}.part", variant.label()))
            })
            .collect();
        let observers = variants
            .iter()
            .zip(&parts)
            .map(|(variant, part)| {
                EventLog::create(part, scenario, variant.policy, &variant.label())
            })
            .collect::<Result<Vec<_>, _>>()
            .context("cannot create events.csv")?;
        let (runs, logs) = sweep::run_replications(scenario, observers, progress)?;
        for log in logs {
            log.close().context("cannot write events.csv")?;
        }
        events::merge_parts(
            &staging.path("events.csv"),
            &parts,
            scenario.compares_policies(),
        )
        .context("cannot write events.csv")?;
        runs
    } else {
        sweep::run_replications(
            scenario,
            vec![NoEvents; scenario.variants().len()],
            progress,
        )?
        .0
    };
    let rows = runs.iter().map(|reps| summarize(scenario, reps)).collect();
    Ok(Simulated {
        runs,
        rows,
        regions,
    })
}

fn write_outputs(
    scenario: &Scenario,
    staging: &Staging,
    simulated: &Simulated,
) -> anyhow::Result<()> {
    let rows = &simulated.rows;
    let first: Vec<ShardRun> = simulated.runs.iter().map(|reps| reps[0].clone()).collect();
    staging.write("summary.csv", &summary_csv(scenario, rows))?;
    staging.write("timeseries.csv", &csv::timeseries_csv(scenario, &first))?;
    if scenario.features.pool.is_some() {
        staging.write("neighbours.csv", &csv::neighbours_csv(rows))?;
    }
    if scenario.key_count() > 1 {
        staging.write("keys.csv", &csv::keys_csv(scenario, rows, &first))?;
    }
    if scenario.adaptive.is_some() {
        staging.write("growth.csv", &csv::growth_csv(scenario, &first))?;
    }
    if scenario.regions.is_some() {
        let csv = report::regions::regions_csv(&scenario.variants(), &simulated.regions);
        staging.write("regions.csv", &csv)?;
    }
    let recommended: Vec<_> = by_policy(scenario, rows)
        .iter()
        .map(|g| (g.policy, g.recommendation.shards()))
        .collect();
    let charts =
        chart::render_all(scenario, rows, &first, &recommended).map_err(anyhow::Error::msg)?;
    for chart in &charts {
        staging.write(&format!("{}.svg", chart.name), chart.svg.as_bytes())?;
        staging.write(&format!("{}.png", chart.name), &chart.png)?;
    }
    let more: Vec<_> = scenario
        .regions
        .iter()
        .map(|_| report::regions::table(&scenario.variants(), &simulated.regions))
        .collect();
    let page = html::render(scenario, rows, &charts, &more);
    staging.write("report.html", page.as_bytes())?;
    let mut resolved = scenario.resolved.clone();
    if let ArrivalPlan::Trace(info) = &scenario.arrivals {
        let trace = resolved.arrivals.get_or_insert_with(Default::default);
        trace.trace = Some(place_trace(&info.path, staging)?);
    }
    let toml = toml::to_string(&resolved).context("cannot render scenario.toml")?;
    let mut header = format!(
        "# The scenario as resolved by shardsim {} from {}: defaults filled in, the seed used.\n\
         # `shardsim run scenario.toml` in this folder repeats the run.\n",
        env!("CARGO_PKG_VERSION"),
        scenario.path.display()
    );
    if !scenario.calibration_kept.is_empty() {
        header.push_str(&format!(
            "# The scenario's own values were used over its calibration's for: {}.\n",
            scenario.calibration_kept.join(", ")
        ));
    }
    header.push('\n');
    staging.write("scenario.toml", format!("{header}{toml}").as_bytes())?;
    Ok(())
}

fn summary_csv(scenario: &Scenario, rows: &[SummaryRow]) -> Vec<u8> {
    csv::summary_csv(rows, scenario.seed, scenario.warmup as f64 / 1e9)
}

/// Copies a small trace next to `scenario.toml` (returning its file name), or returns a large
/// one's absolute path.
fn place_trace(trace: &Path, staging: &Staging) -> anyhow::Result<String> {
    let size = std::fs::metadata(trace)?.len();
    if size <= MAX_TRACE_COPY_BYTES {
        let name = trace
            .file_name()
            .map_or_else(|| "trace.csv".into(), |n| n.to_string_lossy().into_owned());
        std::fs::copy(trace, staging.path(&name))?;
        return Ok(name);
    }
    Ok(std::fs::canonicalize(trace)?.display().to_string())
}

fn plan_capacity(args: &PlanArgs) -> anyhow::Result<()> {
    let levels = traffic_levels(&args.flags)?;
    let pool = thread_pool(&args.flags)?;
    let mut planned: Vec<(Vec<String>, plan::Plan)> = Vec::new();
    let mut fields = Vec::new();
    let mut out_dir = args.out.clone();
    let mut max_shards = args.max_shards;
    for level in &levels {
        let mut flags_overrides = overrides_at(None, &args.flags, *level);
        flags_overrides.replications = None;
        let grid = plan_scenario(args, &flags_overrides)?;
        if grid.is_sweep() && levels.len() > 1 {
            return Err(InputError::flag(
                "--traffic",
                "plan answers one traffic level per configuration of a [sweep]: sweep \"arrivals.scale\" instead",
            )
            .into());
        }
        fields.clone_from(&grid.fields);
        for configuration in grid.configurations {
            let mut scenario = configuration.scenario;
            admit(&mut scenario, &args.flags)?;
            let targets = plan_targets(args, &scenario)?;
            let replications = args
                .flags
                .replications
                .unwrap_or(scenario.replications.max(PLAN_REPLICATIONS));
            let settings = PlanSettings {
                max_shards: args.max_shards,
                duration_s: args.duration_s,
                warmup_s: args.warmup_s,
                replications,
            };
            plan::admit(&scenario, settings)?;
            max_shards = settings.max_shards;
            out_dir.get_or_insert_with(|| plan_folder(&scenario.name, &args.flags));
            let plans = pool.install(|| plan::plan_each_policy(&scenario, targets, settings))?;
            planned.extend(plans.into_iter().map(|p| (configuration.values.clone(), p)));
        }
    }
    let out_dir = out_dir.expect("at least one traffic level");
    let staging = Staging::prepare(&out_dir)?;
    let io =
        |err: std::io::Error| IoFailure::new(&out_dir, format!("cannot write the results: {err}"));
    let plans: Vec<plan::Plan> = planned.iter().map(|(_, p)| p.clone()).collect();
    let (csv, json, table) = if fields.is_empty() {
        (
            report::plan::plan_csv(&plans),
            report::plan::plan_json(&plans),
            report::plan::render(&plans),
        )
    } else {
        (
            report::plan::grid_plan_csv(&fields, &planned),
            report::plan::grid_plan_json(&fields, &planned),
            report::plan::render_grid(&fields, &planned),
        )
    };
    staging.write("plan.csv", &csv).map_err(io)?;
    staging.write("plan.json", json.as_bytes()).map_err(io)?;
    if !fields.is_empty() {
        let rows = report::plan::grid_rows(&planned);
        for chart in chart::sweep_charts(&fields, &rows).map_err(anyhow::Error::msg)? {
            staging
                .write(&format!("{}.svg", chart.name), chart.svg.as_bytes())
                .map_err(io)?;
            staging
                .write(&format!("{}.png", chart.name), &chart.png)
                .map_err(io)?;
        }
    }
    staging.commit()?;
    match output_format(args.format, args.flags.quiet) {
        Some(Format::Json) => crate::stdout::print(&json)?,
        Some(Format::Table) => {
            crate::stdout::print(&table)?;
            crate::stdout::print(format!("wrote {}\n", out_dir.display()))?;
        }
        None => {}
    }
    match plans.iter().find(|plan| plan.answer.is_none()) {
        None => Ok(()),
        Some(plan) => Err(Failed(format!(
            "no shard count up to {max_shards} meets the target{}: {}",
            if plans.len() > 1 {
                format!(" with {} at traffic ×{}", plan.policy, plan.traffic)
            } else {
                String::new()
            },
            plan.unmet_reason.clone().unwrap_or_default()
        ))
        .into()),
    }
}

/// `plan`'s default output folder: `output/<name>-plan`, with the policies `--policy` chose
/// (so plans of other policies do not replace each other).
fn plan_folder(name: &str, flags: &ScenarioFlags) -> PathBuf {
    let policies = flags.policy.as_ref().map_or_else(String::new, |policies| {
        let names: Vec<&str> = policies.iter().map(|p| p.name()).collect();
        format!("-{}", names.join("+"))
    });
    Path::new("output").join(format!("{name}-plan{policies}"))
}

/// The traffic levels `plan` answers for: each of `--traffic`, else the scenario's own.
fn traffic_levels(flags: &ScenarioFlags) -> Result<Vec<Option<f64>>, InputError> {
    let Some(levels) = &flags.traffic else {
        return Ok(vec![None]);
    };
    for (i, level) in levels.iter().enumerate() {
        if levels[..i].contains(level) {
            return Err(InputError::flag(
                "--traffic",
                format!("lists {level} twice: give each traffic level once"),
            ));
        }
    }
    Ok(levels.iter().map(|&level| Some(level)).collect())
}

/// The scenario to plan for — a file (every configuration of its `[sweep]`, if any), or one
/// built from `--rate` and `--hold-ms`.
fn plan_scenario(args: &PlanArgs, overrides: &Overrides) -> anyhow::Result<Grid> {
    let flag_form = args.rate.is_some() || args.hold_ms.is_some() || args.hold_dist.is_some();
    match (&args.scenario, flag_form) {
        (Some(path), false) => Ok(Scenario::load_grid(path, overrides)?),
        (Some(_), true) => Err(InputError::flag(
            "--rate/--hold-ms/--hold-dist",
            "give either a scenario file or --rate and --hold-ms, not both",
        )
        .into()),
        (None, _) => {
            let (Some(rate), Some(hold_ms)) = (args.rate, args.hold_ms) else {
                return Err(InputError::flag(
                    "--rate/--hold-ms",
                    "without a scenario file, give both --rate (per second) and --hold-ms",
                )
                .into());
            };
            if rate > MAX_RATE_PER_S {
                return Err(InputError::flag(
                    "--rate",
                    format!("must be at most {MAX_RATE_PER_S:.0} per second, got {rate}"),
                )
                .into());
            }
            if hold_ms > MAX_HOLD_MS {
                return Err(InputError::flag(
                    "--hold-ms",
                    format!("must be at most {MAX_HOLD_MS:.0} ms (an hour), got {hold_ms}"),
                )
                .into());
            }
            let (hold, shape) = match args.hold_dist.unwrap_or(HoldShape::Constant) {
                HoldShape::Constant => (format!("dist = \"constant\"\nms = {hold_ms:?}"), ""),
                HoldShape::Exponential => (
                    format!("dist = \"exponential\"\nmean_ms = {hold_ms:?}"),
                    "-exponential",
                ),
            };
            let text = format!(
                "name = \"rate-{rate}-hold-{hold_ms}{shape}\"\ndescription = \"--rate {rate} --hold-ms {hold_ms}\"\nshards = [1]\n\
                 duration_s = 60\n[hold]\n{hold}\n[arrivals]\nrate_per_s = {rate:?}\n"
            );
            Ok(Scenario::parse_grid(
                Path::new("(flags)"),
                &text,
                overrides,
            )?)
        }
    }
}

fn plan_targets(args: &PlanArgs, scenario: &Scenario) -> Result<Slo, InputError> {
    let from_flags = Slo {
        p99_ns: args.p99_ms.map(ms_f64_to_ns),
        p999_ns: args.p999_ms.map(ms_f64_to_ns),
        max_utilization: args.max_utilization,
    };
    let targets = if from_flags.is_set() {
        from_flags
    } else {
        scenario.slo
    };
    if !targets.is_set() {
        return Err(InputError::flag(
            "--p99-ms",
            "no target: give --p99-ms, --p999-ms or --max-utilization, or set [slo] in the scenario",
        ));
    }
    Ok(targets)
}

/// Whether two paths name one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether a line is the header of a `summary.csv` (a baseline `--update` may replace).
fn is_summary_header(line: &str) -> bool {
    let columns: Vec<&str> = line.split(',').collect();
    ["scenario", "shards", "wait_p99_ms"]
        .iter()
        .all(|name| columns.contains(name))
}

/// The baseline `check` compares with: `--baseline`, else `baselines/<name>.csv` in the
/// scenario's folder.
fn baseline_path(args: &CheckArgs, scenario: &Scenario) -> PathBuf {
    args.baseline.clone().unwrap_or_else(|| {
        let folder = scenario.path.parent().unwrap_or(Path::new(""));
        folder
            .join("baselines")
            .join(format!("{}.csv", scenario.name))
    })
}

/// The summary `check` compares: the scenario's, or a sweep's (every configuration, led by
/// its swept fields).
fn checked_summary(
    grid: &crate::scenario::grid::Grid,
    flags: &ScenarioFlags,
) -> anyhow::Result<Vec<u8>> {
    let first = &grid.configurations[0].scenario;
    if !grid.is_sweep() {
        let simulated = simulate_quietly(first, flags)?;
        return Ok(summary_csv(first, &simulated.rows));
    }
    let pool = thread_pool(flags)?;
    let all: Vec<&crate::scenario::grid::Configuration> = grid.configurations.iter().collect();
    let mut blocks = pool.install(|| crate::grid::simulate_all(grid, &all, &|| {}))?;
    let [summary, _, _] = report::grid::assemble(&grid.fields, &mut blocks);
    Ok(summary)
}

fn check_baseline(args: &CheckArgs) -> anyhow::Result<()> {
    let mut grid = Scenario::load_grid(
        &args.scenario,
        &overrides(args.shards.as_ref(), &args.flags)?,
    )?;
    for configuration in &mut grid.configurations {
        admit(&mut configuration.scenario, &args.flags)?;
    }
    // A sweep is checked by its first configuration's name and tolerances.
    let scenario = grid.configurations[0].scenario.clone();
    let flags = check::Flags {
        rel: args.rel,
        abs_ms: args.abs_ms,
        abs_count: args.abs_count,
    };
    let tolerances = Tolerances::resolve(flags, &scenario.check, &args.scenario)?;
    let baseline_path = baseline_path(args, &scenario);
    if let Some(junit) = &args.junit {
        for (input, what) in [
            (&args.scenario, "the scenario"),
            (&baseline_path, "the baseline"),
        ] {
            if same_file(junit, input) {
                return Err(InputError::flag(
                    "--junit",
                    format!(
                        "{} is {what} check reads: name another file for the report",
                        junit.display()
                    ),
                )
                .into());
            }
        }
    }
    let shown = baseline_path.display().to_string();
    let baseline = if args.update {
        None
    } else {
        if !baseline_path.exists() {
            return Err(InputError::file(
                &baseline_path,
                "cannot read the baseline (there is no such file yet): create it with --update",
            )
            .into());
        }
        let text = crate::input::read_text(
            &baseline_path,
            crate::input::MAX_BASELINE_BYTES,
            "the baseline",
        )?;
        Some(check::parse_summary(&baseline_path, &text, &grid.fields)?)
    };
    let current_csv = checked_summary(&grid, &args.flags)?;
    let format = output_format(args.format, args.flags.quiet);
    let Some(baseline) = baseline else {
        let is_summary = |head: &[u8]| {
            String::from_utf8_lossy(head)
                .lines()
                .next()
                .is_some_and(is_summary_header)
        };
        write_file(
            &baseline_path,
            &current_csv,
            &is_summary,
            args.overwrite,
            "baseline",
        )?;
        if format.is_some() {
            crate::stdout::print(format!("updated {shown}\n"))?;
        }
        return Ok(());
    };
    let current_text = String::from_utf8(current_csv).expect("the summary is UTF-8");
    let current = check::parse_summary(Path::new("(this run)"), &current_text, &grid.fields)?;
    let moves = check::compare(&baseline_path, &baseline, &current, &tolerances)?;
    let outcome = report::check::Outcome {
        scenario: &scenario.name,
        baseline: &shown,
        moves: &moves,
        strict: args.strict,
    };
    if let Some(junit) = &args.junit {
        let xml = report::check::render_junit(&outcome);
        write_file(
            junit,
            xml.as_bytes(),
            &report::check::is_junit,
            args.overwrite,
            "JUnit report",
        )?;
    }
    match format {
        Some(Format::Json) => crate::stdout::print(report::check::render_json(&outcome))?,
        Some(Format::Table) => crate::stdout::print(report::check::render(&outcome, args.verbose))?,
        None => {}
    }
    let failing: Vec<&check::Move> = moves.iter().filter(|m| outcome.fails(m)).collect();
    if failing.is_empty() {
        return Ok(());
    }
    let mut columns: Vec<&str> = failing.iter().map(|m| m.column).collect();
    columns.sort_unstable();
    columns.dedup();
    let mut shards: Vec<u32> = failing.iter().map(|m| m.shards).collect();
    shards.dedup();
    Err(Failed(format!(
        "{}: {} moved beyond tolerance against {shown}: {} (shard counts {shards:?})",
        scenario.name,
        if failing.len() == 1 {
            "1 value".to_owned()
        } else {
            format!("{} values", failing.len())
        },
        columns.join(", ")
    ))
    .into())
}

/// `shardsim calibrate`: measure, fit, write the calibration and print measured against fitted.
fn calibrate_database(args: &CalibrateArgs) -> anyhow::Result<()> {
    use crate::calibrate::{self, Design, conn::Target};
    let target = Target::parse(&args.db)?;
    // A server that cannot be used fails before anything is written.
    drop(target.connect()?);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("output").join("calibration"));
    let staging = Staging::prepare(&out)?;
    let mut clients = args.clients.clone();
    clients.sort_unstable();
    clients.dedup();
    let design = Design {
        clients,
        max_rows: args.max_rows,
        duration_s: args.duration_s,
        // A machine of more cores than a scenario may have is calibrated as the most it may.
        cores: args.cores.unwrap_or_else(|| {
            let most = crate::scenario::MAX_CORES;
            std::thread::available_parallelism().map_or(1, |n| n.get().min(most as usize) as u32)
        }),
    };
    let say = |line: &str| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    say(&format!(
        "calibrating {}: {}",
        target.shown(),
        design.describe()
    ));
    let calibration = calibrate::calibrate(&target, &design, &|step| say(step))?;
    let write = |name: &str, bytes: &[u8]| {
        staging
            .write(name, bytes)
            .map_err(|err| IoFailure::new(&staging.path(name), err))
    };
    write("calibration.toml", calibration.toml().as_bytes())?;
    write("calibration.csv", &calibration.csv())?;
    let chart = chart::calibration_chart(&calibration).map_err(anyhow::Error::msg)?;
    write("calibration.svg", chart.svg.as_bytes())?;
    write("calibration.png", &chart.png)?;
    staging.commit()?;
    if args.quiet {
        for warning in calibration.warnings() {
            eprintln!("warning: {warning}");
        }
    } else {
        crate::stdout::print(terminal::calibration_table(&calibration))?;
        crate::stdout::print(format!("wrote {}\n", out.display()))?;
    }
    Ok(())
}

/// `shardsim validate`: measure and predict every point, write them, exit 1 on a miss.
fn validate_calibration(args: &ValidateArgs) -> anyhow::Result<()> {
    use crate::calibrate::{conn::Target, validate};
    let target = Target::parse(&args.db)?;
    if !args.calibration.is_file() {
        return Err(InputError::flag(
            "--calibration",
            format!(
                "{}: no such file (write one with shardsim calibrate)",
                args.calibration.display()
            ),
        )
        .into());
    }
    validate::check_calibration(&args.calibration)?;
    drop(target.connect()?);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("output").join("validation"));
    let staging = Staging::prepare(&out)?;
    let say = |line: &str| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    say(&format!(
        "validating {} against {}: {} points of {} s (+1 s warm-up), {} times each",
        args.calibration.display(),
        target.shown(),
        validate::POINTS,
        args.duration_s,
        args.repeats
    ));
    if let Some(notice) = crate::calibrate::host::scheduling_notice(&target)? {
        say(notice);
    }
    // An unreadable calibration is reported, as bad input, where validate reads it.
    let calibration_text = crate::input::read_text(
        &args.calibration,
        crate::input::MAX_SCENARIO_BYTES,
        "the calibration",
    )
    .unwrap_or_default();
    for warning in validate::calibration_warnings(&calibration_text) {
        eprintln!("warning: {warning}");
    }
    let steps = validate::POINTS as u64 * (u64::from(args.repeats) + 1);
    let bar = crate::progress::StepBar::new(steps, args.quiet);
    let validation = validate::validate(
        &target,
        &args.calibration,
        args.duration_s,
        args.repeats,
        &|s| bar.step(s),
    );
    bar.finish();
    let validation = validation?;
    let tolerance = validate::Tolerance {
        tps_rel: args.tps_rel,
        p99_rel: args.p99_rel,
    };
    let write = |name: &str, bytes: &[u8]| {
        staging
            .write(name, bytes)
            .map_err(|err| IoFailure::new(&staging.path(name), err))
    };
    write("validation.csv", &validation.csv(&tolerance))?;
    let chart = chart::validation_chart(&validation, args.p99_rel).map_err(anyhow::Error::msg)?;
    write("validation.svg", chart.svg.as_bytes())?;
    write("validation.png", &chart.png)?;
    staging.commit()?;
    if !args.quiet {
        crate::stdout::print(terminal::validation_table(&validation, &tolerance))?;
        crate::stdout::print(format!("wrote {}\n", out.display()))?;
    }
    let misses = validation.misses(&tolerance);
    if misses.is_empty() {
        Ok(())
    } else {
        Err(Failed(format!(
            "{} of {} points outside the tolerance: {}",
            misses.len(),
            validation.points.len(),
            misses.join("; ")
        ))
        .into())
    }
}
