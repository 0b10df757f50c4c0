//! `shardsim run` (one scenario, a grid or a slice of one) and `shardsim merge`: simulate,
//! write the artefacts, print the summary.

use super::*;
use crate::report::artefacts::{self, OutputFile, RunResults};

pub(super) fn run_scenario(args: &RunArgs) -> anyhow::Result<()> {
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
    if args.every_run {
        return Err(InputError::flag(
            "--every-run",
            "is for a scenario with a [sweep]; a run of one configuration simulates every shard count already",
        )
        .into());
    }
    let mut scenario = grid.configurations.remove(0).scenario;
    admit(&mut scenario, &args.flags)?;
    if args.dry_run {
        let estimate = budget::estimate(&scenario, threads(&args.flags));
        return dry_run_report(
            &args.flags,
            &format!(
                "{} shard counts × {} replications",
                scenario.variants().len(),
                scenario.replications()
            ),
            estimate.requests,
            estimate.expected_bytes(scenario.queue_limit()),
        );
    }
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(scenario.name()));
    let staging = Staging::prepare(&out_dir)?;
    let pool = thread_pool(&args.flags)?;
    let bars = ProgressBars::new(
        &scenario,
        !args.flags.quiet && std::io::stderr().is_terminal(),
    );
    let simulated = pool.install(|| simulate(&scenario, &staging, args.events, &bars));
    bars.finish();
    let mut simulated = simulated?;
    let spread =
        pool.install(|| spread_recommendations(args, &overrides, &scenario, &mut simulated.rows))?;
    write_outputs(&scenario, &staging, &simulated)
        .map_err(|err| IoFailure::new(&out_dir, format!("cannot write the results: {err:#}")))?;
    staging.commit()?;
    let rows = &simulated.rows;
    let out = out_dir.display().to_string();
    match output_format(args.format, args.flags.quiet) {
        Some(Format::Json) => crate::stdout::print(json::render(&scenario, rows, &out))?,
        Some(Format::Table) => {
            crate::stdout::print(terminal::render(&scenario, rows, colour(&args.flags)))?;
            if let Some(spread) = &spread {
                crate::stdout::print(spread)?;
            }
            if scenario.regions().is_some() {
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
    if scenario.slo().is_set() && none_meets && !args.no_fail {
        return Err(Failed(format!(
            "no simulated shard count meets the target of [slo] ({}); the results are in {out}; \
             {}, or pass --no-fail to only report",
            scenario.slo(),
            crate::figures::remedy(rows)
        ))
        .into());
    }
    Ok(())
}

/// The shard counts recommended at both ends of the calibration's band (`[spread]`) beside
/// the fitted ones, in words (`None` without a band): each end's scenario simulated whole, and
/// each of `rows` given its throughput and p99 over the ends ([`crate::figures::band`]).
fn spread_recommendations(
    args: &RunArgs,
    overrides: &Overrides,
    scenario: &Scenario,
    rows: &mut [SummaryRow],
) -> anyhow::Result<Option<String>> {
    let Some(spread) = &scenario.calibration_spread() else {
        return Ok(None);
    };
    if !args.flags.quiet {
        crate::stdout::eprint_line(&format!(
            "simulating the calibration's band: every time of its machine ×{:.2} and ×{:.2}",
            spread.slower, spread.faster
        ));
    }
    let recommended = |scenario: &Scenario, rows: &[SummaryRow]| {
        by_policy(scenario, rows)
            .iter()
            .map(|group| group.recommendation.shards())
            .collect::<Vec<_>>()
    };
    let at = |scale: f64| -> anyhow::Result<Vec<SummaryRow>> {
        let overrides = Overrides {
            calibration_scale: Some(scale),
            ..overrides.clone()
        };
        let mut end = Scenario::load_grid(&args.scenario, &overrides)?
            .configurations
            .remove(0)
            .scenario;
        admit(&mut end, &args.flags)?;
        let runs = sweep::run_replications(
            &end,
            vec![NoEvents; end.variants().len()],
            &sweep::NoProgress,
        )?
        .0;
        Ok(summarize_each(&end, &runs, &StabilitySettings::default())?)
    };
    let (slow_rows, fast_rows) = (at(spread.slower)?, at(spread.faster)?);
    crate::figures::band::attach(rows, &slow_rows, &fast_rows, spread.coverage);
    let (slow, fast) = (
        recommended(scenario, &slow_rows),
        recommended(scenario, &fast_rows),
    );
    let fitted = recommended(scenario, rows);
    Ok(Some(report::terminal::spread_recommendations(
        scenario, spread, &fitted, &slow, &fast,
    )))
}

/// Runs a `[sweep]` grid (or the partition's slice of it).
pub(super) fn run_grid(
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
    if let Some(p) = partition
        && p.slices > units.len()
    {
        return Err(InputError::flag(
            "--partition",
            format!(
                "{} slices for a grid of {} units (configurations × replications): slices {} … {} would hold no work; \
                 split it into at most {} slices",
                p.slices,
                units.len(),
                units.len(),
                p.slices - 1,
                units.len()
            ),
        )
        .into());
    }
    let held: Vec<(budget::Estimate, u64)> = grid
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
            estimate.requests *= reps as f64 / f64::from(c.scenario.replications());
            (reps > 0).then_some((estimate, c.scenario.queue_limit()))
        })
        .collect();
    let estimates: Vec<budget::Estimate> = held.iter().map(|(e, _)| e.clone()).collect();
    budget::admit_grid(
        &args.scenario,
        &estimates,
        threads(&args.flags),
        &budget::Budget::of(args.flags.max_memory),
    )?;
    if args.dry_run {
        let what = match partition {
            Some(p) => format!(
                "slice {} of {}: {} of the grid's {} units (configurations × replications)",
                p.slice,
                p.slices,
                units
                    .iter()
                    .enumerate()
                    .filter(|(u, _)| p.holds(*u))
                    .count(),
                units.len()
            ),
            None => format!(
                "{} configurations, {} units (configurations × replications)",
                grid.configurations.len(),
                units.len()
            ),
        };
        let requests = estimates.iter().map(|e| e.requests).sum();
        let bytes = budget::expected_grid_bytes(&held, threads(&args.flags));
        return dry_run_report(&args.flags, &what, requests, bytes);
    }
    let text = crate::input::read_text(
        &args.scenario,
        crate::input::MAX_SCENARIO_BYTES,
        "the scenario",
    )?;
    let name = grid.configurations[0].scenario.name().to_owned();
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
        every_run: args.every_run,
    };
    let pool = thread_pool(&args.flags)?;
    pool.install(|| crate::grid::run(&grid, &run))
}

/// What `run --dry-run` says once the run is admitted: what it would simulate, its work and
/// its estimated memory against the budget.
fn dry_run_report(
    flags: &ScenarioFlags,
    what: &str,
    requests: f64,
    expected_bytes: u64,
) -> anyhow::Result<()> {
    if flags.quiet {
        return Ok(());
    }
    let limit = budget::Budget::of(flags.max_memory);
    crate::stdout::print(format!(
        "dry run: {what}; about {} requests and {} of memory ({expected_bytes} bytes) expected \
         at the peak, within {} of {}; nothing written\n",
        crate::units::quantity(requests),
        crate::units::human_bytes(expected_bytes),
        limit.source,
        crate::units::human_bytes(limit.bytes)
    ))?;
    Ok(())
}

pub(super) fn merge_slices(args: &MergeArgs) -> anyhow::Result<()> {
    crate::merge::merge(&crate::merge::MergeRequest {
        parts: &args.parts,
        out_dir: &args.out,
        rerun: args.rerun.as_deref(),
        slices: args.slices.map(|m| m as usize),
        partial: args.partial,
        print: !args.quiet,
    })
}

/// Runs every replication, streaming the first one's `events.csv` into the staging folder when
/// asked.
pub(super) fn simulate(
    scenario: &Scenario,
    staging: &Staging,
    with_events: bool,
    progress: &dyn SweepProgress,
) -> anyhow::Result<Simulated> {
    let mut regions = Vec::new();
    let runs = if let Some(plan) = &scenario.regions() {
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
                    scenario.horizon(),
                    scenario.replication_seed(0),
                    scenario.pipeline(),
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
            .map(|(index, variant)| staging.path(&format!("events-{index}-{}.part", variant.rows)))
            .collect();
        let observers = variants
            .iter()
            .zip(&parts)
            .map(|(variant, part)| {
                EventLog::create(part, scenario, variant.policy, &variant.rows.to_string())
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
    let rows = summarize_each(scenario, &runs, &StabilitySettings::default())?;
    Ok(Simulated {
        runs,
        rows,
        regions,
    })
}

pub(super) fn write_outputs(
    scenario: &Scenario,
    staging: &Staging,
    simulated: &Simulated,
) -> anyhow::Result<()> {
    let results = RunResults::new(
        scenario,
        &simulated.rows,
        &simulated.runs,
        &simulated.regions,
    );
    for artefact in artefacts::RUN_ARTEFACTS {
        if !artefact.applies(&results) {
            continue;
        }
        let files = artefact
            .render(&results)
            .with_context(|| format!("cannot render {}", artefact.name()))?;
        for file in files {
            match file {
                OutputFile::Bytes(name, bytes) => staging.write(&name, &bytes)?,
                OutputFile::Copy(name, from) => {
                    std::fs::copy(&from, staging.path(&name))?;
                }
            }
        }
    }
    Ok(())
}
