//! Running a grid sweep (see [`crate::scenario::grid`]): every configuration — or a
//! partition's share of them — simulated on every core, configurations in parallel and each
//! configuration's shard counts and replications in parallel inside it; then the tidy CSVs,
//! the sweep chart and the terminal's grid. `shardsim merge` joins a partition's slices into
//! the same output.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Failed, InputError};
use crate::model::NoEvents;
use crate::partition::{self, Manifest, Partition};
use crate::report::grid::{self as grid_report, ConfigBlock};
use crate::report::output::Staging;
use crate::report::summary::describe_slo;
use crate::report::{chart, summarize};
use crate::scenario::Scenario;
use crate::scenario::grid::{Configuration, Grid};
use crate::sweep::{self, NoProgress};

/// What a grid run needs besides its grid.
#[derive(Debug)]
pub struct GridRun<'a> {
    /// The scenario file's text (written to `scenario.toml`, and fingerprinted).
    pub text: &'a str,
    /// A description of the command line's overrides (fingerprinted: slices of one run share it).
    pub overrides: String,
    /// The slice to run, or all of it.
    pub partition: Option<Partition>,
    /// The output folder.
    pub out_dir: &'a Path,
    /// Whether to print.
    pub print: bool,
    /// Exit 0 even when a configuration meets no target (`--no-fail`).
    pub no_fail: bool,
}

/// Simulates every configuration of `grid` held by the run's slice and writes its output.
/// Each configuration must have been admitted (its queue limit set) already.
pub fn run(grid: &Grid, run: &GridRun<'_>) -> anyhow::Result<()> {
    let held: Vec<&Configuration> = grid
        .configurations
        .iter()
        .filter(|c| run.partition.is_none_or(|p| p.holds(c.index)))
        .collect();
    let staging = Staging::prepare(run.out_dir)?;
    let bar = progress_bar(held.len() as u64, run.print);
    let blocks = simulate_all(grid, &held, &|| bar.inc(1));
    bar.finish_and_clear();
    let mut blocks = blocks?;
    let head = head_manifest(grid, run);
    let first = &grid.configurations[0].scenario;
    let [summary, timeseries, sweep_csv] = grid_report::assemble(&grid.fields, &mut blocks);
    staging.write("summary.csv", &summary)?;
    staging.write("timeseries.csv", &timeseries)?;
    staging.write("sweep.csv", &sweep_csv)?;
    staging.write("scenario.toml", scenario_toml(first, run.text).as_bytes())?;
    let text = match run.partition {
        Some(p) => {
            let manifest = partition::manifest(&head, &blocks);
            let json = serde_json::to_string_pretty(&manifest)? + "\n";
            staging.write(partition::MANIFEST, json.as_bytes())?;
            format!(
                "{}: slice {} of {} — {} of the {} configurations\n",
                first.name,
                p.slice,
                p.slices,
                blocks.len(),
                grid.configurations.len()
            )
        }
        None => finish(&staging, &head, &sweep_csv)?,
    };
    staging.commit()?;
    if run.print {
        print!("{text}");
        println!("wrote {}", run.out_dir.display());
    }
    let rows =
        grid_report::read_sweep(grid.fields.len(), &sweep_csv).map_err(anyhow::Error::msg)?;
    let unmet = rows.iter().filter(|r| r.recommended.is_none()).count();
    if first.slo.is_set() && unmet > 0 && run.partition.is_none() && !run.no_fail {
        return Err(Failed(format!(
            "{unmet} of the {} configurations × policies meet no target of [slo] ({}) at any simulated shard count; \
             the results are in {}; simulate more shards, or pass --no-fail to only report",
            rows.len(),
            describe_slo(&first.slo),
            run.out_dir.display()
        ))
        .into());
    }
    Ok(())
}

/// Joins the slices in `parts` into `out_dir`: byte for byte the output of the run that was
/// partitioned.
pub fn merge(parts: &[PathBuf], out_dir: &Path, print: bool) -> anyhow::Result<()> {
    let slices = partition::read_slices(parts)?;
    let staging = Staging::prepare(out_dir)?;
    let mut blocks = slices.blocks;
    let [summary, timeseries, sweep_csv] =
        grid_report::assemble(&slices.manifest.fields, &mut blocks);
    staging.write("summary.csv", &summary)?;
    staging.write("timeseries.csv", &timeseries)?;
    staging.write("sweep.csv", &sweep_csv)?;
    let toml = std::fs::read(slices.first.join("scenario.toml")).map_err(|err| {
        InputError::file(
            &slices.first.join("scenario.toml"),
            format!("cannot read: {err}"),
        )
    })?;
    staging.write("scenario.toml", &toml)?;
    let text = finish(&staging, &slices.manifest, &sweep_csv)?;
    staging.commit()?;
    if print {
        print!("{text}");
        println!("wrote {}", out_dir.display());
    }
    Ok(())
}

/// Writes the sweep charts and returns the terminal's grid.
fn finish(staging: &Staging, head: &Manifest, sweep_csv: &[u8]) -> anyhow::Result<String> {
    let rows = grid_report::read_sweep(head.fields.len(), sweep_csv).map_err(anyhow::Error::msg)?;
    let charts = chart::sweep_charts(&head.fields, &rows).map_err(anyhow::Error::msg)?;
    for chart in &charts {
        staging.write(&format!("{}.svg", chart.name), chart.svg.as_bytes())?;
        staging.write(&format!("{}.png", chart.name), &chart.png)?;
    }
    let grid = grid_report::render(
        &head.scenario,
        &head.fields,
        &rows,
        &head.target,
        Some(head.shard_counts),
    );
    let page = crate::report::html::render_sweep(&head.scenario, &grid, &charts);
    staging.write("report.html", page.as_bytes())?;
    Ok(grid)
}

/// Simulates `held` configurations of `grid` in parallel on the current rayon pool (each
/// configuration's shard counts and replications in parallel inside it), calling `done` after
/// each; returns their blocks in the order given.
pub fn simulate_all(
    grid: &Grid,
    held: &[&Configuration],
    done: &(dyn Fn() + Sync),
) -> Result<Vec<ConfigBlock>, InputError> {
    held.par_iter()
        .map(|configuration| {
            let block = simulate(grid, configuration);
            done();
            block
        })
        .collect()
}

/// One configuration's rows, as a run of it alone would write them.
fn simulate(grid: &Grid, configuration: &Configuration) -> Result<ConfigBlock, InputError> {
    let scenario = &configuration.scenario;
    let observers = vec![NoEvents; scenario.variants().len()];
    let (runs, _) = sweep::run_replications(scenario, observers, &NoProgress)?;
    let rows: Vec<_> = runs.iter().map(|reps| summarize(scenario, reps)).collect();
    let first: Vec<_> = runs.iter().map(|reps| reps[0].clone()).collect();
    Ok(grid_report::config_block(
        configuration.index,
        &grid.fields,
        &configuration.values,
        scenario,
        &rows,
        &first,
    ))
}

/// The manifest's fields every slice of the run shares.
fn head_manifest(grid: &Grid, run: &GridRun<'_>) -> Manifest {
    let first = &grid.configurations[0].scenario;
    let version = env!("CARGO_PKG_VERSION");
    let partition = run.partition.unwrap_or(Partition {
        slice: 1,
        slices: 1,
    });
    Manifest {
        shardsim: version.to_owned(),
        scenario: first.name.clone(),
        fingerprint: partition::fingerprint(&[version, run.text, &run.overrides]),
        seed: first.seed,
        slice: partition.slice,
        slices: partition.slices,
        configurations: grid.configurations.len(),
        fields: grid.fields.clone(),
        target: target_text(first),
        shard_counts: first.shards.len(),
        held: Vec::new(),
    }
}

/// How the grid's recommendation is chosen, for the terminal.
fn target_text(scenario: &Scenario) -> String {
    if scenario.slo.is_set() {
        format!("the smallest meeting {}", describe_slo(&scenario.slo))
    } else {
        "the smallest stable at the peak".to_owned()
    }
}

fn scenario_toml(scenario: &Scenario, text: &str) -> String {
    format!(
        "# The scenario as given to shardsim {} (from {}), with its [sweep]: each configuration's\n\
         # values are the leading columns of summary.csv, timeseries.csv and sweep.csv.\n\n{text}",
        env!("CARGO_PKG_VERSION"),
        scenario.path.display()
    )
}

fn progress_bar(configurations: u64, print: bool) -> indicatif::ProgressBar {
    if !print || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(configurations);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{prefix} [{bar:40}] {pos}/{len} configurations ({eta} left)",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix("sweep");
    bar
}
