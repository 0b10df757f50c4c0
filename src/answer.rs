//! A grid configuration's answer — per policy, the first shard count whose row is stable and
//! the first that meets the target, with the recommended one's waits — found without
//! simulating the shard counts that cannot change it.
//!
//! Two facts hold for every policy, so the answer is exactly the one a run of every shard
//! count gives (`sweep.csv`, the grid and the charts are byte-identical):
//! - **Before it is simulated**, a shard count's peak utilization is known from below: the
//!   scenario's peak over the shard count's ceiling (retries only raise it). At 1 or above its
//!   row is overloaded (or saturated) whatever its run, so it is neither stable nor meets a
//!   target; above [`NEAR_CEILING`] it is not stable.
//! - **After** the first stable shard count and the first meeting the target, no later shard
//!   count changes the answer.
//!
//! The shard counts left are simulated in rounds, each round one pass over the configuration's
//! arrival stream shared by every policy's shard counts of that round (common random numbers:
//! each run is the one a sweep of every shard count gives): per policy, those not yet settled
//! up to the first that could be stable. Monotonicity in the shard count is not assumed (it
//! holds for `earliest-free` only, see docs/model.md), so no shard count is skipped for it.

use crate::error::InputError;
use crate::figures::summarize_each;
use crate::figures::{
    NEAR_CEILING, Recommendation, SummaryRow, Verdict, lowest_peak_utilization, remedy,
};
use crate::model::{NoEvents, Policy, Rows};
use crate::report::grid::{ConfigBlock, sweep_line};
use crate::scenario::grid::Configuration;
use crate::scenario::{ArrivalPlan, Scenario, Variant};
use crate::stability::StabilitySettings;
use crate::sweep::{self, NoProgress};

/// Whether a configuration's answer can be found without simulating every shard count: an
/// open stream (a closed loop's load follows its rows, so its peak is only known from its
/// run) and fixed row counts (an adaptive run's ceiling is its own).
pub fn can_search(scenario: &Scenario) -> bool {
    !matches!(scenario.arrivals(), ArrivalPlan::Closed(_)) && scenario.adaptive().is_none()
}

/// What is known of one policy's answer so far.
#[derive(Debug)]
struct PolicySearch {
    policy: Policy,
    /// The index, in the scenario's shard counts, of the first one not yet considered.
    next: usize,
    /// The rows simulated, in the scenario's order.
    rows: Vec<SummaryRow>,
    stable: Option<u32>,
    meets_target: Option<u32>,
}

impl PolicySearch {
    fn new(policy: Policy) -> PolicySearch {
        PolicySearch {
            policy,
            next: 0,
            rows: Vec::new(),
            stable: None,
            meets_target: None,
        }
    }

    /// Whether no later shard count can change the answer.
    fn settled(&self, has_target: bool) -> bool {
        self.stable.is_some() && (!has_target || self.meets_target.is_some())
    }

    /// The shard counts to simulate next: from the first not yet considered, leaving out those
    /// that cannot be the answer, up to the first that could be stable (once the stable one is
    /// known, one at a time until one meets the target).
    fn next_round(&mut self, scenario: &Scenario, has_target: bool) -> Vec<u32> {
        let mut round = Vec::new();
        while !self.settled(has_target) && self.next < scenario.shards().len() {
            let shards = scenario.shards()[self.next];
            self.next += 1;
            let peak = lowest_peak_utilization(scenario, shards);
            if peak >= 1.0 {
                continue;
            }
            let may_be_stable = self.stable.is_none() && peak <= NEAR_CEILING;
            let may_meet = has_target && self.meets_target.is_none();
            if !may_be_stable && !may_meet {
                continue;
            }
            round.push(shards);
            if may_be_stable || self.stable.is_some() {
                break;
            }
        }
        round
    }

    /// Takes the round's rows (in the scenario's order) into the answer.
    fn record(&mut self, rows: Vec<SummaryRow>, scenario: &Scenario) {
        for row in rows {
            if self.stable.is_none() && row.verdict() == Verdict::Stable {
                self.stable = Some(row.shards());
            }
            if scenario.slo().is_set() && self.meets_target.is_none() && row.meets(&scenario.slo())
            {
                self.meets_target = Some(row.shards());
            }
            self.rows.push(row);
        }
    }

    fn recommendation(&self, has_target: bool) -> Recommendation {
        Recommendation {
            stable: self.stable,
            meets_target: self.meets_target,
            has_target,
        }
    }
}

/// What a search tells its progress bar, in increments (expected: arrivals × runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// A round after the first will simulate this much more.
    Planned(u64),
    /// A round simulated this much.
    Done(u64),
}

/// The increments of the first round of `scenario`'s search (which [`can_search`] allows):
/// what is known to be simulated before any run, for the progress bar and its estimate.
pub fn first_round_increments(scenario: &Scenario) -> u64 {
    let has_target = scenario.slo().is_set();
    let runs: usize = scenario
        .policies()
        .iter()
        .map(|&policy| {
            PolicySearch::new(policy)
                .next_round(scenario, has_target)
                .len()
        })
        .sum();
    round_increments(scenario, runs)
}

/// The increments of `runs` runs of `scenario`, every replication.
fn round_increments(scenario: &Scenario, runs: usize) -> u64 {
    scenario
        .expected_arrivals()
        .saturating_mul(runs as u64)
        .saturating_mul(u64::from(scenario.replications()))
}

/// The answer of `configuration` (which [`can_search`] allows) as its block of `sweep.csv`,
/// with the remedy a run of every shard count would give; it writes no `summary.csv` or
/// `timeseries.csv` rows. Also returns the number of runs simulated (replications included).
/// `progress` hears of each round's work ([`first_round_increments`] is the first's).
pub fn search(
    configuration: &Configuration,
    progress: &(dyn Fn(Work) + Sync),
) -> Result<(ConfigBlock, u64), InputError> {
    let scenario = &configuration.scenario;
    let has_target = scenario.slo().is_set();
    let mut searches: Vec<PolicySearch> = scenario
        .policies()
        .iter()
        .copied()
        .map(PolicySearch::new)
        .collect();
    let mut simulated = 0;
    for round in 0.. {
        let rounds: Vec<Vec<u32>> = searches
            .iter_mut()
            .map(|search| search.next_round(scenario, has_target))
            .collect();
        if rounds.iter().all(Vec::is_empty) {
            break;
        }
        let variants = variants_of(&searches, &rounds);
        let work = round_increments(scenario, variants.len());
        if round > 0 {
            progress(Work::Planned(work));
        }
        let mut rows = simulate(scenario, &variants)?;
        progress(Work::Done(work));
        simulated += rows.len() as u64 * u64::from(scenario.replications());
        for (search, round) in searches.iter_mut().zip(&rounds) {
            let rest = rows.split_off(round.len());
            search.record(std::mem::replace(&mut rows, rest), scenario);
        }
    }
    let unmet = has_target && searches.iter().any(|s| s.meets_target.is_none());
    let remedy = if unmet {
        let (remedy, runs) = remedy_at_the_most_rows(scenario, &searches, progress)?;
        simulated += runs;
        Some(remedy)
    } else {
        None
    };
    let sweep = searches
        .iter()
        .map(|search| {
            sweep_line(
                &configuration.values,
                scenario,
                search.policy,
                search.recommendation(has_target),
                &search.rows,
            )
        })
        .collect();
    Ok((
        ConfigBlock {
            index: configuration.index,
            summary: String::new(),
            timeseries: String::new(),
            sweep,
            remedy,
        },
        simulated,
    ))
}

/// The variants of a round: each policy's shard counts, policies in the scenario's order.
fn variants_of(searches: &[PolicySearch], rounds: &[Vec<u32>]) -> Vec<Variant> {
    searches
        .iter()
        .zip(rounds)
        .flat_map(|(search, round)| {
            round.iter().map(|&shards| Variant {
                policy: search.policy,
                rows: Rows::Fixed(shards),
            })
        })
        .collect()
}

/// Simulates `variants` of `scenario`, every replication, in one pass over its arrival stream
/// per replication; returns their rows in the order given.
fn simulate(scenario: &Scenario, variants: &[Variant]) -> Result<Vec<SummaryRow>, InputError> {
    let observers = vec![NoEvents; variants.len()];
    let (runs, _) = sweep::run_replications_of(scenario, variants, observers, &NoProgress)?;
    summarize_each(scenario, &runs, &StabilitySettings::default())
}

/// What would help when a policy meets no target: judged, as for a run of every shard count,
/// at the most rows of the last policy (simulated now if its search stopped before them).
/// Also returns the number of runs that took.
fn remedy_at_the_most_rows(
    scenario: &Scenario,
    searches: &[PolicySearch],
    progress: &(dyn Fn(Work) + Sync),
) -> Result<(&'static str, u64), InputError> {
    if scenario.likes().is_none() && scenario.machine().is_empty() {
        // Without a likes table or a machine only more rows can help, whatever the run says.
        return Ok((remedy(&[]), 0));
    }
    let last = searches.last().expect("a scenario has a policy");
    let most = scenario
        .shards()
        .iter()
        .copied()
        .max()
        .expect("a scenario has a shard count");
    if let Some(row) = last.rows.iter().find(|row| row.shards() == most) {
        return Ok((remedy(std::slice::from_ref(row)), 0));
    }
    let variant = Variant {
        policy: last.policy,
        rows: Rows::Fixed(most),
    };
    let work = round_increments(scenario, 1);
    progress(Work::Planned(work));
    let rows = simulate(scenario, &[variant])?;
    progress(Work::Done(work));
    Ok((remedy(&rows), u64::from(scenario.replications())))
}
