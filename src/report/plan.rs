//! The artefacts of `shardsim plan`: the answer with its evidence as text, `plan.csv` (one row
//! per simulated shard count) and `plan.json`.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::plan::{COMFORTABLE_SHARE, Evaluation, Plan};
use crate::stability::StabilityFigures;
use crate::stats::WaitSummary;
use crate::time::fmt_ms;

use super::csv::decimal;
use super::units;
use crate::units::compact;

/// The columns of `plan.csv`, in order.
pub const PLAN_COLUMNS: [&str; 27] = [
    "scenario",
    "policy",
    "traffic",
    "pool",
    "shards",
    "meets",
    "peak_offered_per_s",
    "ceiling_per_s",
    "peak_utilization",
    "utilization",
    "stability",
    "advertised_capacity_per_s",
    "hidden_capacity_per_s",
    "trigger",
    "recovery_s",
    "replications",
    "wait_mean_ms",
    "wait_p99_ms",
    "wait_p99_ms_lo",
    "wait_p99_ms_hi",
    "wait_p999_ms",
    "wait_p999_ms_lo",
    "wait_p999_ms_hi",
    "theory_model",
    "theory_wait_mean_ms",
    "theory_wait_p99_ms",
    "theory_wait_p999_ms",
];

/// Renders `plan.csv`.
pub fn plan_csv(plans: &[Plan]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut write = |fields: Vec<String>| {
        writer
            .write_record(fields)
            .expect("writing CSV to memory cannot fail");
    };
    write(PLAN_COLUMNS.iter().map(|c| c.to_string()).collect());
    for (plan, evaluation) in plans
        .iter()
        .flat_map(|plan| plan.evaluations.values().map(move |e| (plan, e)))
    {
        let row = &evaluation.row;
        let bound = |summary: &Option<WaitSummary>, ns: fn(&WaitSummary) -> u64| {
            summary.as_ref().map(|s| fmt_ms(ns(s))).unwrap_or_default()
        };
        let theory = |value: fn(&crate::plan::Theory) -> f64| {
            evaluation
                .theory
                .map(|t| decimal(value(&t), 6))
                .unwrap_or_default()
        };
        let probed = row.stability();
        let capacity =
            |of: fn(&StabilityFigures) -> f64| probed.map_or(String::new(), |p| decimal(of(p), 1));
        write(vec![
            plan.scenario.clone(),
            plan.policy.to_string(),
            plan.traffic.to_string(),
            plan.pool.map_or(String::new(), |size| size.to_string()),
            row.shards().to_string(),
            evaluation.meets.to_string(),
            decimal(row.peak_offered_per_s, 3),
            decimal(row.ceiling_per_s, 3),
            decimal(row.peak_utilization(), 4),
            decimal(row.bottleneck_utilization(), 4),
            probed.map_or(String::new(), |p| p.stability().name().to_owned()),
            capacity(StabilityFigures::advertised_per_s),
            capacity(StabilityFigures::hidden_per_s),
            probed
                .and_then(StabilityFigures::trigger)
                .map_or(String::new(), |t| t.name().to_owned()),
            probed
                .and_then(StabilityFigures::slowest)
                .map_or(String::new(), |(_, after)| {
                    decimal(crate::time::ns_to_s(after), 3)
                }),
            row.replications.to_string(),
            fmt_ms(row.waits.mean_ns),
            fmt_ms(row.waits.p99_ns),
            bound(&row.waits_lo, |s| s.p99_ns),
            bound(&row.waits_hi, |s| s.p99_ns),
            fmt_ms(row.waits.p999_ns),
            bound(&row.waits_lo, |s| s.p999_ns),
            bound(&row.waits_hi, |s| s.p999_ns),
            evaluation
                .theory
                .map(|t| t.model.to_owned())
                .unwrap_or_default(),
            theory(|t| t.mean_ms),
            theory(|t| t.p99_ms),
            theory(|t| t.p999_ms),
        ]);
    }
    writer
        .into_inner()
        .expect("flushing CSV to memory cannot fail")
}

/// Renders `plan.json`: one plan's document, or `{"plans": [...]}` with one per policy and
/// traffic level.
pub fn plan_json(plans: &[Plan]) -> String {
    let document = match plans {
        [one] => plan_document(one),
        many => json!({ "plans": many.iter().map(plan_document).collect::<Vec<_>>() }),
    };
    let mut text = serde_json::to_string_pretty(&document).expect("JSON values always render");
    text.push('\n');
    text
}

/// One plan's answer, the evidence at N − 1 and N, the analytic estimates and every simulated
/// shard count.
fn plan_document(plan: &Plan) -> Value {
    let ms = crate::time::ns_to_ms;
    let evaluation_json = |evaluation: &Evaluation| {
        let row = &evaluation.row;
        let interval = |ns: fn(&WaitSummary) -> u64| match (&row.waits_lo, &row.waits_hi) {
            (Some(lo), Some(hi)) => json!([ms(ns(lo)), ms(ns(hi))]),
            _ => Value::Null,
        };
        let probed = row.stability();
        json!({
            "shards": row.shards(),
            "meets": evaluation.meets,
            "peak_utilization": row.peak_utilization(),
            "utilization": row.bottleneck_utilization(),
            "stability": probed.map(|p| p.stability().name()),
            "advertised_capacity_per_s": probed.map(StabilityFigures::advertised_per_s),
            "hidden_capacity_per_s": probed.map(StabilityFigures::hidden_per_s),
            "trigger": probed.and_then(StabilityFigures::trigger).map(|t| t.name()),
            "recovery_s": probed
                .and_then(StabilityFigures::slowest)
                .map(|(_, after)| crate::time::ns_to_s(after)),
            "ceiling_per_s": row.ceiling_per_s,
            "wait_mean_ms": ms(row.waits.mean_ns),
            "wait_p99_ms": ms(row.waits.p99_ns),
            "wait_p99_ms_ci": interval(|s| s.p99_ns),
            "wait_p999_ms": ms(row.waits.p999_ns),
            "wait_p999_ms_ci": interval(|s| s.p999_ns),
            "theory": evaluation.theory.map(|t| json!({
                "model": t.model,
                "wait_mean_ms": t.mean_ms,
                "wait_p99_ms": t.p99_ms,
                "wait_p999_ms": t.p999_ms,
                "p99_difference": relative(ms(row.waits.p99_ns), t.p99_ms),
            })),
        })
    };
    let at = |shards: Option<u32>| {
        shards
            .and_then(|n| plan.evaluations.get(&n))
            .map_or(Value::Null, evaluation_json)
    };
    json!({
        "scenario": plan.scenario,
        "answer_shards": plan.answer,
        "reason": plan.unmet_reason,
        "peak_per_s": plan.peak_per_s,
        "mean_hold_ms": plan.mean_hold_ms,
        "hold_dist": plan.hold_dist,
        "policy": plan.policy.to_string(),
        "traffic": plan.traffic,
        "pool": plan.pool,
        "targets": {
            "p99_ms": plan.targets.p99_ns.map(ms),
            "p999_ms": plan.targets.p999_ns.map(ms),
            "max_utilization": plan.targets.max_utilization,
        },
        "simulation": {
            "replications": plan.settings.replications,
            "duration_s": plan.settings.duration_s,
            "warmup_s": plan.settings.warmup_s,
            "max_shards": plan.settings.max_shards,
        },
        "spread": plan.spread.as_ref().map(|spread| json!({
            "slower": spread.slower,
            "faster": spread.faster,
            "coverage": spread.coverage,
            "answer_at_slower": spread.at_slower,
            "answer_as_fitted": spread.as_fitted,
            "answer_at_faster": spread.at_faster,
        })),
        "evidence": {
            "below": at(plan.answer.filter(|&n| n > 1).map(|n| n - 1)),
            "answer": at(plan.answer),
        },
        "analytic": {
            "utilization_shards": plan.utilization_shards,
            "rule_of_thumb_shards": plan.rule_of_thumb_shards,
            "theory_shards": plan.theory_shards,
        },
        "evaluations": plan.evaluations.values().map(evaluation_json).collect::<Vec<_>>(),
        "unsimulated": plan
            .unsimulated
            .iter()
            .map(|(shards, utilization)| json!({"shards": shards, "peak_utilization": utilization}))
            .collect::<Vec<_>>(),
    })
}

/// Renders every plan's answer and evidence for the terminal, one block per plan, then —
/// with several traffic levels — the answers side by side.
pub fn render(plans: &[Plan]) -> String {
    let blocks: Vec<String> = plans.iter().map(render_one).collect();
    let mut out = blocks.join("\n");
    if plans.iter().any(|plan| plan.traffic != plans[0].traffic) {
        out.push('\n');
        out.push_str(&render_traffic_table(plans));
    }
    if plans.iter().any(|plan| plan.pool != plans[0].pool) {
        out.push('\n');
        out.push_str(&render_pool_table(plans));
    }
    out
}

/// The shard count each pool size needs, one row per pool size and one column per policy
/// (at the first traffic level), then the answers in one sentence per policy.
fn render_pool_table(plans: &[Plan]) -> String {
    let traffic = plans[0].traffic;
    let at_level: Vec<&Plan> = plans.iter().filter(|p| p.traffic == traffic).collect();
    let mut policies: Vec<crate::model::Policy> = Vec::new();
    let mut pools: Vec<Option<u32>> = Vec::new();
    for plan in &at_level {
        if !policies.contains(&plan.policy) {
            policies.push(plan.policy);
        }
        if !pools.contains(&plan.pool) {
            pools.push(plan.pool);
        }
    }
    let width = |policy: &crate::model::Policy| policy.name().len().max(6);
    let mut out = String::new();
    let _ = writeln!(out, "shards needed per pool size ({}):", plans[0].targets);
    let _ = write!(out, "{:>6}", "pool");
    for policy in &policies {
        let _ = write!(out, "  {:>w$}", policy.name(), w = width(policy));
    }
    out.push('\n');
    for pool in &pools {
        let _ = write!(out, "{:>6}", pool_name(*pool));
        for policy in &policies {
            let shown = at_level
                .iter()
                .find(|p| p.pool == *pool && p.policy == *policy)
                .map_or("—".to_owned(), |p| {
                    p.answer
                        .map_or(format!("> {}", p.settings.max_shards), |n| n.to_string())
                });
            let _ = write!(out, "  {:>w$}", shown, w = width(policy));
        }
        out.push('\n');
    }
    for policy in &policies {
        let choices: Vec<String> = at_level
            .iter()
            .filter(|p| p.policy == *policy)
            .filter_map(|p| {
                let rows = units::plural(u64::from(p.answer?), "row");
                Some(format!("{rows} with a pool of {}", pool_name(p.pool)))
            })
            .collect();
        let _ = writeln!(
            out,
            "answer{}: {}",
            if policies.len() > 1 {
                format!(" ({policy})")
            } else {
                String::new()
            },
            if choices.is_empty() {
                "no pool size meets the target".to_owned()
            } else {
                choices.join(", or ")
            }
        );
    }
    out
}

/// A pool's size as the pool table shows it (`none` without a pool).
fn pool_name(pool: Option<u32>) -> String {
    pool.map_or("none".to_owned(), |size| size.to_string())
}

/// The shard count each traffic level needs, one row per level and one column per policy.
fn render_traffic_table(plans: &[Plan]) -> String {
    let mut policies: Vec<crate::model::Policy> = Vec::new();
    let mut levels: Vec<(f64, f64)> = Vec::new();
    for plan in plans {
        if !policies.contains(&plan.policy) {
            policies.push(plan.policy);
        }
        if !levels.iter().any(|&(traffic, _)| traffic == plan.traffic) {
            levels.push((plan.traffic, plan.peak_per_s));
        }
    }
    let width = |policy: &crate::model::Policy| policy.name().len().max(6);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "shards needed per traffic level ({}):",
        plans[0].targets
    );
    let _ = write!(out, "{:>8}  {:>9}", "traffic", "peak/s");
    for policy in &policies {
        let _ = write!(out, "  {:>w$}", policy.name(), w = width(policy));
    }
    out.push('\n');
    for (traffic, peak) in levels {
        let _ = write!(
            out,
            "{:>8}  {:>9}",
            format!("×{}", compact(traffic)),
            units::quantity(peak)
        );
        for policy in &policies {
            let answer = plans
                .iter()
                .find(|p| p.traffic == traffic && p.policy == *policy)
                .map_or("—".to_owned(), |p| {
                    p.answer
                        .map_or(format!("> {}", p.settings.max_shards), |n| n.to_string())
                });
            let _ = write!(out, "  {:>w$}", answer, w = width(policy));
        }
        out.push('\n');
    }
    out
}

/// Renders one plan's answer and its evidence.
fn render_one(plan: &Plan) -> String {
    let mut out = String::new();
    write_question(&mut out, plan);
    write_answer(&mut out, plan);
    write_spread(&mut out, plan);
    if let Some(note) = &plan.stall_note {
        out += &units::wrap(&format!("stalls: {note}"), 100);
        out.push('\n');
    }
    write_evidence(&mut out, plan);
    write_capacities(&mut out, plan);
    write_estimates(&mut out, plan);
    out
}

/// Every probed shard count's capacities and its stability at the peak: what a stall or a
/// burst does to it, and for a metastable count what tips it.
fn write_capacities(out: &mut String, plan: &Plan) {
    let probed: Vec<(u32, &StabilityFigures)> = plan
        .evaluations
        .values()
        .filter_map(|e| Some((e.row.shards(), e.row.stability()?)))
        .collect();
    let Some((_, first)) = probed.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "\ncapacities (advertised: kept up from empty; hidden: recovered from every trigger within \
         {} s; a pool of {}):",
        compact(first.recovery_s()),
        first.population()
    );
    let _ = writeln!(
        out,
        "{:>7}  {:>13}  {:>9}  {:>10}  at the peak",
        "shards", "advertised/s", "hidden/s", "stability"
    );
    for (shards, figures) in probed {
        let _ = writeln!(
            out,
            "{:>7}  {:>13}  {:>9}  {:>10}  {}",
            shards,
            units::quantity(figures.advertised_per_s()),
            units::quantity(figures.hidden_per_s()),
            figures.stability().name(),
            super::extended::stability_words(figures)
        );
    }
}

/// What was asked: the scenario at its peak, and the target.
fn write_question(out: &mut String, plan: &Plan) {
    let _ = writeln!(
        out,
        "plan for {}{}{}: peak {}/s, mean hold {} ms ({}{}), policy {}",
        plan.scenario,
        if plan.traffic == 1.0 {
            String::new()
        } else {
            format!(" at traffic ×{}", compact(plan.traffic))
        },
        plan.pool
            .map_or(String::new(), |size| format!(" through a pool of {size}")),
        units::quantity(plan.peak_per_s),
        compact(plan.mean_hold_ms),
        plan.hold_dist,
        if plan.has_machine {
            format!(" draw, with {}", plan.machine_words)
        } else {
            String::new()
        },
        plan.policy
    );
    let _ = writeln!(
        out,
        "target: {} — judged by the upper end of a 95% interval over {} replications of {} s at the peak",
        plan.targets,
        plan.settings.replications,
        compact(plan.settings.duration_s)
    );
}

/// The answer: the smallest shard count that meets the target, or why none does.
fn write_answer(out: &mut String, plan: &Plan) {
    match plan.answer {
        Some(n) => {
            let range = plan.spread.as_ref().map_or(String::new(), |spread| {
                format!(
                    " ({} over what the database did during its calibration)",
                    spread.range()
                )
            });
            let _ = writeln!(
                out,
                "answer: {}{range}",
                units::plural(u64::from(n), "shard")
            );
        }
        None => {
            let reason = plan
                .unmet_reason
                .as_deref()
                .unwrap_or("no shard count meets it");
            let _ = writeln!(
                out,
                "answer: none up to {} shards — {reason}",
                plan.settings.max_shards
            );
        }
    }
}

/// The answers over the calibration's spread, and which end the figures below are.
fn write_spread(out: &mut String, plan: &Plan) {
    let Some(spread) = &plan.spread else {
        return;
    };
    let answer = |n: Option<u32>| n.map_or("none".to_owned(), |n| n.to_string());
    let text = format!(
        "over {}: {} at the slow end, {} as fitted, and the optimistic end would need {}; the \
         answer takes the most, and the figures below are the slow end's",
        super::band_name(spread.faster, spread.slower, spread.coverage),
        answer(spread.at_slower),
        answer(spread.as_fitted),
        answer(spread.at_faster),
    );
    *out += &units::wrap(&text, 100);
    out.push('\n');
}

/// The simulated evidence: the answer and the count below it (or the two largest tried).
fn write_evidence(out: &mut String, plan: &Plan) {
    let _ = writeln!(out, "\nevidence (simulated; [95% interval]):");
    let shown: Vec<&Evaluation> = match plan.answer {
        Some(n) => [n.checked_sub(1), Some(n)]
            .into_iter()
            .flatten()
            .filter_map(|s| plan.evaluations.get(&s))
            .collect(),
        None => plan.evaluations.values().rev().take(2).rev().collect(),
    };
    // The plan judges by the interval's upper end; where the exact value is known, show it.
    let exact = shown.iter().any(|e| e.theory.is_some());
    let _ = writeln!(
        out,
        "{:>7}  {:>9}  {:>10}  {:>26}  {:>26}  {:>5}{}",
        "shards",
        "ceiling/s",
        "util",
        "p99 wait",
        "p99.9 wait",
        "meets",
        if exact {
            format!("  {:>10}  {:>11}", "exact p99", "exact p99.9")
        } else {
            String::new()
        }
    );
    for evaluation in &shown {
        write_evaluation(out, evaluation, exact);
    }
    write_stopped_early(out, plan, &shown);
    write_unsimulated(out, plan);
}

/// The shown counts whose first replications already decided them, so the rest were not run.
fn write_stopped_early(out: &mut String, plan: &Plan, shown: &[&Evaluation]) {
    let stopped: Vec<String> = shown
        .iter()
        .filter(|e| e.row.replications < plan.settings.replications)
        .map(|e| format!("{} shards after {}", e.row.shards(), e.row.replications))
        .collect();
    if stopped.is_empty() {
        return;
    }
    let text = format!(
        "stopped early: {} of {} replications (their 99.9% interval already clear of the \
         target; --every-run runs all)",
        stopped.join(", "),
        plan.settings.replications
    );
    *out += &units::wrap(&text, 100);
    out.push('\n');
}

/// The shard counts the search ruled out by their peak utilization without a run.
fn write_unsimulated(out: &mut String, plan: &Plan) {
    let (Some((first, low)), Some((last, high))) = (
        plan.unsimulated.iter().next(),
        plan.unsimulated.iter().next_back(),
    ) else {
        return;
    };
    let counts: Vec<String> = plan.unsimulated.keys().map(u32::to_string).collect();
    let utilization = if first == last {
        format!("{low:.2}")
    } else {
        format!("{low:.2} to {high:.2}")
    };
    let text = format!(
        "not simulated: {} shards, whose peak utilization ({utilization}) rules them out \
         whatever their run (--every-run simulates them)",
        counts.join(", ")
    );
    *out += &units::wrap(&text, 100);
    out.push('\n');
}

/// One shard count's line of evidence, with the exact waits when `exact`.
fn write_evaluation(out: &mut String, evaluation: &Evaluation, exact: bool) {
    let row = &evaluation.row;
    let with_interval =
        |mean: u64, ns: fn(&WaitSummary) -> u64| match (&row.waits_lo, &row.waits_hi) {
            (Some(lo), Some(hi)) => format!(
                "{} [{}, {}]",
                units::duration(mean),
                units::duration(ns(lo)),
                units::duration(ns(hi))
            ),
            _ => units::duration(mean),
        };
    let exact_columns = match (exact, evaluation.theory) {
        (true, Some(theory)) => format!(
            "  {:>10}  {:>11}",
            units::duration((theory.p99_ms * 1e6).round() as u64),
            units::duration((theory.p999_ms * 1e6).round() as u64)
        ),
        // At or past one row's worth of holds per row the exact wait has no bound.
        (true, None) if row.peak_utilization() >= 1.0 => {
            format!("  {:>10}  {:>11}", "unbounded", "unbounded")
        }
        (true, None) => format!("  {:>10}  {:>11}", "—", "—"),
        (false, _) => String::new(),
    };
    let _ = writeln!(
        out,
        "{:>7}  {:>9}  {:>10.2}  {:>26}  {:>26}  {:>5}{exact_columns}",
        row.shards(),
        units::quantity(row.ceiling_per_s),
        row.bottleneck_utilization(),
        with_interval(row.waits.p99_ns, |s| s.p99_ns),
        with_interval(row.waits.p999_ns, |s| s.p999_ns),
        if evaluation.meets { "yes" } else { "no" }
    );
}

/// The analytic estimates beside the simulation: utilization, the rule of thumb and exact
/// theory where it applies.
fn write_estimates(out: &mut String, plan: &Plan) {
    let _ = writeln!(out, "\nanalytic estimates:");
    let _ = writeln!(
        out,
        "  utilization below {}: at least {} shards",
        plan.targets
            .max_utilization
            .map_or("1".into(), |u| format!("{u}")),
        plan.utilization_shards
    );
    let _ = writeln!(
        out,
        "  rule of thumb (~{}/s per row, {:.0}% of a row's ceiling): {} shards{}",
        compact(COMFORTABLE_SHARE * 1e3 / plan.mean_hold_ms),
        COMFORTABLE_SHARE * 100.0,
        plan.rule_of_thumb_shards,
        versus(plan.answer, plan.rule_of_thumb_shards)
    );
    write_theory(out, plan);
}

/// Exact theory's answer beside the plan's, or why there is none.
fn write_theory(out: &mut String, plan: &Plan) {
    let answer_theory = plan
        .answer
        .and_then(|n| plan.evaluations.get(&n))
        .and_then(|e| e.theory.map(|t| (e, t)));
    match (plan.theory_shards, answer_theory) {
        (Some(n), Some((evaluation, theory))) => {
            let simulated = crate::time::ns_to_ms(evaluation.row.waits.p99_ns);
            let _ = writeln!(
                out,
                "  {}: {} shards{}; at {} shards p99 {} against {} simulated ({})",
                theory.model,
                n,
                versus(plan.answer, n),
                evaluation.row.shards(),
                units::duration((theory.p99_ms * 1e6).round() as u64),
                units::duration((simulated * 1e6).round() as u64),
                relative(simulated, theory.p99_ms)
                    .map_or("—".into(), |d| format!("{:+.1}%", d * 100.0))
            );
        }
        (Some(n), None) => {
            let _ = writeln!(out, "  exact theory: {n} shards{}", versus(plan.answer, n));
        }
        (None, _) if plan.has_machine => {
            let _ = writeln!(
                out,
                "  exact theory: none with a machine behind the rows (the formulas know the row's hold alone)"
            );
        }
        (None, _) => {
            let _ = writeln!(out, "  exact theory: {}", no_theory_reason(plan));
        }
    }
}

/// Why a plan without a machine has no exact theory.
fn no_theory_reason(plan: &Plan) -> String {
    match (plan.hold_dist, plan.policy) {
        ("constant", crate::model::Policy::EarliestFree) => {
            "none computed: M/D/c at these shard counts is too large or too near saturation to \
             compute exactly in a fraction of a second"
                .into()
        }
        (hold, policy) => format!(
            "none for {hold} holds with {policy} (M/M/c needs exponential holds with earliest-free, \
             M/D/c constant holds with earliest-free, M/M/1 and M/D/1 per row random)"
        ),
    }
}

fn versus(answer: Option<u32>, other: u32) -> String {
    match answer {
        Some(n) if n == other => " (same as simulated)".into(),
        Some(n) => format!(" ({:+} against simulated)", i64::from(other) - i64::from(n)),
        None => String::new(),
    }
}

/// `(simulated − theory) / theory`, when the theory is not 0.
fn relative(simulated: f64, theory: f64) -> Option<f64> {
    (theory > 0.0).then(|| (simulated - theory) / theory)
}

/// The columns of a grid's `plan.csv` after the swept fields.
pub const GRID_PLAN_COLUMNS: [&str; 9] = [
    "policy",
    "answer_shards",
    "peak_offered_per_s",
    "mean_hold_ms",
    "wait_p99_ms",
    "wait_p99_ms_hi",
    "theory_model",
    "theory_wait_p99_ms",
    "reason",
];

/// A grid's `plan.csv`: one row per configuration × policy, its swept values first, with the
/// answer and the evidence at it.
pub fn grid_plan_csv(fields: &[String], planned: &[(Vec<String>, Plan)]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let header: Vec<String> = fields
        .iter()
        .cloned()
        .chain(GRID_PLAN_COLUMNS.iter().map(|c| c.to_string()))
        .collect();
    writer
        .write_record(&header)
        .expect("writing CSV to memory cannot fail");
    for (values, plan) in planned {
        let at = plan.answer.and_then(|n| plan.evaluations.get(&n));
        let mut record = values.clone();
        record.extend([
            plan.policy.to_string(),
            plan.answer.map(|n| n.to_string()).unwrap_or_default(),
            decimal(plan.peak_per_s, 3),
            decimal(plan.mean_hold_ms, 6),
            at.map(|e| fmt_ms(e.row.waits.p99_ns)).unwrap_or_default(),
            at.and_then(|e| e.row.waits_hi.as_ref())
                .map(|hi| fmt_ms(hi.p99_ns))
                .unwrap_or_default(),
            at.and_then(|e| e.theory)
                .map(|t| t.model.to_owned())
                .unwrap_or_default(),
            at.and_then(|e| e.theory)
                .map(|t| decimal(t.p99_ms, 6))
                .unwrap_or_default(),
            plan.unmet_reason.clone().unwrap_or_default(),
        ]);
        writer
            .write_record(&record)
            .expect("writing CSV to memory cannot fail");
    }
    writer
        .into_inner()
        .expect("flushing CSV to memory cannot fail")
}

/// A grid's `plan.json`: the swept fields, then each configuration's values and its plan
/// document (as a single plan's `plan.json`) per policy.
pub fn grid_plan_json(fields: &[String], planned: &[(Vec<String>, Plan)]) -> String {
    let configurations: Vec<Value> = planned
        .iter()
        .map(|(values, plan)| {
            json!({
                "values": fields.iter().zip(values).map(|(f, v)| (f.clone(), Value::from(v.as_str()))).collect::<serde_json::Map<_, _>>(),
                "plan": plan_document(plan),
            })
        })
        .collect();
    let document = json!({ "fields": fields, "configurations": configurations });
    let mut text = serde_json::to_string_pretty(&document).expect("JSON values always render");
    text.push('\n');
    text
}

/// A grid's answers for the terminal: the shard count per configuration, as a grid over two
/// swept fields (see [`super::grid::render`]).
pub fn render_grid(fields: &[String], planned: &[(Vec<String>, Plan)]) -> String {
    let rows = grid_rows(planned);
    let Some((_, first)) = planned.first() else {
        return String::new();
    };
    let target = format!(
        "plan's answer for {}, by the upper end of a 95% interval over {} replications at the peak",
        first.targets, first.settings.replications
    );
    super::grid::render(&first.scenario, fields, &rows, &target, None)
}

/// A grid's answers as sweep rows (for the terminal grid and the heat map).
pub fn grid_rows(planned: &[(Vec<String>, Plan)]) -> Vec<super::grid::SweepRow> {
    planned
        .iter()
        .map(|(values, plan)| super::grid::SweepRow {
            values: values.clone(),
            policy: plan.policy.to_string(),
            recommended: plan.answer,
            p99_ms: plan
                .answer
                .and_then(|n| plan.evaluations.get(&n))
                .map(|e| crate::time::ns_to_ms(e.row.waits.p99_ns)),
        })
        .collect()
}
