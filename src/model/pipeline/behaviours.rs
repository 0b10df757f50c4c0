//! The clients' behaviours on the pipeline, where they meet: an open arrival goes to its
//! behaviour (a read, a neighbour's request, a like for a batching server, or a like's first
//! attempt), and a granted update feeds the figures they keep — the amount it adds, its key's
//! waits, adaptive growth, the pool's connection waits. Their state and figures are the exact
//! core's (`Extension`); each behaviour's own events are handled in its own module
//! (`clients`, `batching`, `neighbours`, `reads`).

use super::super::clients::{Attempt, READ_ENDPOINT};
use super::super::engine::{Arrival, Observer};
use super::super::resources::NONE;
use super::{Job, Kind, Pipeline};
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
}

impl Job {
    /// Whether a client waits for this job's answer (a like or a plain update; not a flush).
    pub(super) fn client_waits(&self) -> bool {
        self.kind == Kind::Update && self.link == NONE
    }
}

/// The attempt a job carries.
pub(super) fn attempt_of(job: &Job) -> Attempt {
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
