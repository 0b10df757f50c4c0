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

use std::sync::Arc;

use rand::Rng;

use crate::arrivals::DrawNeeds;
use crate::scenario::ClosedLoop;
use crate::stats::{KeyTracker, WaitStats, WindowSeries};

use super::calendar::Calendar;
use super::closed::{ClientStreams, ClosedRun};
use super::engine::{Arrival, EngineConfig, NoEvents, Observer, ShardRun};
use super::hold::HoldDist;
use super::locks::{LockTable, Request};
use super::machine::{MachineModel, MachineRun};
use super::random::{SimRng, Stream, stream_rng};
use super::resources::{Cores, NONE, Wal};
use super::rows::Grant;
use super::time::SimTime;

/// Updates a closed loop sends between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 14;

/// What happens next to a job, or a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The job's hold (drawn plus per waiter) ends: it asks for a core.
    HoldEnd(u32),
    /// The job's CPU ends: its core goes to the next job; it asks for the flush.
    CpuEnd(u32),
    /// The running flush ends: the commits it covers are done.
    FlushEnd,
    /// A closed-loop client sends its next update.
    Send(u32),
}

/// One update in flight.
#[derive(Debug, Clone, Copy)]
struct Job {
    arrival: Arrival,
    cpu: SimTime,
    overhead: SimTime,
    granted_at: SimTime,
    row: u32,
    window: u32,
    client: u32,
}

/// A closed loop run on the pipeline.
#[derive(Debug)]
struct Clients {
    think: HoldDist,
    hold: HoldDist,
    streams: Vec<ClientStreams>,
    needs: DrawNeeds,
    sent: u64,
}

/// Simulates one shard count on the event-driven pipeline.
#[derive(Debug)]
pub struct Pipeline<O: Observer = NoEvents> {
    config: EngineConfig,
    machine: Arc<MachineModel>,
    locks: LockTable,
    jobs: Vec<Job>,
    links: Vec<u32>,
    free_jobs: Vec<u32>,
    cores: Option<Cores>,
    wal: Option<Wal>,
    covered: Vec<u32>,
    calendar: Calendar<Step>,
    series: WindowSeries,
    waits: WaitStats,
    responses: WaitStats,
    keys: Option<Box<KeyTracker>>,
    observer: O,
    cpu_draws: SimRng,
    overhead_draws: SimRng,
    clients: Option<Clients>,
    now: SimTime,
    arrivals: u64,
    completed: u64,
    backlog: u64,
    backlog_max: u64,
    measuring: bool,
    saturated_at: Option<SimTime>,
    figures: MachineRun,
}

impl<O: Observer> Pipeline<O> {
    /// A pipeline at time 0: every row, core and the WAL idle.
    pub fn new(config: EngineConfig, machine: Arc<MachineModel>, observer: O) -> Self {
        assert!(
            config.features.is_empty() && config.adaptive.is_none(),
            "validation keeps [client] timeouts, [batching], [pool], [reads] and [adaptive] off the pipeline"
        );
        let figures = MachineRun {
            cores: machine.cpu.as_ref().map_or(0, |cpu| cpu.cores),
            cpu_busy_ns: 0,
            flushes: 0,
            wal_busy_ns: 0,
            commits: 0,
            busiest_row_ns: 0,
            measured_ns: config.horizon - config.measure_from,
            responses: None,
        };
        Pipeline {
            locks: LockTable::new(config.shards, config.policy, config.key_hint),
            jobs: Vec::new(),
            links: Vec::new(),
            free_jobs: Vec::new(),
            cores: machine.cpu.as_ref().map(|cpu| Cores::new(cpu.cores)),
            wal: machine.wal.map(|wal| Wal::new(wal.group_commit)),
            covered: Vec::new(),
            calendar: Calendar::new(),
            series: WindowSeries::with_late_waits(config.window, config.window_count),
            waits: WaitStats::new(),
            responses: WaitStats::new(),
            keys: (config.hot_keys > 0).then(|| Box::new(KeyTracker::new())),
            observer,
            cpu_draws: stream_rng(config.seed, Stream::Cpu),
            overhead_draws: stream_rng(config.seed, Stream::Overhead),
            clients: None,
            now: 0,
            arrivals: 0,
            completed: 0,
            backlog: 0,
            backlog_max: 0,
            measuring: false,
            saturated_at: None,
            figures,
            machine,
            config,
        }
    }

    /// Simulates a batch of open arrivals, in time order, all before the horizon.
    pub fn feed(&mut self, arrivals: &[Arrival]) {
        for arrival in arrivals {
            while let Some(time) = self.calendar.next_time().filter(|&t| t <= arrival.at) {
                if self.saturated_at.is_some() {
                    break;
                }
                self.handle(time);
            }
            let cpu = draw(
                self.machine.cpu.as_ref().map(|c| &c.demand),
                &mut self.cpu_draws,
            );
            let overhead = draw(self.machine.overhead.as_ref(), &mut self.overhead_draws);
            self.arrive(*arrival, NONE, cpu, overhead);
        }
    }

    /// Runs a closed loop of clients to the horizon (each client drawing from its own streams
    /// of `seed`, as on the fast path) and returns the results; `progress` hears how many
    /// updates were sent, now and then.
    pub fn run_closed(
        mut self,
        closed: &ClosedLoop,
        hold: &HoldDist,
        seed: u64,
        progress: &mut dyn FnMut(u64),
    ) -> (ShardRun, O) {
        self.clients = Some(Clients {
            think: closed.think.clone(),
            hold: hold.clone(),
            streams: (0..closed.clients)
                .map(|id| ClientStreams::new(seed, id))
                .collect(),
            needs: DrawNeeds::for_policy(self.config.policy),
            sent: 0,
        });
        for id in 0..closed.clients {
            self.calendar.schedule(0, Step::Send(id));
        }
        let mut reported = 0;
        while let Some(time) = self.next_time_before_horizon() {
            self.handle(time);
            let sent = self.clients.as_ref().map_or(0, |c| c.sent);
            if sent - reported >= PROGRESS_EVERY {
                progress(sent - reported);
                reported = sent;
            }
        }
        let sent = self.clients.as_ref().map_or(0, |c| c.sent);
        progress(sent - reported);
        let (mut run, observer) = self.finish();
        let responses = run
            .machine
            .as_mut()
            .and_then(|machine| machine.responses.take())
            .unwrap_or_default();
        run.closed = Some(ClosedRun {
            clients: closed.clients,
            responses,
        });
        (run, observer)
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
            && let Some(time) = self.calendar.next_time()
        {
            self.handle(time);
        }
        let hot_keys = self.keys.as_ref().map_or_else(Vec::new, |keys| {
            keys.hottest(self.config.hot_keys, |key| self.locks.rows_of(key))
        });
        let mut figures = self.figures;
        figures.busiest_row_ns = self.locks.busiest_row_ns(self.config.hot_key);
        figures.responses = Some(self.responses);
        let run = ShardRun {
            shards: self.config.shards,
            arrivals: self.arrivals,
            completed: self.completed,
            waits: self.waits,
            backlog_max: self.backlog_max,
            backlog_final,
            windows: self.series.into_rows(),
            keys_touched: self.locks.keys_touched(),
            extended: None,
            hot_keys,
            adaptive: false,
            growths: Vec::new(),
            rows_total: self.locks.rows_total(),
            max_key_rows: self.locks.max_key_rows(),
            saturated_at: self.saturated_at,
            closed: None,
            machine: Some(figures),
        };
        (run, self.observer)
    }

    /// The next event's time, if it comes before the horizon and the run is not saturated.
    fn next_time_before_horizon(&self) -> Option<SimTime> {
        self.calendar
            .next_time()
            .filter(|&time| time < self.config.horizon && self.saturated_at.is_none())
    }

    /// A job arrives at the database (an open arrival after the events due by then; a
    /// client's send at its event).
    fn arrive(&mut self, arrival: Arrival, client: u32, cpu: SimTime, overhead: SimTime) {
        assert!(
            arrival.at >= self.now && arrival.at < self.config.horizon,
            "arrivals come in time order and before the horizon"
        );
        self.now = arrival.at;
        self.close_windows_through(arrival.at);
        let measured = arrival.at >= self.config.measure_from;
        if self.saturated_at.is_some() {
            self.unserved(measured);
            return;
        }
        if measured {
            if !self.measuring {
                self.measuring = true;
                self.backlog_max = self.backlog;
            }
            self.arrivals += 1;
        }
        let window = self.series.record_late_arrival();
        let job = self.allocate(Job {
            arrival,
            cpu,
            overhead,
            granted_at: 0,
            row: NONE,
            window,
            client,
        });
        match self.locks.request(
            arrival.key,
            arrival.random_bits,
            arrival.user,
            job,
            &mut self.links,
        ) {
            Request::Granted(row) => self.grant(job, row, 0),
            Request::Queued => self.enter_backlog(measured),
        }
        if self.backlog + self.calendar.len() as u64 > self.config.queue_limit {
            self.saturate();
        }
    }

    /// Takes a slot in the job slab.
    fn allocate(&mut self, job: Job) -> u32 {
        if let Some(id) = self.free_jobs.pop() {
            self.jobs[id as usize] = job;
            return id;
        }
        let id = u32::try_from(self.jobs.len()).expect("fewer than 2^32 jobs in flight");
        self.jobs.push(job);
        self.links.push(NONE);
        id
    }

    /// `job` takes `row` now, with `waiters` updates still waiting for it.
    fn grant(&mut self, id: u32, row: u32, waiters: u32) {
        let now = self.now;
        let job = &mut self.jobs[id as usize];
        job.row = row;
        job.granted_at = now;
        let job = *job;
        let wait = now - job.arrival.at;
        let measured = job.arrival.at >= self.config.measure_from;
        if measured {
            self.waits.record(wait);
        }
        self.series.record_late_wait(job.window, wait);
        if now < self.config.horizon {
            self.series.record_start();
        }
        self.locks.add(row);
        if let Some(keys) = self.keys.as_mut() {
            let block = self
                .locks
                .block_of(job.arrival.key)
                .expect("a granted key has rows");
            keys.record(block, job.arrival.key, wait, measured);
        }
        let grant = Grant {
            slot: self.locks.slot_of(row),
            start: now,
        };
        self.observer
            .on_increment(&job.arrival, &grant, &self.locks);
        let hold = job
            .arrival
            .hold
            .saturating_add(self.machine.per_waiter.saturating_mul(u64::from(waiters)));
        self.calendar
            .schedule(now.saturating_add(hold), Step::HoldEnd(id));
    }

    /// Handles the next event, due at `time`.
    fn handle(&mut self, time: SimTime) {
        self.close_windows_through(time);
        let (_, step) = self.calendar.pop().expect("an event is due");
        self.now = time;
        match step {
            Step::HoldEnd(job) => self.work(job),
            Step::CpuEnd(job) => {
                if let Some(next) = self.cores.as_mut().and_then(|c| c.release(&self.links)) {
                    self.run_cpu(next);
                }
                self.flush(job);
            }
            Step::FlushEnd => self.end_flush(),
            Step::Send(client) => self.send(client),
        }
    }

    /// The job's hold ended: it needs a core, or goes on to the flush.
    fn work(&mut self, job: u32) {
        match self.cores.as_mut() {
            Some(cores) => {
                if cores.request(job, &mut self.links) {
                    self.run_cpu(job);
                }
            }
            None => self.flush(job),
        }
    }

    /// The job runs on a core from now.
    fn run_cpu(&mut self, job: u32) {
        let end = self.now.saturating_add(self.jobs[job as usize].cpu);
        self.figures.cpu_busy_ns += self.measured_overlap(self.now, end);
        self.calendar.schedule(end, Step::CpuEnd(job));
    }

    /// The job's work is done: its commit needs a flush, or it commits now.
    fn flush(&mut self, job: u32) {
        match self.wal.as_mut() {
            Some(wal) => {
                if wal.request(job, &mut self.links) {
                    self.start_flush();
                }
            }
            None => self.commit(job),
        }
    }

    /// A flush starts now.
    fn start_flush(&mut self) {
        let flush = self.machine.wal.map_or(0, |wal| wal.flush);
        let end = self.now.saturating_add(flush);
        if self.now >= self.config.measure_from && self.now < self.config.horizon {
            self.figures.flushes += 1;
        }
        self.figures.wal_busy_ns += self.measured_overlap(self.now, end);
        self.calendar.schedule(end, Step::FlushEnd);
    }

    /// The running flush ended: every commit it covers is done, and the next flush starts if
    /// commits are waiting.
    fn end_flush(&mut self) {
        let Some(wal) = self.wal.as_mut() else {
            return;
        };
        let mut covered = std::mem::take(&mut self.covered);
        let next = wal.finish(&mut self.links, &mut covered);
        for &job in &covered {
            self.commit(job);
        }
        self.covered = covered;
        if next {
            self.start_flush();
        }
    }

    /// The job commits now: its row goes to the next waiter, its client gets the answer.
    fn commit(&mut self, id: u32) {
        let now = self.now;
        let job = self.jobs[id as usize];
        if now >= self.config.measure_from && now <= self.config.horizon {
            self.completed += 1;
            self.figures.commits += 1;
        }
        let held = self.measured_overlap(job.granted_at, now);
        self.locks
            .add_busy(job.row, u64::try_from(held).unwrap_or(u64::MAX));
        if let Some(next) = self.locks.release(job.row, now, &self.links) {
            self.backlog -= 1;
            self.grant(next.job, job.row, next.waiters);
        }
        let answered = now.saturating_add(job.overhead);
        if job.arrival.at >= self.config.measure_from {
            self.responses.record(answered - job.arrival.at);
        }
        if job.client != NONE
            && let Some(clients) = self.clients.as_mut()
        {
            let think = clients
                .think
                .sample(&mut clients.streams[job.client as usize].thinks);
            let next = answered.saturating_add(think);
            if next < self.config.horizon {
                self.calendar.schedule(next, Step::Send(job.client));
            }
        }
        self.free_jobs.push(id);
    }

    /// A closed-loop client sends its next update now.
    fn send(&mut self, client: u32) {
        let Some(clients) = self.clients.as_mut() else {
            return;
        };
        clients.sent += 1;
        let streams = &mut clients.streams[client as usize];
        let arrival = Arrival {
            at: self.now,
            hold: clients.hold.sample(&mut streams.holds),
            random_bits: if clients.needs.slot_bits {
                streams.slots.next_u64()
            } else {
                0
            },
            user: u64::from(client),
            key: 0,
            endpoint: 0,
        };
        let cpu = draw(
            self.machine.cpu.as_ref().map(|c| &c.demand),
            &mut streams.cpu,
        );
        let overhead = draw(self.machine.overhead.as_ref(), &mut streams.overhead);
        self.arrive(arrival, client, cpu, overhead);
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
        self.saturated_at = Some(self.now);
        self.calendar = Calendar::new();
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
        self.series.close_window(self.backlog, 0, rows);
    }
}

/// One draw of an optional distribution (0 without it).
#[inline]
fn draw(dist: Option<&HoldDist>, rng: &mut SimRng) -> SimTime {
    dist.map_or(0, |dist| dist.sample(rng))
}
