//! Load on the real database: closed loops (each client on its own connection sends its next
//! `UPDATE … SET count = count + 1` when the last one commits) and open Poisson streams (timed
//! sends, as pgbench `-R` does, over a capped set of connections). Every run is bounded in
//! time; a warm-up comes before the measured seconds. What is measured: throughput, response
//! times (send to commit, client side), and the log flushes per commit the server counts.

use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::backend::{DbFailure, Durability, Session, Target};
use super::stalls::Timeline;
use crate::stats::WaitStats;

/// The windows an open stream's measured seconds are cut into, by send time, for its steady
/// p99: the median of theirs. A stall of the machine that hits two of them or fewer does not
/// move it.
pub const WINDOWS: usize = 5;
/// The longest response a window's histogram tells apart, ns (longer ones count as this).
const WINDOW_HIGHEST_NS: u64 = 1 << 40;

/// One run of load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Counter rows the updates spread over (a random row each).
    pub rows: u32,
    /// Closed loop: clients. Open stream: the connections it may use.
    pub clients: u32,
    /// Open stream: updates a second (Poisson); `None` for a closed loop.
    pub rate_per_s: Option<f64>,
    /// Closed loop: the time each client waits after a commit before its next update (a
    /// constant; zero sends back to back). Unused by an open stream.
    pub think: Duration,
    /// Seconds before the measurement.
    pub warmup: Duration,
    /// Seconds measured.
    pub duration: Duration,
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Updates committed per second in the measured seconds.
    pub(crate) tps: f64,
    /// Response times of the updates sent in the measured seconds, ns.
    pub(crate) responses: WaitStats,
    /// Log flushes per commit over the whole run (`None` when the server does not say).
    pub(crate) fsyncs_per_commit: Option<f64>,
    /// An open stream's steady p99 response, ns: the median of the p99s of its [`WINDOWS`]
    /// windows (`None` for a closed loop).
    pub(crate) steady_p99_ns: Option<u64>,
    /// The lengths of the stalls seen in the measured seconds, ns.
    pub(crate) stalls: Vec<u64>,
}

/// One client's counts.
struct ClientTally {
    /// Updates committed in the measured seconds (whenever they were sent): the throughput.
    measured: u64,
    total: u64,
    /// Response times of the updates sent in the measured seconds and answered by their end.
    responses: WaitStats,
    /// An open stream's responses by window of send time (none for a closed loop).
    windows: Vec<Histogram<u32>>,
}

impl ClientTally {
    fn new(load: &Load) -> ClientTally {
        ClientTally {
            measured: 0,
            total: 0,
            responses: WaitStats::new(),
            windows: new_windows(load),
        }
    }

    /// Counts an update sent at `sent` and answered at `answered` (both since the run's
    /// start) in a run measured over `measured` (the warm-up's end to the run's end). The
    /// throughput counts what the database committed in those seconds, as the model counts
    /// its commits — a stream that fell behind still commits at the row's pace, though what
    /// it answers then was sent long before — and the responses are those of the updates
    /// sent in them.
    fn count(&mut self, sent: Duration, answered: Duration, measured: &std::ops::Range<Duration>) {
        self.total += 1;
        if answered < measured.start || answered > measured.end {
            return;
        }
        self.measured += 1;
        if sent < measured.start {
            return;
        }
        let response = u64::try_from((answered - sent).as_nanos()).unwrap_or(u64::MAX);
        self.responses.record(response);
        if self.windows.is_empty() {
            return;
        }
        let window_ns = ((measured.end - measured.start).as_nanos() / WINDOWS as u128).max(1);
        let window = ((sent - measured.start).as_nanos() / window_ns) as usize;
        self.windows[window.min(WINDOWS - 1)]
            .saturating_record(response.clamp(1, WINDOW_HIGHEST_NS));
    }
}

/// Runs `load` and measures it.
pub fn run(target: &Target, load: &Load, seed: u64) -> Result<Measured, DbFailure> {
    run_with_burst(target, load, seed, 0)
}

/// Runs an open stream `load` started with a burst — as many sends at its first instant as
/// it has connections, so every connection is busy at once — and measures it.
pub fn run_from_burst(target: &Target, load: &Load, seed: u64) -> Result<Measured, DbFailure> {
    run_with_burst(target, load, seed, load.clients)
}

/// Runs `load`, an open stream's first `burst` sends at its start, and measures it.
fn run_with_burst(
    target: &Target,
    load: &Load,
    seed: u64,
    burst: u32,
) -> Result<Measured, DbFailure> {
    let mut control = target.connect()?;
    control.settle();
    let syncs_before = control.log_flushes();
    let clients: Vec<Box<dyn Session>> = (0..load.clients)
        .map(|_| target.connect())
        .collect::<Result<_, _>>()?;
    let barrier = Barrier::new(clients.len());
    let started = Mutex::new(None::<Instant>);
    let sends = Sends::new(load, seed, burst);
    // An update still running at the end is counted in the timeline's last bucket.
    let timeline = Timeline::new(load.warmup + load.duration);
    // Each connection comes back with its tally and is closed only when every client is
    // done: a server process that exits costs CPU, and the last updates of the run would
    // pay for it.
    let finished: Vec<(Result<ClientTally, DbFailure>, Box<dyn Session>)> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = clients
                .into_iter()
                .enumerate()
                .map(|(index, mut client)| {
                    let (barrier, started, sends) = (&barrier, &started, &sends);
                    let timeline = &timeline;
                    scope.spawn(move || {
                        let begin = {
                            barrier.wait();
                            let mut started = started.lock().expect("not poisoned");
                            *started.get_or_insert_with(Instant::now)
                        };
                        let clock = Clock {
                            begin,
                            sends,
                            timeline,
                        };
                        let tally =
                            drive(target, client.as_mut(), load, seed ^ index as u64, &clock);
                        (tally, client)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("a load client does not panic"))
                .collect()
        });
    let (tallies, connections): (Vec<_>, Vec<_>) = finished.into_iter().unzip();
    drop(connections);
    let mut measured = 0;
    let mut total = 0;
    let mut responses = WaitStats::new();
    let mut windows = new_windows(load);
    for tally in tallies {
        let tally = tally?;
        measured += tally.measured;
        total += tally.total;
        responses += &tally.responses;
        for (window, client) in windows.iter_mut().zip(&tally.windows) {
            window.add(client).expect("windows of the same bounds");
        }
    }
    // The clients' backends report their WAL counts as they exit.
    std::thread::sleep(Duration::from_millis(300));
    let syncs_after = control.log_flushes();
    let fsyncs_per_commit = match (syncs_before, syncs_after) {
        (Some(before), Some(after)) if total > 0 => Some((after - before) as f64 / total as f64),
        _ => None,
    };
    Ok(Measured {
        tps: measured as f64 / load.duration.as_secs_f64(),
        responses,
        fsyncs_per_commit,
        steady_p99_ns: median_p99(&windows),
        stalls: timeline.stalls(
            load.warmup.as_nanos() as u64,
            (load.warmup + load.duration).as_nanos() as u64,
        ),
    })
}

/// What every connection of a run shares: its start, an open stream's sends, and the timeline
/// of sends and commits the stalls are read from.
struct Clock<'a> {
    begin: Instant,
    sends: &'a Sends,
    timeline: &'a Timeline,
}

impl Clock<'_> {
    /// Time since the run's start.
    fn elapsed(&self) -> Duration {
        self.begin.elapsed()
    }
}

/// An open stream's empty windows (none for a closed loop).
fn new_windows(load: &Load) -> Vec<Histogram<u32>> {
    let count = if load.rate_per_s.is_some() {
        WINDOWS
    } else {
        0
    };
    (0..count)
        .map(|_| {
            let mut window = Histogram::new_with_bounds(1, WINDOW_HIGHEST_NS, 2)
                .expect("valid histogram bounds");
            window.auto(false);
            window
        })
        .collect()
}

/// The median of the p99s of the `windows` that saw a response, to the nanosecond; `None`
/// when none did.
pub fn median_p99(windows: &[Histogram<u32>]) -> Option<u64> {
    let p99s = windows
        .iter()
        .filter(|window| !window.is_empty())
        .map(|window| window.value_at_quantile(0.99) as f64);
    crate::stats::median(p99s).map(|ns| ns.round() as u64)
}

/// An open stream's Poisson sends, drawn as its connections take them (memory does not grow
/// with the rate), after a burst of sends at its start. A closed loop has none.
struct Sends {
    /// The rate a second, and the next send's time with the generator and the burst's sends
    /// still to take, for an open stream.
    next: Option<(f64, Mutex<NextSend>)>,
}

/// The next send of an open stream.
struct NextSend {
    at: Duration,
    rng: SmallRng,
    burst: u32,
}

impl Sends {
    fn new(load: &Load, seed: u64, burst: u32) -> Sends {
        Sends {
            next: load.rate_per_s.map(|rate| {
                let mut rng = SmallRng::seed_from_u64(seed);
                let at = gap(&mut rng, rate);
                (rate, Mutex::new(NextSend { at, rng, burst }))
            }),
        }
    }

    /// The time of the next send (for an open stream): a burst's at the start, then the
    /// stream's.
    fn take(&self) -> Option<Duration> {
        let (rate, next) = self.next.as_ref()?;
        let mut next = next.lock().expect("a sender does not panic");
        if next.burst > 0 {
            next.burst -= 1;
            return Some(Duration::ZERO);
        }
        let at = next.at;
        let step = gap(&mut next.rng, *rate);
        next.at = at + step;
        Some(at)
    }
}

/// An exponential gap between Poisson sends at `rate` a second.
fn gap(rng: &mut SmallRng, rate: f64) -> Duration {
    let unit: f64 = rng.random::<f64>();
    Duration::from_secs_f64(-(1.0 - unit).ln() / rate)
}

/// One connection's loop until the run's end.
fn drive(
    target: &Target,
    session: &mut dyn Session,
    load: &Load,
    seed: u64,
    clock: &Clock<'_>,
) -> Result<ClientTally, DbFailure> {
    let fail = |message: String| target.failure(message);
    session.prepare_increment().map_err(fail)?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let end = load.warmup + load.duration;
    let measured = load.warmup..end;
    let mut tally = ClientTally::new(load);
    loop {
        let (sent, elapsed) = match load.rate_per_s {
            None => {
                let now = clock.elapsed();
                (now, now)
            }
            Some(_) => match clock.sends.take() {
                Some(at) if at >= end => break,
                Some(at) => {
                    let now = clock.elapsed();
                    if at > now {
                        std::thread::sleep(at - now);
                    }
                    (at, clock.elapsed())
                }
                None => break,
            },
        };
        if elapsed >= end {
            break;
        }
        let shard = rng.random_range(0..load.rows as i32);
        clock.timeline.send(sent.as_nanos() as u64);
        session.increment(shard).map_err(fail)?;
        let answered = clock.elapsed();
        clock.timeline.commit(answered.as_nanos() as u64);
        tally.count(sent, answered, &measured);
        if load.rate_per_s.is_none() && !load.think.is_zero() {
            std::thread::sleep(load.think);
        }
    }
    Ok(tally)
}

/// The server's commit durability.
pub fn durability(target: &Target) -> Result<Durability, DbFailure> {
    let mut session = target.connect()?;
    session
        .durability()
        .map_err(|message| target.failure(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows whose responses are `responses_ms` each (every response of a window alike).
    fn windows(responses_ms: &[Vec<f64>]) -> Vec<Histogram<u32>> {
        let load = Load {
            rows: 1,
            clients: 1,
            rate_per_s: Some(1000.0),
            think: Duration::ZERO,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(10),
        };
        let mut windows = new_windows(&load);
        for (window, responses) in windows.iter_mut().zip(responses_ms) {
            for ms in responses {
                window.saturating_record((ms * 1e6) as u64);
            }
        }
        windows
    }

    #[test]
    fn throughput_counts_commits_in_the_measured_seconds_and_responses_their_sends() {
        let load = Load {
            rows: 1,
            clients: 1,
            rate_per_s: Some(1000.0),
            think: Duration::ZERO,
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(5),
        };
        let measured = load.warmup..load.warmup + load.duration;
        let mut tally = ClientTally::new(&load);
        let s = Duration::from_secs_f64;
        // Answered in the warm-up; sent in it and answered in the measured seconds (a stream
        // that fell behind); sent and answered in them (windows 1 and 5); answered after.
        for (sent, answered) in [
            (0.2, 0.5),
            (0.5, 3.0),
            (1.5, 1.502),
            (5.9, 5.95),
            (5.0, 6.5),
        ] {
            tally.count(s(sent), s(answered), &measured);
        }
        assert_eq!((tally.total, tally.measured), (5, 3));
        let responses = tally.responses.summary();
        assert_eq!(responses.count, 2);
        assert_eq!(responses.max_ns, 50_000_000);
        let counts: Vec<u64> = tally.windows.iter().map(Histogram::len).collect();
        assert_eq!(counts, [1, 0, 0, 0, 1]);
    }

    #[test]
    fn a_stall_in_two_of_five_windows_does_not_move_the_steady_p99() {
        // Five windows of 1,000 responses, three quiet (1.5% of them at 1.5 ms, the rest at
        // 1 ms) and two stalled (a tenth at 50 ms): the whole run's p99 is the stall's, the
        // steady one the quiet windows'.
        let quiet: Vec<f64> = (0..1000).map(|i| if i < 985 { 1.0 } else { 1.5 }).collect();
        let stalled: Vec<f64> = (0..1000)
            .map(|i| if i < 900 { 1.0 } else { 50.0 })
            .collect();
        let runs = windows(&[
            quiet.clone(),
            stalled.clone(),
            quiet.clone(),
            stalled,
            quiet,
        ]);
        assert_eq!(runs.len(), WINDOWS);
        let steady = crate::time::ns_to_ms(median_p99(&runs).expect("responses"));
        assert!((steady - 1.5).abs() < 0.02, "{steady}");
        let mut whole = runs[0].clone();
        for window in &runs[1..] {
            whole.add(window).expect("same bounds");
        }
        assert!(crate::time::ns_to_ms(whole.value_at_quantile(0.99)) > 49.0);
        // Windows without responses are left out; none at all is no figure.
        let sparse = windows(&[vec![2.0], Vec::new(), vec![3.0], Vec::new(), vec![4.0]]);
        assert_eq!(
            median_p99(&sparse).map(|ns| (crate::time::ns_to_ms(ns)).round()),
            Some(3.0)
        );
        assert_eq!(median_p99(&windows(&[])), None);
        // A closed loop has no windows.
        let closed = Load {
            rate_per_s: None,
            think: Duration::ZERO,
            rows: 1,
            clients: 1,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(1),
        };
        assert!(new_windows(&closed).is_empty());
    }
}
