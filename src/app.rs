//! Orchestration: load and validate the scenario, check the output folder, run the sweep,
//! write the artefacts and print the summary. Validation comes first, so bad input fails
//! before the long part and leaves no output behind.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::cli::{Cli, Command, Format, RunArgs};
use crate::model::{NoEvents, ShardRun};
use crate::progress::ProgressBars;
use crate::report::events::{self, EventLog};
use crate::report::output::Staging;
use crate::report::{SummaryRow, chart, csv, html, json, recommend, summarize, terminal};
use crate::scenario::{ArrivalPlan, Overrides, Scenario};
use crate::sweep::{self, SweepProgress};

/// Traces up to this size are copied into the output folder so that it reproduces the run
/// alone; larger ones are referred to by absolute path.
const MAX_TRACE_COPY_BYTES: u64 = 64 << 20;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run_scenario(&args),
    }
}

fn run_scenario(args: &RunArgs) -> anyhow::Result<()> {
    let overrides = Overrides {
        shards: args.shards.clone(),
        seed: args.seed,
        policy: args.policy,
    };
    let scenario = Scenario::load(&args.scenario, &overrides)?;
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&scenario.name));
    let staging = Staging::prepare(&out_dir)?;
    let threads = args.threads.map_or(0, |n| n.get());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("cannot start the worker threads")?;
    let bars = ProgressBars::new(&scenario, !args.quiet && std::io::stderr().is_terminal());
    let runs = pool.install(|| simulate(&scenario, &staging, args.events, &bars));
    bars.finish();
    let runs = runs?;
    let rows: Vec<SummaryRow> = runs.iter().map(|run| summarize(&scenario, run)).collect();
    write_outputs(&scenario, &staging, &runs, &rows)
        .with_context(|| format!("cannot write {}", out_dir.display()))?;
    staging
        .commit()
        .with_context(|| format!("cannot move the results into {}", out_dir.display()))?;
    if !args.quiet {
        let recommendation = recommend(&rows, &scenario.slo);
        let out = out_dir.display().to_string();
        match args.format {
            Format::Json => print!("{}", json::render(&scenario, &rows, &recommendation, &out)),
            Format::Table => {
                let colour = std::io::stdout().is_terminal() && !no_colour();
                print!(
                    "{}",
                    terminal::render(&scenario, &rows, &recommendation, colour)
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

/// Runs the sweep, streaming `events.csv` into the staging folder when asked.
fn simulate(
    scenario: &Scenario,
    staging: &Staging,
    with_events: bool,
    progress: &dyn SweepProgress,
) -> anyhow::Result<Vec<ShardRun>> {
    if !with_events {
        let observers = vec![NoEvents; scenario.shards.len()];
        let runs = sweep::run(scenario, observers, progress)?;
        return Ok(runs.into_iter().map(|(run, _)| run).collect());
    }
    let parts: Vec<PathBuf> = scenario
        .shards
        .iter()
        .map(|shards| staging.path(&format!("events-{shards}.part")))
        .collect();
    let observers = scenario
        .shards
        .iter()
        .zip(&parts)
        .map(|(&shards, part)| EventLog::create(part, scenario, shards))
        .collect::<Result<Vec<_>, _>>()
        .context("cannot create events.csv")?;
    let mut runs = Vec::with_capacity(parts.len());
    for (run, log) in sweep::run(scenario, observers, progress)? {
        log.close().context("cannot write events.csv")?;
        runs.push(run);
    }
    events::merge_parts(&staging.path("events.csv"), &parts).context("cannot write events.csv")?;
    Ok(runs)
}

fn write_outputs(
    scenario: &Scenario,
    staging: &Staging,
    runs: &[ShardRun],
    rows: &[SummaryRow],
) -> anyhow::Result<()> {
    staging.write("summary.csv", &csv::summary_csv(rows, scenario.seed))?;
    staging.write("timeseries.csv", &csv::timeseries_csv(scenario, runs))?;
    let charts = chart::render_all(scenario, rows, runs).map_err(anyhow::Error::msg)?;
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
