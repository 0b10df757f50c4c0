//! `shardsim calibrate` and `shardsim validate`: fit the model to a real database, and
//! compare its predictions with that database's measurements.

use super::*;

/// `shardsim calibrate`: measure, fit, write the calibration and print measured against fitted.
pub(super) fn calibrate_database(args: &CalibrateArgs) -> anyhow::Result<()> {
    use crate::calibrate::{self, Design, backend::Target};
    let target = Target::parse(&args.db)?;
    if let Some(log) = &args.server_log {
        crate::input::check_regular(log, "the server's log")?;
        std::fs::File::open(log).map_err(|err| {
            InputError::flag(
                "--server-log",
                format!("{}: cannot read it: {err}", log.display()),
            )
        })?;
    }
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
        watch_s: args.watch,
        server_log: args.server_log.clone(),
        coverage: args.coverage,
    };
    let say = |line: &str| {
        if !args.quiet {
            crate::stdout::eprint_line(line);
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
            crate::stdout::eprint_line(&format!("warning: {warning}"));
        }
    } else {
        crate::stdout::print(report::validation::calibration_table(&calibration))?;
        crate::stdout::print(format!("wrote {}\n", out.display()))?;
    }
    Ok(())
}

/// `shardsim validate`: measure and predict every point, write them, exit 1 on a miss.
pub(super) fn validate_calibration(args: &ValidateArgs) -> anyhow::Result<()> {
    use crate::calibrate::{backend::Target, validate};
    let target = Target::parse(&args.db)?;
    if !args.calibration.exists() {
        return Err(InputError::flag(
            "--calibration",
            format!(
                "{}: no such file (write one with shardsim calibrate)",
                args.calibration.display()
            ),
        )
        .into());
    }
    // A folder, a pipe or a device is named as such (opening a FIFO would wait forever).
    crate::input::check_regular(&args.calibration, "the calibration")?;
    validate::check_calibration(&args.calibration)?;
    drop(target.connect()?);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("output").join("validation"));
    let staging = Staging::prepare(&out)?;
    announce_validation(args, &target)?;
    let points = validate::POINTS + validate::PLANNER_ROWS.len();
    let steps = points as u64 * (u64::from(args.repeats) + 1);
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
    write(
        "validation.csv",
        &report::validation::validation_csv(&validation, &tolerance),
    )?;
    write("planner.csv", &report::validation::planner_csv(&validation))?;
    let chart = chart::validation_chart(&validation, args.p99_rel).map_err(anyhow::Error::msg)?;
    write("validation.svg", chart.svg.as_bytes())?;
    write("validation.png", &chart.png)?;
    staging.commit()?;
    if !args.quiet {
        crate::stdout::print(report::validation::validation_table(
            &validation,
            &tolerance,
        ))?;
        crate::stdout::print(format!("wrote {}\n", out.display()))?;
    }
    let misses = validation.misses(&tolerance);
    if misses.is_empty() {
        return Ok(());
    }
    let optimistic = match validation.optimistic_calls() {
        0 => String::new(),
        calls => format!(
            ", {} predicted to keep up that collapsed (optimistic)",
            crate::units::plural(calls as u64, "point")
        ),
    };
    Err(Failed(format!(
        "{} of {} points outside the tolerance{optimistic}: {}",
        misses.len(),
        validation.points.len(),
        misses.join("; ")
    ))
    .into())
}

/// Says what validate is about to do, the host's scheduling notice, and what the calibration
/// file warns of.
fn announce_validation(
    args: &ValidateArgs,
    target: &crate::calibrate::backend::Target,
) -> anyhow::Result<()> {
    use crate::calibrate::validate;
    let say = |line: &str| {
        if !args.quiet {
            crate::stdout::eprint_line(line);
        }
    };
    say(&format!(
        "validating {} against {}: {} points and the planner's question over {} row counts, \
         each {} s (+1 s warm-up), {} times",
        args.calibration.display(),
        target.shown(),
        validate::POINTS,
        validate::PLANNER_ROWS.len(),
        args.duration_s,
        args.repeats
    ));
    if let Some(notice) = crate::calibrate::host::scheduling_notice(target)? {
        say(notice);
    }
    if args.repeats < validate::JUDGED_REPEATS {
        crate::stdout::eprint_line(&format!(
            "warning: {} of every point make a p99 range too narrow to judge a tail by: its \
             p99 misses say less than with --repeats {} (the default)",
            crate::units::plural(u64::from(args.repeats), "measurement"),
            validate::JUDGED_REPEATS
        ));
    }
    // An unreadable calibration is reported, as bad input, where validate reads it.
    let calibration_text = crate::input::read_text(
        &args.calibration,
        crate::input::MAX_SCENARIO_BYTES,
        "the calibration",
    )
    .unwrap_or_default();
    for warning in validate::calibration_warnings(&calibration_text) {
        crate::stdout::eprint_line(&format!("warning: {warning}"));
    }
    Ok(())
}
