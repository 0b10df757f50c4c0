//! The figures reported for one shard count, derived from its run and the scenario.

use crate::model::{Bottleneck, ShardRun};

use super::burst::{BurstMetrics, burst_metrics};
use super::extended::{ExtendedSummary, summarize_extended};
use crate::scenario::{Scenario, Slo};
use crate::stats::WaitSummary;
pub use crate::stats::replications::mean_and_half_width;
use crate::stats::replications::{mean_by, wait_estimates};

use super::units;

/// Peak utilization above which a shard count is "near ceiling": waits rise steeply there.
pub const NEAR_CEILING: f64 = 0.8;

/// A p99.9 wait at least this many mean holds means updates queue for long, whatever the
/// utilization says (a burst that outran the rows, or rows that came too late).
pub const TAIL_HOLDS: f64 = 100.0;
/// A backlog at the end worth at least this many seconds of the rows' capacity means the queue
/// did not drain.
pub const UNDRAINED_S: f64 = 1.0;

/// How a shard count fares, from the load its rows saw at the peak (retries included), its
/// queue and its tail waits — the one rule behind every verdict and recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Peak utilization at most 0.8, short tail waits, and the queue drains.
    Stable,
    /// Peak utilization above 0.8 and below 1: stable, but waits climb steeply.
    NearCeiling,
    /// Capacity suffices at the peak, yet the p99.9 wait is at least [`TAIL_HOLDS`] mean holds:
    /// updates queued for long (e.g. adaptive rows that grew late).
    Backlogged,
    /// Peak utilization 1 or more, or a backlog at the end of at least [`UNDRAINED_S`] of
    /// capacity: the queue grows for as long as the peak lasts.
    Overloaded,
    /// The queue passed the run's limit and the shard count was stopped (see `saturated_at_s`).
    Saturated,
}

impl Verdict {
    /// The word shown in tables.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Stable => "stable",
            Verdict::NearCeiling => "near ceiling",
            Verdict::Backlogged => "backlogged",
            Verdict::Overloaded => "overloaded",
            Verdict::Saturated => "saturated",
        }
    }

    /// Whether a shard count with this verdict can be recommended at all.
    pub fn can_serve(self) -> bool {
        self < Verdict::Overloaded
    }
}

/// The shard counts a sweep recommends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recommendation {
    /// The smallest shard count that is stable at the peak.
    pub stable: Option<u32>,
    /// The smallest shard count that is not overloaded and meets every target of `[slo]`
    /// (`None` when no target is set or none meets it).
    pub meets_target: Option<u32>,
    /// Whether `[slo]` sets a target.
    pub has_target: bool,
}

impl Recommendation {
    /// The shard count to highlight: the one meeting the target when one is set, else the
    /// smallest stable one.
    pub fn shards(&self) -> Option<u32> {
        if self.has_target {
            self.meets_target
        } else {
            self.stable
        }
    }
}

/// One policy's rows of a sweep and the shard counts they recommend.
#[derive(Debug, Clone)]
pub struct PolicyRows<'a> {
    /// The policy.
    pub policy: crate::model::Policy,
    /// Its rows, in shard-count order (the adaptive row last).
    pub rows: &'a [SummaryRow],
    /// What its rows recommend.
    pub recommendation: Recommendation,
}

/// A sweep's rows split by policy, in the scenario's order (the sweep runs each policy's
/// shard counts together).
pub fn by_policy<'a>(scenario: &Scenario, rows: &'a [SummaryRow]) -> Vec<PolicyRows<'a>> {
    rows.chunk_by(|a, b| a.policy == b.policy)
        .zip(&scenario.policies)
        .map(|(rows, &policy)| PolicyRows {
            policy,
            rows,
            recommendation: recommend(rows, &scenario.slo),
        })
        .collect()
}

/// The recommendation of one policy's rows (ascending shard counts) under `slo`.
pub fn recommend(rows: &[SummaryRow], slo: &Slo) -> Recommendation {
    let first = |pred: &dyn Fn(&SummaryRow) -> bool| {
        rows.iter()
            .filter(|r| !r.adaptive)
            .find(|r| pred(r))
            .map(|r| r.shards)
    };
    Recommendation {
        stable: first(&|row| row.verdict() == Verdict::Stable),
        meets_target: if slo.is_set() {
            first(&|row| row.meets(slo))
        } else {
            None
        },
        has_target: slo.is_set(),
    }
}

/// One row of `summary.csv`: a shard count's throughput, ceiling and waits.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// What the burst did: overload, first breach of the target, drain.
    pub burst: BurstMetrics,
    /// `skip-locked`: rows tried per update.
    pub tries_per_update: Option<f64>,
    /// Scenario name.
    pub scenario: String,
    /// Slot-choice policy.
    pub policy: String,
    /// Rows per key (adaptive: the rows a key starts with).
    pub shards: u32,
    /// Whether row counts adapted (`mode` = `adaptive`) or were fixed (`static`).
    pub adaptive: bool,
    /// Rows over all keys at the end (means over replications).
    pub rows_total: u64,
    /// The most rows any key had at the end.
    pub max_key_rows: u32,
    /// The mean hold of an update, ms.
    pub mean_hold_ms: f64,
    /// Increments that arrived.
    pub arrivals: u64,
    /// Holds finished by the end of the simulated period.
    pub completed: u64,
    /// Simulated period in seconds.
    pub duration_s: f64,
    /// Mean arrival rate: arrivals ÷ duration.
    pub offered_per_s: f64,
    /// Mean completion rate: completed ÷ duration.
    pub throughput_per_s: f64,
    /// Most increments a second one key's rows can take: shards ÷ mean hold (adaptive: the
    /// busiest key's rows at the end).
    pub ceiling_per_s: f64,
    /// The busiest key's offered rate ÷ ceiling (all of it for one key); at or above 1 its
    /// queue grows without bound.
    pub utilization: f64,
    /// The busiest key's share of the offered rate (1 for one key).
    pub hot_key_share: f64,
    /// Highest rate offered to the busiest key: its share of the profile's busiest segment or
    /// a trace's busiest window.
    pub peak_offered_per_s: f64,
    /// Peak offered ÷ ceiling.
    pub peak_utilization: f64,
    /// Replications behind the figures (each figure is their mean).
    pub replications: u32,
    /// Wait statistics over every measured increment, in nanoseconds (means over replications).
    pub waits: WaitSummary,
    /// Lower ends of the 95% confidence intervals of the wait statistics (two or more
    /// replications; Student t over replications).
    pub waits_lo: Option<WaitSummary>,
    /// Upper ends of the 95% confidence intervals of the wait statistics.
    pub waits_hi: Option<WaitSummary>,
    /// Largest backlog (arrived, not yet started) at any instant.
    pub backlog_max: u64,
    /// Backlog at the end of the simulated period.
    pub backlog_final: u64,
    /// Keys that received at least one increment.
    pub keys_touched: usize,
    /// Timeouts, retries, batching and pool figures, when the scenario has them.
    pub extended: Option<ExtendedSummary>,
    /// When the earliest replication's queue passed the run's limit and the shard count was
    /// stopped, in seconds; its waits then describe only the updates served before.
    pub saturated_at_s: Option<f64>,
    /// What a closed loop's clients saw (`[arrivals] clients`).
    pub closed: Option<ClosedSummary>,
    /// What the machine did, when the scenario models it (`[machine]`, `[wal]`,
    /// `hold.per_waiter_ms`, `client.overhead_ms`).
    pub machine: Option<MachineSummary>,
    /// What the likes table did (`[likes_table]`).
    pub likes: Option<super::likes::LikesSummary>,
}

/// The machine's figures for one shard count (means over replications).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineSummary {
    /// The cores' busy fraction (`[machine]`).
    pub cpu_utilization: Option<f64>,
    /// Flushes per commit (`[wal]`): 1 when every commit flushes alone, less with group commit.
    pub fsyncs_per_commit: Option<f64>,
    /// The WAL's busy fraction (`[wal]`).
    pub wal_utilization: Option<f64>,
    /// The busy fraction of the busiest key's busiest row, measured.
    pub row_utilization: f64,
    /// Open arrivals' response times, send → commit acknowledged, ns (a closed loop's are in
    /// [`ClosedSummary`]).
    pub responses: Option<WaitSummary>,
    /// What limits this shard count: the busiest of the row, the CPU and the WAL, or a closed
    /// loop's clients when none of them is near full.
    pub bottleneck: Bottleneck,
    /// What the stalls did (`[stalls]`).
    pub stalls: Option<StallSummary>,
}

/// What the machine's stalls did to one shard count (means over replications).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StallSummary {
    /// Stalls that began in the measured period.
    pub stalls: f64,
    /// Time stalled in the measured period, s.
    pub stalled_s: f64,
    /// The p99 wait of the same arrivals on the same machine without its stalls, ns.
    pub wait_p99_without_ns: f64,
}

/// A closed loop's figures for one shard count (means over replications).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosedSummary {
    /// Clients in the loop.
    pub clients: u32,
    /// Response times, send → commit, as clients see them, in nanoseconds.
    pub responses: WaitSummary,
}

/// The summary of one shard count from its replications (at least one): each figure is the
/// mean over replications, and with two or more the wait statistics get 95% confidence
/// intervals from Student's t distribution with R − 1 degrees of freedom.
pub fn summarize(scenario: &Scenario, runs: &[ShardRun]) -> SummaryRow {
    assert!(
        !runs.is_empty(),
        "a shard count has at least one replication"
    );
    let shards = runs[0].shards;
    let duration_s = scenario.measured_duration_s();
    // The row is held until the commit: with a machine, through its CPU and flush too.
    let mean_hold_s = scenario.row_hold_ns() / 1e9;
    let hot_key_share = scenario.hot_key_share();
    let ceiling_per_s = ceiling_per_s(scenario, runs);
    let arrivals = mean_by(runs, |run| run.arrivals as f64);
    let completed = mean_by(runs, |run| run.completed as f64);
    let offered_per_s = arrivals / duration_s;
    let summaries: Vec<WaitSummary> = runs.iter().map(|run| run.waits.summary()).collect();
    let (waits, waits_lo, waits_hi) = wait_estimates(&summaries);
    let extended = summarize_extended(scenario, runs);
    let peak_offered_per_s = peak_offered_per_s(scenario, offered_per_s, extended.as_ref());
    let burst = burst_metrics(
        &runs[0].windows,
        scenario.window,
        ceiling_per_s,
        hot_key_share,
        scenario.slo.p99_ns,
    );
    SummaryRow {
        burst,
        tries_per_update: tries_per_update(runs),
        scenario: scenario.name.clone(),
        policy: runs[0].policy.to_string(),
        shards,
        adaptive: runs[0].adaptive,
        rows_total: mean_by(runs, |run| run.rows_total as f64).round() as u64,
        max_key_rows: runs.iter().map(|run| run.max_key_rows).max().unwrap_or(0),
        mean_hold_ms: mean_hold_s * 1e3,
        arrivals: arrivals.round() as u64,
        completed: completed.round() as u64,
        duration_s,
        offered_per_s,
        throughput_per_s: completed / duration_s,
        ceiling_per_s,
        utilization: offered_per_s * hot_key_share / ceiling_per_s,
        hot_key_share,
        peak_offered_per_s,
        peak_utilization: peak_offered_per_s / ceiling_per_s,
        replications: runs.len() as u32,
        waits,
        waits_lo,
        waits_hi,
        backlog_max: mean_by(runs, |run| run.backlog_max as f64).round() as u64,
        backlog_final: mean_by(runs, |run| run.backlog_final as f64).round() as u64,
        keys_touched: runs.iter().map(|run| run.keys_touched).max().unwrap_or(0),
        extended,
        saturated_at_s: runs
            .iter()
            .filter_map(|run| run.saturated_at)
            .min()
            .map(|at| crate::time::ns_to_s(at.saturating_sub(scenario.warmup))),
        closed: closed_summary(runs),
        machine: machine_summary(scenario, runs),
        likes: super::likes::summarize(runs),
    }
}

/// The busiest key's ceiling: its rows (an adaptive run's busiest key's final rows), each
/// handing itself to a woken waiter every time at its ceiling, or its share of what the
/// machine takes, whichever is less.
fn ceiling_per_s(scenario: &Scenario, runs: &[ShardRun]) -> f64 {
    let shards = runs[0].shards;
    let saturated_hold_s = scenario.saturated_row_hold_ns() / 1e9;
    let rows_per_key = if runs[0].adaptive {
        runs.iter()
            .map(|run| run.max_key_rows)
            .max()
            .unwrap_or(shards)
            .max(shards)
    } else {
        shards
    };
    ceiling_of_rows(scenario, rows_per_key, saturated_hold_s)
}

/// The busiest key's ceiling with `rows` rows a key, without adaptive rows: what a shard
/// count's `ceiling_per_s` is before it is simulated.
pub fn static_ceiling_per_s(scenario: &Scenario, rows: u32) -> f64 {
    ceiling_of_rows(scenario, rows, scenario.saturated_row_hold_ns() / 1e9)
}

/// The busiest key's ceiling with `rows` rows a key each held `saturated_hold_s` at its
/// ceiling, or its share of what the machine takes, whichever is less.
fn ceiling_of_rows(scenario: &Scenario, rows: u32, saturated_hold_s: f64) -> f64 {
    let rows_ceiling = f64::from(rows) / saturated_hold_s;
    scenario
        .machine
        .ceiling_per_s()
        .map_or(rows_ceiling, |(machine, _)| {
            rows_ceiling.min(machine * scenario.hot_key_share())
        })
}

/// The load at the peak: a closed loop offers what its rows let it (what it achieved); an
/// open stream's likes at their peak, times the attempts per like (the rows see every retry).
fn peak_offered_per_s(
    scenario: &Scenario,
    offered_per_s: f64,
    extended: Option<&ExtendedSummary>,
) -> f64 {
    let amplification = extended
        .and_then(|e| e.client)
        .map_or(1.0, |c| c.amplification.max(1.0));
    match scenario.arrivals {
        crate::scenario::ArrivalPlan::Closed(_) => offered_per_s,
        _ => scenario.peak_offered_per_s() * amplification,
    }
}

/// Skip-locked: the rows tried per update over the replications.
fn tries_per_update(runs: &[ShardRun]) -> Option<f64> {
    let measured = runs.iter().map(|run| run.waits.count()).sum::<u64>();
    (runs[0].policy == crate::model::Policy::SkipLocked && measured > 0)
        .then(|| runs.iter().map(|run| run.tries).sum::<u64>() as f64 / measured as f64)
}

/// What to do when no simulated shard count meets the target, judged at the most rows: add
/// rows while the rows are what is full; say that more rows will not help when the likes
/// table's hot partition or the machine is.
pub fn remedy(rows: &[SummaryRow]) -> &'static str {
    let most = rows
        .iter()
        .filter(|row| !row.adaptive)
        .max_by_key(|row| row.shards);
    let partition_full = most
        .and_then(|row| row.likes.as_ref())
        .is_some_and(|likes| likes.hot_partition_utilization >= NEAR_CEILING);
    if partition_full {
        "more rows will not help: the likes table's hot partition is at or near its ceiling at \
         the most rows (partition the likes by post and user, or add partitions)"
    } else if machine_bound(rows) {
        "more rows will not help: the machine is the bottleneck at the most rows (a faster \
         machine, or fewer updates, e.g. batching)"
    } else {
        "simulate more shards"
    }
}

/// Whether the shard count with the most rows is limited by the CPU or the WAL.
fn machine_bound(rows: &[SummaryRow]) -> bool {
    rows.iter()
        .filter(|row| !row.adaptive)
        .max_by_key(|row| row.shards)
        .and_then(|row| row.machine)
        .is_some_and(|m| matches!(m.bottleneck, Bottleneck::Cpu | Bottleneck::Wal))
}

/// The machine's figures over replications, when the scenario models a machine.
fn machine_summary(scenario: &Scenario, runs: &[ShardRun]) -> Option<MachineSummary> {
    if scenario.machine.is_empty() {
        return None;
    }
    let machines: Vec<&crate::model::MachineRun> =
        runs.iter().filter_map(|run| run.machine.as_ref()).collect();
    if machines.is_empty() {
        return None;
    }
    let mean_of = |values: Vec<f64>| -> Option<f64> {
        (values.len() == machines.len()).then(|| mean_by(&values, |&v| v))
    };
    let has_wal = scenario.machine.wal.is_some();
    let cpu_utilization = mean_of(
        machines
            .iter()
            .filter_map(|m| m.cpu_utilization())
            .collect(),
    );
    let fsyncs_per_commit = mean_of(
        machines
            .iter()
            .filter_map(|m| m.fsyncs_per_commit(has_wal))
            .collect(),
    );
    let wal_utilization = has_wal
        .then(|| mean_of(machines.iter().map(|m| m.wal_utilization()).collect()))
        .flatten();
    let row_utilization =
        mean_of(machines.iter().map(|m| m.row_utilization()).collect()).unwrap_or(0.0);
    let responses = {
        let summaries: Vec<WaitSummary> = machines
            .iter()
            .filter_map(|m| m.responses.as_ref())
            .map(crate::stats::WaitStats::summary)
            .collect();
        (!summaries.is_empty()).then(|| wait_estimates(&summaries).0)
    };
    let busiest = [
        (row_utilization, Bottleneck::Row),
        (cpu_utilization.unwrap_or(0.0), Bottleneck::Cpu),
        (wal_utilization.unwrap_or(0.0), Bottleneck::Wal),
    ]
    .into_iter()
    .fold((f64::MIN, Bottleneck::Row), |best, next| {
        if next.0 > best.0 { next } else { best }
    });
    let bottleneck = match scenario.arrivals {
        // A closed loop whose database has room to spare is held back by its clients.
        crate::scenario::ArrivalPlan::Closed(_) if busiest.0 < NEAR_CEILING => Bottleneck::Clients,
        _ => busiest.1,
    };
    Some(MachineSummary {
        cpu_utilization,
        fsyncs_per_commit,
        wal_utilization,
        row_utilization,
        responses,
        bottleneck,
        stalls: stall_summary(&machines),
    })
}

/// The stalls' figures over replications, when the machine stalls.
fn stall_summary(machines: &[&crate::model::MachineRun]) -> Option<StallSummary> {
    let count = machines.len() as f64;
    let mut sums = (0.0, 0.0, 0.0);
    for machine in machines {
        let figures = machine.stalls?;
        sums.0 += figures.stalls as f64;
        sums.1 += crate::time::ns_to_s(figures.stalled_ns);
        sums.2 += machine.wait_p99_without_stalls_ns? as f64;
    }
    Some(StallSummary {
        stalls: sums.0 / count,
        stalled_s: sums.1 / count,
        wait_p99_without_ns: sums.2 / count,
    })
}

/// The clients' figures over replications, for a closed loop.
fn closed_summary(runs: &[ShardRun]) -> Option<ClosedSummary> {
    let first = runs[0].closed.as_ref()?;
    let summaries: Vec<WaitSummary> = runs
        .iter()
        .filter_map(|run| run.closed.as_ref())
        .map(|closed| closed.responses.summary())
        .collect();
    Some(ClosedSummary {
        clients: first.clients,
        responses: wait_estimates(&summaries).0,
    })
}

impl SummaryRow {
    /// The row's name in tables: its shard count, or `adaptive`.
    pub fn label(&self) -> String {
        if self.adaptive {
            "adaptive".into()
        } else {
            self.shards.to_string()
        }
    }

    /// How this shard count fares: saturated; overloaded at the peak or undrained at the end;
    /// backlogged by its tail waits; near its ceiling; or stable.
    pub fn verdict(&self) -> Verdict {
        let mean_hold_ns = self.mean_hold_ms * 1e6;
        let undrained =
            self.backlog_final as f64 >= self.ceiling_per_s * UNDRAINED_S && self.backlog_final > 0;
        // A closed loop's queue cannot grow past its clients, and its load follows the rows:
        // it is judged by the utilization it achieved, never overloaded by its demand.
        let (peak, can_overload) = match self.closed {
            Some(_) => (self.utilization, false),
            None => (self.peak_utilization, true),
        };
        if self.saturated_at_s.is_some() {
            Verdict::Saturated
        } else if can_overload && (peak >= 1.0 || undrained) {
            Verdict::Overloaded
        } else if self.waits.p999_ns as f64 >= TAIL_HOLDS * mean_hold_ns && self.waits.p999_ns > 0 {
            Verdict::Backlogged
        } else if peak > NEAR_CEILING {
            Verdict::NearCeiling
        } else {
            Verdict::Stable
        }
    }

    /// The rows one key has for the ceiling: the shard count, or for an adaptive run the most
    /// rows its busiest key reached.
    pub fn rows_per_key(&self) -> u32 {
        if self.adaptive {
            self.max_key_rows.max(self.shards)
        } else {
            self.shards
        }
    }

    /// The upper ends of the wait intervals, or the means with a single replication: what a
    /// target is judged by.
    pub fn waits_upper(&self) -> &WaitSummary {
        self.waits_hi.as_ref().unwrap_or(&self.waits)
    }

    /// Whether it is not overloaded and meets every target that `slo` sets, judged by the upper
    /// confidence bounds when there are replications.
    pub fn meets(&self, slo: &Slo) -> bool {
        let upper = self.waits_upper();
        self.verdict().can_serve()
            && slo.p99_ns.is_none_or(|target| upper.p99_ns <= target)
            && slo.p999_ns.is_none_or(|target| upper.p999_ns <= target)
            && slo
                .max_utilization
                .is_none_or(|limit| self.peak_utilization <= limit)
    }
}

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
            .find(|row| row.shards == shards && !row.adaptive)
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
            .find(|row| row.shards < n && !row.adaptive)
    });
    if let Some(below) = below {
        text.push_str(&below_sentence(below));
        text.push_str(&burst_sentence(below));
    }
    if let (Some(n), Some(below)) = (recommendation.meets_target, below)
        && n - below.shards > 1
    {
        text.push_str(&format!(
            " This is the smallest of the simulated shard counts over the whole profile; `shardsim plan` \
             tries every count from {} to {} at the steady peak over replications, judged by the upper end \
             of each interval, so its answer can lie in between.",
            below.shards + 1,
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
    if let crate::scenario::ArrivalPlan::Closed(closed) = &scenario.arrivals {
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
    let Some((ceiling, part)) = scenario.machine.ceiling_per_s() else {
        return String::new();
    };
    let why = match (part, &scenario.machine.cpu) {
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
            row.shards,
            row.peak_utilization,
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
    let target = describe_slo(&scenario.slo);
    let Some(row) = meets else {
        return format!(" No simulated shard count meets the target ({target}).");
    };
    let mut text = format!(
        " The smallest that meets the target ({target}) is {}: p99 {}, p99.9 {}.",
        row.shards,
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
            row.peak_utilization,
            stable.map_or(String::new(), |s| format!(
                "; {} would be stable",
                units::plural(u64::from(s.shards), "shard")
            ))
        ));
    }
    text
}

/// What the shard count just below the highlighted one does at the peak.
fn below_sentence(below: &SummaryRow) -> String {
    format!(
        " Just below, {} {} at the peak: the backlog reaches {} and the p99 wait {}.",
        units::plural(u64::from(below.shards), "shard"),
        if below.shards == 1 {
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

/// The targets of `[slo]` as text, e.g. `p99 ≤ 20 ms, peak utilization ≤ 0.5`.
pub fn describe_slo(slo: &Slo) -> String {
    let ms = |ns: u64| crate::model::time::fmt_ms(ns);
    let mut parts = Vec::new();
    if let Some(ns) = slo.p99_ns {
        parts.push(format!("p99 ≤ {} ms", ms(ns)));
    }
    if let Some(ns) = slo.p999_ns {
        parts.push(format!("p99.9 ≤ {} ms", ms(ns)));
    }
    if let Some(limit) = slo.max_utilization {
        parts.push(format!("peak utilization ≤ {limit}"));
    }
    parts.join(", ")
}

/// A number with precision that suits its size: `0.012`, `4.5`, `1250`; `inf` when unbounded.
pub fn compact(value: f64) -> String {
    if !value.is_finite() {
        return "inf".into();
    }
    let text = if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    };
    units::trim_zeros(text)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A row of `shards` at `peak_utilization` whose p99 wait is `p99_ms` (p99.9 twice that).
    pub(in crate::report) fn row(shards: u32, peak_utilization: f64, p99_ms: u64) -> SummaryRow {
        SummaryRow {
            burst: BurstMetrics::default(),
            tries_per_update: None,
            scenario: "t".into(),
            policy: "earliest-free".into(),
            shards,
            adaptive: false,
            rows_total: u64::from(shards),
            max_key_rows: shards,
            mean_hold_ms: 1.0,
            arrivals: 100,
            completed: 100,
            duration_s: 1.0,
            offered_per_s: 100.0,
            throughput_per_s: 100.0,
            ceiling_per_s: 1000.0,
            utilization: peak_utilization,
            hot_key_share: 1.0,
            peak_offered_per_s: 100.0,
            peak_utilization,
            replications: 1,
            waits: WaitSummary {
                p99_ns: p99_ms * 1_000_000,
                p999_ns: p99_ms * 2_000_000,
                ..WaitSummary::default()
            },
            waits_lo: None,
            waits_hi: None,
            backlog_max: 0,
            backlog_final: 0,
            keys_touched: 1,
            extended: None,
            saturated_at_s: None,
            closed: None,
            machine: None,
            likes: None,
        }
    }

    #[test]
    fn verdicts_follow_utilization_queue_and_tail() {
        assert_eq!(row(8, 0.8, 0).verdict(), Verdict::Stable);
        assert_eq!(row(8, 0.81, 0).verdict(), Verdict::NearCeiling);
        assert_eq!(row(8, 1.0, 0).verdict(), Verdict::Overloaded);
        // p99.9 of 200 ms with a 1 ms hold: queued far too long, whatever the utilization.
        assert_eq!(row(8, 0.5, 100).verdict(), Verdict::Backlogged);
        let mut undrained = row(8, 0.5, 0);
        undrained.backlog_final = 5_000;
        assert_eq!(undrained.verdict(), Verdict::Overloaded);
        let mut saturated = row(1, 0.5, 0);
        saturated.saturated_at_s = Some(3.0);
        assert_eq!(saturated.verdict(), Verdict::Saturated);
        assert!(!saturated.meets(&Slo::default()));
    }

    #[test]
    fn recommends_the_smallest_stable_and_the_smallest_meeting_the_target() {
        let rows = [
            row(2, 1.5, 900),
            row(4, 0.9, 30),
            row(8, 0.45, 12),
            row(16, 0.2, 4),
        ];
        let plain = recommend(&rows, &Slo::default());
        assert_eq!(
            (plain.stable, plain.meets_target, plain.shards()),
            (Some(8), None, Some(8))
        );
        let strict = Slo {
            p99_ns: Some(5_000_000),
            ..Slo::default()
        };
        assert_eq!(recommend(&rows, &strict).shards(), Some(16));
        let loose = Slo {
            p99_ns: Some(40_000_000),
            ..Slo::default()
        };
        // Near the ceiling still counts when it meets the wait target.
        assert_eq!(recommend(&rows, &loose).shards(), Some(4));
        let headroom = Slo {
            max_utilization: Some(0.3),
            ..Slo::default()
        };
        assert_eq!(recommend(&rows, &headroom).shards(), Some(16));
        let impossible = Slo {
            p99_ns: Some(1),
            ..Slo::default()
        };
        assert_eq!(recommend(&rows, &impossible).shards(), None);
    }
}
