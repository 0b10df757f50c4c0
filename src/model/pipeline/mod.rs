//! The event-driven pipeline: an update is a job that passes through resources which grant,
//! queue and release on one calendar, so a hold can depend on what happens after the grant.
//!
//! A job arrives, takes a row of its key ([`LockTable`]) or waits for one, then holds it
//! through its stages: the drawn hold plus `per_waiter` for each update still waiting for the
//! row when it took it; its CPU on one of the shared [`Cores`]; the [`Wal`] flush that covers
//! its commit. At the flush's end it commits: the row goes to the next waiter and the client
//! gets its answer after the time outside the database. Without machine sections a job's only
//! stage is its hold, and the pipeline gives exactly the exact core's results: the
//! closed-form [`super::Engine`] is its fast path.
//!
//! Statistics match the exact core's: a wait is the time to the row, recorded for the window
//! the update arrived in; after the horizon no update arrives, but those in flight run on so
//! that every wait is known (the exact core knows them at arrival).
//!
//! Every event has an owner that schedules and handles it in its own module (`events` has the
//! loop that hands each event to its owner): the database's stages (`stages`), the clients —
//! a closed loop, deadlines and retries — (`clients`), write batching (`batching`), the
//! neighbours' requests (`neighbours`), the reads (`reads`) and the likes table (`likes`).
//! `behaviours` routes an open arrival to its behaviour and keeps the figures they share.

mod batching;
mod behaviours;
mod clients;
mod events;
mod likes;
mod neighbours;
mod reads;
mod route;
mod stages;

use std::sync::Arc;

use crate::stats::{KeyTracker, WaitStats, WindowSeries};

use super::adaptive::Adaptive;
use super::calendar::Calendar;
use super::cores::Cores;
use super::engine::{Arrival, EngineConfig, NoEvents, Observer, ShardRun};
use super::extended::Extension;
use super::hold::HoldDist;
use super::likes::LikesTable;
use super::locks::{Handover, LockTable, Request};
use super::machine::{MachineModel, MachineRun};
use super::random::{SimRng, Stream, stream_rng};
use super::resources::{Links, NONE};
use super::rows::{Grant, Policy};
use super::run::ClosedRun;
use super::servers::Servers;
use super::stalls::StallClock;
use super::wal::Wal;
use crate::time::SimTime;
use clients::Clients;
use events::Step;
use route::{Hop, Route};

/// What a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An update of a row: a like's attempt or a batching flush.
    Update,
    /// A neighbour endpoint's request: it needs only a connection.
    Neighbour,
    /// A locking read: it holds every row of its key at once, through its parts.
    Read,
    /// One row of a locking read.
    ReadPart,
    /// The CPU of waking a released row's waiters (`[machine] wake_cpu_ms`), or of scanning
    /// its page (`[machine] page_scan_cpu_ms`): work on the shared cores that belongs to no
    /// update.
    Wake,
    /// The CPU of a WAL flush's leader before the write (`[wal] cpu_ms`): the flush's I/O
    /// starts when it has had a core.
    FlushWrite,
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Waiting for a connection from the pool.
    Connecting,
    /// Waiting for its partition's insert path (`[likes_table]`).
    Inserting,
    /// Inserting its like (holding the insert path).
    InsertHolding,
    /// Its request's CPU before it asks for its row (`[machine] request_cpu_ms`).
    Preparing,
    /// Waiting for its row.
    Queued,
    /// Skip-locked: between two tries of its rows, in no line.
    Trying,
    /// Holding its row (or connection), or done.
    Holding,
}

/// One update (or request) in flight.
#[derive(Debug, Clone, Copy)]
struct Job {
    arrival: Arrival,
    cpu: SimTime,
    overhead: SimTime,
    granted_at: SimTime,
    /// When it got its connection (with a pool).
    connected_at: SimTime,
    /// What it adds to its row; a locking read's parts still to be granted.
    amount: u64,
    /// The row it holds, or waits for ([`NONE`]: any row of its key).
    row: u32,
    window: u32,
    client: u32,
    retry: u32,
    /// Bumped when the slot is freed, so a deadline can tell its job from a later one.
    generation: u32,
    /// A flush's batch of like times; a part's read; a read's first part; a neighbour's
    /// endpoint.
    link: u32,
    /// The next part of the same locking read; for a skip-locked update, the rows it has
    /// tried (see [`Job::tried`]).
    sibling: u32,
    kind: Kind,
    stage: Stage,
    is_like: bool,
    executed_before: bool,
    timed_out: bool,
    connected: bool,
    in_backlog: bool,
    /// `[likes_table]`: its like is already stored, so the primary key rejects it.
    repeat: bool,
    /// `[likes_table]`: its insert committed on its own (separate transactions).
    inserted: bool,
    /// `[likes_table]`: its client cancelled it during its insert; it leaves at the insert's
    /// end.
    abandoned: bool,
}

impl Job {
    /// The rows a skip-locked update has tried (it has no read parts, so it keeps the count
    /// where a read keeps its next part: a job must stay within its memory budget).
    fn tried(&self) -> u32 {
        if self.sibling == NONE {
            0
        } else {
            self.sibling
        }
    }

    /// Counts one more row tried.
    fn count_try(&mut self) {
        self.sibling = self.tried() + 1;
    }

    /// A job for `arrival`, not yet in any queue.
    fn new(arrival: Arrival, kind: Kind) -> Job {
        Job {
            arrival,
            cpu: 0,
            overhead: 0,
            granted_at: 0,
            connected_at: 0,
            amount: 1,
            row: NONE,
            window: 0,
            client: NONE,
            retry: 0,
            generation: 0,
            link: NONE,
            sibling: NONE,
            kind,
            stage: Stage::Holding,
            is_like: false,
            executed_before: false,
            timed_out: false,
            connected: false,
            in_backlog: false,
            repeat: false,
            inserted: false,
            abandoned: false,
        }
    }
}

/// Simulates one shard count on the event-driven pipeline.
#[derive(Debug)]
pub struct Pipeline<O: Observer = NoEvents> {
    config: EngineConfig,
    machine: Arc<MachineModel>,
    locks: LockTable,
    jobs: Vec<Job>,
    links: Links,
    free_jobs: Vec<u32>,
    cores: Option<Cores>,
    /// The pieces shared cores finished at one check.
    cpu_done: Vec<u32>,
    wal: Option<Wal>,
    /// The stages after the hold.
    route: Route,
    covered: Vec<u32>,
    calendar: Calendar<Step>,
    /// The clients' events — deadlines, retries, batching flushes and crashes: at equal times
    /// they come after the releases and grants (an update granted at its deadline has not
    /// timed out), in the order the exact core schedules them: a retry in the place kept
    /// when the deadline of the attempt it repeats was scheduled.
    sends: Calendar<Step>,
    /// The clients' behaviours, when the scenario has any.
    ext: Option<Box<Extension>>,
    /// The connection pool.
    pool: Option<Servers>,
    adaptive: Option<Box<Adaptive>>,
    /// Like times of the flushes in flight, by `Job::link`, and the free entries.
    batches: Vec<Vec<SimTime>>,
    free_batches: Vec<u32>,
    /// Rows a growth handed to waiting jobs (reused).
    handovers: Vec<Handover>,
    series: WindowSeries,
    waits: WaitStats,
    responses: WaitStats,
    /// Whether anyone reads the response times: a machine's or a likes table's figures, or
    /// a closed loop's clients (without them, the responses are the waits plus the holds).
    records_responses: bool,
    keys: Option<Box<KeyTracker>>,
    observer: O,
    cpu_draws: SimRng,
    overhead_draws: SimRng,
    idle_overhead_draws: SimRng,
    clients: Option<Clients>,
    /// The likes table in front of the rows.
    likes: Option<Box<LikesTable>>,
    now: SimTime,
    arrivals: u64,
    completed: u64,
    /// Rows tried by the measured updates that took one (skip-locked tries several).
    tries: u64,
    backlog: u64,
    backlog_max: u64,
    measuring: bool,
    saturated_at: Option<SimTime>,
    /// Spells during which the machine completes nothing.
    stalls: Option<Box<StallClock>>,
    figures: MachineRun,
}

impl<O: Observer> Pipeline<O> {
    /// A pipeline at time 0: every row, core and the WAL idle.
    pub fn new(config: EngineConfig, machine: Arc<MachineModel>, observer: O) -> Self {
        let figures = MachineRun {
            cores: machine.cpu.as_ref().map_or(0, |cpu| cpu.cores),
            cpu_busy_ns: 0,
            flushes: 0,
            wal_busy_ns: 0,
            commits: 0,
            busiest_row_ns: 0,
            measured_ns: config.horizon - config.measure_from,
            responses: None,
            stalls: None,
            wait_p99_without_stalls_ns: None,
        };
        let mut pipeline = Pipeline {
            locks: LockTable::new(
                config.adaptive.map_or(config.shards, |a| a.start),
                config.policy,
                config.key_hint,
                machine.grant_order,
                config.seed,
            ),
            jobs: Vec::new(),
            links: Links::default(),
            free_jobs: Vec::new(),
            cores: machine
                .cpu
                .as_ref()
                .map(|cpu| Cores::new(cpu.cores, cpu.scheduler)),
            cpu_done: Vec::new(),
            wal: machine.wal.map(|wal| Wal::new(wal.group_commit)),
            route: Route::of(machine.cpu.is_some(), machine.wal.is_some()),
            covered: Vec::new(),
            calendar: Calendar::new(),
            sends: Calendar::new(),
            ext: (!config.features.is_empty()).then(|| Box::new(Extension::new(&config))),
            pool: config
                .features
                .pool
                .as_ref()
                .map(|pool| Servers::new(pool.size)),
            adaptive: config
                .adaptive
                .map(|policy| Box::new(Adaptive::new(policy))),
            batches: Vec::new(),
            free_batches: Vec::new(),
            handovers: Vec::new(),
            series: WindowSeries::with_late_waits(config.window, config.window_count()),
            waits: WaitStats::new(),
            responses: WaitStats::new(),
            records_responses: !machine.is_empty() || config.likes.is_some(),
            keys: (config.hot_keys > 0).then(|| Box::new(KeyTracker::new())),
            observer,
            cpu_draws: stream_rng(config.seed, Stream::Cpu),
            overhead_draws: stream_rng(config.seed, Stream::Overhead),
            idle_overhead_draws: stream_rng(config.seed, Stream::IdleOverhead),
            clients: None,
            likes: config
                .likes
                .as_ref()
                .map(|plan| Box::new(LikesTable::new(Arc::clone(plan), config.seed))),
            now: 0,
            arrivals: 0,
            completed: 0,
            tries: 0,
            backlog: 0,
            backlog_max: 0,
            measuring: false,
            saturated_at: None,
            stalls: machine.stalls.clone().map(|plan| {
                Box::new(StallClock::new(
                    plan,
                    config.seed,
                    config.measure_from,
                    config.horizon,
                ))
            }),
            figures,
            machine,
            config,
        };
        if pipeline.machine.page_scan_cpu > 0 {
            pipeline.locks.count_key_waiters();
        }
        pipeline.schedule_batching();
        pipeline.schedule_reconcile(0);
        pipeline
    }

    /// Simulates a batch of open arrivals, in time order, all before the horizon.
    pub fn feed(&mut self, arrivals: &[Arrival]) {
        for arrival in arrivals {
            while let Some(time) = self.next_event_time().filter(|&t| t <= arrival.at) {
                if self.saturated_at.is_some() {
                    break;
                }
                self.handle(time);
            }
            if self.ext.is_some() {
                self.open_arrival(arrival);
            } else {
                let (cpu, overhead, idle) = self.draw_machine();
                let job = Job {
                    repeat: self.draw_repeat(),
                    ..Job::new(*arrival, Kind::Update)
                };
                self.arrive(job, cpu, overhead, idle);
            }
        }
    }

    /// Handles every event due at or before `time` (and before the horizon): the state at
    /// `time`, between arrivals, for a probe that watches the queue ([`Pipeline::backlog`]).
    pub fn run_until(&mut self, time: SimTime) {
        while let Some(at) = self.next_time_before_horizon().filter(|&at| at <= time) {
            self.handle(at);
        }
    }

    /// Updates waiting now (for a connection or their row).
    pub fn backlog(&self) -> u64 {
        self.backlog
    }

    /// Commits so far in the measured period.
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// Whether the queue passed its limit and the pipeline stopped serving.
    pub fn is_saturated(&self) -> bool {
        self.saturated_at.is_some()
    }

    /// The CPU and the time outside the database of one more open update, and whether it is
    /// sent on an idle connection: one that finds a free connection (or there is no pool)
    /// takes the idle connection's time (`[client] idle_overhead`), one that must wait for a
    /// connection to be handed on the back-to-back one.
    fn draw_machine(&mut self) -> (SimTime, SimTime, bool) {
        let cpu = draw(
            self.machine.cpu.as_ref().map(|c| &c.demand),
            &mut self.cpu_draws,
        );
        let overhead = draw(self.machine.overhead.as_ref(), &mut self.overhead_draws);
        let idle = self.pool.as_ref().is_none_or(Servers::has_free);
        let overhead = overhead_for(&self.machine, overhead, &mut self.idle_overhead_draws, idle);
        (cpu, overhead, idle)
    }

    /// A request sent on an idle connection wakes its server process (and its client, on
    /// the same machine): CPU on the shared cores (`[machine] idle_wake_cpu_ms`).
    fn wake_idle(&mut self, arrival: Arrival) {
        if self.cores.is_none() || self.machine.idle_wake_cpu == 0 {
            return;
        }
        let id = self.allocate(Job {
            cpu: self.machine.idle_wake_cpu,
            ..Job::new(arrival, Kind::Wake)
        });
        self.enter(id, Hop::Cpu);
    }

    /// Runs what is left: the events before the horizon, then every update still in flight
    /// (no new one arrives) so that its wait is known. Returns the results and the observer.
    pub fn finish(mut self) -> (ShardRun, O) {
        while let Some(time) = self.next_time_before_horizon() {
            self.handle(time);
        }
        while !self.series.is_complete() {
            self.close_window();
        }
        let backlog_final = self.backlog;
        while self.saturated_at.is_none()
            && let Some(time) = self.next_event_time()
        {
            self.handle(time);
        }
        let horizon = self.config.horizon;
        // The clients' drift counts likes counted twice: the likes a reconciliation added
        // back are not.
        let reconciled = self.likes.as_ref().map_or(0, |likes| likes.reconciled());
        let rows_total = self.locks.grand_total() - reconciled;
        let extended = self
            .ext
            .as_mut()
            .map(|ext| ext.figures(horizon, rows_total));
        let hot_keys = self.keys.as_ref().map_or_else(Vec::new, |keys| {
            keys.hottest(self.config.hot_keys, |key| self.locks.rows_of(key))
        });
        let likes = self.likes_figures();
        let mut figures = self.figures;
        figures.stalls = self.stalls.map(|stalls| stalls.finish());
        figures.busiest_row_ns = self.locks.busiest_row_ns(self.config.hot_key);
        // A closed loop's clients see the responses; an open stream's are the machine's.
        let closed = self.clients.as_ref().map(|clients| ClosedRun {
            clients: clients.count,
            responses: std::mem::take(&mut self.responses),
        });
        figures.responses = (closed.is_none() && self.records_responses).then_some(self.responses);
        let run = ShardRun {
            policy: self.config.policy,
            shards: self.config.shards,
            tries: self.tries,
            arrivals: self.arrivals,
            completed: self.completed,
            waits: self.waits,
            backlog_max: self.backlog_max,
            backlog_final,
            windows: self.series.into_rows(),
            keys_touched: self.locks.keys_touched(),
            extended,
            hot_keys,
            adaptive: self.adaptive.is_some(),
            growths: self
                .adaptive
                .as_ref()
                .map_or_else(Vec::new, |a| a.growths().to_vec()),
            rows_total: self.locks.rows_total(),
            max_key_rows: self.locks.max_key_rows(),
            saturated_at: self.saturated_at,
            closed,
            machine: Some(figures),
            likes,
        };
        (run, self.observer)
    }

    /// The next event's time, if it comes before the horizon and the run is not saturated.
    fn next_time_before_horizon(&self) -> Option<SimTime> {
        self.next_event_time()
            .filter(|&time| time < self.config.horizon && self.saturated_at.is_none())
    }

    /// The time of the next event on any calendar.
    #[inline]
    fn next_event_time(&self) -> Option<SimTime> {
        let next = self.calendar.next_time();
        if self.ext.is_none() {
            return next;
        }
        match (next, self.sends.next_time()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Events waiting on both calendars.
    fn events_pending(&self) -> u64 {
        (self.calendar.len() + self.sends.len()) as u64
    }

    /// An update arrives at the database (an open arrival after the events due by then; a
    /// client's send at its event; a retry or a flush at its time): it waits for a
    /// connection (with a pool), then for its row; sent on an idle connection (`idle`), it
    /// first wakes the server. Returns its id, or `None` when the shard count is saturated
    /// and it is never served.
    fn arrive(&mut self, mut job: Job, cpu: SimTime, overhead: SimTime, idle: bool) -> Option<u32> {
        let at = job.arrival.at;
        assert!(
            at >= self.now && at < self.config.horizon,
            "arrivals come in time order and before the horizon"
        );
        self.now = at;
        self.close_windows_through(at);
        let measured = at >= self.config.measure_from;
        if self.saturated_at.is_some() {
            self.unserved(measured);
            return None;
        }
        if measured {
            if !self.measuring {
                self.measuring = true;
                self.backlog_max = self.backlog;
            }
            self.arrivals += 1;
        }
        job.window = self.series.record_late_arrival();
        job.cpu = cpu;
        job.overhead = overhead;
        if idle {
            self.wake_idle(job.arrival);
        }
        if job.kind == Kind::Update {
            self.observer.on_arrival(&job.arrival);
        }
        let id = self.allocate(job);
        self.apply_growth(job.arrival.key);
        self.connect_then(id);
        if self.backlog + self.events_pending() > self.config.queue_limit {
            self.saturate();
        }
        Some(id)
    }

    /// The job asks the pool for a connection, if there is a pool, and goes on.
    fn connect_then(&mut self, id: u32) {
        match self.pool.as_mut() {
            Some(pool) => {
                let job = &mut self.jobs[id as usize];
                if job.kind == Kind::Update {
                    let Arrival {
                        key,
                        random_bits,
                        user,
                        ..
                    } = job.arrival;
                    job.row = self.locks.choose(key, random_bits, user);
                }
                if pool.request(id, &mut self.links) {
                    self.connected(id);
                } else {
                    self.jobs[id as usize].stage = Stage::Connecting;
                    if self.jobs[id as usize].kind == Kind::Update {
                        self.wait_in_backlog(id);
                    }
                }
            }
            None => self.prepare_then_request(id),
        }
    }

    /// The job got a connection now: an update asks for its row, a neighbour's request runs.
    #[inline(always)]
    fn connected(&mut self, id: u32) {
        let job = &mut self.jobs[id as usize];
        job.connected = true;
        job.connected_at = self.now;
        match job.kind {
            Kind::Neighbour => self.neighbour_connected(id),
            _ => self.prepare_then_request(id),
        }
    }

    /// A connection is free again: the next job waiting for one takes it.
    fn release_connection(&mut self) {
        if let Some(next) = self.pool.as_mut().and_then(|p| p.release(&mut self.links)) {
            self.connected(next);
        }
    }

    /// Takes a slot in the job slab.
    fn allocate(&mut self, job: Job) -> u32 {
        if let Some(id) = self.free_jobs.pop() {
            let generation = self.jobs[id as usize].generation;
            self.jobs[id as usize] = Job { generation, ..job };
            return id;
        }
        let id = u32::try_from(self.jobs.len()).expect("fewer than 2^32 jobs in flight");
        self.jobs.push(job);
        self.links.add_job();
        // Every job in flight costs what a queued request does — a locking read's parts, a
        // neighbour's request, a like waiting for its connection — so their number is bounded
        // as the queue's is (the memory budget set the limit).
        if self.jobs.len() as u64 > self.config.queue_limit {
            self.saturate();
        }
        id
    }

    /// Frees the job's slot; a deadline still on the calendar no longer applies to it.
    fn free(&mut self, id: u32) {
        let job = &mut self.jobs[id as usize];
        job.generation = job.generation.wrapping_add(1);
        self.free_jobs.push(id);
    }

    /// How much of `[start, end)` falls in the measured period.
    fn measured_overlap(&self, start: SimTime, end: SimTime) -> u128 {
        let from = start.max(self.config.measure_from);
        let to = end.min(self.config.horizon);
        u128::from(to.saturating_sub(from))
    }

    /// One more update waits for a row.
    fn enter_backlog(&mut self, measured: bool) {
        self.backlog += 1;
        self.series.note_backlog(self.backlog);
        if measured {
            self.backlog_max = self.backlog_max.max(self.backlog);
        }
    }

    /// Stops serving: the queue passed its limit (see [`super::Engine`]'s saturation).
    #[cold]
    fn saturate(&mut self) {
        if self.saturated_at.is_some() {
            return;
        }
        self.saturated_at = Some(self.now);
        self.calendar = Calendar::new();
        self.sends = Calendar::new();
    }

    /// An arrival after saturation: it joins the backlog and is never served.
    #[cold]
    fn unserved(&mut self, measured: bool) {
        if measured {
            self.arrivals += 1;
        }
        self.series.record_unserved();
        self.enter_backlog(measured);
    }

    fn close_windows_through(&mut self, time: SimTime) {
        while time >= self.series.current_end() && !self.series.is_complete() {
            self.close_window();
        }
    }

    fn close_window(&mut self) {
        let rows = (
            self.locks.rows_total(),
            self.locks.rows_of(self.config.hot_key),
        );
        let at_risk = self.ext.as_ref().map_or(0, |ext| ext.at_risk);
        if let Some(likes) = self.likes.as_ref() {
            self.series.note_drift(likes.drift());
        }
        self.series.close_window(self.backlog, at_risk, rows);
    }
}

/// One draw of an optional distribution (0 without it).
#[inline]
fn draw(dist: Option<&HoldDist>, rng: &mut SimRng) -> SimTime {
    dist.map_or(0, |dist| dist.sample(rng))
}

/// The time outside the database of a request sent on an idle connection (`idle`): one drawn
/// from `[client] idle_overhead`, or `back_to_back` (drawn from `overhead`) when it was not or
/// the field is unset. The idle time is drawn either way, so every shard count keeps its
/// streams in step.
fn overhead_for(
    machine: &MachineModel,
    back_to_back: SimTime,
    idle_draws: &mut SimRng,
    idle: bool,
) -> SimTime {
    match machine.idle_overhead.as_ref() {
        Some(dist) => {
            let from_idle = dist.sample(idle_draws);
            if idle { from_idle } else { back_to_back }
        }
        None => back_to_back,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_job_fits_the_memory_budget() {
        // The budget counts a queued job as its slab slot (doubled), its links and its
        // calendar entries: keep the slot at 120 bytes.
        assert!(std::mem::size_of::<super::Job>() <= 120);
    }
}
