//! Capacity planning: the smallest shard count that meets every target at the scenario's peak.
//!
//! The peak is simulated as a steady Poisson stream at the scenario's highest offered rate,
//! with its hold distribution, policy and keys, for a warm-up plus a measured period, in R
//! independent replications per shard count. A shard count meets the targets when it is not
//! overloaded and the upper ends of the 95% intervals of its waits are within them. The
//! search tries every integer: it doubles from the largest overloaded count until one meets
//! the targets, then bisects, so the answer N comes with N − 1 simulated and failing. Beside
//! the simulation stand the analytic estimates where theory is exact, and the seeds' rule of
//! thumb.

use std::collections::BTreeMap;

use crate::budget::MAX_REQUESTS;
use crate::error::InputError;
use crate::figures::{SummaryRow, summarize_each};
use crate::model::Policy;
use crate::model::hold::HoldDist;
use crate::scenario::{ArrivalPlan, Scenario, Slo};
use crate::stability::StabilitySettings;
use crate::stats::WaitSummary;
use crate::stats::replications::mean_and_half_width_at;
use crate::sweep;
use crate::theory;
use crate::time::s_f64_to_ns;

/// The seeds' comfortable rate per row, as a share of one row's ceiling: "each shard adds
/// about 500 writes a second" with a 1 ms hold (ceiling 1,000/s).
pub const COMFORTABLE_SHARE: f64 = 0.5;

/// Fewer stalls than this seen by the calibration a plan's stalls were fitted from, and the
/// plan says its tail rests on them.
pub const FEW_STALLS: u64 = 20;

/// How the peak is simulated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanSettings {
    /// The largest shard count considered.
    pub max_shards: u32,
    /// Measured seconds per replication.
    pub duration_s: f64,
    /// Warm-up seconds per replication.
    pub warmup_s: f64,
    /// Replications per shard count (≥ 2 for intervals).
    pub replications: u32,
    /// Simulate every shard count the search tries, even one whose peak utilization rules it
    /// out before its run (`--every-run`); the answer is the same.
    pub every_run: bool,
}

/// The parts of `machine` a plan simulates, in words: its CPU, flush and stalls where it has
/// them, else its other parts (the hold that grows with the waiters, the time outside the
/// database, the wake-ups) as "the machine".
fn machine_words(machine: &crate::model::MachineModel) -> String {
    if machine.is_empty() {
        return String::new();
    }
    let parts: Vec<&str> = [
        (machine.cpu.is_some(), "CPU"),
        (machine.wal.is_some(), "flush"),
        (machine.stalls.is_some(), "stalls"),
    ]
    .into_iter()
    .filter_map(|(has, name)| has.then_some(name))
    .collect();
    match parts.as_slice() {
        [] => "the machine".to_owned(),
        [one] => format!("the machine's {one}"),
        [rest @ .., last] => format!("the machine's {} and {last}", rest.join(", ")),
    }
}

/// What the machine's stalls say about a plan's tail: how many the simulated peak met, and
/// whether the calibration they were fitted from saw enough of them to trust a p99 they make.
fn stall_note(base: &Scenario, settings: &PlanSettings) -> Option<String> {
    let stalls = base.machine().stalls.as_ref()?;
    let simulated_ns =
        (settings.duration_s + settings.warmup_s) * 1e9 * f64::from(settings.replications);
    let met = simulated_ns * stalls.rate_per_ns();
    let mut note = format!(
        "the machine stalls (about {:.0} stalls in the {:.0} s simulated per shard count, \
         {:.2}% of the time)",
        met,
        simulated_ns / 1e9,
        100.0 * stalls.stalled_share()
    );
    if met < FEW_STALLS as f64 {
        note += &format!(
            "; fewer than {FEW_STALLS} stalls make an uncertain p99: pass a longer --duration-s"
        );
    }
    match stalls.seen {
        Some(seen) if seen < FEW_STALLS => {
            note += &format!(
                "; the answer's tail rests on stalls fitted from only {seen} seen by the calibration \
             (fewer than {FEW_STALLS}): calibrate with longer runs before trusting it"
            )
        }
        Some(seen) => note += &format!("; fitted from {seen} stalls the calibration saw"),
        None => {}
    }
    Some(note)
}

/// Waits predicted by exact queueing theory, in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theory {
    /// Which model: "M/M/c (Erlang C)", "M/D/c (Crommelin)", "M/D/1 per row" or "M/M/1 per
    /// row".
    pub model: &'static str,
    /// Mean wait.
    pub(crate) mean_ms: f64,
    /// 99th-percentile wait.
    pub p99_ms: f64,
    /// 99.9th-percentile wait.
    pub(crate) p999_ms: f64,
}

/// One simulated shard count.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// Its summary over the replications.
    pub row: SummaryRow,
    /// Whether it meets every target.
    pub meets: bool,
    /// The exact theory's prediction, where there is one.
    pub theory: Option<Theory>,
}

/// The outcome of a plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The scenario planned for.
    pub(crate) scenario: String,
    /// The peak rate, increments per second.
    pub(crate) peak_per_s: f64,
    /// The mean hold, ms.
    pub(crate) mean_hold_ms: f64,
    /// The hold distribution's name.
    pub(crate) hold_dist: &'static str,
    /// Whether a machine (per-waiter holds, CPU, flush, overhead, stalls) stands behind the
    /// rows.
    pub(crate) has_machine: bool,
    /// What of the machine the plan simulates, in words ("the machine's CPU and flush",
    /// "the machine's CPU, flush and stalls"); empty without a machine.
    pub(crate) machine_words: String,
    /// The slot-choice policy.
    pub(crate) policy: Policy,
    /// The what-if traffic scale planned for (1: the scenario's traffic as given).
    pub(crate) traffic: f64,
    /// The connection pool's size planned for (`None`: the scenario has no pool).
    pub(crate) pool: Option<u32>,
    /// The targets.
    pub(crate) targets: Slo,
    /// How the peak was simulated.
    pub(crate) settings: PlanSettings,
    /// The smallest shard count meeting every target, if any up to the cap does.
    pub answer: Option<u32>,
    /// Why no shard count meets the targets.
    pub unmet_reason: Option<String>,
    /// Every simulated shard count.
    pub evaluations: BTreeMap<u32, Evaluation>,
    /// The shard counts the search tried without simulating them, with the peak utilization
    /// that ruled each out (at least 1, or above the target's `max_utilization`).
    pub(crate) unsimulated: BTreeMap<u32, f64>,
    /// The smallest shard count whose peak utilization is below 1 (and within the target).
    pub(crate) utilization_shards: u32,
    /// The seeds' rule of thumb: peak ÷ the comfortable rate per row.
    pub(crate) rule_of_thumb_shards: u32,
    /// The smallest shard count meeting the targets by exact theory, where there is one.
    pub(crate) theory_shards: Option<u32>,
    /// What the machine's stalls say about the answer's tail (`None` without `[stalls]`).
    pub(crate) stall_note: Option<String>,
    /// The answers over the calibration's spread, when it has one: the plan's own figures
    /// are then its slow end's, and its answer the most rows any end needs.
    pub(crate) spread: Option<SpreadAnswers>,
}

/// A plan's answers at its calibration's spread's ends and as fitted.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadAnswers {
    /// The slow end's factor on every time of the calibration.
    pub(crate) slower: f64,
    /// The fast end's factor.
    pub(crate) faster: f64,
    /// The share of measurements the band is meant to hold (`None`: an old calibration's
    /// spread, which states none).
    pub(crate) coverage: Option<f64>,
    /// The answer at the slow end.
    pub(crate) at_slower: Option<u32>,
    /// The answer with the calibration as fitted.
    pub(crate) as_fitted: Option<u32>,
    /// The answer at the fast end.
    pub(crate) at_faster: Option<u32>,
}

impl SpreadAnswers {
    /// The answers as a range, fewest first: `6–16`, `8` when they agree, `none` when no end
    /// has one; an end without an answer shows as `none`.
    pub fn range(&self) -> String {
        let ends = [self.at_faster, self.as_fitted, self.at_slower];
        let known: Vec<u32> = ends.iter().flatten().copied().collect();
        let (Some(&low), Some(&high)) = (known.iter().min(), known.iter().max()) else {
            return "none".to_owned();
        };
        let high = if ends.iter().any(Option::is_none) {
            "none".to_owned()
        } else {
            high.to_string()
        };
        if high == low.to_string() {
            high
        } else {
            format!("{low}–{high}")
        }
    }
}

/// The plan over a calibration's spread: `slow`'s figures (every time of its calibration
/// `spread.slower` times as fitted), and as its answer the most rows any of `slow`, `fitted`
/// and `fast` needs — none when one has none, with that end's reason. Never optimistic
/// about what the database did while it was calibrated.
pub fn over_spread(
    mut slow: Plan,
    fitted: &Plan,
    fast: &Plan,
    spread: &crate::scenario::include::CalibrationSpread,
) -> Plan {
    let answers = SpreadAnswers {
        slower: spread.slower,
        faster: spread.faster,
        coverage: spread.coverage,
        at_slower: slow.answer,
        as_fitted: fitted.answer,
        at_faster: fast.answer,
    };
    let unmet = [&slow, fitted, fast]
        .into_iter()
        .find(|plan| plan.answer.is_none())
        .map(|plan| plan.unmet_reason.clone().unwrap_or_default());
    match unmet {
        Some(reason) => {
            slow.answer = None;
            slow.unmet_reason = Some(reason);
        }
        None => {
            slow.answer = [slow.answer, fitted.answer, fast.answer]
                .into_iter()
                .max()
                .flatten()
        }
    }
    slow.spread = Some(answers);
    slow
}

/// Plans the shard count for `base`'s peak under `targets`, once per policy of the scenario
/// (in its order), each on the same peak stream.
pub fn plan_each_policy(
    base: &Scenario,
    targets: Slo,
    settings: PlanSettings,
) -> Result<Vec<Plan>, InputError> {
    base.policies()
        .iter()
        .map(|&policy| {
            let one = base.with_policy(policy, base.name().to_owned());
            plan(&one, targets, settings)
        })
        .collect()
}

/// Plans the shard count for `base`'s peak under `targets`, with its first policy.
pub fn plan(base: &Scenario, targets: Slo, settings: PlanSettings) -> Result<Plan, InputError> {
    let peak_per_s = base.peak_offered_per_s();
    // The row is held until the commit: with a machine, through its CPU and flush too.
    let mean_hold_s = base.row_hold_ns() / 1e9;
    let load = peak_per_s * mean_hold_s;
    let limit = targets.max_utilization.unwrap_or(1.0);
    let utilization_shards = min_shards_for_utilization(load, limit);
    let peak = peak_scenario(base, settings);
    let mut evaluations = BTreeMap::new();
    let mut unsimulated = BTreeMap::new();
    // A capacity in front of every row — the machine, or the likes table — that the peak
    // already fills: no shard count can help.
    let capacity_bound = machine_bound_reason(base, limit).or_else(|| likes_bound_reason(base));
    let mut meets = |shards: u32| -> Result<bool, InputError> {
        if let Some(done) = evaluations.get(&shards) {
            let done: &Evaluation = done;
            return Ok(done.meets);
        }
        if !settings.every_run
            && let Some(utilization) = ruled_out(&peak, shards, &targets)
        {
            unsimulated.insert(shards, utilization);
            return Ok(false);
        }
        let evaluation = evaluate(&peak, shards, &targets, settings.every_run)?;
        let meets = evaluation.meets;
        evaluations.insert(shards, evaluation);
        Ok(meets)
    };
    // No row count gets past a capacity the peak fills: nothing to search.
    let answer = if capacity_bound.is_some() {
        None
    } else {
        smallest_meeting(load, settings.max_shards, &mut meets)?
    };
    // The count below the answer is the evidence that the answer is the smallest: it is
    // simulated even when its utilization already ruled it out.
    if let Some(below) = answer.and_then(|n| n.checked_sub(1)).filter(|&n| n > 0)
        && unsimulated.remove(&below).is_some()
    {
        evaluations.insert(below, evaluate(&peak, below, &targets, settings.every_run)?);
    }
    let unmet_reason = answer.is_none().then(|| {
        capacity_bound.clone().unwrap_or_else(|| {
            unmet_reason(
                &evaluations,
                &unsimulated,
                &targets,
                settings.max_shards,
                utilization_shards,
                load,
            )
        })
    });
    Ok(Plan {
        scenario: base.name().to_owned(),
        peak_per_s,
        mean_hold_ms: mean_hold_s * 1e3,
        hold_dist: hold_name(base.hold()),
        has_machine: !base.machine().is_empty(),
        machine_words: machine_words(base.machine()),
        policy: base.policies()[0],
        traffic: base.traffic().scale,
        pool: base.features().pool.as_ref().map(|pool| pool.size),
        targets,
        settings,
        answer,
        unmet_reason,
        evaluations,
        unsimulated,
        utilization_shards,
        rule_of_thumb_shards: (peak_per_s * mean_hold_s / COMFORTABLE_SHARE)
            .ceil()
            .max(1.0) as u32,
        theory_shards: theory_shards(
            base,
            peak_per_s,
            &targets,
            settings.max_shards,
            utilization_shards,
        ),
        stall_note: stall_note(base, &settings),
        spread: None,
    })
}

/// The smallest shard count up to `max_shards` that `meets` the targets, searched from the
/// largest overloaded count (`load`, which fails for sure) by doubling, then bisection; the
/// count below the answer is evaluated too, for the evidence.
fn smallest_meeting(
    load: f64,
    max_shards: u32,
    meets: &mut dyn FnMut(u32) -> Result<bool, InputError>,
) -> Result<Option<u32>, InputError> {
    let mut failing = 0;
    let mut candidate = (load.floor() as u32).clamp(1, max_shards);
    let mut passing = loop {
        if meets(candidate)? {
            break candidate;
        }
        failing = candidate;
        if candidate >= max_shards {
            return Ok(None);
        }
        candidate = candidate.saturating_mul(2).min(max_shards);
    };
    while passing - failing > 1 {
        let middle = failing + (passing - failing) / 2;
        if meets(middle)? {
            passing = middle;
        } else {
            failing = middle;
        }
    }
    if passing > 1 {
        meets(passing - 1)?;
    }
    Ok(Some(passing))
}

/// Why no shard count can meet a target when the peak over all keys reaches the machine's
/// ceiling (times the utilization limit): more rows cannot raise it.
fn machine_bound_reason(base: &Scenario, limit: f64) -> Option<String> {
    let (ceiling, part) = base.machine().ceiling_per_s()?;
    let peak = base.peak_total_per_s();
    (peak >= ceiling * limit).then(|| {
        format!(
            "the peak of {peak:.0}/s over all keys reaches what the machine takes ({ceiling:.0}/s, bound by its {part}{}): \
             no shard count can meet the target; a faster machine or fewer updates (batching) can",
            if limit < 1.0 {
                format!(", times max_utilization {limit}")
            } else {
                String::new()
            }
        )
    })
}

/// Why no shard count can meet a target when the likes table's busiest partition is offered
/// more than it takes at the peak (its line is in front of the rows; more rows cannot
/// shorten it).
fn likes_bound_reason(base: &Scenario) -> Option<String> {
    let likes = base.likes()?;
    let peak = base.peak_total_per_s();
    let load = likes.hot_partition_load(base.peak_offered_per_s(), peak, base.row_hold_ns());
    (load >= 1.0).then(|| {
        format!(
            "the likes table's busiest partition is offered {load:.2}× what it takes at the peak \
             (partitioned by {}{}): its queue grows whatever the shard count; partition by \
             post_user, or insert and count in separate transactions",
            likes.partition_by.name(),
            if likes.same_transaction {
                ", held through the row in one transaction"
            } else {
                ""
            }
        )
    })
}

/// Refuses a plan that would simulate more than one run may take ([`MAX_REQUESTS`]): the
/// peak rate × (warm-up + duration) × replications × the shard counts a search tries.
pub fn admit(base: &Scenario, settings: PlanSettings) -> Result<(), InputError> {
    if matches!(base.arrivals(), ArrivalPlan::Closed(_)) {
        return Err(InputError::scenario(
            base.path(),
            "arrivals.clients",
            "plan searches shard counts for an open stream of arrivals at the peak; a closed loop's load follows its rows, so compare shard counts with shardsim run",
        ));
    }
    let searched = 2.0 * f64::from(settings.max_shards).log2().ceil() + 3.0;
    let requests = base.peak_total_per_s()
        * (settings.duration_s + settings.warmup_s)
        * f64::from(settings.replications)
        * searched;
    if requests > MAX_REQUESTS {
        return Err(InputError::flag(
            "--duration-s",
            format!(
                "the search would simulate about {requests:.2e} requests ({} per s at the peak × {} s × {} replications × up to {searched} shard counts), \
                 more than the {MAX_REQUESTS:.0e} one run may take; shorten --duration-s or use fewer --replications",
                base.peak_total_per_s(),
                settings.duration_s + settings.warmup_s,
                settings.replications
            ),
        ));
    }
    Ok(())
}

/// The smallest shard count with utilization below 1 and at most `limit`.
fn min_shards_for_utilization(load: f64, limit: f64) -> u32 {
    let mut shards = (load / limit).ceil().max(1.0) as u32;
    if f64::from(shards) <= load {
        shards += 1;
    }
    shards
}

/// `base` as a steady Poisson stream at its peak rate, with the plan's period and replications.
fn peak_scenario(base: &Scenario, settings: PlanSettings) -> Scenario {
    let warmup = s_f64_to_ns(settings.warmup_s);
    let horizon = warmup + s_f64_to_ns(settings.duration_s);
    // The plan answers a static shard count; the adaptive policy is `run`'s to compare.
    base.at_steady_peak(
        base.peak_total_per_s(),
        warmup,
        horizon,
        settings.replications,
    )
}

/// The peak utilization that rules `shards` rows out before their run, if it does: at least 1
/// (overloaded whatever the run) or above the target's `max_utilization`. A run's peak
/// utilization is never below this one (retries only raise the offered rate), so such a
/// count fails the targets however it is simulated.
fn ruled_out(peak: &Scenario, shards: u32, targets: &Slo) -> Option<f64> {
    let utilization =
        crate::figures::lowest_peak_utilization(&peak.with_shards(vec![shards]), shards);
    let over_limit = targets
        .max_utilization
        .is_some_and(|limit| utilization > limit);
    (utilization >= 1.0 || over_limit).then_some(utilization)
}

/// Simulates `shards` rows at `base`'s peak as `plan` does, without searching (for checks and
/// brute-force comparisons).
pub fn evaluate_at(
    base: &Scenario,
    targets: &Slo,
    settings: PlanSettings,
    shards: u32,
) -> Result<Evaluation, InputError> {
    evaluate(
        &peak_scenario(base, settings),
        shards,
        targets,
        settings.every_run,
    )
}

/// The replication counts after which a plan looks whether a shard count's waits already
/// decide it ([`decided`]) and, when they do, simulates no more of them.
const LOOKS: [u32; 2] = [4, 6];
/// The confidence at which a look decides: 99.9% two-sided each, so both looks together err
/// less than 0.2% of the time (the full run's own interval is a 95% one).
const LOOK_CONFIDENCE: f64 = 0.999;

/// Simulates `shards` rows at the peak, replication after replication up to the plan's, and
/// stops at a look ([`LOOKS`]) where the waits already decide the targets (`every_run`: never).
fn evaluate(
    peak: &Scenario,
    shards: u32,
    targets: &Slo,
    every_run: bool,
) -> Result<Evaluation, InputError> {
    let scenario = peak.with_shards(vec![shards]);
    let total = scenario.replications();
    let looks = LOOKS
        .into_iter()
        .filter(|&look| !every_run && look < total)
        .chain([total]);
    let mut runs = Vec::with_capacity(total as usize);
    for look in looks {
        let next: Vec<u32> = (runs.len() as u32..look).collect();
        for replication in sweep::run_some_replications(&scenario, &next)? {
            runs.extend(replication);
        }
        if look < total && decided(&scenario, shards, &runs, targets) {
            break;
        }
    }
    let row = summarize_each(&scenario, &[runs], &StabilitySettings::default())?.remove(0);
    Ok(Evaluation {
        meets: row.meets(targets),
        theory: exact_theory(peak, shards),
        row,
    })
}

/// Whether a shard count's first replications `runs` already decide whether its waits meet
/// `targets`, each targeted percentile's [`LOOK_CONFIDENCE`] interval over the replications
/// lying wholly on one side of its target: above one, it fails whatever the rest; below all,
/// with every run unsaturated and drained to well under a second of its ceiling's work, it
/// meets them as far as waits go (the stability probes still judge it after). A target of
/// `max_utilization` alone is decided before any run, so the waits decide nothing then.
fn decided(
    scenario: &Scenario,
    shards: u32,
    runs: &[crate::model::ShardRun],
    targets: &Slo,
) -> bool {
    let summaries: Vec<WaitSummary> = runs.iter().map(|run| run.waits.summary()).collect();
    let values = |percentile: fn(&WaitSummary) -> u64| -> Vec<f64> {
        summaries.iter().map(|w| percentile(w) as f64).collect()
    };
    let targeted = [
        targets.p99_ns.map(|target| (target, values(|w| w.p99_ns))),
        targets
            .p999_ns
            .map(|target| (target, values(|w| w.p999_ns))),
    ];
    // Each targeted percentile's interval (low, high) beside its target.
    let sides: Vec<(f64, f64, f64)> = targeted
        .into_iter()
        .flatten()
        .filter_map(|(target, values)| {
            let (mean, half_width) = mean_and_half_width_at(&values, LOOK_CONFIDENCE);
            let half_width = half_width?;
            Some((mean - half_width, mean + half_width, target as f64))
        })
        .collect();
    if sides.is_empty() {
        return false;
    }
    if sides.iter().any(|&(low, _, target)| low > target) {
        return true;
    }
    let drained_below =
        crate::figures::static_ceiling_per_s(scenario, shards) * crate::figures::UNDRAINED_S / 2.0;
    sides.iter().all(|&(_, high, target)| high < target)
        && runs
            .iter()
            .all(|run| run.saturated_at.is_none() && (run.backlog_final as f64) < drained_below)
}

/// The exact theory's waits for `shards` rows at the peak, where the model has one:
/// earliest-free is M/M/c with exponential holds and M/D/c with constant ones (None also when
/// M/D/c is too large or too near saturation to compute); random rows are M/M/1 or M/D/1
/// queues.
pub fn exact_theory(scenario: &Scenario, shards: u32) -> Option<Theory> {
    // The queueing formulas know one key's rows and the row's hold alone, not a machine
    // behind it.
    if scenario.keys().count > 1 || !scenario.machine().is_empty() {
        return None;
    }
    let rate_per_ms = scenario.peak_offered_per_s() / 1e3;
    let hold_ms = scenario.hold().mean_ns() / 1e6;
    if rate_per_ms * hold_ms >= f64::from(shards) {
        return None;
    }
    match (&scenario.hold(), scenario.policies()[0]) {
        (HoldDist::Exponential { .. }, Policy::EarliestFree) => {
            let mu = 1.0 / hold_ms;
            Some(Theory {
                model: "M/M/c (Erlang C)",
                mean_ms: theory::mmc_wait_mean(shards, rate_per_ms, mu),
                p99_ms: theory::mmc_wait_quantile(shards, rate_per_ms, mu, 0.99),
                p999_ms: theory::mmc_wait_quantile(shards, rate_per_ms, mu, 0.999),
            })
        }
        (HoldDist::Constant { .. }, Policy::EarliestFree) if hold_ms > 0.0 => {
            let exact = theory::MdcWait::new(shards, rate_per_ms, hold_ms)?;
            Some(Theory {
                model: "M/D/c (Crommelin)",
                mean_ms: exact.mean(),
                p99_ms: exact.quantile(0.99),
                p999_ms: exact.quantile(0.999),
            })
        }
        (HoldDist::Exponential { .. }, Policy::Random) => {
            let (lambda, mu) = (rate_per_ms / f64::from(shards), 1.0 / hold_ms);
            Some(Theory {
                model: "M/M/1 per row",
                mean_ms: theory::mmc_wait_mean(1, lambda, mu),
                p99_ms: theory::mmc_wait_quantile(1, lambda, mu, 0.99),
                p999_ms: theory::mmc_wait_quantile(1, lambda, mu, 0.999),
            })
        }
        (HoldDist::Constant { .. }, Policy::Random) if hold_ms > 0.0 => {
            let lambda = rate_per_ms / f64::from(shards);
            Some(Theory {
                model: "M/D/1 per row",
                mean_ms: theory::md1_wait_mean(lambda, hold_ms),
                p99_ms: theory::md1_wait_quantile(lambda, hold_ms, 0.99),
                p999_ms: theory::md1_wait_quantile(lambda, hold_ms, 0.999),
            })
        }
        _ => None,
    }
}

/// The smallest shard count that meets the targets by exact theory (None without a theory).
fn theory_shards(
    scenario: &Scenario,
    peak_per_s: f64,
    targets: &Slo,
    max_shards: u32,
    from: u32,
) -> Option<u32> {
    (from..=max_shards).find_map(|shards| {
        let theory = exact_theory(scenario, shards)?;
        let utilization = peak_per_s * scenario.row_hold_ns() / 1e9 / f64::from(shards);
        let meets = targets
            .p99_ns
            .is_none_or(|t| theory.p99_ms * 1e6 <= t as f64)
            && targets
                .p999_ns
                .is_none_or(|t| theory.p999_ms * 1e6 <= t as f64)
            && targets
                .max_utilization
                .is_none_or(|limit| utilization <= limit);
        meets.then_some(shards)
    })
}

/// A wait in people's units (`5 min`, `1.84 ms`).
fn duration(ns: u64) -> String {
    crate::units::duration(ns)
}

fn unmet_reason(
    evaluations: &BTreeMap<u32, Evaluation>,
    unsimulated: &BTreeMap<u32, f64>,
    targets: &Slo,
    max_shards: u32,
    utilization_shards: u32,
    load: f64,
) -> String {
    if utilization_shards > max_shards {
        return format!(
            "the peak offers {load:.1} rows' worth of holds at once, so keeping utilization within \
             the target needs at least {utilization_shards} shards, more than --max-shards {max_shards}"
        );
    }
    let most_simulated = evaluations.keys().next_back().copied().unwrap_or(0);
    if let Some((&shards, &utilization)) = unsimulated.iter().next_back()
        && shards > most_simulated
    {
        let why = if utilization >= 1.0 {
            format!("the peak still offers {utilization:.2}× what its rows take")
        } else {
            format!(
                "the peak utilization is {utilization:.2}, above max_utilization {}",
                targets.max_utilization.unwrap_or(1.0)
            )
        };
        return format!(
            "at {shards} shards {why} (not simulated: no run can meet the target there)"
        );
    }
    let best = evaluations.values().next_back().map(|e| &e.row);
    match (best, targets.p99_ns) {
        (Some(row), Some(target)) if row.waits_upper().p99_ns > target => format!(
            "at {} shards the p99 wait is still {} (upper bound), above the {} target",
            row.shards(),
            duration(row.waits_upper().p99_ns),
            duration(target)
        ),
        (Some(row), _) => format!(
            "no shard count up to {max_shards} meets every target (at {} shards: p99 {}, p99.9 {}, utilization {:.2})",
            row.shards(),
            duration(row.waits_upper().p99_ns),
            duration(row.waits_upper().p999_ns),
            row.peak_utilization()
        ),
        (None, _) => format!("no shard count up to {max_shards} meets every target"),
    }
}

fn hold_name(hold: &HoldDist) -> &'static str {
    match hold {
        HoldDist::Constant { .. } => "constant",
        HoldDist::Exponential { .. } => "exponential",
        HoldDist::LogNormal { .. } => "lognormal",
        HoldDist::Uniform { .. } => "uniform",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_alone_sets_a_floor() {
        assert_eq!(
            min_shards_for_utilization(5.0, 1.0),
            6,
            "utilization must stay below 1"
        );
        assert_eq!(min_shards_for_utilization(4.5, 1.0), 5);
        assert_eq!(min_shards_for_utilization(5.0, 0.5), 10);
        assert_eq!(min_shards_for_utilization(0.01, 1.0), 1);
    }
}
