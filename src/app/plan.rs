//! `shardsim plan`: the smallest shard count that meets the targets at the peak, per traffic
//! level, hold shape and policy.

use super::*;

/// Replications `plan` uses when neither the scenario nor `--replications` asks for more.
pub(super) const PLAN_REPLICATIONS: u32 = 10;

/// Plans made for each configuration of a sweep (with its swept values), the sweep's fields,
/// the output folder and the largest shard count tried.
struct Planned {
    plans: Vec<(Vec<String>, crate::plan::Plan)>,
    fields: Vec<String>,
    out_dir: PathBuf,
    max_shards: u32,
}

/// `shardsim plan`: plans every traffic level, configuration and policy, writes plan.csv,
/// plan.json (and a sweep's charts), prints the answer, and fails when a plan has none.
pub(super) fn plan_capacity(args: &PlanArgs) -> anyhow::Result<()> {
    let planned = plan_all(args)?;
    let Planned {
        plans: planned,
        fields,
        out_dir,
        max_shards,
    } = planned;
    let plans: Vec<crate::plan::Plan> = planned.iter().map(|(_, p)| p.clone()).collect();
    let (json, table) = write_plans(&out_dir, &fields, &planned, &plans)?;
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

/// Plans every traffic level and configuration, each checked before any simulation.
fn plan_all(args: &PlanArgs) -> anyhow::Result<Planned> {
    if let Some(out) = &args.out {
        crate::output::check_destination(out)?;
    }
    let levels = traffic_levels(&args.flags)?;
    let pool = thread_pool(&args.flags)?;
    let mut planned = Planned {
        plans: Vec::new(),
        fields: Vec::new(),
        out_dir: PathBuf::new(),
        max_shards: args.max_shards,
    };
    let mut out_dir = args.out.clone();
    let pools = pool_sizes(args)?;
    for (level, pool_size) in levels
        .iter()
        .flat_map(|level| pools.iter().map(move |size| (level, size)))
    {
        let mut flags_overrides = overrides_at(None, &args.flags, *level);
        flags_overrides.replications = None;
        flags_overrides.pool = *pool_size;
        let grid = plan_scenario(args, &flags_overrides)?;
        if grid.is_sweep() && levels.len() > 1 {
            return Err(InputError::flag(
                "--traffic",
                "plan answers one traffic level per configuration of a [sweep]: sweep \"arrivals.scale\" instead",
            )
            .into());
        }
        if grid.is_sweep() && pools.len() > 1 {
            return Err(InputError::flag(
                "--pool",
                "plan answers one pool size per configuration of a [sweep]: sweep \"pool.size\" instead",
            )
            .into());
        }
        planned.fields.clone_from(&grid.fields);
        let ends = spread_ends(args, &flags_overrides, &grid)?;
        for (index, configuration) in grid.configurations.into_iter().enumerate() {
            let mut scenario = configuration.scenario;
            admit(&mut scenario, &args.flags)?;
            let targets = plan_targets(args, &scenario)?;
            let settings = plan_settings(args, &scenario);
            crate::plan::admit(&scenario, settings)?;
            planned.max_shards = settings.max_shards;
            out_dir.get_or_insert_with(|| plan_folder(scenario.name(), &args.flags));
            let mut plans =
                pool.install(|| crate::plan::plan_each_policy(&scenario, targets, settings))?;
            if let (Some((slow, fast)), Some(spread)) = (&ends, &scenario.calibration_spread()) {
                let at = |grid: &Grid| -> anyhow::Result<Vec<crate::plan::Plan>> {
                    let mut end = grid.configurations[index].scenario.clone();
                    admit(&mut end, &args.flags)?;
                    Ok(pool.install(|| crate::plan::plan_each_policy(&end, targets, settings))?)
                };
                let (slow, fast) = (at(slow)?, at(fast)?);
                plans = slow
                    .into_iter()
                    .zip(&plans)
                    .zip(&fast)
                    .map(|((slow, fitted), fast)| {
                        crate::plan::over_spread(slow, fitted, fast, spread)
                    })
                    .collect();
            }
            let values = configuration.values;
            planned
                .plans
                .extend(plans.into_iter().map(|p| (values.clone(), p)));
        }
    }
    planned.out_dir = out_dir.expect("at least one traffic level");
    Ok(planned)
}

/// The pool sizes `plan` answers for: each of `--pool`, else the scenario's own (`None`).
fn pool_sizes(args: &PlanArgs) -> Result<Vec<Option<u32>>, InputError> {
    let Some(sizes) = &args.pool else {
        return Ok(vec![None]);
    };
    for (i, size) in sizes.iter().enumerate() {
        if sizes[..i].contains(size) {
            return Err(InputError::flag(
                "--pool",
                format!("lists {size} twice: give each pool size once"),
            ));
        }
    }
    Ok(sizes.iter().map(|&size| Some(size)).collect())
}

/// The scenario's configurations with every time of its calibration at the slow and at the
/// fast end of the calibration's `[spread]`, when it has one.
fn spread_ends(
    args: &PlanArgs,
    overrides: &Overrides,
    grid: &Grid,
) -> anyhow::Result<Option<(Grid, Grid)>> {
    let Some(spread) = grid
        .configurations
        .first()
        .and_then(|c| c.scenario.calibration_spread().cloned())
    else {
        return Ok(None);
    };
    let at = |scale: f64| {
        let overrides = Overrides {
            calibration_scale: Some(scale),
            ..overrides.clone()
        };
        plan_scenario(args, &overrides)
    };
    Ok(Some((at(spread.slower)?, at(spread.faster)?)))
}

/// The plan's settings: the command line's, with at least [`PLAN_REPLICATIONS`].
fn plan_settings(args: &PlanArgs, scenario: &Scenario) -> PlanSettings {
    let replications = args
        .flags
        .replications
        .unwrap_or(scenario.replications().max(PLAN_REPLICATIONS));
    PlanSettings {
        max_shards: args.max_shards,
        duration_s: args.duration_s,
        warmup_s: args.warmup_s,
        replications,
        every_run: args.every_run,
    }
}

/// Writes plan.csv, plan.json and a sweep's charts into `out_dir`; returns the JSON and the
/// table to print.
fn write_plans(
    out_dir: &Path,
    fields: &[String],
    planned: &[(Vec<String>, crate::plan::Plan)],
    plans: &[crate::plan::Plan],
) -> anyhow::Result<(String, String)> {
    let staging = Staging::prepare(out_dir)?;
    let io =
        |err: std::io::Error| IoFailure::new(out_dir, format!("cannot write the results: {err}"));
    let (csv, json, table) = if fields.is_empty() {
        (
            report::plan::plan_csv(plans),
            report::plan::plan_json(plans),
            report::plan::render(plans),
        )
    } else {
        (
            report::plan::grid_plan_csv(fields, planned),
            report::plan::grid_plan_json(fields, planned),
            report::plan::render_grid(fields, planned),
        )
    };
    staging.write("plan.csv", &csv).map_err(io)?;
    staging.write("plan.json", json.as_bytes()).map_err(io)?;
    if !fields.is_empty() {
        let rows = report::plan::grid_rows(planned);
        for chart in chart::sweep_charts(fields, &rows).map_err(anyhow::Error::msg)? {
            staging
                .write(&format!("{}.svg", chart.name), chart.svg.as_bytes())
                .map_err(io)?;
            staging
                .write(&format!("{}.png", chart.name), &chart.png)
                .map_err(io)?;
        }
    }
    staging.commit()?;
    Ok((json, table))
}

/// `plan`'s default output folder: `output/<name>-plan`, with the policies `--policy` chose
/// (so plans of other policies do not replace each other).
pub(super) fn plan_folder(name: &str, flags: &ScenarioFlags) -> PathBuf {
    let policies = flags.policy.as_ref().map_or_else(String::new, |policies| {
        let names: Vec<&str> = policies.iter().map(|p| p.name()).collect();
        format!("-{}", names.join("+"))
    });
    Path::new("output").join(format!("{name}-plan{policies}"))
}

/// The traffic levels `plan` answers for: each of `--traffic`, else the scenario's own.
pub(super) fn traffic_levels(flags: &ScenarioFlags) -> Result<Vec<Option<f64>>, InputError> {
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
pub(super) fn plan_scenario(args: &PlanArgs, overrides: &Overrides) -> anyhow::Result<Grid> {
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
            if rate.is_nan() || rate < crate::scenario::MIN_RATE_PER_S {
                return Err(InputError::flag(
                    "--rate",
                    format!(
                        "must be at least {:e} per second (one in about eleven days), got {}",
                        crate::scenario::MIN_RATE_PER_S,
                        short_number(rate)
                    ),
                )
                .into());
            }
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
            let (rate_name, hold_name) = (short_number(rate), short_number(hold_ms));
            let text = format!(
                "name = \"rate-{rate_name}-hold-{hold_name}{shape}\"\ndescription = \"--rate {rate} --hold-ms {hold_ms}\"\nshards = [1]\n\
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

/// A number as a name shows it: plainly (`5000`, `0.5`), or in scientific notation when the
/// plain form is long (`1e-9`).
fn short_number(value: f64) -> String {
    let plain = value.to_string();
    if plain.len() <= 12 {
        plain
    } else {
        format!("{value:e}")
    }
}

pub(super) fn plan_targets(args: &PlanArgs, scenario: &Scenario) -> Result<Slo, InputError> {
    let from_flags = Slo {
        p99_ns: args.p99_ms.map(ms_f64_to_ns),
        p999_ns: args.p999_ms.map(ms_f64_to_ns),
        max_utilization: args.max_utilization,
    };
    let targets = if from_flags.is_set() {
        from_flags
    } else {
        scenario.slo()
    };
    if !targets.is_set() {
        return Err(InputError::flag(
            "--p99-ms",
            "no target: give --p99-ms, --p999-ms or --max-utilization, or set [slo] in the scenario",
        ));
    }
    Ok(targets)
}
