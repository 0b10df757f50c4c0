//! Running a grid sweep (see [`crate::scenario::grid`]): every configuration — or a
//! partition's share of them — simulated on every core, configurations in parallel and each
//! configuration's shard counts and replications in parallel inside it; then the tidy CSVs,
//! the sweep chart and the terminal's grid. A partition's slice runs its units
//! (configuration × replication) and keeps their runs; `shardsim merge` ([`crate::merge`])
//! summarises them into the same output.

use std::io::IsTerminal;
use std::path::Path;

use rayon::prelude::*;

use crate::answer;
use crate::error::{Failed, InputError};
use crate::figures::summarize_each;
use crate::model::NoEvents;
use crate::output::Staging;
use crate::partition::{self, Manifest, Partition};
use crate::report::chart;
use crate::report::grid::{self as grid_report, ConfigBlock};
use crate::scenario::Scenario;
use crate::scenario::grid::{Configuration, Grid};
use crate::stability::StabilitySettings;
use crate::sweep::{self, NoProgress};

/// What a grid run needs besides its grid.
#[derive(Debug)]
pub struct GridRun<'a> {
    /// The scenario file (recorded absolute in a slice's manifest, for the merge).
    pub(crate) path: &'a Path,
    /// The scenario file's text (written to `scenario.toml`, and fingerprinted).
    pub(crate) text: &'a str,
    /// The command line's overrides (fingerprinted and recorded: slices of one run share them).
    pub(crate) overrides: &'a crate::scenario::Overrides,
    /// The slice to run, or all of it.
    pub(crate) partition: Option<Partition>,
    /// The output folder.
    pub(crate) out_dir: &'a Path,
    /// Whether to print.
    pub(crate) print: bool,
    /// Exit 0 even when a configuration meets no target (`--no-fail`).
    pub(crate) no_fail: bool,
    /// Simulate every shard count of every configuration and write `summary.csv` and
    /// `timeseries.csv` (`--every-run`), not only what the answer needs.
    pub(crate) every_run: bool,
}

/// Simulates `grid` — every configuration, or the units of the run's slice — and writes its
/// output. Each configuration must have been admitted (its queue limit set) already.
pub fn run(grid: &Grid, run: &GridRun<'_>) -> anyhow::Result<()> {
    if let Some(partition) = run.partition {
        return run_slice(grid, run, partition);
    }
    let held: Vec<&Configuration> = grid.configurations.iter().collect();
    let staging = Staging::prepare(run.out_dir)?;
    let answer_only = !run.every_run
        && grid
            .configurations
            .iter()
            .all(|c| answer::can_search(&c.scenario));
    let blocks = if answer_only {
        search_with_progress(&held, run.print)
    } else {
        let bar = progress_bar(held.len() as u64, "configurations", run.print);
        let blocks = simulate_all(grid, &held, &|| bar.inc(1));
        bar.finish_and_clear();
        blocks
    };
    let mut blocks = blocks?;
    let head = head_manifest(
        grid,
        run,
        Partition {
            slice: 0,
            slices: 1,
        },
    )?;
    let first = &grid.configurations[0].scenario;
    let sweep_csv = if answer_only {
        let [_, _, sweep_csv] = grid_report::assemble(&grid.fields, &mut blocks);
        staging.write("sweep.csv", &sweep_csv)?;
        sweep_csv
    } else {
        write_csvs(&staging, &grid.fields, &mut blocks)?
    };
    staging.write("scenario.toml", scenario_toml(first, run.text).as_bytes())?;
    let text = finish(&staging, &head, &sweep_csv, !answer_only)?;
    staging.commit()?;
    if run.print {
        crate::stdout::print(&text)?;
        crate::stdout::print(format!("wrote {}\n", run.out_dir.display()))?;
    }
    let rows =
        grid_report::read_sweep(grid.fields.len(), &sweep_csv).map_err(anyhow::Error::msg)?;
    let unmet = rows.iter().filter(|r| r.recommended.is_none()).count();
    if first.slo().is_set() && unmet > 0 && !run.no_fail {
        let mut remedies: Vec<&str> = blocks.iter().filter_map(|block| block.remedy).collect();
        remedies.sort_unstable();
        remedies.dedup();
        let remedy = match remedies.as_slice() {
            [one] => (*one).to_owned(),
            several => format!("for each: {}", several.join("; or ")),
        };
        return Err(Failed(format!(
            "{unmet} of the {} configurations × policies meet no target of [slo] ({}) at any simulated shard count; \
             the results are in {}; {remedy}, or pass --no-fail to only report",
            rows.len(),
            first.slo(),
            run.out_dir.display()
        ))
        .into());
    }
    Ok(())
}

/// Simulates the units (configuration, replication) of one slice and writes their runs and
/// the slice's manifest.
fn run_slice(grid: &Grid, run: &GridRun<'_>, partition: Partition) -> anyhow::Result<()> {
    let held: Vec<(usize, u32)> = partition::units(grid)
        .into_iter()
        .enumerate()
        .filter(|(unit, _)| partition.holds(*unit))
        .map(|(_, unit)| unit)
        .collect();
    let staging = Staging::prepare(run.out_dir)?;
    let bar = progress_bar(held.len() as u64, "units", run.print);
    let mut by_configuration: Vec<(usize, Vec<u32>)> = Vec::new();
    for &(configuration, replication) in &held {
        match by_configuration.last_mut() {
            Some((c, reps)) if *c == configuration => reps.push(replication),
            _ => by_configuration.push((configuration, vec![replication])),
        }
    }
    let done: Result<Vec<Vec<partition::UnitRuns>>, InputError> = by_configuration
        .par_iter()
        .map(|(configuration, replications)| {
            let scenario = &grid.configurations[*configuration].scenario;
            let runs = sweep::run_some_replications(scenario, replications)?;
            bar.inc(replications.len() as u64);
            Ok(replications
                .iter()
                .zip(runs)
                .map(|(&replication, runs)| partition::UnitRuns {
                    configuration: *configuration,
                    replication,
                    runs,
                })
                .collect())
        })
        .collect();
    bar.finish_and_clear();
    let mut lines = String::new();
    for unit in done?.into_iter().flatten() {
        lines.push_str(&serde_json::to_string(&unit)?);
        lines.push('\n');
    }
    staging.write(partition::RUNS, lines.as_bytes())?;
    let manifest = Manifest {
        held: held.clone(),
        runs_fingerprint: partition::fingerprint(&[&lines]),
        ..head_manifest(grid, run, partition)?
    };
    let json = serde_json::to_string_pretty(&manifest)? + "\n";
    staging.write(partition::MANIFEST, json.as_bytes())?;
    let first = &grid.configurations[0].scenario;
    staging.write("scenario.toml", scenario_toml(first, run.text).as_bytes())?;
    staging.commit()?;
    if run.print {
        crate::stdout::print(format!(
            "{}: slice {} of {} — {} of the {} units (configurations × replications)\n",
            first.name(),
            partition.slice,
            partition.slices,
            held.len(),
            manifest.units
        ))?;
        crate::stdout::print(format!("wrote {}\n", run.out_dir.display()))?;
    }
    Ok(())
}

/// Whether one of two folders is, or lies inside, the other (as the file system resolves them;
/// a folder that does not exist yet by its parent's resolved path).
pub(crate) fn overlaps(a: &Path, b: &Path) -> bool {
    let resolve = |path: &Path| {
        std::fs::canonicalize(path).ok().or_else(|| {
            let parent = match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            };
            Some(std::fs::canonicalize(parent).ok()?.join(path.file_name()?))
        })
    };
    match (resolve(a), resolve(b)) {
        (Some(a), Some(b)) => a.starts_with(&b) || b.starts_with(&a),
        _ => false,
    }
}

/// Writes the grid's `summary.csv`, `timeseries.csv` and `sweep.csv` from its blocks and
/// returns `sweep.csv`.
fn write_csvs(
    staging: &Staging,
    fields: &[String],
    blocks: &mut [ConfigBlock],
) -> std::io::Result<Vec<u8>> {
    let [summary, timeseries, sweep_csv] = grid_report::assemble(fields, blocks);
    staging.write("summary.csv", &summary)?;
    staging.write("timeseries.csv", &timeseries)?;
    staging.write("sweep.csv", &sweep_csv)?;
    Ok(sweep_csv)
}

/// Writes the sweep charts and returns the terminal's grid.
pub(crate) fn finish(
    staging: &Staging,
    head: &Manifest,
    sweep_csv: &[u8],
    every_run: bool,
) -> anyhow::Result<String> {
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
    let page = crate::report::html::render_sweep(&head.scenario, &grid, &charts, every_run);
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

/// Finds the answer of `held` configurations in parallel on the current rayon pool
/// ([`answer::search`]), telling `progress` of each round's work; returns their blocks
/// (`sweep.csv` rows only) in the order given.
pub fn search_all(
    held: &[&Configuration],
    progress: &(dyn Fn(answer::Work) + Sync),
) -> Result<Vec<ConfigBlock>, InputError> {
    held.par_iter()
        .map(|configuration| Ok(answer::search(configuration, progress)?.0))
        .collect()
}

/// [`search_all`] with a progress bar counting increments: first what the first rounds are
/// known to simulate (said before they start, beside what every run would), each later round
/// added once the runs before it have shown it is needed.
fn search_with_progress(
    held: &[&Configuration],
    print: bool,
) -> Result<Vec<ConfigBlock>, InputError> {
    let first: u64 = held
        .iter()
        .map(|c| answer::first_round_increments(&c.scenario))
        .sum();
    let bar = progress_bar(first, "increments", print);
    if !bar.is_hidden() {
        let every: u64 = held
            .iter()
            .map(|c| {
                let scenario = &c.scenario;
                scenario
                    .expected_arrivals()
                    .saturating_mul(scenario.variants().len() as u64)
                    .saturating_mul(u64::from(scenario.replications()))
            })
            .sum();
        bar.println(format!(
            "sweep: about {} increments decide the answers at first (every run: {}); more \
             only where a shard count falls short",
            crate::units::quantity(first as f64),
            crate::units::quantity(every as f64)
        ));
    }
    let blocks = search_all(held, &|work| match work {
        answer::Work::Planned(more) => bar.inc_length(more),
        answer::Work::Done(done) => bar.inc(done),
    });
    bar.finish_and_clear();
    blocks
}

/// One configuration's rows, as a run of it alone would write them.
fn simulate(grid: &Grid, configuration: &Configuration) -> Result<ConfigBlock, InputError> {
    let scenario = &configuration.scenario;
    let observers = vec![NoEvents; scenario.variants().len()];
    let (runs, _) = sweep::run_replications(scenario, observers, &NoProgress)?;
    block_of(grid, configuration, runs)
}

/// A configuration's block from its runs (per shard count, its replications in order; each
/// shard count's first replication moves into the block's series, the others are dropped).
pub(crate) fn block_of(
    grid: &Grid,
    configuration: &Configuration,
    runs: Vec<Vec<crate::model::ShardRun>>,
) -> Result<ConfigBlock, InputError> {
    let scenario = &configuration.scenario;
    let rows = summarize_each(scenario, &runs, &StabilitySettings::default())?;
    let first: Vec<_> = runs
        .into_iter()
        .map(|mut reps| reps.swap_remove(0))
        .collect();
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
fn head_manifest(grid: &Grid, run: &GridRun<'_>, partition: Partition) -> anyhow::Result<Manifest> {
    let first = &grid.configurations[0].scenario;
    let version = env!("CARGO_PKG_VERSION");
    let scenario_path = std::fs::canonicalize(run.path).map_err(|err| {
        InputError::file(
            run.path,
            format!("cannot resolve the scenario's path: {err}"),
        )
    })?;
    Ok(Manifest {
        shardsim: version.to_owned(),
        scenario: first.name().to_owned(),
        scenario_path,
        overrides: run.overrides.clone(),
        fingerprint: partition::run_fingerprint(run.text, run.overrides),
        seed: first.seed(),
        slice: partition.slice,
        slices: partition.slices,
        configurations: grid.configurations.len(),
        units: partition::units(grid).len(),
        fields: grid.fields.clone(),
        target: target_text(first),
        shard_counts: first.shards().len(),
        held: Vec::new(),
        runs_fingerprint: String::new(),
        covers: Vec::new(),
        finished: Vec::new(),
        blocks_fingerprint: String::new(),
    })
}

/// How the grid's recommendation is chosen, for the terminal.
fn target_text(scenario: &Scenario) -> String {
    if scenario.slo().is_set() {
        format!("the smallest meeting {}", scenario.slo())
    } else {
        "the smallest stable at the peak".to_owned()
    }
}

fn scenario_toml(scenario: &Scenario, text: &str) -> String {
    format!(
        "# The scenario as given to shardsim {} (from {}), with its [sweep]: each configuration's\n\
         # values are the leading columns of summary.csv, timeseries.csv and sweep.csv.\n\n{text}",
        env!("CARGO_PKG_VERSION"),
        scenario.path().display()
    )
}

fn progress_bar(count: u64, what: &str, print: bool) -> indicatif::ProgressBar {
    if !print || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(count);
    let counts = if what == "increments" {
        "{human_pos}/{human_len}"
    } else {
        "{pos}/{len}"
    };
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{{prefix}} [{{bar:40}}] {counts} {what} ({{eta}} left)"
    )) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix("sweep");
    bar
}
