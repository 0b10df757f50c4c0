//! Orchestration: parse → resolve → run. Each subcommand loads and validates its scenario (with
//! the command line's overrides) before anything long happens, so bad input fails early and
//! leaves no output behind; then it simulates, writes its artefacts and prints.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::check::{self, Status, Tolerances};
use crate::cli::{CheckArgs, Cli, Command, Format, HoldShape, PlanArgs, RunArgs, ScenarioFlags};
use crate::error::{Failed, InputError};
use crate::model::time::ms_f64_to_ns;
use crate::model::{NoEvents, ShardRun};
use crate::plan::{self, PlanSettings};
use crate::progress::ProgressBars;
use crate::report::events::{self, EventLog};
use crate::report::output::Staging;
use crate::report::{self, SummaryRow, chart, csv, html, json, recommend, summarize, terminal};
use crate::scenario::{ArrivalPlan, Overrides, Scenario, Slo};
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
    }
}

fn overrides(flags: &ScenarioFlags) -> Overrides {
    Overrides {
        shards: flags.shards.clone(),
        seed: flags.seed,
        policy: flags.policy,
        replications: flags.replications,
    }
}

fn thread_pool(flags: &ScenarioFlags) -> anyhow::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(flags.threads.map_or(0, |n| n.get()))
        .build()
        .context("cannot start the worker threads")
}

/// Every replication of every shard count, summarised; `runs[i][0]` is the first replication.
struct Simulated {
    runs: Vec<Vec<ShardRun>>,
    rows: Vec<SummaryRow>,
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
    Ok(Simulated { runs, rows })
}

fn run_scenario(args: &RunArgs) -> anyhow::Result<()> {
    let scenario = Scenario::load(&args.scenario, &overrides(&args.flags))?;
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
        .with_context(|| format!("cannot write {}", out_dir.display()))?;
    staging
        .commit()
        .with_context(|| format!("cannot move the results into {}", out_dir.display()))?;
    if !args.flags.quiet {
        let rows = &simulated.rows;
        let recommendation = recommend(rows, &scenario.slo);
        let out = out_dir.display().to_string();
        match args.format {
            Format::Json => print!("{}", json::render(&scenario, rows, &recommendation, &out)),
            Format::Table => {
                let colour = std::io::stdout().is_terminal() && !no_colour();
                print!(
                    "{}",
                    terminal::render(&scenario, rows, &recommendation, colour)
                );
                println!("wrote {out}");
            }
        }
    }
    Ok(())
}

/// Whether the user asked for no colour (<https://no-color.org>: `NO_COLOR` set and not empty).
fn no_colour() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty())
}

/// Runs every replication, streaming the first one's `events.csv` into the staging folder when
/// asked.
fn simulate(
    scenario: &Scenario,
    staging: &Staging,
    with_events: bool,
    progress: &dyn SweepProgress,
) -> anyhow::Result<Simulated> {
    let runs = if with_events {
        let variants = scenario.variants();
        let parts: Vec<PathBuf> = variants
            .iter()
            .map(|variant| staging.path(&format!("events-{}.part", variant.label())))
            .collect();
        let observers = variants
            .iter()
            .zip(&parts)
            .map(|(variant, part)| EventLog::create(part, scenario, &variant.label()))
            .collect::<Result<Vec<_>, _>>()
            .context("cannot create events.csv")?;
        let (runs, logs) = sweep::run_replications(scenario, observers, progress)?;
        for log in logs {
            log.close().context("cannot write events.csv")?;
        }
        events::merge_parts(&staging.path("events.csv"), &parts)
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
    Ok(Simulated { runs, rows })
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
    let charts = chart::render_all(scenario, rows, &first).map_err(anyhow::Error::msg)?;
    for chart in &charts {
        staging.write(&format!("{}.svg", chart.name), chart.svg.as_bytes())?;
        staging.write(&format!("{}.png", chart.name), &chart.png)?;
    }
    let recommendation = recommend(rows, &scenario.slo);
    let page = html::render(scenario, rows, &recommendation, &charts);
    staging.write("report.html", page.as_bytes())?;
    let mut resolved = scenario.resolved.clone();
    if let ArrivalPlan::Trace(info) = &scenario.arrivals {
        let trace = resolved.arrivals.get_or_insert_with(Default::default);
        trace.trace = Some(place_trace(&info.path, staging)?);
    }
    let toml = toml::to_string(&resolved).context("cannot render scenario.toml")?;
    let header = format!(
        "# The scenario as resolved by shardsim {} from {}: defaults filled in, the seed used.\n\
         # `shardsim run scenario.toml` in this folder repeats the run.\n\n",
        env!("CARGO_PKG_VERSION"),
        scenario.path.display()
    );
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
    let mut flags_overrides = overrides(&args.flags);
    flags_overrides.replications = None;
    let scenario = plan_scenario(args, &flags_overrides)?;
    let targets = plan_targets(args, &scenario)?;
    let replications = args
        .flags
        .replications
        .unwrap_or(scenario.replications.max(PLAN_REPLICATIONS));
    let settings = plan_settings(args, replications)?;
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(format!("{}-plan", scenario.name)));
    let staging = Staging::prepare(&out_dir)?;
    let pool = thread_pool(&args.flags)?;
    let plan = pool.install(|| plan::plan(&scenario, targets, settings))?;
    staging.write("plan.csv", &report::plan::plan_csv(&plan))?;
    staging.write("plan.json", report::plan::plan_json(&plan).as_bytes())?;
    staging
        .commit()
        .with_context(|| format!("cannot move the results into {}", out_dir.display()))?;
    if !args.flags.quiet {
        match args.format {
            Format::Json => print!("{}", report::plan::plan_json(&plan)),
            Format::Table => {
                print!("{}", report::plan::render(&plan));
                println!("wrote {}", out_dir.display());
            }
        }
    }
    match plan.answer {
        Some(_) => Ok(()),
        None => Err(Failed(format!(
            "no shard count up to {} meets the target: {}",
            settings.max_shards,
            plan.unmet_reason.unwrap_or_default()
        ))
        .into()),
    }
}

/// The scenario to plan for: a file, or one built from `--rate` and `--hold-ms`.
fn plan_scenario(args: &PlanArgs, overrides: &Overrides) -> anyhow::Result<Scenario> {
    let flag_form = args.rate.is_some() || args.hold_ms.is_some();
    match (&args.scenario, flag_form) {
        (Some(path), false) => Ok(Scenario::load(path, overrides)?),
        (Some(_), true) => Err(InputError::Flag {
            flag: "--rate/--hold-ms".into(),
            message: "give either a scenario file or --rate and --hold-ms, not both".into(),
        }
        .into()),
        (None, _) => {
            let (Some(rate), Some(hold_ms)) = (args.rate, args.hold_ms) else {
                return Err(InputError::Flag {
                    flag: "--rate/--hold-ms".into(),
                    message: "without a scenario file, give both --rate (per second) and --hold-ms"
                        .into(),
                }
                .into());
            };
            let hold = match args.hold_dist {
                HoldShape::Constant => format!("dist = \"constant\"\nms = {hold_ms:?}"),
                HoldShape::Exponential => format!("dist = \"exponential\"\nmean_ms = {hold_ms:?}"),
            };
            let text = format!(
                "name = \"rate-{rate}-hold-{hold_ms}\"\ndescription = \"--rate {rate} --hold-ms {hold_ms}\"\nshards = [1]\n\
                 duration_s = 60\n[hold]\n{hold}\n[arrivals]\nrate_per_s = {rate:?}\n"
            );
            Ok(Scenario::parse(Path::new("(flags)"), &text, overrides)?)
        }
    }
}

fn plan_targets(args: &PlanArgs, scenario: &Scenario) -> Result<Slo, InputError> {
    let wait = |value: Option<f64>, flag: &str| -> Result<Option<u64>, InputError> {
        match value {
            Some(ms) if !(ms.is_finite() && ms > 0.0) => Err(InputError::Flag {
                flag: flag.into(),
                message: format!("must be a finite number of ms > 0, got {ms}"),
            }),
            other => Ok(other.map(ms_f64_to_ns)),
        }
    };
    if let Some(u) = args
        .max_utilization
        .filter(|u| !(u.is_finite() && *u > 0.0 && *u <= 1.0))
    {
        return Err(InputError::Flag {
            flag: "--max-utilization".into(),
            message: format!("must be in (0, 1], got {u}"),
        });
    }
    let from_flags = Slo {
        p99_ns: wait(args.p99_ms, "--p99-ms")?,
        p999_ns: wait(args.p999_ms, "--p999-ms")?,
        max_utilization: args.max_utilization,
    };
    let targets = if from_flags.is_set() {
        from_flags
    } else {
        scenario.slo
    };
    if !targets.is_set() {
        return Err(InputError::Flag {
            flag: "--p99-ms".into(),
            message: "no target: give --p99-ms, --p999-ms or --max-utilization, or set [slo] in the scenario".into(),
        });
    }
    Ok(targets)
}

fn plan_settings(args: &PlanArgs, replications: u32) -> Result<PlanSettings, InputError> {
    let flag_error = |flag: &str, message: String| InputError::Flag {
        flag: flag.into(),
        message,
    };
    if args.max_shards == 0 || args.max_shards > 1 << 20 {
        return Err(flag_error(
            "--max-shards",
            format!("must be from 1 to {}, got {}", 1 << 20, args.max_shards),
        ));
    }
    if !(args.duration_s.is_finite() && args.duration_s >= 0.001 && args.duration_s <= 1e6) {
        return Err(flag_error(
            "--duration-s",
            format!("must be from 0.001 to 1000000, got {}", args.duration_s),
        ));
    }
    if !(args.warmup_s.is_finite() && args.warmup_s >= 0.0 && args.warmup_s <= 1e6) {
        return Err(flag_error(
            "--warmup-s",
            format!("must be from 0 to 1000000, got {}", args.warmup_s),
        ));
    }
    if replications == 0 || replications > 10_000 {
        return Err(flag_error(
            "--replications",
            format!("must be from 1 to 10000, got {replications}"),
        ));
    }
    Ok(PlanSettings {
        max_shards: args.max_shards,
        duration_s: args.duration_s,
        warmup_s: args.warmup_s,
        replications,
    })
}

fn check_baseline(args: &CheckArgs) -> anyhow::Result<()> {
    let scenario = Scenario::load(&args.scenario, &overrides(&args.flags))?;
    let tolerances = Tolerances::resolve(args.rel, args.abs_ms, &scenario.check, &args.scenario)?;
    let baseline_path = args
        .baseline
        .clone()
        .unwrap_or_else(|| Path::new("scenarios/baselines").join(format!("{}.csv", scenario.name)));
    let baseline = if args.update {
        None
    } else {
        let text = std::fs::read_to_string(&baseline_path).map_err(|err| {
            InputError::file(
                &baseline_path,
                format!("cannot read the baseline ({err}); create it with --update"),
            )
        })?;
        Some(check::parse_summary(&baseline_path, &text)?)
    };
    let simulated = simulate_quietly(&scenario, &args.flags)?;
    let current_csv = summary_csv(&scenario, &simulated.rows);
    let shown = baseline_path.display().to_string();
    let Some(baseline) = baseline else {
        if let Some(parent) = baseline_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&baseline_path, &current_csv)
            .with_context(|| format!("cannot write {shown}"))?;
        if !args.flags.quiet {
            println!("updated {shown}");
        }
        return Ok(());
    };
    let current_text = String::from_utf8(current_csv).expect("the summary is UTF-8");
    let current = check::parse_summary(Path::new("(this run)"), &current_text)?;
    let moves = check::compare(&baseline_path, &baseline, &current, &tolerances)?;
    if !args.flags.quiet {
        print!("{}", report::check::render(&shown, &moves, args.strict));
    }
    let failing: Vec<&check::Move> = moves
        .iter()
        .filter(|m| {
            m.status == Status::Regression || (args.strict && m.status == Status::Improvement)
        })
        .collect();
    if failing.is_empty() {
        return Ok(());
    }
    let mut columns: Vec<&str> = failing.iter().map(|m| m.column).collect();
    columns.dedup();
    columns.sort_unstable();
    columns.dedup();
    let mut shards: Vec<u32> = failing.iter().map(|m| m.shards).collect();
    shards.dedup();
    Err(Failed(format!(
        "{}: {} value(s) moved beyond tolerance against {shown}: {} (shard counts {shards:?})",
        scenario.name,
        failing.len(),
        columns.join(", ")
    ))
    .into())
}
