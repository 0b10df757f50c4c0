//! Stalls of the database machine (`[stalls]`): spells during which the server completes
//! nothing — a checkpoint's flush, a lock holder descheduled, a slow disk write. Work that would
//! finish during a stall (a hold, a CPU slice, a flush, an insert) finishes when it ends;
//! requests keep arriving, and their clients' deadlines keep running.
//!
//! Stalls start as a Poisson process (`every_s` apart on average) and, optionally, once per
//! checkpoint (`checkpoint_s`); their durations are draws of a `[hold]`-style distribution.
//! They are drawn from a stream of their own, so every shard count of a sweep meets the same
//! stalls (common random numbers). Overlapping stalls merge into one spell.

use super::hold::HoldDist;
use super::random::{SimRng, Stream, stream_rng};
use crate::time::{NS_PER_MS, SimTime};

/// `[stalls]`: when the machine stalls and for how long.
#[derive(Debug, Clone)]
pub struct StallPlan {
    /// The mean time between Poisson stalls (`None`: none).
    pub(crate) every: Option<SimTime>,
    /// The time between checkpoint stalls, the first one this long after the start (`None`:
    /// none).
    pub(crate) checkpoint: Option<SimTime>,
    /// How long one stall lasts.
    pub(crate) duration: HoldDist,
    /// How many stalls the calibration these were fitted from saw (`None`: not fitted).
    pub(crate) seen: Option<u64>,
    /// The longest stall the calibration saw (`None`: not said): a trigger, never drawn.
    pub(crate) longest: Option<SimTime>,
    /// One more stall at a set time, `(start, length)`, beside the drawn ones: a trigger a
    /// stream must recover from ([`crate::stability`]); `None` in every scenario's own plan.
    pub(crate) injected: Option<(SimTime, SimTime)>,
}

impl StallPlan {
    /// Stalls per nanosecond, Poisson and checkpoint ones together.
    pub fn rate_per_ns(&self) -> f64 {
        self.every.map_or(0.0, |e| 1.0 / e as f64) + self.checkpoint.map_or(0.0, |c| 1.0 / c as f64)
    }

    /// The expected share of time stalled, ignoring overlaps (for estimates).
    pub fn stalled_share(&self) -> f64 {
        (self.rate_per_ns() * self.duration.mean_ns()).min(1.0)
    }

    /// The 99th percentile of a stall's length.
    pub fn p99_ns(&self) -> SimTime {
        self.duration.p99_ns()
    }

    /// The longest stall the calibration saw, when it said.
    pub fn longest_ns(&self) -> Option<SimTime> {
        self.longest
    }

    /// The same stalls with one more, `length` long, starting at `start` (a trigger).
    pub fn with_injected(&self, start: SimTime, length: SimTime) -> StallPlan {
        StallPlan {
            injected: Some((start, length.max(1))),
            ..self.clone()
        }
    }

    /// No drawn stalls, only one `length` long at `start`: the trigger on a machine that
    /// does not stall by itself.
    pub fn only_injected(start: SimTime, length: SimTime) -> StallPlan {
        StallPlan {
            every: None,
            checkpoint: None,
            duration: HoldDist::Constant { hold_ns: 0 },
            seen: None,
            longest: None,
            injected: Some((start, length.max(1))),
        }
    }
}

/// One stall, or several that overlapped: the machine completes nothing in `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Spell {
    start: SimTime,
    end: SimTime,
}

/// What the stalls did in the measured period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StallFigures {
    /// Stalls that began in the measured period (overlapping ones counted apart).
    pub stalls: u64,
    /// Time within the measured period during which the machine was stalled, ns.
    pub stalled_ns: u64,
}

/// The stalls of one run, drawn as the simulation reaches them: asked about times that never
/// go back, it keeps only the current spell and the next stall of each kind.
#[derive(Debug)]
pub struct StallClock {
    plan: StallPlan,
    rng: SimRng,
    /// The gaps between Poisson stalls (`None`: none).
    gaps: Option<HoldDist>,
    /// The start of the next Poisson stall not yet in a spell.
    next_random: Option<SimTime>,
    /// The start of the next checkpoint stall not yet in a spell.
    next_checkpoint: Option<SimTime>,
    /// The injected stall, until it is in a spell.
    next_injected: Option<(SimTime, SimTime)>,
    /// The spell at or after the last time asked about.
    spell: Option<Spell>,
    /// The measured period.
    measured: (SimTime, SimTime),
    figures: StallFigures,
}

impl StallClock {
    /// The stalls of a run seeded with `seed`, counted in `measure_from..horizon`.
    pub fn new(plan: StallPlan, seed: u64, measure_from: SimTime, horizon: SimTime) -> Self {
        let mut rng = stream_rng(seed, Stream::Stalls);
        let gaps = plan.every.map(|every| HoldDist::Exponential {
            mean_ms: every as f64 / NS_PER_MS as f64,
        });
        let next_random = gaps.as_ref().map(|gaps| gaps.sample(&mut rng).max(1));
        let mut clock = StallClock {
            gaps,
            next_checkpoint: plan.checkpoint,
            next_injected: plan.injected,
            plan,
            rng,
            next_random,
            spell: None,
            measured: (measure_from, horizon),
            figures: StallFigures::default(),
        };
        clock.spell = clock.next_spell();
        clock
    }

    /// The end of the spell that covers `time`, if the machine is stalled then. Times asked
    /// about never go back.
    #[inline]
    pub fn stalled_until(&mut self, time: SimTime) -> Option<SimTime> {
        while let Some(spell) = self.spell {
            if time < spell.end {
                return (time >= spell.start).then_some(spell.end);
            }
            self.spell = self.next_spell();
        }
        None
    }

    /// What the stalls did in the measured period (the spells not yet reached counted too).
    pub fn finish(mut self) -> StallFigures {
        while self.spell.is_some() {
            self.spell = self.next_spell();
        }
        self.figures
    }

    /// The next spell: the earliest pending stall, merged with every stall that begins
    /// before the spell so far ends; `None` past the horizon.
    fn next_spell(&mut self) -> Option<Spell> {
        let mut spell = self.next_stall()?;
        while let Some(start) = self.earliest_pending()
            && start < spell.end
        {
            let more = self.next_stall().expect("a stall is pending");
            spell.end = spell.end.max(more.end);
        }
        let (from, to) = self.measured;
        let overlap = spell.end.min(to).saturating_sub(spell.start.max(from));
        self.figures.stalled_ns += overlap;
        Some(spell)
    }

    /// The earliest of the pending Poisson, checkpoint and injected stalls, before the
    /// horizon.
    fn earliest_pending(&self) -> Option<SimTime> {
        let horizon = self.measured.1;
        [
            self.next_random,
            self.next_checkpoint,
            self.next_injected.map(|(start, _)| start),
        ]
        .into_iter()
        .flatten()
        .filter(|&start| start < horizon)
        .min()
    }

    /// Takes the earliest pending stall, draws its duration and the next of its kind (the
    /// injected one has its own length and draws nothing, so the drawn stalls stay those of
    /// the run without it).
    fn next_stall(&mut self) -> Option<Spell> {
        let start = self.earliest_pending()?;
        if let Some((at, length)) = self.next_injected
            && at == start
        {
            self.next_injected = None;
            return Some(Spell {
                start,
                end: start.saturating_add(length),
            });
        }
        if self.next_checkpoint == Some(start) {
            self.next_checkpoint = self.plan.checkpoint.map(|c| start.saturating_add(c));
        } else {
            let gaps = self.gaps.as_ref().expect("a Poisson stall was pending");
            let gap = gaps.sample(&mut self.rng).max(1);
            self.next_random = Some(start.saturating_add(gap));
        }
        let duration = self.plan.duration.sample(&mut self.rng).max(1);
        let (from, to) = self.measured;
        if start >= from && start < to {
            self.figures.stalls += 1;
        }
        Some(Spell {
            start,
            end: start.saturating_add(duration),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::ms;

    fn plan(every_ms: Option<u64>, checkpoint_ms: Option<u64>, duration_ms: u64) -> StallPlan {
        StallPlan {
            every: every_ms.map(ms),
            checkpoint: checkpoint_ms.map(ms),
            duration: HoldDist::Constant {
                hold_ns: ms(duration_ms),
            },
            seen: None,
            longest: None,
            injected: None,
        }
    }

    #[test]
    fn an_injected_stall_joins_the_drawn_ones_without_moving_them() {
        let drawn = |plan: StallPlan| {
            let mut clock = StallClock::new(plan, 3, 0, ms(10_000));
            (0..10_000)
                .filter_map(|t| clock.stalled_until(ms(t)))
                .collect::<std::collections::BTreeSet<_>>()
        };
        let calm = drawn(plan(Some(500), None, 2));
        let triggered = drawn(plan(Some(500), None, 2).with_injected(ms(4_321), ms(300)));
        // The trigger's spell ends at 4,621 ms (or later, merged with a drawn one); every
        // other spell is the calm run's.
        assert!(triggered.iter().any(|&end| end >= ms(4_621)));
        let outside: Vec<_> = triggered
            .iter()
            .filter(|&&end| end < ms(4_321) || end > ms(4_700))
            .collect();
        let calm_outside: Vec<_> = calm
            .iter()
            .filter(|&&end| end < ms(4_321) || end > ms(4_700))
            .collect();
        assert_eq!(outside, calm_outside);
        let mut only = StallClock::new(StallPlan::only_injected(ms(50), ms(5)), 1, 0, ms(100));
        assert_eq!(only.stalled_until(ms(49)), None);
        assert_eq!(only.stalled_until(ms(50)), Some(ms(55)));
        assert_eq!(only.stalled_until(ms(60)), None);
    }

    #[test]
    fn checkpoint_stalls_come_on_time_and_last_their_duration() {
        let mut clock = StallClock::new(plan(None, Some(100), 10), 1, 0, ms(1000));
        assert_eq!(clock.stalled_until(ms(50)), None);
        assert_eq!(clock.stalled_until(ms(100)), Some(ms(110)));
        assert_eq!(clock.stalled_until(ms(109)), Some(ms(110)));
        assert_eq!(clock.stalled_until(ms(110)), None);
        assert_eq!(clock.stalled_until(ms(205)), Some(ms(210)));
        let figures = clock.finish();
        assert_eq!(figures.stalls, 9, "at 100, 200, … 900 ms");
        assert_eq!(figures.stalled_ns, ms(90));
    }

    #[test]
    fn overlapping_stalls_merge_and_the_measured_period_bounds_the_time() {
        // Checkpoints every 10 ms lasting 15 ms: one spell from 10 ms to the horizon's last.
        let mut clock = StallClock::new(plan(None, Some(10), 15), 1, ms(20), ms(100));
        assert_eq!(clock.stalled_until(ms(12)), Some(ms(105)));
        let figures = clock.finish();
        assert_eq!(figures.stalls, 8, "at 20, 30, … 90 ms");
        assert_eq!(figures.stalled_ns, ms(80));
    }

    #[test]
    fn poisson_stalls_come_at_their_rate() {
        let clock = StallClock::new(plan(Some(100), None, 1), 7, 0, ms(1_000_000));
        let figures = clock.finish();
        // 10,000 expected: within 4 standard deviations (100).
        assert!(figures.stalls.abs_diff(10_000) < 400, "{}", figures.stalls);
        // A stall overlaps the next with probability 1 − e^(−1/100): about 1% of the time is
        // counted once for two stalls.
        let unmerged = ms(figures.stalls) as f64;
        let share = figures.stalled_ns as f64 / unmerged;
        assert!((0.985..=0.999).contains(&share), "{share}");
    }
}
