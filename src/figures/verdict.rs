//! Each shard count's verdict, what a sweep recommends and what helps when nothing meets the
//! target: one rule behind every table, chart and answer.

use crate::model::Bottleneck;
use crate::scenario::{Scenario, Slo};
use crate::stability::Stability;

use super::summary::SummaryRow;

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
    /// It keeps up at the peak from empty, but a trigger its database is known to have (a
    /// stall, a burst that fills the pool) leaves a queue it does not drain
    /// ([`crate::stability`]): it holds only until the first one.
    Metastable,
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
            Verdict::Metastable => "metastable",
            Verdict::Overloaded => "overloaded",
            Verdict::Saturated => "saturated",
        }
    }

    /// Whether a shard count with this verdict can be recommended at all.
    pub fn can_serve(self) -> bool {
        self < Verdict::Metastable
    }
}

/// The shard counts a sweep recommends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recommendation {
    /// The smallest shard count that is stable at the peak.
    pub(crate) stable: Option<u32>,
    /// The smallest shard count that is not overloaded and meets every target of `[slo]`
    /// (`None` when no target is set or none meets it).
    pub(crate) meets_target: Option<u32>,
    /// Whether `[slo]` sets a target.
    pub(crate) has_target: bool,
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
    pub(crate) policy: crate::model::Policy,
    /// Its rows, in shard-count order (the adaptive row last).
    pub(crate) rows: &'a [SummaryRow],
    /// What its rows recommend.
    pub(crate) recommendation: Recommendation,
}

/// A sweep's rows split by policy, in the scenario's order (the sweep runs each policy's
/// shard counts together).
pub fn by_policy<'a>(scenario: &Scenario, rows: &'a [SummaryRow]) -> Vec<PolicyRows<'a>> {
    rows.chunk_by(|a, b| a.policy == b.policy)
        .map(|rows| PolicyRows {
            policy: rows[0].policy,
            rows,
            recommendation: recommend(rows, &scenario.slo()),
        })
        .collect()
}

/// The recommendation of one policy's rows (ascending shard counts) under `slo`.
pub fn recommend(rows: &[SummaryRow], slo: &Slo) -> Recommendation {
    let first = |pred: &dyn Fn(&SummaryRow) -> bool| {
        rows.iter()
            .filter(|r| !r.adaptive())
            .find(|r| pred(r))
            .map(|r| r.shards())
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

/// What to do when no simulated shard count meets the target, judged at the most rows: add
/// rows while the rows are what is full; say that more rows will not help when the likes
/// table's hot partition or the machine is.
pub fn remedy(rows: &[SummaryRow]) -> &'static str {
    let most = rows
        .iter()
        .filter(|row| !row.adaptive())
        .max_by_key(|row| row.shards());
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
pub fn machine_bound(rows: &[SummaryRow]) -> bool {
    rows.iter()
        .filter(|row| !row.adaptive())
        .max_by_key(|row| row.shards())
        .and_then(|row| row.machine)
        .is_some_and(|m| matches!(m.bottleneck, Bottleneck::Cpu | Bottleneck::Wal))
}

impl SummaryRow {
    /// How this shard count fares: saturated; overloaded at the peak or undrained at the end
    /// (or falling behind from empty when probed); metastable when a trigger tips it;
    /// backlogged by its tail waits; near its ceiling; or stable.
    pub fn verdict(&self) -> Verdict {
        let probed = self.stability.as_ref().map(|s| s.stability());
        let mean_hold_ns = self.mean_hold_ms * 1e6;
        let undrained =
            self.backlog_final as f64 >= self.ceiling_per_s * UNDRAINED_S && self.backlog_final > 0;
        // A closed loop's queue cannot grow past its clients, and its load follows the rows:
        // it is judged by the utilization it achieved, never overloaded by its demand.
        let (peak, can_overload) = match self.closed {
            Some(_) => (self.utilization(), false),
            None => (self.peak_utilization(), true),
        };
        if self.saturated_at_s.is_some() {
            Verdict::Saturated
        } else if can_overload && (peak >= 1.0 || undrained || probed == Some(Stability::Collapsed))
        {
            Verdict::Overloaded
        } else if probed == Some(Stability::Metastable) {
            Verdict::Metastable
        } else if self.waits.p999_ns as f64 >= TAIL_HOLDS * mean_hold_ns && self.waits.p999_ns > 0 {
            Verdict::Backlogged
        } else if peak > NEAR_CEILING {
            Verdict::NearCeiling
        } else {
            Verdict::Stable
        }
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
                .is_none_or(|limit| self.peak_utilization() <= limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::summary::tests::row;

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

    #[test]
    fn each_policys_rows_are_named_by_their_own_policy_even_when_another_has_none() {
        let scenario = crate::scenario::Scenario::parse(
            std::path::Path::new("t.toml"),
            "duration_s = 1\nshards = [1, 2]\npolicy = [\"earliest-free\", \"random\"]\n[hold]\nms = 1\n\
             [arrivals]\nrate_per_s = 10\n",
            &crate::scenario::Overrides::default(),
        )
        .unwrap();
        let random = |shards| SummaryRow {
            policy: crate::model::Policy::Random,
            ..row(shards, 0.5, 1)
        };
        let rows = [random(1), random(2)];
        let groups = by_policy(&scenario, &rows);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].policy, crate::model::Policy::Random);
        assert_eq!(groups[0].rows.len(), 2);
    }
}
