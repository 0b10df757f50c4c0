//! Write batching (`[batching]`): application servers keep the likes they receive and send one
//! `+k` update per key every flush; a crash loses what a server holds. A flush's update carries
//! the times of the likes it counts, so each like's delay is known when it commits.

use super::super::engine::Observer;
use super::{Pipeline, Step};
use crate::time::SimTime;

/// The batching servers' events (on the clients' calendar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BatchingEvent {
    /// This batching server flushes its counts.
    Flush(u32),
    /// The first this-many batching servers crash.
    Crash(u32),
}

impl<O: Observer> Pipeline<O> {
    /// Handles one of the batching servers' events.
    #[inline]
    pub(super) fn on_batching(&mut self, event: BatchingEvent) {
        match event {
            BatchingEvent::Flush(server) => self.batch_flush(server),
            BatchingEvent::Crash(servers) => self.crash(servers),
        }
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
                self.sends
                    .schedule(first, Step::Batching(BatchingEvent::Flush(server)));
            }
        }
        for crash in batching.crashes.iter().filter(|c| c.at < horizon) {
            self.sends.schedule(
                crash.at,
                Step::Batching(BatchingEvent::Crash(crash.servers)),
            );
        }
    }

    /// A server sends one `+k` update per key it holds, and schedules its next flush.
    fn batch_flush(&mut self, server: u32) {
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
            self.sends
                .schedule(next, Step::Batching(BatchingEvent::Flush(server)));
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
    fn crash(&mut self, servers: u32) {
        if let Some(ext) = self.ext.as_mut() {
            ext.crash(self.now, servers);
        }
    }
}
