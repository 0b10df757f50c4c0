//! Fitting the machine model to measured runs: the parameters — the row's hold with nobody
//! waiting (h0), the CPU of an update on the server's cores, the WAL flush (durable commits),
//! the wake-up of a waiter and the CPU each waiter woken at a release costs (the waiters'
//! growth), and the time outside the database (log-normal: its median and p99) — are those
//! whose simulated closed loops best reproduce the measured throughput, median and p99
//! response and WAL syncs per commit of every run. The grant order is read from the tails of
//! the one-row runs; the cores are the fit's too, up to the server's: a load driver on the
//! same machine takes part of them. With durable commits the fit also tries a flush whose
//! leader needs a core before its write (`[wal] cpu_ms`) and keeps it when it fits better: on
//! a busy machine that stretches every flush, and commits share fewer of them. The
//! simulation is the pipeline itself, with fixed seeds, so the fit is deterministic; the
//! search is Nelder–Mead over the logarithms of the parameters, a first pass for each core
//! count and wake-up guess, then restarts of the best while they improve.
//!
//! A per-waiter growth of the row's own hold (`[hold] per_waiter_ms`) is not fitted: the
//! wake-ups' CPU already explains what it would, and a term the runs cannot see only makes the
//! search wander (docs/validation.md, "The fit's constants").

use rayon::prelude::*;

use crate::model::cores::Scheduler;
use crate::model::machine::GrantOrder;

pub use full_pool::fit_full_pool;
pub use machine::{Idle, Lognormal, Machine, Observation, OpenStream};
use nelder_mead::{Budget, nelder_mead, restart_while_improving};

mod full_pool;
mod machine;
mod nelder_mead;

/// Commits each run's simulation aims for per evaluation: enough for its p99 (200 above it)
/// at a cost that does not grow with the measured throughput.
const SIMULATED_COMMITS: f64 = 20_000.0;
/// Simulated seconds per run and evaluation, at the least and at the most.
const SIMULATED_S: (f64, f64) = (0.25, 1.5);
/// Smallest value a fitted time may take, ms (the logarithms need a floor).
const FLOOR_MS: f64 = 1e-5;
/// The share of the flush its leader's CPU takes when the search for a flush that queues
/// for a core starts from a fitted machine whose flush has none.
const QUEUED_FLUSH_SHARE: f64 = 0.4;
/// The least and the most of a flush's time its leader's CPU may take.
const MIN_CPU_SHARE: f64 = 1e-3;
const MAX_CPU_SHARE: f64 = 0.95;
/// What a pass of the machine's search may spend: 300 evaluations, and it ends early when its
/// best misfit fell by less than [`STALL_GAIN`](nelder_mead::STALL_GAIN) of itself over the
/// last 100: the simulated runs' misfit moves in small steps (counts and quantiles), and a
/// simplex among them crawls without gaining.
const MACHINE_BUDGET: Budget = Budget {
    evaluations: 300,
    stall_window: Some(100),
};
/// What a pass of the idle connection's search may spend (three parameters, a few seconds
/// in all: it runs to its end).
const IDLE_BUDGET: Budget = Budget {
    evaluations: 150,
    stall_window: None,
};
/// The weight of an open stream's p99 in the idle connection's fit when the simulated one is
/// below the measured one (above it, 1). The fit's machine has no stalls, and a stall only
/// ever raises a measured tail: weighed alike, a stalled stream would give the time outside
/// the database a tail that every light stream then pays. The weight was chosen over refits of
/// measured calibrations (docs/validation.md, "The fit's constants").
const TAIL_BELOW_WEIGHT: f64 = 0.2;
/// Simulated seconds of an open stream before its measurement.
const OPEN_WARMUP_S: f64 = 0.2;
/// Simulated seconds of an open stream per evaluation, at the least and at the most.
const OPEN_SIMULATED_S: (f64, f64) = (1.0, 20.0);

/// The weight of a run's throughput in the misfit (its median response weighs 0.5, its p99
/// 0.2). A closed loop's throughput and mean response carry the same information (Little's
/// law), but the median also carries the responses' shape, which the model gets less right:
/// weighed less, near-equal fits disagree on the throughput a planner reads.
const TPS_WEIGHT: f64 = 3.0;

/// How far `simulated` is from `measured`: squared log errors of throughput (weighted
/// `TPS_WEIGHT`), median and p99 response, and of the syncs per commit when both know them.
pub fn misfit(simulated: &Observation, measured: &Observation) -> f64 {
    let mut sum = TPS_WEIGHT * log_error(simulated.tps, measured.tps).powi(2)
        + 0.5 * log_error(simulated.p50_ms, measured.p50_ms).powi(2)
        + 0.2 * log_error(simulated.p99_ms, measured.p99_ms).powi(2);
    if let (Some(a), Some(b)) = (simulated.fsyncs_per_commit, measured.fsyncs_per_commit) {
        sum += 0.5 * log_error(a + 0.01, b + 0.01).powi(2);
    }
    sum
}

/// The log of `simulated` over `measured` (both floored above zero).
fn log_error(simulated: f64, measured: f64) -> f64 {
    (simulated.max(1e-9) / measured.max(1e-9)).ln()
}

/// Wake-ups the search starts from, ms: a process that runs again at once, and one that
/// waits for a busy core (the search does not cross from one basin to the other by itself).
pub const WAKE_GUESSES_MS: [f64; 2] = [0.01, 0.1];

/// A first guess from the measurements: the CPU from the best throughput on many rows, the
/// time outside the database from one client's response, small hold terms, and `wake_ms`.
pub fn first_guess(
    observations: &[Observation],
    cores: u32,
    durable: bool,
    grant_order: GrantOrder,
    wake_ms: f64,
) -> Machine {
    let best = observations.iter().map(|o| o.tps).fold(1.0_f64, f64::max);
    let lone = observations
        .iter()
        .filter(|o| o.clients == 1)
        .map(|o| o.p50_ms)
        .fold(f64::INFINITY, f64::min);
    let lone = if lone.is_finite() { lone } else { 0.5 };
    Machine {
        hold_ms: 0.02,
        grant_order,
        wake_ms,
        wake_cpu_ms: 0.005,
        herd_cpu_ms: 0.0,
        page_scan_cpu_ms: 0.0,
        per_waiter_ms: 0.0,
        cpu_ms: 1000.0 * f64::from(cores) / best,
        cores,
        scheduler: Scheduler::Fifo,
        request_cpu_ms: 0.0,
        flush_ms: durable.then_some(0.1),
        flush_cpu_ms: 0.0,
        overhead_ms: (lone * 0.6).max(0.01),
        overhead_p99_ms: (lone * 1.5).max(0.02),
        idle: None,
    }
}

/// The grant order the measurements show: a row whose waiters are served first come, first
/// served answers a closed loop's clients in about the same time (p99 within 2× of the
/// median), one that hands itself to a random waiter gives a geometric tail (p99 about 6× the
/// median with 8 or more waiters). Judged on the one-row runs of 8 or more clients.
pub fn grant_order_of(observations: &[Observation]) -> GrantOrder {
    let spreads = observations
        .iter()
        .filter(|o| o.rows == 1 && o.clients >= 8 && o.p50_ms > 0.0)
        .map(|o| o.p99_ms / o.p50_ms);
    match crate::stats::median(spreads) {
        Some(spread) if spread > 3.0 => GrantOrder::Random,
        _ => GrantOrder::Fifo,
    }
}

/// The machine whose simulation best matches `observations`, with `cores` at most the
/// server's, and its misfit: each core count (halving down to 1) searched once from each of
/// [`WAKE_GUESSES_MS`] (a first pass), and only the searches of the count whose first passes
/// ended lowest go on. With durable commits a flush whose leader queues for a core before its
/// write is searched too, from that count's best first pass with `QUEUED_FLUSH_SHARE` of its
/// flush moved to the CPU: any CPU in the flush puts it behind the queue on the cores, a change
/// of structure rather than of a number, which a search from one cannot reach by small steps
/// from the other. When its first pass ends below theirs it alone is finished; otherwise
/// every search is, and the best kept ([`fit_at`]'s without the queued flush).
pub fn fit_with_cores(observations: &[Observation], cores: u32, durable: bool) -> (Machine, f64) {
    let mut core_counts: Vec<u32> =
        std::iter::successors(Some(cores), |&c| (c > 1).then_some(c / 2)).collect();
    core_counts.dedup();
    // The core counts part early: the count ahead after the first passes is the one ahead at
    // the end, so only its searches are finished (a third of the fit's time saved).
    let searches = core_counts
        .into_iter()
        .map(|cores| first_passes(observations, cores, durable))
        .min_by(|a, b| lowest(a).total_cmp(&lowest(b)))
        .expect("at least one core count");
    let (best_first, best_first_cost) = searches
        .iter()
        .min_by(|a, b| a.cost.total_cmp(&b.cost))
        .map(|search| (search.machine(), search.cost))
        .expect("at least one start");
    let Some(flush) = best_first.flush_ms.filter(|_| durable) else {
        return finish_best(searches);
    };
    let queued = Search::begin(
        observations,
        Machine {
            flush_ms: Some(flush * (1.0 - QUEUED_FLUSH_SHARE)),
            flush_cpu_ms: flush * QUEUED_FLUSH_SHARE,
            ..best_first
        },
    );
    // A queued flush whose first pass already beats the plain flush's best is finished from
    // there: finishing the plain machine first gains little and costs a fifth of the fit.
    if queued.cost < best_first_cost {
        return queued.finish();
    }
    let plain = finish_best(searches);
    let queued = queued.finish();
    if queued.1 < plain.1 { queued } else { plain }
}

/// `fitted` (the machine [`fit_with_cores`] found, first come, first served) on the server's
/// `cores` shared among all the work ready to run, with a request's CPU before its row
/// (`SHARED_REQUEST_SHARE` of the update's to start), searched from there to best match
/// `observations`; and its misfit. A change of structure, not of a number: the search
/// starts from the fitted machine so that the two are told apart by the runs, not by where
/// each search happened to stop. One pass, not restarted: it starts from a finished machine,
/// and refitted to round 24's four calibrations its restarts took 5–36 s (of a calibration's
/// four minutes) to lower the misfit by 0–6%.
pub fn fit_shared(observations: &[Observation], fitted: &Machine, cores: u32) -> (Machine, f64) {
    let search = Search::begin(
        observations,
        Machine {
            scheduler: Scheduler::Shared,
            cores,
            request_cpu_ms: fitted.cpu_ms * SHARED_REQUEST_SHARE,
            ..*fitted
        },
    );
    (search.machine(), search.cost)
}

/// The machine whose closed loops best match `observations` (the design's client counts) and
/// `herd_runs` (more clients than those), up to `cores`: fitted with the cores first come,
/// first served ([`fit_with_cores`]) and shared ([`fit_shared`]), each given its herd
/// ([`fit_herd`]) and its page's scan ([`fit_page_scan`]); the one whose runs, the herd's
/// among them, come out closer is kept. The runs with many waiters are where the two differ:
/// on shared cores a row's holder is slowed by everything running, and the more requests are
/// under way the slower it gets.
pub fn fit_closed_loops(
    observations: &[Observation],
    herd_runs: &[Observation],
    cores: u32,
    durable: bool,
) -> Machine {
    let all: Vec<Observation> = observations.iter().chain(herd_runs).copied().collect();
    let (fifo, _) = fit_with_cores(observations, cores, durable);
    let (shared, _) = fit_shared(observations, &fifo, cores);
    [fifo, shared]
        .map(|machine| {
            let machine = fit_herd(&machine, observations, herd_runs);
            let machine = fit_page_scan(&machine, &all);
            (total_misfit(&machine, &all), machine)
        })
        .into_iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, machine)| machine)
        .expect("two machines")
}

/// The share of the update's CPU the search for shared cores starts a request's CPU at.
const SHARED_REQUEST_SHARE: f64 = 0.5;

/// The machine with `cores` (its flush, with durable commits, a write alone) whose
/// simulation best matches `observations`, with the grant order the measurements show,
/// searched from each of [`WAKE_GUESSES_MS`]; and its misfit.
pub fn fit_at(observations: &[Observation], cores: u32, durable: bool) -> (Machine, f64) {
    finish_best(first_passes(observations, cores, durable))
}

/// The first passes of the searches at `cores`, one from each of [`WAKE_GUESSES_MS`] with
/// the grant order the measurements show.
fn first_passes(observations: &[Observation], cores: u32, durable: bool) -> Vec<Search<'_>> {
    let order = grant_order_of(observations);
    WAKE_GUESSES_MS
        .iter()
        .map(|&wake_ms| {
            let guess = first_guess(observations, cores, durable, order, wake_ms);
            Search::begin(observations, guess)
        })
        .collect()
}

/// The lowest misfit among `searches` so far.
fn lowest(searches: &[Search]) -> f64 {
    searches
        .iter()
        .map(|s| s.cost)
        .fold(f64::INFINITY, f64::min)
}

/// Every one of `searches` finished: the best machine and its misfit (from different
/// starts the search ends in different valleys, and the first pass does not tell which is
/// lowest: on a simulated machine the start behind after it by 2.5× ended 2× lower).
fn finish_best(searches: Vec<Search>) -> (Machine, f64) {
    searches
        .into_iter()
        .map(Search::finish)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one start")
}

/// Simulated seconds for a run measured at `tps`: about `SIMULATED_COMMITS` commits.
pub fn simulated_seconds(tps: f64) -> f64 {
    (SIMULATED_COMMITS / tps.max(1.0)).clamp(SIMULATED_S.0, SIMULATED_S.1)
}

/// The summed misfit of `machine` over `observations` (simulated in parallel, added in
/// order: the same sum whatever the thread count).
pub fn total_misfit(machine: &Machine, observations: &[Observation]) -> f64 {
    let misfits: Vec<f64> = observations
        .par_iter()
        .map(|measured| {
            let seconds = simulated_seconds(measured.tps);
            let simulated = machine.simulate(measured.rows, measured.clients, seconds);
            misfit(&simulated, measured)
        })
        .collect();
    misfits.iter().sum()
}

/// A Nelder–Mead search of a machine's coordinates (with the flush's split between its
/// leader's CPU and its write, or with no CPU in the flush) under way: where it started, its
/// best point so far and that point's misfit.
struct Search<'a> {
    observations: &'a [Observation],
    start: Machine,
    split: bool,
    best: Vec<f64>,
    cost: f64,
}

impl<'a> Search<'a> {
    /// The first pass from `start` (its cores kept, and whether its flush's leader needs a
    /// core: a flush CPU above 0).
    fn begin(observations: &'a [Observation], start: Machine) -> Search<'a> {
        let split = start.flush_ms.is_some() && start.flush_cpu_ms > 0.0;
        let mut search = Search {
            observations,
            start,
            split,
            best: Vec::new(),
            cost: f64::INFINITY,
        };
        (search.best, search.cost) = nelder_mead(
            &|point| search.misfit(point),
            &start.to_point(split),
            0.7,
            MACHINE_BUDGET,
        );
        search
    }

    /// The search restarted from its best point — a new, smaller simplex escapes a collapsed
    /// one — while that still improves the fit by more than [`STALL_GAIN`](nelder_mead::STALL_GAIN); the machine it
    /// ends at and its misfit.
    fn finish(mut self) -> (Machine, f64) {
        (self.best, self.cost) = restart_while_improving(
            &|point| self.misfit(point),
            (self.best.clone(), self.cost),
            &[0.7, 0.2],
            MACHINE_BUDGET,
        );
        (self.machine(), self.cost)
    }

    /// The machine at the search's best point so far.
    fn machine(&self) -> Machine {
        self.start.with_point(&self.best, self.split)
    }

    /// The misfit of the machine at `point`.
    fn misfit(&self, point: &[f64]) -> f64 {
        total_misfit(&self.start.with_point(point, self.split), self.observations)
    }
}

/// The herd's shares of the wake-up CPU [`fit_herd`] tries, in steps of 2%: from −96% (a
/// waiter woken among 64 costs 1% of one woken among 32) to 98% (a waiter woken alone costs
/// 2% of it), nearest none first.
const HERD_STEPS: (i32, i32) = (-48, 49);
/// A step of the herd's share.
const HERD_STEP: f64 = 0.02;

/// `machine` (fitted to `observations`, which reach at most `most` clients) with the CPU of
/// a woken waiter split between its own wake-up and the herd woken with it (which adds to
/// it, or below 0 shares part of it) — `wake_cpu_ms` + (`most` − 1) × `herd_cpu_ms` kept at
/// the fitted wake-up CPU, so that a waiter woken among the most clients fitted costs what
/// the fit found — at the herd's share whose simulation best matches `observations` and
/// `herd_runs` together: one row at more clients than `most`, where a release wakes more
/// waiters than in any fitted run. Without such a run the machine is kept (no measurement
/// sees the herd). Searched on a fixed grid of shares
/// (`HERD_STEPS`), the one nearest none on a tie: the simulated runs move in small steps
/// as a term moves, so a search that follows the misfit's slope stops at the first step.
pub fn fit_herd(
    machine: &Machine,
    observations: &[Observation],
    herd_runs: &[Observation],
) -> Machine {
    let most = observations.iter().map(|o| o.clients).max().unwrap_or(1);
    let beyond = herd_runs.iter().any(|run| run.clients > most);
    if !beyond || most < 2 {
        return *machine;
    }
    let runs: Vec<Observation> = observations.iter().chain(herd_runs).copied().collect();
    let whole = machine.wake_cpu_ms + f64::from(most - 1) * machine.herd_cpu_ms;
    let with_share = |share: f64| Machine {
        wake_cpu_ms: whole * (1.0 - share),
        herd_cpu_ms: whole * share / f64::from(most - 1),
        ..*machine
    };
    let mut steps: Vec<i32> = (HERD_STEPS.0..=HERD_STEPS.1).collect();
    steps.sort_by_key(|step| (step.abs(), *step < 0));
    steps
        .into_iter()
        .map(|step| with_share(f64::from(step) * HERD_STEP))
        .map(|candidate| (total_misfit(&candidate, &runs), candidate))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(*machine, |(_, best)| best)
}

/// The CPU a release costs per update waiting for another row that [`fit_page_scan`] tries,
/// ms: none, then 0.01 µs to 100 µs in steps of a factor of √2.
fn page_scan_candidates() -> impl Iterator<Item = f64> {
    std::iter::once(0.0).chain((0..=26).map(|step| 1e-5 * 2f64.powf(f64::from(step) / 2.0)))
}

/// `machine` with the CPU every release costs for each update waiting for another row of
/// the key (`page_scan_cpu_ms`) whose simulation best matches `runs` — the closed loops with
/// several rows and more clients than rows are the ones it moves (one row has no other rows;
/// one client per row, no waiters). None unless some value fits better than none: a server
/// that keeps a line per row, as PostgreSQL does, keeps none. Searched on a fixed grid
/// (`page_scan_candidates`), for the reason [`fit_herd`] is.
pub fn fit_page_scan(machine: &Machine, runs: &[Observation]) -> Machine {
    let moved = runs
        .iter()
        .any(|run| run.rows > 1 && run.clients > run.rows);
    if !moved {
        return *machine;
    }
    let with = |page_scan_cpu_ms: f64| Machine {
        page_scan_cpu_ms,
        ..*machine
    };
    let misfit = |page_scan_cpu_ms: f64| total_misfit(&with(page_scan_cpu_ms), runs);
    let mut best = (f64::INFINITY, 0.0);
    for candidate in page_scan_candidates() {
        let cost = misfit(candidate);
        if cost < best.0 {
            best = (cost, candidate);
        }
    }
    if best.1 == 0.0 {
        return *machine;
    }
    // Between the grid's neighbours of the best value, a golden-section search on its log.
    let golden = (5f64.sqrt() - 1.0) / 2.0;
    let (mut low, mut high) = ((best.1 / 2f64.sqrt()).ln(), (best.1 * 2f64.sqrt()).ln());
    for _ in 0..PAGE_SCAN_REFINEMENTS {
        let left = high - golden * (high - low);
        let right = low + golden * (high - low);
        if misfit(left.exp()) <= misfit(right.exp()) {
            high = right;
        } else {
            low = left;
        }
    }
    let refined = ((low + high) / 2.0).exp();
    if misfit(refined) < best.0 {
        with(refined)
    } else {
        with(best.1)
    }
}

/// Steps of [`fit_page_scan`]'s golden-section search: a factor of 2 narrowed to 0.3%.
const PAGE_SCAN_REFINEMENTS: usize = 12;

/// Simulated seconds for an open stream of `rate_per_s`: about `SIMULATED_COMMITS` commits.
pub fn open_simulated_seconds(rate_per_s: f64) -> f64 {
    (SIMULATED_COMMITS / rate_per_s.max(1.0)).clamp(OPEN_SIMULATED_S.0, OPEN_SIMULATED_S.1)
}

/// `machine` with what an idle connection costs — its time outside the database (log-normal)
/// and the CPU of waking the server — whose simulated open streams best reproduce the
/// `measured` ones' throughput, median and p99 response (a simulated p99 below a measured one
/// weighing a fifth: `open_misfit`). The closed loops never leave a connection idle, so the
/// rest of the machine is theirs and is kept; a light stream's responses are mostly the time
/// outside, a heavy one's queue on the cores the wake-ups share.
pub fn fit_idle(machine: &Machine, measured: &[(OpenStream, Observation)]) -> Machine {
    let with = |point: &[f64]| {
        let median_ms = point[0].exp().clamp(FLOOR_MS, 1_000.0);
        let spread = point[1].exp().exp().clamp(1.001, 100.0);
        Machine {
            idle: Some(Idle {
                overhead: Lognormal {
                    median_ms,
                    p99_ms: median_ms * spread,
                },
                wake_cpu_ms: point[2].exp().clamp(FLOOR_MS, 1_000.0),
            }),
            ..*machine
        }
    };
    let cost = |point: &[f64]| -> f64 {
        let candidate = with(point);
        let misfits: Vec<f64> = measured
            .par_iter()
            .map(|(stream, measured)| {
                let simulated =
                    candidate.simulate_open(stream, open_simulated_seconds(stream.rate_per_s));
                open_misfit(&simulated, measured)
            })
            .collect();
        misfits.iter().sum()
    };
    // First guess: what the lightest stream's median and p99 leave above the back-to-back
    // machine's, and a small wake-up.
    let (stream, lightest) = measured
        .iter()
        .min_by(|a, b| a.0.rate_per_s.total_cmp(&b.0.rate_per_s))
        .expect("at least one open stream");
    let without = machine.simulate_open(stream, open_simulated_seconds(stream.rate_per_s));
    let median = (lightest.p50_ms - (without.p50_ms - machine.overhead_ms)).max(0.01);
    let p99 = (lightest.p99_ms - (without.p99_ms - machine.overhead_p99_ms)).max(median * 2.0);
    let start = [
        median.ln(),
        (p99 / median).ln().ln(),
        (0.1 * machine.cpu_ms).ln(),
    ];
    let first = nelder_mead(&cost, &start, 0.5, IDLE_BUDGET);
    let (best, _) = restart_while_improving(&cost, first, &[0.2], IDLE_BUDGET);
    with(&best)
}

/// How far a `simulated` open stream is from the `measured` one: squared log errors of
/// throughput, median and p99 response, the p99's weighed [`TAIL_BELOW_WEIGHT`] when the
/// simulated tail is the lower one (a stall the model does not have may have raised the
/// measured one).
fn open_misfit(simulated: &Observation, measured: &Observation) -> f64 {
    let tail = log_error(simulated.p99_ms, measured.p99_ms);
    let tail_weight = if tail < 0.0 { TAIL_BELOW_WEIGHT } else { 1.0 };
    log_error(simulated.tps, measured.tps).powi(2)
        + log_error(simulated.p50_ms, measured.p50_ms).powi(2)
        + tail_weight * tail.powi(2)
}

#[cfg(test)]
mod recovery;
#[cfg(test)]
mod stability;
#[cfg(test)]
mod tests;
