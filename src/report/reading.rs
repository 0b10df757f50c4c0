//! A sweep's reading in plain sentences, for the terminal and the report page.

use crate::figures::{NEAR_CEILING, Recommendation, SummaryRow, Verdict, machine_bound};
use crate::model::Bottleneck;
use crate::scenario::Scenario;
use crate::units::{self, compact};

/// A short reading of a sweep in plain sentences: how the peak compares with one row, the
/// smallest shard count that is stable at the peak, the smallest that meets the target (and
/// whether it runs near its ceiling), what happens just below, and how this answer relates to
/// `shardsim plan`'s.
pub fn reading(
    scenario: &Scenario,
    rows: &[SummaryRow],
    recommendation: &Recommendation,
) -> String {
    let by_shards = |shards: u32| {
        rows.iter()
            .find(|row| row.shards() == shards && !row.adaptive())
    };
    let stable = recommendation.stable.and_then(by_shards);
    let mut text = peak_sentence(scenario, rows);
    text.push_str(&machine_sentence(scenario));
    text.push_str(&stable_sentence(stable, rows));
    if recommendation.has_target {
        let meets = recommendation.meets_target.and_then(by_shards);
        text.push_str(&target_sentence(scenario, meets, stable));
    }
    let highlighted = recommendation.shards().or(recommendation.stable);
    let below = highlighted.and_then(|n| {
        rows.iter()
            .rev()
            .find(|row| row.shards() < n && !row.adaptive())
    });
    if let Some(below) = below {
        text.push_str(&below_sentence(below));
        text.push_str(&burst_sentence(below));
    }
    if let (Some(n), Some(below)) = (recommendation.meets_target, below)
        && n - below.shards() > 1
    {
        text.push_str(&format!(
            " This is the smallest of the simulated shard counts over the whole profile; `shardsim plan` \
             tries every count from {} to {} at the steady peak over replications, judged by the upper end \
             of each interval, so its answer can lie in between.",
            below.shards() + 1,
            n
        ));
    }
    text
}

/// How the peak compares with one row: what an open stream offers it, or what a closed
/// loop's clients would send if nothing waited.
fn peak_sentence(scenario: &Scenario, rows: &[SummaryRow]) -> String {
    let mean_hold_ms = scenario.row_hold_ns() / 1e6;
    let row_ceiling = 1e3 / mean_hold_ms;
    if let crate::scenario::ArrivalPlan::Closed(closed) = &scenario.arrivals() {
        let peak = scenario.peak_offered_per_s();
        return format!(
            "Its {} would send up to {} increments/s if nothing ever waited; one row (ceiling {}/s at a mean \
             hold of {} ms) takes {}× less.",
            units::plural(u64::from(closed.clients), "client"),
            units::quantity(peak),
            units::quantity(row_ceiling),
            compact(mean_hold_ms),
            units::factor(peak / row_ceiling)
        );
    }
    let peak = rows
        .first()
        .map_or(scenario.peak_offered_per_s(), |row| row.peak_offered_per_s);
    let likes_peak = scenario.peak_offered_per_s();
    let retries = if (peak - likes_peak).abs() > 0.5 {
        format!(
            " (the likes' {}/s with their retries)",
            units::quantity(likes_peak)
        )
    } else {
        String::new()
    };
    format!(
        "At its peak of {} increments/s{retries}, one row (ceiling {}/s at a mean hold of {} ms) \
     would be offered {}× what it can take.",
        units::quantity(peak),
        units::quantity(row_ceiling),
        compact(mean_hold_ms),
        units::factor(peak / row_ceiling)
    )
}

/// The machine's own ceiling over all rows, when it has one (empty otherwise).
fn machine_sentence(scenario: &Scenario) -> String {
    let Some((ceiling, part)) = scenario.machine().ceiling_per_s() else {
        return String::new();
    };
    let why = match (part, &scenario.machine().cpu) {
        (Bottleneck::Cpu, Some(cpu)) => format!(
            "{} ÷ {} of CPU per update",
            units::plural(u64::from(cpu.cores), "core"),
            units::duration(cpu.demand.mean_ns().round() as u64)
        ),
        _ => "one flush per commit, one at a time".into(),
    };
    format!(
        " The machine takes at most {}/s over all rows ({why}): past it more rows add nothing.",
        units::quantity(ceiling)
    )
}

/// The smallest shard count stable at the peak, or why none is.
fn stable_sentence(stable: Option<&SummaryRow>, rows: &[SummaryRow]) -> String {
    match stable {
        Some(row) => format!(
            " The smallest shard count that stays stable at the peak is {}: peak utilization {:.2}, \
             p99 wait {}, backlog at the end {}.",
            row.shards(),
            row.peak_utilization(),
            units::duration(row.waits.p99_ns),
            units::count(row.backlog_final)
        ),
        None if machine_bound(rows) => format!(
            " None of the simulated shard counts is stable at the peak (peak utilization ≤ {NEAR_CEILING}, \
             short tail waits, a queue that drains), and the most rows are held back by the machine: more rows \
             will not help, a faster machine (or fewer updates, e.g. batching) will."
        ),
        None => format!(
            " None of the simulated shard counts is stable at the peak (peak utilization ≤ {NEAR_CEILING}, \
             short tail waits, a queue that drains); simulate more shards."
        ),
    }
}

/// The smallest shard count that meets the target (`meets`), and whether it runs near its
/// ceiling, or that none does.
fn target_sentence(
    scenario: &Scenario,
    meets: Option<&SummaryRow>,
    stable: Option<&SummaryRow>,
) -> String {
    let target = scenario.slo().to_string();
    let Some(row) = meets else {
        return format!(" No simulated shard count meets the target ({target}).");
    };
    let mut text = format!(
        " The smallest that meets the target ({target}) is {}: p99 {}, p99.9 {}.",
        row.shards(),
        units::duration(row.waits.p99_ns),
        units::duration(row.waits.p999_ns)
    );
    if row.verdict() != Verdict::Stable {
        text.push_str(&format!(
            " It {} (peak utilization {:.2}): a little more traffic and its waits climb steeply{}.",
            if row.verdict() == Verdict::NearCeiling {
                "runs near its ceiling"
            } else {
                "is backlogged"
            },
            row.peak_utilization(),
            stable.map_or(String::new(), |s| format!(
                "; {} would be stable",
                units::plural(u64::from(s.shards()), "shard")
            ))
        ));
    }
    text
}

/// What the shard count just below the highlighted one does at the peak: for a metastable one,
/// what tips it.
fn below_sentence(below: &SummaryRow) -> String {
    let probed = below.stability();
    if let Some((probed, trigger)) = probed.and_then(|p| Some((p, p.tipped_by()?))) {
        let they = if below.shards() == 1 { "it" } else { "they" };
        return format!(
            " Just below, {} keep{} up at the peak from empty, but {trigger} leaves a queue {they} \
             never drain{}: metastable, holding only until the first such trigger (its hidden \
             capacity {}/s, against a peak of {}/s).",
            units::plural(u64::from(below.shards()), "shard"),
            if below.shards() == 1 { "s" } else { "" },
            if below.shards() == 1 { "s" } else { "" },
            units::quantity(probed.hidden_per_s()),
            units::quantity(probed.rate_per_s())
        );
    }
    format!(
        " Just below, {} {} at the peak: the backlog reaches {} and the p99 wait {}.",
        units::plural(u64::from(below.shards()), "shard"),
        if below.shards() == 1 {
            format!("is {}", below.verdict().label())
        } else {
            format!("are {}", below.verdict().label())
        },
        units::count(below.backlog_max),
        units::duration(below.waits.p99_ns)
    )
}

/// What the burst did to an overloaded shard count, as a sentence (empty when its offered
/// rate never passed the ceiling in any window).
fn burst_sentence(row: &SummaryRow) -> String {
    let burst = &row.burst;
    if burst.overloaded_s <= 0.0 {
        return String::new();
    }
    let seconds = |s: f64| units::duration((s * 1e9).round() as u64);
    let growth = burst.backlog_growth_per_s.map_or_else(String::new, |g| {
        format!(", the backlog growing {}/s", units::quantity(g))
    });
    let breach = burst.first_slo_breach_s.map_or_else(String::new, |at| {
        format!("; the target is first broken at {}", seconds(at))
    });
    let drain = match burst.drain_s {
        Some(d) => format!("; the queue drains {} after the overload ends", seconds(d)),
        None => "; the queue never drains within the run".to_owned(),
    };
    format!(
        " The offered rate passes its ceiling for {} in all{growth}{breach}{drain}.",
        seconds(burst.overloaded_s)
    )
}
