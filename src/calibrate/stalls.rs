//! Stalls seen in a run of load: spells in which work was outstanding but nothing committed
//! for far longer than the machine's service time. Every send and commit of a run is counted
//! in a timeline of short buckets (memory follows the run's length, not its rate); a run of
//! buckets without a commit while updates were in flight, at least [`MIN_STALL`] and twenty
//! times the run's mean busy time per commit long, is a stall. Their count over the seconds
//! measured gives the rate, and a log-normal fitted to their lengths the duration
//! (`[stalls]` of the calibration).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::scenario::file::{HoldTable, ScenarioFile, StallsTable};

/// The timeline's resolution, ns.
const BUCKET_NS: u64 = 100_000;

/// The shortest gap that counts as a stall, ns, whatever the service time.
pub const MIN_STALL: u64 = 2_000_000;

/// How many times a run's mean busy time per commit a gap must last to be a stall: an
/// exponential service time passes 20 times its mean once in 500 million.
const STALL_FACTOR: f64 = 20.0;

/// The 0.99 quantile of the standard normal distribution.
pub(super) const Z_99: f64 = 2.326_347_874_040_840_8;

/// The sends and commits of one run, counted per bucket of `BUCKET_NS` since its start;
/// shared by the run's connections.
#[derive(Debug)]
pub struct Timeline {
    sends: Vec<AtomicU32>,
    commits: Vec<AtomicU32>,
}

impl Timeline {
    /// A timeline for a run of `length` (events later than that count in its last bucket).
    pub fn new(length: Duration) -> Timeline {
        let buckets = (length.as_nanos() as u64 / BUCKET_NS + 1) as usize;
        Timeline {
            sends: (0..buckets).map(|_| AtomicU32::new(0)).collect(),
            commits: (0..buckets).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// An update sent `at` ns after the run's start.
    pub fn send(&self, at: u64) {
        self.sends[self.bucket(at)].fetch_add(1, Ordering::Relaxed);
    }

    /// An update committed `at` ns after the run's start.
    pub fn commit(&self, at: u64) {
        self.commits[self.bucket(at)].fetch_add(1, Ordering::Relaxed);
    }

    fn bucket(&self, at: u64) -> usize {
        ((at / BUCKET_NS) as usize).min(self.sends.len() - 1)
    }

    /// The stalls whose spell lies in `from..to` ns: their lengths, ns.
    pub fn stalls(&self, from: u64, to: u64) -> Vec<u64> {
        let load = |counts: &[AtomicU32], at: usize| u64::from(counts[at].load(Ordering::Relaxed));
        let (first, last) = (self.bucket(from), self.bucket(to));
        // Outstanding updates at the start of each bucket, and the busy buckets per commit.
        let mut outstanding = 0i64;
        let mut busy: Vec<bool> = Vec::with_capacity(last - first);
        let (mut busy_buckets, mut commits) = (0u64, 0u64);
        for at in 0..last {
            if at >= first {
                busy.push(outstanding > 0);
                busy_buckets += u64::from(outstanding > 0);
                commits += load(&self.commits, at);
            }
            outstanding += load(&self.sends, at) as i64 - load(&self.commits, at) as i64;
        }
        let per_commit = busy_buckets as f64 * BUCKET_NS as f64 / commits.max(1) as f64;
        let threshold = MIN_STALL.max((STALL_FACTOR * per_commit) as u64);
        let mut stalls = Vec::new();
        let mut quiet = 0u64;
        for (offset, &busy) in busy.iter().enumerate() {
            let committed = load(&self.commits, first + offset) > 0;
            if busy && !committed {
                quiet += 1;
                continue;
            }
            // A spell starts somewhere in the bucket before its first quiet one and ends in
            // the bucket that commits: one bucket more, on average.
            let length = (quiet + 1) * BUCKET_NS;
            if quiet > 0 && length >= threshold {
                stalls.push(length);
            }
            quiet = 0;
        }
        stalls
    }
}

/// The stalls a calibration saw, fitted.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FittedStalls {
    /// Stalls seen.
    pub(crate) seen: u64,
    /// Seconds of load they were seen in.
    pub(crate) observed_s: f64,
    /// The mean time between stalls, s.
    pub every_s: f64,
    /// Their median length, ms.
    pub median_ms: f64,
    /// Their 99th-percentile length, ms (the median's when fewer than two were seen).
    pub p99_ms: f64,
    /// The longest seen, ms: a trigger every open stream must recover from.
    #[serde(default)]
    pub(crate) longest_ms: f64,
    /// Of those seen, the server's checkpoints, and the server's time between them, s
    /// ([`FittedStalls::with_checkpoints`]); `None`: the runs' stalls alone.
    #[serde(default)]
    pub(crate) checkpoints: Option<(u64, f64)>,
}

impl FittedStalls {
    /// Fits the stalls of runs, each its stall lengths (ns) and the seconds measured; `None`
    /// when none was seen.
    pub fn fit(runs: &[(Vec<u64>, f64)]) -> Option<FittedStalls> {
        let lengths: Vec<f64> = runs
            .iter()
            .flat_map(|(stalls, _)| stalls.iter().map(|&ns| crate::time::ns_to_ms(ns)))
            .collect();
        let observed_s: f64 = runs.iter().map(|(_, seconds)| seconds).sum();
        if lengths.is_empty() || observed_s <= 0.0 {
            return None;
        }
        let n = lengths.len() as f64;
        let mu = lengths.iter().map(|ms| ms.ln()).sum::<f64>() / n;
        let sigma = if lengths.len() > 1 {
            (lengths.iter().map(|ms| (ms.ln() - mu).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some(FittedStalls {
            seen: lengths.len() as u64,
            observed_s,
            every_s: observed_s / n,
            median_ms: mu.exp(),
            p99_ms: (mu + Z_99 * sigma).exp(),
            longest_ms: lengths.iter().copied().fold(0.0, f64::max),
            checkpoints: None,
        })
    }

    /// `[stalls]` as calibration.toml writes it, every figure to three decimals: a
    /// log-normal duration when its p99 is above its median, else a constant one.
    pub fn toml(&self) -> String {
        let milli = |value: f64| (value * 1e3).round() / 1e3;
        let spread = self.p99_ms > self.median_ms * 1.001;
        let stalls = StallsTable {
            every_s: Some(milli(self.every_s)),
            seen: Some(self.seen),
            longest_ms: (self.longest_ms > 0.0).then(|| milli(self.longest_ms)),
            duration_ms: (!spread).then(|| milli(self.median_ms)),
            duration: spread.then(|| HoldTable {
                dist: Some("lognormal".to_owned()),
                median_ms: Some(milli(self.median_ms)),
                p99_ms: Some(milli(self.p99_ms)),
                ..HoldTable::default()
            }),
            ..StallsTable::default()
        };
        toml::to_string(&ScenarioFile {
            stalls: Some(stalls),
            ..ScenarioFile::default()
        })
        .expect("a scenario's tables serialise")
    }

    /// In words: "23 stalls in 180 s (one every 7.8 s), median 41 ms, p99 180 ms".
    pub fn describe(&self) -> String {
        use crate::units::duration;
        let ns = crate::time::ms_f64_to_ns;
        let seen = match self.checkpoints {
            None => format!(
                "{} in {:.0} s of load",
                crate::units::plural(self.seen, "stall"),
                self.observed_s
            ),
            Some((checkpoints, interval_s)) => format!(
                "{} in {:.0} s of load and {} of the server's checkpoints, one every {:.0} s",
                crate::units::plural(self.seen - checkpoints, "stall"),
                self.observed_s,
                checkpoints,
                interval_s
            ),
        };
        format!(
            "{seen} ({}one every {:.1} s), lasting a median {} (p99 {}, the longest {})",
            if self.checkpoints.is_some() {
                "together "
            } else {
                ""
            },
            self.every_s,
            duration(ns(self.median_ms)),
            duration(ns(self.p99_ms)),
            duration(ns(self.longest_ms)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One update every `gap` ns from 0 to `end`, each committing `service` ns after its send
    /// unless a stall in `stalls` (start, end) holds its commit to the stall's end.
    fn timeline(gap: u64, service: u64, end: u64, stalls: &[(u64, u64)]) -> Timeline {
        let timeline = Timeline::new(Duration::from_nanos(end + 1_000_000_000));
        let mut at = 0;
        let mut free = 0;
        while at < end {
            timeline.send(at);
            let start = at.max(free);
            let mut done = start + service;
            if let Some(&(_, stall_end)) = stalls.iter().find(|(s, e)| done > *s && done < *e) {
                done = stall_end;
            }
            free = done;
            timeline.commit(done);
            at += gap;
        }
        timeline
    }

    #[test]
    fn a_quiet_gap_with_work_outstanding_is_a_stall_and_an_idle_one_is_not() {
        // An update every 1 ms served in 0.3 ms; a 40 ms stall from 500.15 ms.
        let timeline = timeline(
            1_000_000,
            300_000,
            2_000_000_000,
            &[(500_150_000, 540_150_000)],
        );
        let stalls = timeline.stalls(0, 2_000_000_000);
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        assert!(stalls[0].abs_diff(40_000_000) <= 200_000, "{stalls:?}");
        let calm = self::timeline(1_000_000, 300_000, 2_000_000_000, &[]);
        assert!(calm.stalls(0, 2_000_000_000).is_empty());
        // Idle for 100 ms between two updates: no stall.
        let idle = self::timeline(100_000_000, 300_000, 2_000_000_000, &[]);
        assert!(idle.stalls(0, 2_000_000_000).is_empty());
    }

    #[test]
    fn the_fit_gives_the_rate_and_a_log_normal_of_the_lengths() {
        let fitted = FittedStalls::fit(&[
            (vec![10_000_000, 40_000_000], 10.0),
            (vec![20_000_000], 20.0),
        ])
        .unwrap();
        assert_eq!(fitted.seen, 3);
        assert_eq!(fitted.every_s, 10.0);
        assert!(
            (fitted.median_ms - 20.0).abs() < 1e-9,
            "{}",
            fitted.median_ms
        );
        assert!(fitted.p99_ms > 40.0);
        assert_eq!(FittedStalls::fit(&[(vec![], 30.0)]), None);
        let written: toml::Table = toml::from_str(&fitted.toml()).unwrap();
        let stalls = &written["stalls"];
        assert_eq!(stalls["every_s"].as_float(), Some(10.0));
        assert_eq!(stalls["seen"].as_integer(), Some(3));
        assert_eq!(stalls["duration"]["median_ms"].as_float(), Some(20.0));
    }
}
