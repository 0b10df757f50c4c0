//! The likes table on the pipeline (`[likes_table]`, see [`super::super::likes`]): a like
//! takes its partition's insert path before its counter row. Separate transactions release
//! the partition when the insert ends; a shared one holds it until the row's commit.

use super::super::engine::Observer;
use super::super::likes::LikesRun;
use super::{Job, Kind, Pipeline, Stage, Step};
use crate::time::SimTime;

/// The likes table's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LikesEvent {
    /// The job's insert into the likes table ends.
    InsertEnd(u32),
    /// A reconciliation pass is due.
    Reconcile,
    /// The recount in progress ends.
    RecountEnd,
}

impl LikesEvent {
    /// Whether the database completes work at this event (a stall puts it off): an insert or
    /// a recount ends; a pass falling due is a timer.
    pub(super) fn completes_work(self) -> bool {
        matches!(self, LikesEvent::InsertEnd(_) | LikesEvent::RecountEnd)
    }
}

impl<O: Observer> Pipeline<O> {
    /// Handles one of the likes table's events.
    #[inline]
    pub(super) fn on_likes(&mut self, event: LikesEvent) {
        match event {
            LikesEvent::InsertEnd(job) => self.insert_end(job),
            LikesEvent::Reconcile => self.reconcile(),
            LikesEvent::RecountEnd => self.recount_end(),
        }
    }

    /// Puts one of the likes table's events on the calendar.
    fn schedule_likes(&mut self, at: SimTime, event: LikesEvent) {
        self.calendar.schedule(at, Step::Likes(event));
    }

    /// Whether a new like is a double tap (false without the likes table).
    pub(super) fn draw_repeat(&mut self) -> bool {
        self.likes.as_mut().is_some_and(|likes| likes.draw_repeat())
    }

    /// Whether `job` goes through the likes table (a like or plain update, not a flush).
    fn on_likes_path(&self, job: &Job) -> bool {
        self.likes.is_some() && job.kind == Kind::Update && job.client_waits()
    }

    /// The partition of `job`'s like.
    fn partition_of(&self, job: &Job) -> u32 {
        self.likes.as_ref().map_or(0, |likes| {
            likes.plan().partition(job.arrival.key, job.arrival.user)
        })
    }

    /// The update, connected if there is a pool, takes its next step: the likes table's insert
    /// path, or its row.
    pub(super) fn request_store_or_row(&mut self, id: u32) {
        if self.likes.is_none() || !self.on_likes_path(&self.jobs[id as usize]) {
            self.request_row(id);
            return;
        }
        let partition = self.partition_of(&self.jobs[id as usize]);
        let likes = self.likes.as_mut().expect("on the likes path");
        if likes.request(partition, id, &mut self.links) {
            self.insert_granted(id);
        } else {
            self.jobs[id as usize].stage = Stage::Inserting;
            self.wait_in_backlog(id);
        }
    }

    /// The job has its partition's insert path now: its insert runs.
    fn insert_granted(&mut self, id: u32) {
        let now = self.now;
        let job = &mut self.jobs[id as usize];
        if job.in_backlog {
            job.in_backlog = false;
            self.backlog -= 1;
        }
        job.stage = Stage::InsertHolding;
        let job = *job;
        let asked = if job.connected {
            job.connected_at
        } else {
            job.arrival.at
        };
        let partition = self.partition_of(&job);
        let measured = job.arrival.at >= self.config.measure_from;
        let likes = self.likes.as_mut().expect("on the likes path");
        let hold = likes.take(partition, now, now - asked, measured);
        self.schedule_likes(now.saturating_add(hold), LikesEvent::InsertEnd(id));
    }

    /// The job's partition goes to the next attempt waiting for it.
    fn release_partition(&mut self, job: &Job) {
        let partition = self.partition_of(job);
        let (now, from, to) = (self.now, self.config.measure_from, self.config.horizon);
        let measured =
            |start: u64, end: u64| u128::from(end.min(to).saturating_sub(start.max(from)));
        let likes = self.likes.as_mut().expect("on the likes path");
        if let Some(next) = likes.release(partition, now, measured, &mut self.links) {
            self.insert_granted(next);
        }
    }

    /// The job's insert ends: the primary key rejects a repeat, the app may fail before the
    /// increment, and otherwise the like goes on to its row (keeping the partition when the
    /// two steps share a transaction).
    fn insert_end(&mut self, id: u32) {
        let job = self.jobs[id as usize];
        let likes = self
            .likes
            .as_mut()
            .expect("inserts come from [likes_table]");
        let same_transaction = likes.plan().same_transaction;
        if job.abandoned {
            // Cancelled by its client during the insert (counted then): nothing is stored.
            self.release_partition(&job);
            self.jobs[id as usize].timed_out = true;
            self.answer(id);
            return;
        }
        if job.repeat {
            likes.reject();
            self.release_partition(&job);
            if let Some(ext) = self.ext.as_mut()
                && job.is_like
                && !job.timed_out
            {
                ext.counts.succeeded += 1;
            }
            self.answer(id);
            return;
        }
        if likes.draw_step_failure() {
            likes.crash();
            if !same_transaction {
                // The insert committed; the increment never comes.
                likes.store(job.arrival.key);
                likes.lose(job.arrival.key);
            }
            self.release_partition(&job);
            // The client gets an error, not a count.
            self.jobs[id as usize].timed_out = true;
            self.answer(id);
            return;
        }
        if !same_transaction {
            likes.store(job.arrival.key);
            self.jobs[id as usize].inserted = true;
            self.release_partition(&job);
        }
        self.request_row(id);
    }

    /// A like committed its increment: it is counted (and, in a shared transaction, stored
    /// now, its partition released).
    pub(super) fn likes_commit(&mut self, job: &Job) {
        if !self.on_likes_path(job) {
            return;
        }
        let likes = self.likes.as_mut().expect("on the likes path");
        if !job.inserted {
            likes.store(job.arrival.key);
            likes.count();
            self.release_partition(job);
        } else {
            likes.count();
        }
    }

    /// The client cancelled `job` while it was on the likes path (not yet holding its row);
    /// returns whether its like stays stored (so a retry is a repeat). A waiting insert leaves
    /// its line; a running one is abandoned and leaves at its end; past a separate insert the
    /// stored like is lost to the count; in a shared transaction the partition is released.
    pub(super) fn likes_cancel(&mut self, id: u32) -> bool {
        let job = self.jobs[id as usize];
        let partition = self.partition_of(&job);
        let Some(likes) = self.likes.as_mut() else {
            return false;
        };
        likes.withdrawn();
        match job.stage {
            Stage::Inserting => {
                likes.withdraw(partition, id, &mut self.links);
                false
            }
            Stage::InsertHolding => {
                self.jobs[id as usize].abandoned = true;
                false
            }
            _ if job.inserted => {
                likes.lose(job.arrival.key);
                true
            }
            _ => {
                self.release_partition(&job);
                false
            }
        }
    }

    /// Schedules the first reconciliation pass after `now`.
    pub(super) fn schedule_reconcile(&mut self, now: u64) {
        let Some(every) = self
            .likes
            .as_ref()
            .and_then(|likes| likes.plan().reconcile)
            .map(|r| r.every)
        else {
            return;
        };
        let next = (now / every + 1).saturating_mul(every);
        if next < self.config.horizon {
            self.schedule_likes(next, LikesEvent::Reconcile);
        }
    }

    /// A reconciliation pass is due: it starts unless the last one still runs.
    fn reconcile(&mut self) {
        self.schedule_reconcile(self.now);
        let likes = self.likes.as_mut().expect("passes come from [reconcile]");
        if !likes.pass_running() && likes.start_pass() {
            self.next_recount();
        }
    }

    /// The pass recounts its next post, if it has one left.
    fn next_recount(&mut self) {
        let likes = self.likes.as_mut().expect("recounts come from [reconcile]");
        if let Some(took) = likes.next_recount() {
            self.schedule_likes(self.now.saturating_add(took), LikesEvent::RecountEnd);
        }
    }

    /// A post's recount ends: its count gains the likes it found missing (on its first row, so
    /// reads see them), and the pass goes on.
    fn recount_end(&mut self) {
        let likes = self.likes.as_mut().expect("recounts come from [reconcile]");
        if let Some(recount) = likes.finish_recount()
            && recount.drift > 0
            && let Some(block) = self.locks.block_of(recount.key)
        {
            let row = self.locks.row_of_slot(block, 0);
            self.locks.add(row, recount.drift);
        }
        self.next_recount();
    }

    /// The likes table's figures at the end (none without it): attempts still in the
    /// database are counted from the job slab.
    pub(super) fn likes_figures(&mut self) -> Option<LikesRun> {
        let likes = self.likes.take()?;
        let mut free = vec![false; self.jobs.len()];
        for &id in &self.free_jobs {
            free[id as usize] = true;
        }
        let in_flight = self
            .jobs
            .iter()
            .zip(&free)
            .filter(|&(job, &is_free)| {
                !is_free
                    && !job.abandoned
                    && job.kind == Kind::Update
                    && job.client_waits()
                    && !matches!(job.stage, Stage::Connecting)
            })
            .count() as u64;
        let measured_ns = self.config.horizon - self.config.measure_from;
        Some(likes.finish(in_flight, measured_ns))
    }
}
