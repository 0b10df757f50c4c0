//! `shardsim check`: a fresh run's summary against the committed baseline.

use super::*;

/// Whether two paths name one existing file.
pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether a line is the header of a `summary.csv` (a baseline `--update` may replace).
pub(super) fn is_summary_header(line: &str) -> bool {
    let columns: Vec<&str> = line.split(',').collect();
    ["scenario", "shards", "wait_p99_ms"]
        .iter()
        .all(|name| columns.contains(name))
}

/// The baseline `check` compares with: `--baseline`, else `baselines/<name>.csv` in the
/// scenario's folder.
pub(super) fn baseline_path(args: &CheckArgs, scenario: &Scenario) -> PathBuf {
    args.baseline.clone().unwrap_or_else(|| {
        let folder = scenario.path().parent().unwrap_or(Path::new(""));
        folder
            .join("baselines")
            .join(format!("{}.csv", scenario.name()))
    })
}

/// The summary `check` compares: the scenario's, or a sweep's (every configuration, led by
/// its swept fields).
pub(super) fn checked_summary(
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

/// `shardsim check`: runs the scenario (every configuration of a sweep) and compares its
/// summary with the baseline, or writes the baseline with `--update`.
pub(super) fn check_baseline(args: &CheckArgs) -> anyhow::Result<()> {
    let mut grid = Scenario::load_grid(
        &args.scenario,
        &overrides(args.shards.as_ref(), &args.flags)?,
    )?;
    for configuration in &mut grid.configurations {
        admit(&mut configuration.scenario, &args.flags)?;
    }
    // A sweep is checked by its first configuration's name and tolerances.
    let scenario = grid.configurations[0].scenario.clone();
    let flags = crate::check::Flags {
        rel: args.rel,
        abs_ms: args.abs_ms,
        abs_count: args.abs_count,
    };
    let tolerances = Tolerances::resolve(flags, scenario.check(), &args.scenario)?;
    let baseline_path = baseline_path(args, &scenario);
    refuse_junit_over_inputs(args, &baseline_path)?;
    let shown = baseline_path.display().to_string();
    let baseline = if args.update {
        None
    } else {
        Some(read_baseline(&baseline_path, &grid)?)
    };
    let current_csv = checked_summary(&grid, &args.flags)?;
    let format = output_format(args.format, args.flags.quiet);
    let Some(baseline) = baseline else {
        return update_baseline(args, &baseline_path, &current_csv, format.is_some());
    };
    let current_text = String::from_utf8(current_csv).expect("the summary is UTF-8");
    let current =
        crate::check::parse_summary(Path::new("(this run)"), &current_text, &grid.fields)?;
    let (baseline, baseline_header) = baseline;
    let ignored = crate::check::ignored_columns(
        &baseline_header,
        current_text.lines().next().unwrap_or_default(),
    );
    if !ignored.is_empty() && !args.flags.quiet {
        eprintln!("note: {shown} {}", describe_ignored(&ignored));
    }
    let moves = crate::check::compare(&baseline_path, &baseline, &current, &tolerances)?;
    let outcome = report::check::Outcome {
        scenario: scenario.name(),
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
    failed_columns(&outcome, scenario.name(), &shown)
}

/// `--junit` must not name the scenario or the baseline, which check reads.
fn refuse_junit_over_inputs(args: &CheckArgs, baseline_path: &Path) -> Result<(), InputError> {
    let Some(junit) = &args.junit else {
        return Ok(());
    };
    for (input, what) in [
        (args.scenario.as_path(), "the scenario"),
        (baseline_path, "the baseline"),
    ] {
        if same_file(junit, input) {
            return Err(InputError::flag(
                "--junit",
                format!(
                    "{} is {what} check reads: name another file for the report",
                    junit.display()
                ),
            ));
        }
    }
    Ok(())
}

/// What the columns a baseline has and this run does not write are: a feature's columns,
/// named by their features, and any other column by its name.
fn describe_ignored(ignored: &[String]) -> String {
    use crate::figures::columns::Feature;
    let mut features: Vec<&str> = Vec::new();
    let mut others: Vec<&str> = Vec::new();
    for column in ignored {
        match Feature::of(column) {
            Feature::Always => others.push(column),
            feature if !features.contains(&feature.name()) => features.push(feature.name()),
            _ => {}
        }
    }
    let mut parts = Vec::new();
    if !features.is_empty() {
        parts.push(format!(
            "has the columns of features this run does not have ({}), read as empty",
            features.join(", ")
        ));
    }
    if !others.is_empty() {
        parts.push(format!(
            "has columns shardsim no longer writes ({}), ignored",
            others.join(", ")
        ));
    }
    format!("{}; --update drops them", parts.join("; "))
}

/// The committed baseline, read and parsed.
fn read_baseline(
    baseline_path: &Path,
    grid: &Grid,
) -> Result<(crate::check::Summary, String), InputError> {
    if !baseline_path.exists() {
        return Err(InputError::file(
            baseline_path,
            "cannot read the baseline (there is no such file yet): create it with --update",
        ));
    }
    let text = crate::input::read_text(
        baseline_path,
        crate::input::MAX_BASELINE_BYTES,
        "the baseline",
    )?;
    let header = text.lines().next().unwrap_or_default().to_owned();
    Ok((
        crate::check::parse_summary(baseline_path, &text, &grid.fields)?,
        header,
    ))
}

/// `--update`: writes this run's summary as the baseline (replacing only a summary).
fn update_baseline(
    args: &CheckArgs,
    baseline_path: &Path,
    current_csv: &[u8],
    say: bool,
) -> anyhow::Result<()> {
    let is_summary = |head: &[u8]| {
        String::from_utf8_lossy(head)
            .lines()
            .next()
            .is_some_and(is_summary_header)
    };
    write_file(
        baseline_path,
        current_csv,
        &is_summary,
        args.overwrite,
        "baseline",
    )?;
    if say {
        crate::stdout::print(format!("updated {}\n", baseline_path.display()))?;
    }
    Ok(())
}

/// Fails (exit 1) naming the columns and shard counts that moved beyond tolerance, if any.
fn failed_columns(
    outcome: &report::check::Outcome<'_>,
    scenario: &str,
    shown: &str,
) -> anyhow::Result<()> {
    let failing: Vec<&crate::check::Move> =
        outcome.moves.iter().filter(|m| outcome.fails(m)).collect();
    if failing.is_empty() {
        return Ok(());
    }
    let mut columns: Vec<&str> = failing.iter().map(|m| m.column).collect();
    columns.sort_unstable();
    columns.dedup();
    let mut shards: Vec<u32> = failing.iter().map(|m| m.shards).collect();
    shards.dedup();
    Err(Failed(format!(
        "{scenario}: {} moved beyond tolerance against {shown}: {} (shard counts {shards:?})",
        if failing.len() == 1 {
            "1 value".to_owned()
        } else {
            format!("{} values", failing.len())
        },
        columns.join(", ")
    ))
    .into())
}
