//! Reads of a key's count (`[reads]`): summed from its rows — as a snapshot, or with every row
//! locked at once so that writers queue behind the read — or served from a cached total
//! rebuilt once it is older than the cache time.

use super::super::clients::{READ_ENDPOINT, ReadMode};
use super::super::engine::{Arrival, Observer};
use super::super::resources::NONE;
use super::super::rows::Policy;
use super::{Job, Kind, Pipeline, Request, Stage, Step};

/// The locking reads' events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReadEvent {
    /// The locking read (this job) is done with its rows.
    Done(u32),
}

impl<O: Observer> Pipeline<O> {
    /// Handles one of the locking reads' events.
    #[inline]
    pub(super) fn on_read(&mut self, event: ReadEvent) {
        match event {
            ReadEvent::Done(read) => self.read_end(read),
        }
    }

    /// A read of `key`'s count: summed from its rows (a snapshot, or with every row locked),
    /// or from a cached total rebuilt from the rows once it is older than the cache time.
    pub(super) fn read(&mut self, key: u32) {
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
        let end = now.saturating_add(reads.lock_hold);
        self.calendar
            .schedule(end, Step::Read(ReadEvent::Done(read)));
    }

    /// A locking read is done: each of its rows goes to the next job waiting for it.
    fn read_end(&mut self, read: u32) {
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
