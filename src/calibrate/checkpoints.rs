//! Stalls from the database's own evidence: its checkpoints.
//!
//! A checkpoint writes the pages changed since the last one and syncs the data files; while
//! it syncs, the log's own flushes queue behind it on the same device, and commits wait. A
//! calibration's short runs rarely meet one by chance (PostgreSQL checkpoints every
//! `checkpoint_timeout`, 5 minutes by default), so their stalls are read from the server:
//!
//! - its counters (PostgreSQL: `pg_stat_checkpointer`, or `pg_stat_bgwriter` before 17): the
//!   checkpoints during the calibration and the time they spent syncing — `calibrate` asks
//!   for one before each run, so it meets about one per run;
//! - its log (`--server-log FILE`, with `log_checkpoints = on`, PostgreSQL's default since 15):
//!   every `checkpoint complete` line written while it ran, with each one's sync time;
//! - its schedule: a checkpoint every `checkpoint_timeout` seconds of a real day.
//!
//! Each checkpoint that synced for at least [`MIN_STALL`] is a stall of that length, and they
//! recur once per `checkpoint_timeout`: a second stall process beside the one the runs saw,
//! merged with it in [`FittedStalls::with_checkpoints`]. InnoDB checkpoints continuously in
//! the background and its status counters give no timing: on MariaDB and MySQL the evidence
//! of rare stalls is a longer light-load watch (`calibrate --watch`).

use std::path::{Path, PathBuf};

use super::backend::{DbFailure, Session, Target};
use super::stalls::{FittedStalls, MIN_STALL};

/// A server's checkpoint counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckpointCounters {
    /// Checkpoints completed so far (timed and requested).
    pub(crate) count: i64,
    /// Milliseconds they spent writing pages.
    pub(crate) write_ms: f64,
    /// Milliseconds they spent syncing files.
    pub(crate) sync_ms: f64,
}

/// One checkpoint as the server logged it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoggedCheckpoint {
    /// Seconds it spent writing pages.
    pub(crate) write_s: f64,
    /// Seconds it spent syncing files.
    pub(crate) sync_s: f64,
    /// Its whole time, seconds.
    pub(crate) total_s: f64,
}

/// What the server said of its checkpoints while a calibration ran.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerCheckpoints {
    /// Checkpoints completed while it ran.
    pub(crate) count: i64,
    /// Their sync phases, ms: one each from the log when it was read, else the counters'
    /// mean for each.
    pub(crate) sync_ms: Vec<f64>,
    /// Whether the lengths are the log's (each checkpoint's own).
    pub(crate) from_log: bool,
    /// The server's time between scheduled checkpoints, s (`checkpoint_timeout`).
    pub(crate) interval_s: Option<f64>,
}

impl ServerCheckpoints {
    /// The evidence between counters `before` and `after`, with the checkpoints `logged`
    /// meanwhile (`None`: no log was read) and the server's `interval_s`; `None` when the
    /// counters are missing or went backwards (a reset).
    pub fn between(
        before: Option<CheckpointCounters>,
        after: Option<CheckpointCounters>,
        logged: Option<Vec<LoggedCheckpoint>>,
        interval_s: Option<f64>,
    ) -> Option<ServerCheckpoints> {
        let (before, after) = (before?, after?);
        let count = after.count - before.count;
        let sync = after.sync_ms - before.sync_ms;
        if count < 0 || sync < 0.0 {
            return None;
        }
        let (sync_ms, from_log) = match logged {
            Some(logged) if !logged.is_empty() => {
                (logged.iter().map(|c| c.sync_s * 1e3).collect(), true)
            }
            _ if count > 0 => (vec![sync / count as f64; count as usize], false),
            _ => (Vec::new(), false),
        };
        Some(ServerCheckpoints {
            count,
            sync_ms,
            from_log,
            interval_s,
        })
    }

    /// The checkpoints' sync phases long enough to stall commits, ms.
    pub fn stalls_ms(&self) -> Vec<f64> {
        let least = crate::time::ns_to_ms(MIN_STALL);
        self.sync_ms
            .iter()
            .copied()
            .filter(|&ms| ms >= least)
            .collect()
    }

    /// In words, for `calibration.toml` and the terminal.
    pub fn describe(&self) -> String {
        let lengths = if self.sync_ms.is_empty() {
            String::new()
        } else {
            let (low, high) = self
                .sync_ms
                .iter()
                .fold((f64::INFINITY, 0.0_f64), |(l, h), &ms| {
                    (l.min(ms), h.max(ms))
                });
            format!(
                ", syncing {:.1}–{:.1} ms each ({})",
                low,
                high,
                if self.from_log {
                    "its log"
                } else {
                    "its counters' mean"
                }
            )
        };
        let every = self.interval_s.map_or(String::new(), |s| {
            format!("; it checkpoints every {s:.0} s (checkpoint_timeout)")
        });
        format!(
            "the server completed {} while it was measured{lengths}{every}; {} of them long \
             enough to stall commits (at least {} ms)",
            crate::units::plural(self.count.max(0) as u64, "checkpoint"),
            self.stalls_ms().len(),
            crate::time::ns_to_ms(MIN_STALL)
        )
    }
}

/// The checkpoints in a PostgreSQL log's text: each `checkpoint complete:` (or `restartpoint
/// complete:`) line's `write=`, `sync=` and `total=` seconds; other lines, and lines whose
/// figures do not parse, are skipped.
pub fn parse_log(text: &str) -> Vec<LoggedCheckpoint> {
    text.lines()
        .filter(|line| {
            line.contains("checkpoint complete:") || line.contains("restartpoint complete:")
        })
        .filter_map(|line| {
            Some(LoggedCheckpoint {
                write_s: seconds_after(line, "write=")?,
                sync_s: seconds_after(line, "sync=")?,
                total_s: seconds_after(line, "total=")?,
            })
        })
        .collect()
}

/// The number of seconds after `key` in `line` (`write=0.123 s`).
fn seconds_after(line: &str, key: &str) -> Option<f64> {
    let at = line.find(key)? + key.len();
    let rest = &line[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok().filter(|s: &f64| s.is_finite())
}

impl FittedStalls {
    /// `stalls` (the runs' own, if any) merged with the server's checkpoints: a second
    /// process of stalls, one every `interval_s`, as long as the checkpoints' syncs that
    /// could stall commits. The merged process recurs at the sum of both rates, and its
    /// log-normal lengths are fitted to both kinds weighted by how often each recurs.
    /// Unchanged without such checkpoints or a schedule.
    pub fn with_checkpoints(
        stalls: Option<FittedStalls>,
        checkpoints: &ServerCheckpoints,
    ) -> Option<FittedStalls> {
        let lengths = checkpoints.stalls_ms();
        let Some(interval_s) = checkpoints.interval_s.filter(|&s| s > 0.0) else {
            return stalls;
        };
        if lengths.is_empty() {
            return stalls;
        }
        let checkpoint_rate = 1.0 / interval_s;
        let (runs_rate, runs_logs) = match &stalls {
            Some(s) => (1.0 / s.every_s, lognormal_logs(s)),
            None => (0.0, (0.0, 0.0)),
        };
        let n = lengths.len() as f64;
        let mu_c = lengths.iter().map(|ms| ms.ln()).sum::<f64>() / n;
        let var_c = lengths
            .iter()
            .map(|ms| (ms.ln() - mu_c).powi(2))
            .sum::<f64>()
            / n;
        let total = runs_rate + checkpoint_rate;
        let (w_runs, w_c) = (runs_rate / total, checkpoint_rate / total);
        let mu = w_runs * runs_logs.0 + w_c * mu_c;
        let var = w_runs * (runs_logs.1.powi(2) + (runs_logs.0 - mu).powi(2))
            + w_c * (var_c + (mu_c - mu).powi(2));
        let seen = stalls.as_ref().map_or(0, |s| s.seen) + lengths.len() as u64;
        let observed_s = stalls.as_ref().map_or(0.0, |s| s.observed_s);
        Some(FittedStalls {
            seen,
            observed_s,
            every_s: 1.0 / total,
            median_ms: mu.exp(),
            p99_ms: (mu + super::stalls::Z_99 * var.sqrt()).exp(),
            longest_ms: lengths
                .iter()
                .copied()
                .fold(stalls.as_ref().map_or(0.0, |s| s.longest_ms), f64::max),
            checkpoints: Some((lengths.len() as u64, interval_s)),
        })
    }
}

/// A fitted log-normal's log-mean and log-sd.
fn lognormal_logs(stalls: &FittedStalls) -> (f64, f64) {
    let mu = stalls.median_ms.ln();
    let sigma = ((stalls.p99_ms / stalls.median_ms).ln() / super::stalls::Z_99).max(0.0);
    (mu, sigma)
}

/// The server's checkpoint evidence as a calibration gathers it: its counters and the end
/// of its log (`--server-log`) when the calibration starts, read again when it ends.
pub struct ServerLog {
    session: Box<dyn Session>,
    counters: Option<CheckpointCounters>,
    log: Option<(PathBuf, u64)>,
}

/// The most of a server log read for one calibration's checkpoints.
const MAX_LOG_READ: u64 = 64 << 20;

impl ServerLog {
    /// Reads the counters and the log's length now.
    pub fn open(target: &Target, server_log: Option<&Path>) -> Result<ServerLog, DbFailure> {
        let mut session = target.connect()?;
        let counters = session.checkpoints();
        let log = server_log.map(|path| {
            let length = std::fs::metadata(path).map_or(0, |m| m.len());
            (path.to_path_buf(), length)
        });
        Ok(ServerLog {
            session,
            counters,
            log,
        })
    }

    /// What the server said of its checkpoints since [`ServerLog::open`] (`None` when it
    /// keeps no counters).
    pub fn checkpoints(&mut self) -> Option<ServerCheckpoints> {
        let after = self.session.checkpoints();
        let logged = self
            .log
            .as_ref()
            .map(|(path, start)| parse_log(&read_from(path, *start).unwrap_or_default()));
        let interval = self.session.checkpoint_interval_s();
        ServerCheckpoints::between(self.counters, after, logged, interval)
    }
}

/// The text of `path` from byte `start` (from its beginning when it shrank: rotated), at
/// most [`MAX_LOG_READ`] bytes of it.
fn read_from(path: &Path, start: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let length = file.metadata()?.len();
    let start = if length < start { 0 } else { start };
    file.seek(SeekFrom::Start(
        start.max(length.saturating_sub(MAX_LOG_READ)),
    ))?;
    let mut bytes = Vec::new();
    file.take(MAX_LOG_READ).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of a PostgreSQL 15 log with `log_checkpoints = on` (recorded from a throwaway
    /// server here, the paths shortened).
    const LOG: &str = "\
2026-12-06 10:51:02.114 UTC [4121] LOG:  checkpoint starting: immediate force wait
2026-12-06 10:51:02.131 UTC [4121] LOG:  checkpoint complete: wrote 3 buffers (0.0%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.002 s, sync=0.004 s, total=0.017 s; sync files=2, longest=0.003 s, average=0.002 s; distance=147 kB, estimate=2910 kB
2026-12-06 10:51:09.002 UTC [4130] ERROR:  relation \"x\" does not exist
2026-12-06 10:56:02.200 UTC [4121] LOG:  checkpoint starting: time
2026-12-06 10:56:29.845 UTC [4121] LOG:  checkpoint complete: wrote 271 buffers (1.7%); 0 WAL file(s) added, 0 removed, 1 recycled; write=27.112 s, sync=0.041 s, total=27.645 s; sync files=14, longest=0.030 s, average=0.003 s; distance=16384 kB, estimate=16384 kB
2026-12-06 10:57:00.000 UTC [4121] LOG:  checkpoint complete: wrote 1 buffers; write=abc s, sync=0.1 s, total=0.2 s
";

    #[test]
    fn the_log_gives_each_checkpoints_write_and_sync() {
        let logged = parse_log(LOG);
        assert_eq!(
            logged,
            [
                LoggedCheckpoint {
                    write_s: 0.002,
                    sync_s: 0.004,
                    total_s: 0.017
                },
                LoggedCheckpoint {
                    write_s: 27.112,
                    sync_s: 0.041,
                    total_s: 27.645
                },
            ]
        );
        let counters = |count, sync_ms| CheckpointCounters {
            count,
            write_ms: 0.0,
            sync_ms,
        };
        let evidence = ServerCheckpoints::between(
            Some(counters(10, 100.0)),
            Some(counters(12, 145.0)),
            Some(logged),
            Some(300.0),
        )
        .unwrap();
        assert_eq!(evidence.sync_ms, [4.0, 41.0]);
        assert_eq!(evidence.stalls_ms(), [4.0, 41.0]);
        assert!(
            evidence.describe().contains("2 checkpoints"),
            "{}",
            evidence.describe()
        );
        // Without the log, the counters' mean for each; a reset counter gives nothing.
        let counted = ServerCheckpoints::between(
            Some(counters(10, 100.0)),
            Some(counters(12, 101.0)),
            None,
            None,
        )
        .unwrap();
        assert_eq!(counted.sync_ms, [0.5, 0.5]);
        assert!(
            counted.stalls_ms().is_empty(),
            "0.5 ms cannot stall commits"
        );
        assert_eq!(
            ServerCheckpoints::between(
                Some(counters(10, 100.0)),
                Some(counters(2, 1.0)),
                None,
                None
            ),
            None
        );
    }

    #[test]
    fn checkpoint_stalls_add_their_rate_and_lengthen_the_tail() {
        // The runs saw a stall every 2 s of 3 ms (p99 10 ms); the server syncs 40 ms every 300
        // s: the merged process recurs a little more often, and its p99 is longer.
        let runs = FittedStalls {
            seen: 50,
            observed_s: 100.0,
            every_s: 2.0,
            median_ms: 3.0,
            p99_ms: 10.0,
            longest_ms: 12.0,
            checkpoints: None,
        };
        let evidence = ServerCheckpoints {
            count: 3,
            sync_ms: vec![40.0, 45.0, 35.0],
            from_log: true,
            interval_s: Some(300.0),
        };
        let merged = FittedStalls::with_checkpoints(Some(runs.clone()), &evidence).unwrap();
        let rate = 1.0 / 2.0 + 1.0 / 300.0;
        assert!((merged.every_s - 1.0 / rate).abs() < 1e-9);
        assert_eq!(merged.seen, 53);
        assert!(
            merged
                .describe()
                .starts_with("50 stalls in 100 s of load and 3 of the server's checkpoints, one every 300 s (together one every 2.0 s)"),
            "{}",
            merged.describe()
        );
        assert!(merged.p99_ms > runs.p99_ms, "{merged:?}");
        assert!(
            merged.median_ms > runs.median_ms && merged.median_ms < 3.1,
            "{merged:?}"
        );
        // Checkpoints alone: their own lengths, every 300 s.
        let alone = FittedStalls::with_checkpoints(None, &evidence).unwrap();
        assert!((alone.every_s - 300.0).abs() < 1e-9);
        assert!((alone.median_ms - (40.0f64 * 45.0 * 35.0).cbrt()).abs() < 1e-9);
        // No schedule, or no sync long enough: the runs' stalls as they were.
        let unscheduled = ServerCheckpoints {
            interval_s: None,
            ..evidence.clone()
        };
        assert_eq!(
            FittedStalls::with_checkpoints(Some(runs.clone()), &unscheduled),
            Some(runs.clone())
        );
        let short = ServerCheckpoints {
            sync_ms: vec![0.5],
            ..evidence
        };
        assert_eq!(
            FittedStalls::with_checkpoints(Some(runs.clone()), &short),
            Some(runs)
        );
    }
}
