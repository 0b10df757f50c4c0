//! The figures reported for one shard count, derived from its replications' runs and the
//! scenario: means over replications, confidence intervals, the ceiling, the peak load and
//! what the machine, the clients and the likes table did.

use crate::model::{Bottleneck, ShardRun};

use super::burst::{BurstMetrics, burst_metrics};
use super::extended::{ExtendedSummary, summarize_extended};
use super::verdict::NEAR_CEILING;
use rayon::prelude::*;

use crate::error::InputError;
use crate::scenario::Scenario;
use crate::stability::{ClientKnee, StabilityFigures, StabilitySettings};
use crate::stats::WaitSummary;
use crate::stats::replications::{mean_by, wait_estimates};

/// One row of `summary.csv`: a shard count's throughput, ceiling and waits.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// What the burst did: overload, first breach of the target, drain.
    pub(crate) burst: BurstMetrics,
    /// `skip-locked`: rows tried per update.
    pub(crate) tries_per_update: Option<f64>,
    /// Scenario name.
    pub(crate) scenario: String,
    /// Slot-choice policy.
    pub(crate) policy: crate::model::Policy,
    /// Rows per key: fixed (`mode` = `static`), or adaptive and the rows a key starts with.
    pub(crate) rows: crate::model::Rows,
    /// Rows over all keys at the end (means over replications).
    pub(crate) rows_total: u64,
    /// The most rows any key had at the end.
    pub(crate) max_key_rows: u32,
    /// The mean hold of an update, ms.
    pub(crate) mean_hold_ms: f64,
    /// Increments that arrived (the mean over replications).
    pub(crate) mean_arrivals: f64,
    /// Holds finished by the end of the simulated period (the mean over replications).
    pub(crate) mean_completed: f64,
    /// Simulated period in seconds.
    pub(crate) duration_s: f64,
    /// Most increments a second one key's rows can take: shards ÷ mean hold (adaptive: the
    /// busiest key's rows at the end).
    pub(crate) ceiling_per_s: f64,
    /// The busiest key's share of the offered rate (1 for one key).
    pub(crate) hot_key_share: f64,
    /// Highest rate offered to the busiest key: its share of the profile's busiest segment or
    /// a trace's busiest window.
    pub peak_offered_per_s: f64,
    /// Replications behind the figures (each figure is their mean).
    pub(crate) replications: u32,
    /// Wait statistics over every measured increment, in nanoseconds (means over replications).
    pub waits: WaitSummary,
    /// Lower ends of the 95% confidence intervals of the wait statistics (two or more
    /// replications; Student t over replications).
    pub waits_lo: Option<WaitSummary>,
    /// Upper ends of the 95% confidence intervals of the wait statistics.
    pub waits_hi: Option<WaitSummary>,
    /// Largest backlog (arrived, not yet started) at any instant.
    pub(crate) backlog_max: u64,
    /// Backlog at the end of the simulated period.
    pub(crate) backlog_final: u64,
    /// Keys that received at least one increment.
    pub(crate) keys_touched: usize,
    /// Timeouts, retries, batching and pool figures, when the scenario has them.
    pub(crate) extended: Option<ExtendedSummary>,
    /// When the earliest replication's queue passed the run's limit and the shard count was
    /// stopped, in seconds; its waits then describe only the updates served before.
    pub(crate) saturated_at_s: Option<f64>,
    /// What a closed loop's clients saw (`[arrivals] clients`).
    pub(crate) closed: Option<ClosedSummary>,
    /// What the machine did, when the scenario models it (`[machine]`, `[wal]`,
    /// `hold.per_waiter_ms`, `client.overhead_ms`).
    pub(crate) machine: Option<MachineSummary>,
    /// What the likes table did (`[likes_table]`).
    pub(crate) likes: Option<super::likes::LikesSummary>,
    /// Its stability at the peak and its advertised and hidden capacities, when its stream is
    /// probed for metastability ([`crate::stability`]); set by [`SummaryRow::with_stability`].
    pub(crate) stability: Option<StabilityFigures>,
    /// A closed loop's knee on a machine: the client count its rows commit the most at
    /// ([`crate::stability::knee`]); set by [`SummaryRow::with_knee`].
    pub(crate) knee: Option<ClientKnee>,
    /// Its throughput and p99 over the calibration's band, when the run was simulated at the
    /// band's ends ([`super::band::attach`]).
    pub(crate) band: Option<super::band::Band>,
}

/// The machine's figures for one shard count (means over replications).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineSummary {
    /// The cores' busy fraction (`[machine]`).
    pub(crate) cpu_utilization: Option<f64>,
    /// Flushes per commit (`[wal]`): 1 when every commit flushes alone, less with group commit.
    pub(crate) fsyncs_per_commit: Option<f64>,
    /// The WAL's busy fraction (`[wal]`).
    pub(crate) wal_utilization: Option<f64>,
    /// The busy fraction of the busiest key's busiest row, measured.
    pub(crate) row_utilization: f64,
    /// Open arrivals' response times, send → commit acknowledged, ns (a closed loop's are in
    /// [`ClosedSummary`]).
    pub(crate) responses: Option<WaitSummary>,
    /// What limits this shard count: the busiest of the row, the CPU and the WAL, or a closed
    /// loop's clients when none of them is near full.
    pub(crate) bottleneck: Bottleneck,
    /// What the stalls did (`[stalls]`).
    pub(crate) stalls: Option<StallSummary>,
}

/// What the machine's stalls did to one shard count (means over replications).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StallSummary {
    /// Stalls that began in the measured period.
    pub(crate) stalls: f64,
    /// Time stalled in the measured period, s.
    pub(crate) stalled_s: f64,
    /// The p99 wait of the same arrivals on the same machine without its stalls, ns.
    pub(crate) wait_p99_without_ns: f64,
}

/// A closed loop's figures for one shard count (means over replications).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosedSummary {
    /// Clients in the loop.
    pub(crate) clients: u32,
    /// Response times, send → commit, as clients see them, in nanoseconds.
    pub(crate) responses: WaitSummary,
}

/// The summary of one shard count from its replications (at least one): each figure is the
/// mean over replications, and with two or more the wait statistics get 95% confidence
/// intervals from Student's t distribution with R − 1 degrees of freedom.
pub fn summarize(scenario: &Scenario, runs: &[ShardRun]) -> SummaryRow {
    assert!(
        !runs.is_empty(),
        "a shard count has at least one replication"
    );
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
        scenario.window(),
        ceiling_per_s,
        hot_key_share,
        scenario.slo().p99_ns,
    );
    SummaryRow {
        burst,
        tries_per_update: tries_per_update(runs),
        scenario: scenario.name().to_owned(),
        policy: runs[0].policy,
        rows: runs[0].rows(),
        rows_total: mean_by(runs, |run| run.rows_total as f64).round() as u64,
        max_key_rows: runs.iter().map(|run| run.max_key_rows).max().unwrap_or(0),
        mean_hold_ms: mean_hold_s * 1e3,
        mean_arrivals: arrivals,
        mean_completed: completed,
        duration_s,
        ceiling_per_s,
        hot_key_share,
        peak_offered_per_s,
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
            .map(|at| crate::time::ns_to_s(at.saturating_sub(scenario.warmup()))),
        closed: closed_summary(runs),
        machine: machine_summary(scenario, runs),
        likes: super::likes::summarize(runs),
        stability: None,
        knee: None,
        band: None,
    }
}

/// Every shard count's summary (`runs[i]` its replications), each probed for metastability
/// at the scenario's peak when its stream is ([`crate::stability::applies`]): a shard count
/// that falls behind from empty is `collapsed` without probing; the adaptive rows are not
/// probed (their rows change as they go).
pub fn summarize_each(
    scenario: &Scenario,
    runs: &[Vec<ShardRun>],
    settings: &StabilitySettings,
) -> Result<Vec<SummaryRow>, InputError> {
    let rows: Vec<SummaryRow> = runs.iter().map(|reps| summarize(scenario, reps)).collect();
    if matches!(scenario.arrivals(), crate::scenario::ArrivalPlan::Closed(_)) {
        return Ok(rows
            .into_par_iter()
            .map(|row| {
                let knee = (!row.adaptive())
                    .then(|| crate::stability::knee(scenario, row.policy, row.shards()))
                    .flatten();
                row.with_knee(knee)
            })
            .collect());
    }
    if !crate::stability::applies(scenario) {
        return Ok(rows);
    }
    let rate = scenario.peak_total_per_s();
    rows.into_par_iter()
        .map(|row| {
            if row.adaptive() {
                return Ok(row);
            }
            let collapsed = !row.verdict().can_serve();
            let probed = crate::stability::assess(
                scenario,
                row.policy,
                row.shards(),
                rate,
                collapsed,
                settings,
            )?;
            Ok(row.with_stability(probed))
        })
        .collect()
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

/// A shard count's peak utilization as far as it is known before its run: the scenario's
/// peak over the shard count's ceiling, as `summary.csv` computes it without retries (which
/// only multiply the peak by the attempts per like, at least 1).
pub fn lowest_peak_utilization(scenario: &Scenario, shards: u32) -> f64 {
    scenario.peak_offered_per_s() / static_ceiling_per_s(scenario, shards)
}

/// The busiest key's ceiling with `rows` rows a key each held `saturated_hold_s` at its
/// ceiling, or its share of what the machine takes, whichever is less.
fn ceiling_of_rows(scenario: &Scenario, rows: u32, saturated_hold_s: f64) -> f64 {
    let rows_ceiling = f64::from(rows) / saturated_hold_s;
    scenario
        .machine()
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
    match scenario.arrivals() {
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

/// The machine's figures over replications, when the scenario models a machine.
fn machine_summary(scenario: &Scenario, runs: &[ShardRun]) -> Option<MachineSummary> {
    if scenario.machine().is_empty() {
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
    let has_wal = scenario.machine().wal.is_some();
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
    let bottleneck = match scenario.arrivals() {
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
    let stalled = machines
        .iter()
        .map(|machine| Some((machine.stalls?, machine.wait_p99_without_stalls_ns?)))
        .collect::<Option<Vec<_>>>()?;
    Some(StallSummary {
        stalls: mean_by(&stalled, |(figures, _)| figures.stalls as f64),
        stalled_s: mean_by(&stalled, |(figures, _)| {
            crate::time::ns_to_s(figures.stalled_ns)
        }),
        wait_p99_without_ns: mean_by(&stalled, |&(_, p99)| p99 as f64),
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

/// The figures derived from a row's others, computed where they are read so that they
/// always agree with them.
impl SummaryRow {
    /// Increments that arrived, rounded.
    pub fn arrivals(&self) -> u64 {
        self.mean_arrivals.round() as u64
    }

    /// Holds finished by the end of the simulated period, rounded.
    pub fn completed(&self) -> u64 {
        self.mean_completed.round() as u64
    }

    /// Mean arrival rate: arrivals ÷ duration.
    pub fn offered_per_s(&self) -> f64 {
        self.mean_arrivals / self.duration_s
    }

    /// Mean completion rate: completed ÷ duration.
    pub fn throughput_per_s(&self) -> f64 {
        self.mean_completed / self.duration_s
    }

    /// The busiest key's offered rate ÷ ceiling (all of it for one key); at or above 1 its
    /// queue grows without bound.
    pub fn utilization(&self) -> f64 {
        self.offered_per_s() * self.hot_key_share / self.ceiling_per_s
    }

    /// Peak offered ÷ ceiling.
    pub fn peak_utilization(&self) -> f64 {
        self.peak_offered_per_s / self.ceiling_per_s
    }

    /// Replications behind the figures.
    pub fn replications(&self) -> u32 {
        self.replications
    }

    /// The row's name in tables: its shard count, or `adaptive`.
    pub fn label(&self) -> String {
        self.rows.to_string()
    }

    /// Rows per key (adaptive: the rows a key starts with).
    pub fn shards(&self) -> u32 {
        self.rows.start()
    }

    /// Whether row counts adapted.
    pub fn adaptive(&self) -> bool {
        self.rows.is_adaptive()
    }

    /// The rows one key has for the ceiling: the shard count, or for an adaptive run the most
    /// rows its busiest key reached.
    pub fn rows_per_key(&self) -> u32 {
        if self.adaptive() {
            self.max_key_rows.max(self.shards())
        } else {
            self.shards()
        }
    }

    /// The upper ends of the wait intervals, or the means with a single replication: what a
    /// target is judged by.
    pub fn waits_upper(&self) -> &WaitSummary {
        self.waits_hi.as_ref().unwrap_or(&self.waits)
    }

    /// The row with its stability at the peak and its capacities ([`crate::stability`]).
    pub fn with_stability(self, stability: Option<StabilityFigures>) -> SummaryRow {
        SummaryRow { stability, ..self }
    }

    /// Its stability at the peak and its capacities, when its stream was probed.
    pub fn stability(&self) -> Option<&StabilityFigures> {
        self.stability.as_ref()
    }

    /// The row with its closed loop's knee ([`crate::stability::knee`]).
    pub fn with_knee(self, knee: Option<ClientKnee>) -> SummaryRow {
        SummaryRow { knee, ..self }
    }

    /// A closed loop's knee on a machine, when it has one.
    pub fn knee(&self) -> Option<&ClientKnee> {
        self.knee.as_ref()
    }

    /// The utilization of what binds this shard count at its peak: the busiest of its rows,
    /// the machine's cores and its WAL, and — when its stream was probed — the peak over its
    /// hidden capacity (above 1 when a trigger tips it). What a plan's table shows.
    pub fn bottleneck_utilization(&self) -> f64 {
        let machine = self.machine.map_or(0.0, |m| {
            m.cpu_utilization
                .unwrap_or(0.0)
                .max(m.wal_utilization.unwrap_or(0.0))
        });
        let probed = self
            .stability
            .as_ref()
            .map_or(0.0, StabilityFigures::utilization);
        self.peak_utilization().max(machine).max(probed)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A row of `shards` at `peak_utilization` whose p99 wait is `p99_ms` (p99.9 twice that).
    pub(crate) fn row(shards: u32, peak_utilization: f64, p99_ms: u64) -> SummaryRow {
        SummaryRow {
            burst: BurstMetrics::default(),
            tries_per_update: None,
            scenario: "t".into(),
            policy: crate::model::Policy::EarliestFree,
            rows: crate::model::Rows::Fixed(shards),
            rows_total: u64::from(shards),
            max_key_rows: shards,
            mean_hold_ms: 1.0,
            // Offered and at its peak alike: utilization and peak utilization agree.
            mean_arrivals: peak_utilization * 1000.0,
            mean_completed: peak_utilization * 1000.0,
            duration_s: 1.0,
            ceiling_per_s: 1000.0,
            hot_key_share: 1.0,
            peak_offered_per_s: peak_utilization * 1000.0,
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
            stability: None,
            knee: None,
            band: None,
        }
    }
}
