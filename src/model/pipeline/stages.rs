//! The stages a job passes through once it has arrived: it asks for a row of its key (or the
//! next one, skipping locked rows) and takes it or waits; holding it, it enters the machine's
//! hops — a core, the WAL's flush — and commits; the released row goes to the next waiter,
//! waking the waiters the database wakes. The job slab stays in the pipeline's own module;
//! these handlers schedule their own next steps as [`DatabaseEvent`]s.

use super::*;

/// The database's events on a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DatabaseEvent {
    /// The job's hold (drawn plus per waiter) ends: it asks for a core.
    HoldEnd(u32),
    /// The job's CPU ends: its core goes to the next job; it asks for the flush.
    CpuEnd(u32),
    /// Shared cores: the pieces of work done by now end.
    CpuCheck,
    /// The running flush ends: the commits it covers are done.
    FlushEnd,
    /// A skip-locked update (of this generation of its slot) tries its next row.
    TryRow(u32, u32),
}

impl DatabaseEvent {
    /// Whether the database completes work at this event (a stall puts it off): a hold, a
    /// CPU slice or a flush ends; not a check of the shared cores, nor a try.
    pub(super) fn completes_work(self) -> bool {
        matches!(
            self,
            DatabaseEvent::HoldEnd(_) | DatabaseEvent::CpuEnd(_) | DatabaseEvent::FlushEnd
        )
    }
}

impl<O: Observer> Pipeline<O> {
    /// Handles one of the database's events.
    #[inline]
    pub(super) fn on_database(&mut self, event: DatabaseEvent) {
        match event {
            DatabaseEvent::HoldEnd(job) => self.enter(job, self.route.after_hold),
            DatabaseEvent::CpuEnd(job) => self.cpu_end(job),
            DatabaseEvent::CpuCheck => self.check_shared_cores(),
            DatabaseEvent::FlushEnd => self.end_flush(),
            DatabaseEvent::TryRow(job, generation) => self.try_again(job, generation),
        }
    }

    /// Puts one of the database's events on the calendar.
    #[inline(always)]
    fn schedule_database(&mut self, at: SimTime, event: DatabaseEvent) {
        self.calendar.schedule(at, Step::Database(event));
    }

    /// A job's CPU on a first-come-first-served core ends: the core goes to the next job in
    /// line, and the job goes on.
    fn cpu_end(&mut self, job: u32) {
        if let Some(Cores::Fifo(cores)) = self.cores.as_mut()
            && let Some(next) = cores.release(&mut self.links)
        {
            self.run_cpu(next);
        }
        self.cpu_ended(job);
    }
    /// The update asks for a row of its key (the one chosen at its send, if it was).
    pub(super) fn request_row(&mut self, id: u32) {
        let Job { arrival, row, .. } = self.jobs[id as usize];
        if self.config.policy == Policy::SkipLocked && row == NONE {
            self.try_next_row(id);
            return;
        }
        let request = if row == NONE {
            self.locks.request(
                arrival.key,
                arrival.random_bits,
                arrival.user,
                id,
                &mut self.links,
            )
        } else {
            self.locks.request_row(row, id, &mut self.links)
        };
        match request {
            Request::Granted(row) => self.take_row(Handover {
                job: id,
                waiters: 0,
                row,
            }),
            Request::Queued(row) => {
                let job = &mut self.jobs[id as usize];
                job.row = row;
                job.stage = Stage::Queued;
                self.wait_in_backlog(id);
            }
        }
    }

    /// Skip-locked: the update tries its next row without waiting, and takes it if it is
    /// free. A locked row costs the try (`[skip_locked] try_ms`) and the round trip back to
    /// the application (the update's time outside the database) before the next try; after
    /// the last allowed try fails, the update waits for that row from then on.
    pub(super) fn try_next_row(&mut self, id: u32) {
        let job = self.jobs[id as usize];
        let tries = self.config.skip_locked.tries;
        let (row, allowed) = self.locks.skip_locked_row(
            job.arrival.key,
            job.arrival.random_bits,
            job.tried(),
            tries,
        );
        self.jobs[id as usize].count_try();
        if self.locks.try_row(row) {
            self.take_row(Handover {
                job: id,
                waiters: 0,
                row,
            });
            return;
        }
        if job.tried() + 1 >= allowed {
            // Its next step asks for this row and waits for it.
            self.jobs[id as usize].row = row;
        }
        self.jobs[id as usize].stage = Stage::Trying;
        self.wait_in_backlog(id);
        let next = self
            .now
            .saturating_add(self.config.skip_locked.try_ns)
            .saturating_add(job.overhead);
        self.schedule_database(next, DatabaseEvent::TryRow(id, job.generation));
    }

    /// A skip-locked update's next try is due, or its wait for the last row it tried (unless
    /// its client gave up on it meanwhile).
    fn try_again(&mut self, id: u32, generation: u32) {
        let job = self.jobs[id as usize];
        if job.generation == generation && job.stage == Stage::Trying {
            self.request_row(id);
        }
    }

    /// The update counts as waiting (once).
    pub(super) fn wait_in_backlog(&mut self, id: u32) {
        let job = &mut self.jobs[id as usize];
        if !job.in_backlog {
            job.in_backlog = true;
            let measured = job.arrival.at >= self.config.measure_from;
            self.enter_backlog(measured);
        }
    }

    /// A row went to a job now: an update's hold starts, or a locking read has one more row.
    pub(super) fn take_row(&mut self, handover: Handover) {
        let job = &mut self.jobs[handover.job as usize];
        // A job that slept in the row's line must be woken before it works.
        let woken = job.stage == Stage::Queued;
        if job.in_backlog {
            job.in_backlog = false;
            self.backlog -= 1;
        }
        match job.kind {
            Kind::ReadPart => self.part_granted(handover.job, handover.row),
            _ => self.grant(handover.job, handover.row, handover.waiters, woken),
        }
    }

    /// `job` takes `row` now, with `waiters` updates still waiting for it; a `woken` job
    /// slept in the row's line and is woken first.
    pub(super) fn grant(&mut self, id: u32, row: u32, waiters: u32, woken: bool) {
        let now = self.now;
        let job = &mut self.jobs[id as usize];
        job.row = row;
        job.granted_at = now;
        job.stage = Stage::Holding;
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
        self.record_connection_wait(&job);
        let amount = self.executed_amount(&job);
        self.locks.add(row, amount);
        self.record_for_key(job.arrival.key, wait, measured);
        let grant = Grant {
            slot: self.locks.slot_of(row),
            start: now,
            tries: job.tried().max(1),
        };
        if measured {
            self.tries += u64::from(grant.tries);
        }
        self.observer
            .on_increment(&job.arrival, &grant, &self.locks);
        let wake = if woken { self.machine.wake } else { 0 };
        let hold = job
            .arrival
            .hold
            .saturating_add(self.machine.per_waiter.saturating_mul(u64::from(waiters)))
            .saturating_add(wake);
        self.schedule_database(now.saturating_add(hold), DatabaseEvent::HoldEnd(id));
    }

    /// The job goes on to `hop`: it asks for a core or the flush, or commits.
    #[inline(always)]
    pub(super) fn enter(&mut self, job: u32, hop: Hop) {
        match hop {
            Hop::Cpu => match self.cores.as_mut().expect("a CPU stage has cores") {
                Cores::Fifo(cores) => {
                    if cores.request(job, &mut self.links) {
                        self.run_cpu(job);
                    }
                }
                Cores::Shared(_) => self.share_cpu(job),
            },
            Hop::Flush => {
                let wal = self.wal.as_mut().expect("a flush stage has a WAL");
                if wal.request(job, &mut self.links) {
                    self.start_flush(0);
                }
            }
            Hop::Commit => self.commit(job),
        }
    }

    /// The CPU `job` needs now: its request's before it asks for its row, else its own.
    fn cpu_demand(&self, job: u32) -> SimTime {
        let job = &self.jobs[job as usize];
        if job.stage == Stage::Preparing {
            self.machine.request_cpu
        } else {
            job.cpu
        }
    }

    /// The job runs on a core from now (first come, first served).
    pub(super) fn run_cpu(&mut self, job: u32) {
        let end = self.now.saturating_add(self.cpu_demand(job));
        self.figures.cpu_busy_ns += self.measured_overlap(self.now, end);
        self.schedule_database(end, DatabaseEvent::CpuEnd(job));
    }

    /// The job joins the work sharing the cores from now.
    fn share_cpu(&mut self, job: u32) {
        let demand = self.cpu_demand(job);
        let now = self.now;
        let Some(Cores::Shared(cores)) = self.cores.as_mut() else {
            unreachable!("shared cores")
        };
        let (since, busy) = cores.advance(now);
        let check = cores.enter(job, demand, now);
        self.shared_cores_moved(since, busy, check);
    }

    /// The shared cores advanced from `since` with `busy` cores running: their busy time is
    /// counted, and the next check goes on the calendar if one is needed.
    fn shared_cores_moved(&mut self, since: SimTime, busy: u32, check: Option<SimTime>) {
        self.figures.cpu_busy_ns += self.measured_overlap(since, self.now) * u128::from(busy);
        if let Some(at) = check {
            self.schedule_database(at, DatabaseEvent::CpuCheck);
        }
    }

    /// A check of the shared cores: the pieces done by now end, in the order they finished.
    fn check_shared_cores(&mut self) {
        let now = self.now;
        let mut done = std::mem::take(&mut self.cpu_done);
        let Some(Cores::Shared(cores)) = self.cores.as_mut() else {
            unreachable!("checks come from shared cores")
        };
        let (since, busy) = cores.advance(now);
        done.clear();
        let check = cores.complete(now, &mut done);
        self.shared_cores_moved(since, busy, check);
        for &job in &done {
            self.cpu_ended(job);
        }
        self.cpu_done = done;
    }

    /// `job`'s CPU ended: a request goes on to its row (or, cancelled meanwhile, leaves), a
    /// wake-up is done, a flush's leader writes, an update asks for the flush.
    pub(super) fn cpu_ended(&mut self, job: u32) {
        let Job { kind, stage, .. } = self.jobs[job as usize];
        match kind {
            Kind::Wake => self.free(job),
            Kind::FlushWrite => {
                self.free(job);
                self.write_flush(self.now);
            }
            _ if stage == Stage::Preparing => self.prepared(job),
            _ => self.enter(job, self.route.after_cpu),
        }
    }

    /// The update's request needs CPU on the shared cores before it asks for its row
    /// (`[machine] request_cpu_ms`); without any, it asks now.
    pub(super) fn prepare_then_request(&mut self, id: u32) {
        let job = &mut self.jobs[id as usize];
        if self.machine.request_cpu == 0 || self.cores.is_none() || job.kind != Kind::Update {
            self.request_store_or_row(id);
            return;
        }
        job.stage = Stage::Preparing;
        self.enter(id, Hop::Cpu);
    }

    /// The request's CPU is done: it asks for its row, unless its client cancelled it
    /// meanwhile (it leaves now, with its connection).
    fn prepared(&mut self, id: u32) {
        let job = &mut self.jobs[id as usize];
        if job.abandoned {
            if job.connected {
                self.release_connection();
            }
            self.free(id);
            return;
        }
        job.stage = Stage::Holding;
        self.request_store_or_row(id);
    }

    /// A flush starts after `wake` (its leader slept while the last one ran): its leader's
    /// CPU on the shared cores first, when it has some, then the write.
    pub(super) fn start_flush(&mut self, wake: SimTime) {
        if self.now >= self.config.measure_from && self.now < self.config.horizon {
            self.figures.flushes += 1;
        }
        let cpu = self.machine.wal.map_or(0, |wal| wal.cpu);
        let start = self.now.saturating_add(wake);
        if cpu == 0 || self.cores.is_none() {
            self.write_flush(start);
            return;
        }
        let arrival = Arrival::machine_work(self.now);
        let id = self.allocate(Job {
            cpu,
            ..Job::new(arrival, Kind::FlushWrite)
        });
        // The leader asks for a core once it is awake (a hold's end asks for one).
        self.schedule_database(start, DatabaseEvent::HoldEnd(id));
    }

    /// The flush's write runs from `start`.
    pub(super) fn write_flush(&mut self, start: SimTime) {
        let end = start.saturating_add(self.machine.wal.map_or(0, |wal| wal.flush));
        self.figures.wal_busy_ns += self.measured_overlap(start, end);
        self.schedule_database(end, DatabaseEvent::FlushEnd);
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
            self.start_flush(self.machine.wake);
        }
    }

    /// The job commits now: its row goes to the next waiter, its client gets the answer.
    pub(super) fn commit(&mut self, id: u32) {
        let now = self.now;
        let job = self.jobs[id as usize];
        if now >= self.config.measure_from && now <= self.config.horizon {
            self.completed += 1;
            self.figures.commits += 1;
        }
        self.release_row(job.row, job.granted_at);
        self.observer.on_commit(&job.arrival, now);
        self.likes_commit(&job);
        if job.link != NONE {
            self.flush_committed(job.link);
        }
        self.answer(id);
    }

    /// The job is done without a row to release: its connection goes back, its client gets
    /// the answer after the time outside the database (and a closed-loop client sends again
    /// after its think time), and its slot is freed.
    pub(super) fn answer(&mut self, id: u32) {
        let job = self.jobs[id as usize];
        if job.connected {
            self.release_connection();
        }
        let answered = self.now.saturating_add(job.overhead);
        if self.records_responses
            && job.arrival.at >= self.config.measure_from
            && !job.timed_out
            && job.client_waits()
        {
            self.responses.record(answered - job.arrival.at);
        }
        if job.client != NONE {
            self.client_done(job.client, answered);
        }
        self.free(id);
    }

    /// `row`, held since `since`, is released now: it goes to the next job waiting for it,
    /// and every waiter woken costs the shared cores `wake_cpu`, and `herd_cpu` for every
    /// other waiter woken with it.
    pub(super) fn release_row(&mut self, row: u32, since: SimTime) {
        let held = self.measured_overlap(since, self.now);
        self.locks
            .add_busy(row, u64::try_from(held).unwrap_or(u64::MAX));
        let handover = self.locks.release(row, self.now, &mut self.links);
        if self.machine.page_scan_cpu > 0 {
            self.scan_page(row, handover.map_or(0, |next| next.waiters));
        }
        if let Some(next) = handover {
            let woken = u64::from(next.waiters) + 1;
            let taker = next.job;
            self.take_row(next);
            if self.machine.wake_cpu > 0 || self.machine.herd_cpu != 0 {
                self.wake_waiters(taker, woken);
            }
        }
    }

    /// A release of `row` (with `waiters` still in its own line) scans its key's page: the
    /// shared cores spend `page_scan_cpu` for every update waiting for another of the key's
    /// rows.
    #[inline(never)]
    pub(super) fn scan_page(&mut self, row: u32, waiters: u32) {
        let others = self.locks.waiting_for_other_rows(row, waiters);
        if others == 0 || self.cores.is_none() {
            return;
        }
        let arrival = Arrival::machine_work(self.now);
        let id = self.allocate(Job {
            cpu: self.machine.page_scan_cpu.saturating_mul(u64::from(others)),
            ..Job::new(arrival, Kind::Wake)
        });
        self.enter(id, Hop::Cpu);
    }

    /// `woken` waiters of a released row (`taker` among them) wake and race for it: their
    /// CPU queues on the shared cores as one piece of work.
    pub(super) fn wake_waiters(&mut self, taker: u32, woken: u64) {
        let others = i64::try_from(woken - 1).unwrap_or(i64::MAX);
        let per_waiter = i64::try_from(self.machine.wake_cpu)
            .unwrap_or(i64::MAX)
            .saturating_add(self.machine.herd_cpu.saturating_mul(others));
        let cpu = u64::try_from(per_waiter).unwrap_or(0).saturating_mul(woken);
        if self.cores.is_none() || cpu == 0 {
            return;
        }
        let id = self.allocate(Job {
            cpu,
            ..Job::new(self.jobs[taker as usize].arrival, Kind::Wake)
        });
        self.enter(id, Hop::Cpu);
    }
}
