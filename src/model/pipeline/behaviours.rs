//! The clients' behaviours on the pipeline: timeouts and retries, the connection pool and its
//! neighbours, write batching, the read path and adaptive row counts. Their state and figures
//! are the exact core's (`Extension`); what differs is when things are decided. A wait is
//! known only when the update takes its row, so a timeout is decided when its deadline passes:
//! an update still waiting then (for a connection or its row) has timed out — under `cancel`
//! it leaves its queue, under `orphan` it stays and runs for nobody.

use rand::Rng;

use super::super::clients::{Attempt, OnTimeout, READ_ENDPOINT, ReadMode};
use super::super::engine::{Arrival, Observer};
use super::super::resources::NONE;
use super::super::rows::Policy;
use super::{Job, Kind, Pipeline, Request, Stage, Step};
use crate::time::SimTime;

impl<O: Observer> Pipeline<O> {
    /// An open arrival when some behaviour is on: a read, a neighbour's request, a like for a
    /// batching server, or a like's first attempt.
    pub(super) fn open_arrival(&mut self, arrival: &Arrival) {
        self.now = arrival.at;
        self.close_windows_through(arrival.at);
        if self.saturated_at.is_some() {
            // As in the exact core: past saturation every arrival joins the backlog unserved.
            self.unserved(arrival.at >= self.config.measure_from);
            return;
        }
        let ext = self.ext.as_mut().expect("behaviours have an extension");
        if arrival.endpoint == READ_ENDPOINT {
            self.read(arrival.key);
        } else if arrival.endpoint > 0 {
            self.neighbour_request(arrival);
        } else if ext.features.batching.is_some() {
            ext.batch_like(arrival.at, arrival.key, arrival.at);
        } else {
            ext.counts.likes += 1;
            let attempt = Attempt {
                stored: self.draw_repeat(),
                ..Attempt::first_of(arrival)
            };
            self.send_attempt(attempt, arrival.random_bits);
        }
    }

    /// Sends one request to the database now, with its deadline when the client has one.
    fn send_attempt(&mut self, attempt: Attempt, random_bits: u64) -> Option<u32> {
        let machine = self.draw_machine();
        self.dispatch(attempt, random_bits, machine)
    }

    /// Sends one request to the database now, with its machine draws (CPU, the time outside
    /// the database, and whether it goes out on an idle connection) already made, and its
    /// deadline when the client has one. Returns the job, unless the run is saturated.
    pub(super) fn dispatch(
        &mut self,
        attempt: Attempt,
        random_bits: u64,
        (cpu, overhead, idle): (SimTime, SimTime, bool),
    ) -> Option<u32> {
        let now = self.now;
        let arrival = Arrival {
            at: now,
            hold: attempt.hold,
            random_bits,
            user: attempt.user,
            key: attempt.key,
            endpoint: 0,
        };
        let job = Job {
            amount: attempt.amount,
            retry: attempt.retry,
            is_like: attempt.is_like,
            executed_before: attempt.executed_before,
            repeat: attempt.stored,
            client: attempt.client,
            ..Job::new(arrival, Kind::Update)
        };
        let ext = self.ext.as_mut().expect("attempts come from behaviours");
        let timeout = ext.features.client.as_ref().map(|client| client.timeout);
        if attempt.is_like {
            ext.counts.attempts += 1;
        }
        let id = self.arrive(job, cpu, overhead, idle)?;
        if let Some(timeout) = timeout.filter(|_| attempt.is_like) {
            let generation = self.jobs[id as usize].generation;
            self.sends
                .schedule_keeping_next(now.saturating_add(timeout), Step::Deadline(id, generation));
        }
        Some(id)
    }

    /// What the granted update adds to its row, counting its execution for the clients.
    pub(super) fn executed_amount(&mut self, job: &Job) -> u64 {
        match self.ext.as_mut() {
            Some(ext) => ext.count_execution(&attempt_of(job), job.timed_out),
            None => job.amount,
        }
    }

    /// Feeds an update's wait to its key's figures: per-key statistics and the growth signal
    /// (by the time the wait became known, its grant: the exact core knows it at the send).
    pub(super) fn record_for_key(&mut self, key: u32, wait: SimTime, measured: bool) {
        if self.keys.is_none() && self.adaptive.is_none() {
            return;
        }
        let block = self.locks.block_of(key).expect("a granted key has rows");
        if let Some(keys) = self.keys.as_mut() {
            keys.record(block, key, wait, measured);
        }
        if let Some(adaptive) = self.adaptive.as_mut() {
            adaptive.record(block, key, self.now, wait);
        }
    }

    /// Adaptive runs: gives the key the rows its writers now use. Under earliest-free the new
    /// rows go straight to the updates waiting in the key's line — where the exact core keeps
    /// each waiting update on the row it chose at its send, so after a growth the two paths
    /// differ (the pipeline drains the line sooner); without growth they agree.
    pub(super) fn apply_growth(&mut self, key: u32) {
        let Some(adaptive) = self.adaptive.as_mut() else {
            return;
        };
        let Some(rows) = self
            .locks
            .block_of(key)
            .and_then(|block| adaptive.due_rows(block, self.now))
        else {
            return;
        };
        let mut handovers = std::mem::take(&mut self.handovers);
        self.locks.grow(key, rows, &mut self.links, &mut handovers);
        for handover in handovers.drain(..) {
            self.take_row(handover);
        }
        self.handovers = handovers;
    }

    /// The connection wait of a like that took its row, for the pool's figures (a like that
    /// gave up waiting for its row is not counted, as in the exact core).
    pub(super) fn record_connection_wait(&mut self, job: &Job) {
        if let Some(ext) = self.ext.as_mut()
            && job.connected
            && job.is_like
            && job.arrival.at >= self.config.measure_from
        {
            ext.like_connection_waits
                .record(job.connected_at - job.arrival.at);
        }
    }

    /// A client's deadline passed: an update still waiting for a connection or its row has
    /// timed out (its retry takes the place `retry_place` among the clients' events).
    pub(super) fn deadline(&mut self, id: u32, generation: u32, retry_place: u64) {
        let job = self.jobs[id as usize];
        if job.generation != generation || job.stage == Stage::Holding {
            return;
        }
        let ext = self.ext.as_mut().expect("deadlines come from [client]");
        let client = ext.features.client.expect("deadlines come from [client]");
        ext.counts.timeouts += 1;
        self.jobs[id as usize].timed_out = true;
        if client.on_timeout == OnTimeout::Orphan {
            // The client gives up; the update stays in line and runs for nobody (its commit
            // answers no closed-loop client: the retry carries it). With the likes table it
            // will store the like before any retry can (it is ahead of it in its partition's
            // line), so the retry is a repeat.
            self.jobs[id as usize].client = NONE;
            let attempt = Attempt {
                executed_before: true,
                stored: self.likes.is_some(),
                ..attempt_of(&job)
            };
            self.fail(attempt, retry_place);
            return;
        }
        let on_likes_path =
            self.likes.is_some() && !matches!(job.stage, Stage::Connecting | Stage::Preparing);
        let stored = on_likes_path && self.likes_cancel(id);
        match job.stage {
            Stage::Connecting => {
                if let Some(pool) = self.pool.as_mut() {
                    pool.withdraw(id, &mut self.links);
                }
            }
            // Leaves when its insert ends (its connection with it), answering nobody: its
            // client is told now.
            Stage::InsertHolding => self.jobs[id as usize].client = NONE,
            // Leaves when its request's CPU ends (its connection with it).
            Stage::Preparing => self.jobs[id as usize].abandoned = true,
            // Between two skip-locked tries it is in no line.
            Stage::Trying => {
                if job.connected {
                    self.release_connection();
                }
            }
            Stage::Inserting => {
                if job.connected {
                    self.release_connection();
                }
            }
            _ => {
                self.locks
                    .withdraw(job.arrival.key, job.row, id, &mut self.links);
                if job.connected {
                    self.release_connection();
                }
            }
        }
        if job.in_backlog {
            self.backlog -= 1;
            self.jobs[id as usize].in_backlog = false;
        }
        self.series.forget_late_arrival(job.window);
        if !matches!(job.stage, Stage::InsertHolding | Stage::Preparing) {
            self.free(id);
        }
        let attempt = Attempt {
            stored,
            ..attempt_of(&job)
        };
        self.fail(attempt, retry_place);
    }

    /// The like of `attempt` failed for its client now: retry after a jittered backoff (in
    /// `place` among the clients' events), or give up for good — a closed-loop client then
    /// thinks and sends its next like.
    fn fail(&mut self, attempt: Attempt, place: u64) {
        let ext = self.ext.as_mut().expect("failures come from [client]");
        if let Some((retry, jitter)) = ext.retry_of(attempt) {
            let index = ext.park(retry);
            self.sends.schedule_in_place(
                self.now.saturating_add(jitter),
                place,
                Step::Retry(index),
            );
        } else if attempt.client != NONE {
            self.client_done(attempt.client, self.now);
        }
    }

    /// A retry falls due; after the horizon it stays pending (no update arrives then).
    pub(super) fn retry(&mut self, index: u32) {
        if self.now >= self.config.horizon {
            return;
        }
        let ext = self.ext.as_mut().expect("retries come from [client]");
        let attempt = ext.unpark(index);
        let random_bits = ext.slot_rng.next_u64();
        self.send_attempt(attempt, random_bits);
    }

    /// Schedules every batching server's first flush and every crash.
    pub(super) fn schedule_batching(&mut self) {
        let Some(batching) = self.ext.as_ref().and_then(|e| e.features.batching.clone()) else {
            return;
        };
        let horizon = self.config.horizon;
        for server in 0..batching.servers {
            let first = batching.flush * u64::from(server + 1) / u64::from(batching.servers);
            if first < horizon {
                self.sends.schedule(first, Step::BatchFlush(server));
            }
        }
        for crash in batching.crashes.iter().filter(|c| c.at < horizon) {
            self.sends.schedule(crash.at, Step::Crash(crash.servers));
        }
    }

    /// A server sends one `+k` update per key it holds, and schedules its next flush.
    pub(super) fn batch_flush(&mut self, server: u32) {
        let now = self.now;
        let ext = self.ext.as_mut().expect("flushes come from [batching]");
        let batching = ext
            .features
            .batching
            .clone()
            .expect("flushes come from [batching]");
        let memory = ext.take_memory(server, now);
        for group in memory.chunk_by(|a, b| a.0 == b.0) {
            let ext = self.ext.as_mut().expect("flushes come from [batching]");
            let (attempt, random_bits) = ext.flush_update(server, group, &batching.hold);
            let batch = self.keep_batch(group.iter().map(|&(_, at)| at));
            match self.send_attempt(attempt, random_bits) {
                Some(id) => self.jobs[id as usize].link = batch,
                None => self.free_batches.push(batch),
            }
        }
        let ext = self.ext.as_mut().expect("flushes come from [batching]");
        ext.return_memory(server, memory);
        let next = now.saturating_add(batching.flush);
        if next < self.config.horizon {
            self.sends.schedule(next, Step::BatchFlush(server));
        }
    }

    /// Stores the like times of one flush until it commits; returns their entry.
    fn keep_batch(&mut self, times: impl Iterator<Item = SimTime>) -> u32 {
        let index = self.free_batches.pop().unwrap_or_else(|| {
            self.batches.push(Vec::new());
            (self.batches.len() - 1) as u32
        });
        let batch = &mut self.batches[index as usize];
        batch.clear();
        batch.extend(times);
        index
    }

    /// A flush committed now: each like it carried has its delay, if it committed in time.
    pub(super) fn flush_committed(&mut self, batch: u32) {
        let now = self.now;
        if now <= self.config.horizon
            && let Some(ext) = self.ext.as_mut()
        {
            for &at in &self.batches[batch as usize] {
                ext.delays.record(now - at);
            }
        }
        self.free_batches.push(batch);
    }

    /// The first `servers` batching servers lose what they hold.
    pub(super) fn crash(&mut self, servers: u32) {
        if let Some(ext) = self.ext.as_mut() {
            ext.crash(self.now, servers);
        }
    }

    /// A neighbour endpoint's request: it waits only for a connection.
    fn neighbour_request(&mut self, arrival: &Arrival) {
        let job = Job {
            link: u32::from(arrival.endpoint - 1),
            ..Job::new(*arrival, Kind::Neighbour)
        };
        let id = self.allocate(job);
        self.connect_then(id);
    }

    /// A neighbour's request got its connection now: it holds it for its hold.
    pub(super) fn neighbour_connected(&mut self, id: u32) {
        let job = self.jobs[id as usize];
        if job.arrival.at >= self.config.measure_from
            && let Some(ext) = self.ext.as_mut()
        {
            ext.neighbour_waits[job.link as usize].record(self.now - job.arrival.at);
        }
        self.jobs[id as usize].stage = Stage::Holding;
        self.calendar.schedule(
            self.now.saturating_add(job.arrival.hold),
            Step::ConnectionEnd(id),
        );
    }

    /// A neighbour's request is done: its connection goes to the next in line.
    pub(super) fn connection_end(&mut self, id: u32) {
        self.free(id);
        self.release_connection();
    }

    /// A read of `key`'s count: summed from its rows (a snapshot, or with every row locked),
    /// or from a cached total rebuilt from the rows once it is older than the cache time.
    fn read(&mut self, key: u32) {
        let now = self.now;
        let measured = now >= self.config.measure_from;
        let ext = self.ext.as_mut().expect("reads come from [reads]");
        let reads = ext.features.reads.expect("reads come from [reads]");
        let true_count = self.locks.total(key);
        if let Some((built, value)) = ext.cached_total(key, now, measured) {
            ext.record_read(true_count - value, now - built, measured);
            return;
        }
        let rows = match self.locks.rows_of(key) {
            0 => self.config.adaptive.map_or(self.config.shards, |a| a.start),
            n => n,
        };
        if measured {
            ext.rows_touched += u64::from(rows);
        }
        if reads.lock && self.locks.rows_of(key) > 0 {
            self.lock_rows(key);
            return;
        }
        if reads.lock && measured {
            ext.lock_waits.record(0);
        }
        if reads.mode == ReadMode::Cached {
            ext.read_cache.insert(key, (now, true_count));
        }
        ext.record_read(0, 0, measured);
    }

    /// A locking read asks for every row of `key` at once (one part per row, all queued now,
    /// so writers arriving later wait behind it).
    fn lock_rows(&mut self, key: u32) {
        let arrival = Arrival {
            key,
            endpoint: READ_ENDPOINT,
            ..Arrival::machine_work(self.now)
        };
        let block = self
            .locks
            .block_of(key)
            .expect("a locking read's key has rows");
        let rows = self.locks.rows_of(key);
        let read = self.allocate(Job {
            amount: u64::from(rows),
            ..Job::new(arrival, Kind::Read)
        });
        let earliest_free = self.config.policy == Policy::EarliestFree;
        let mut previous = read;
        for slot in 0..rows {
            let part = self.allocate(Job {
                link: read,
                stage: Stage::Queued,
                ..Job::new(arrival, Kind::ReadPart)
            });
            // The read keeps its first part in `link`, each part the next in `sibling`.
            if previous == read {
                self.jobs[read as usize].link = part;
            } else {
                self.jobs[previous as usize].sibling = part;
            }
            previous = part;
            let request = if earliest_free {
                self.locks.request(key, 0, 0, part, &mut self.links)
            } else {
                let row = self.locks.row_of_slot(block, slot);
                self.locks.request_row(row, part, &mut self.links)
            };
            match request {
                Request::Granted(row) => self.part_granted(part, row),
                Request::Queued(row) => self.jobs[part as usize].row = row,
            }
        }
    }

    /// A locking read's part took `row` now; with the last one the read sums the rows.
    pub(super) fn part_granted(&mut self, part: u32, row: u32) {
        let now = self.now;
        let job = &mut self.jobs[part as usize];
        job.row = row;
        job.granted_at = now;
        job.stage = Stage::Holding;
        let read = job.link;
        let parent = &mut self.jobs[read as usize];
        parent.amount -= 1;
        if parent.amount > 0 {
            return;
        }
        let parent = *parent;
        let measured = parent.arrival.at >= self.config.measure_from;
        let shown = self.locks.total(parent.arrival.key);
        let ext = self.ext.as_mut().expect("reads come from [reads]");
        let reads = ext.features.reads.expect("reads come from [reads]");
        if measured {
            ext.lock_waits.record(now - parent.arrival.at);
        }
        if reads.mode == ReadMode::Cached {
            ext.read_cache.insert(parent.arrival.key, (now, shown));
        }
        ext.record_read(0, 0, measured);
        self.calendar
            .schedule(now.saturating_add(reads.lock_hold), Step::ReadEnd(read));
    }

    /// A locking read is done: each of its rows goes to the next job waiting for it.
    pub(super) fn read_end(&mut self, read: u32) {
        let mut part = self.jobs[read as usize].link;
        self.free(read);
        while part != NONE {
            let job = self.jobs[part as usize];
            self.free(part);
            self.release_row(job.row, job.granted_at);
            part = job.sibling;
        }
    }
}

impl Job {
    /// Whether a client waits for this job's answer (a like or a plain update; not a flush).
    pub(super) fn client_waits(&self) -> bool {
        self.kind == Kind::Update && self.link == NONE
    }
}

/// The attempt a job carries.
fn attempt_of(job: &Job) -> Attempt {
    Attempt {
        key: job.arrival.key,
        user: job.arrival.user,
        hold: job.arrival.hold,
        amount: job.amount,
        retry: job.retry,
        executed_before: job.executed_before,
        is_like: job.is_like,
        stored: job.repeat,
        client: job.client,
    }
}
