//! The row locks of the event-driven pipeline: each key's rows grant, queue and release jobs
//! on the calendar, because a job's hold is known only when it commits.
//!
//! `earliest-free` keeps one first-come-first-served queue per key in front of its rows: a job
//! takes the idle row that was released earliest (lowest index on ties) or waits for the next
//! release. When every hold is known at its grant this is exactly the exact core's choice (the
//! row free earliest) — but for one label: when rows of a key are released at the same
//! instant with updates waiting, they go to the waiters in the order they were released,
//! where the closed form gives the first waiter the lower index (the same starts and figures;
//! only `events.csv`'s slot can differ). The other policies pick the row when the job arrives, and the job waits
//! in that row's own queue.

use super::resources::{Fifo, NONE};
use super::rows::{KeyIndex, Policy, pick_slot};
use super::time::SimTime;

/// What a lock request got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// The job holds this row (a global row number) from now.
    Granted(u32),
    /// The job waits.
    Queued,
}

/// The job that takes a released row, and how many still wait for the same row (or, for
/// earliest-free, for the key's rows) when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handover {
    /// The job now holding the row.
    pub job: u32,
    /// The updates still waiting.
    pub waiters: u32,
}

/// One key's rows.
#[derive(Debug, Clone, Copy)]
struct KeyLocks {
    offset: u32,
    len: u32,
    cursor: u32,
    /// Earliest-free: the jobs waiting for any of its rows.
    waiting: Fifo,
    /// Earliest-free: idle rows by (release time, index), linked through `RowLock::idle_next`.
    idle_head: u32,
    idle_tail: u32,
}

/// One row.
#[derive(Debug, Clone, Copy)]
struct RowLock {
    block: u32,
    busy: bool,
    released_at: SimTime,
    /// Other policies: the jobs waiting for this row.
    waiting: Fifo,
    idle_prev: u32,
    idle_next: u32,
    count: u64,
    /// Time it was held in the measured period.
    busy_ns: u64,
}

/// Every key's row locks, in flat vectors; a key's rows are created on its first request.
#[derive(Debug, Clone)]
pub struct LockTable {
    shards: u32,
    policy: Policy,
    block_of_key: KeyIndex,
    keys: Vec<KeyLocks>,
    rows: Vec<RowLock>,
}

impl LockTable {
    /// No key yet; each will have `shards ≥ 1` rows chosen by `policy`.
    pub fn new(shards: u32, policy: Policy, key_hint: usize) -> Self {
        assert!(shards >= 1, "a key needs at least one row");
        LockTable {
            shards,
            policy,
            block_of_key: KeyIndex::new(key_hint),
            keys: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// The block of `key`, created with every row idle on its first use.
    fn block_for(&mut self, key: u32) -> usize {
        if let Some(block) = self.block_of_key.get(key) {
            return block;
        }
        let block = self.keys.len();
        let offset = u32::try_from(self.rows.len()).expect("fewer than 2^32 rows");
        let len = self.shards;
        self.rows.extend((0..len).map(|slot| RowLock {
            block: block as u32,
            busy: false,
            released_at: 0,
            waiting: Fifo::EMPTY,
            idle_prev: if slot == 0 { NONE } else { offset + slot - 1 },
            idle_next: if slot + 1 == len {
                NONE
            } else {
                offset + slot + 1
            },
            count: 0,
            busy_ns: 0,
        }));
        self.keys.push(KeyLocks {
            offset,
            len,
            cursor: 0,
            waiting: Fifo::EMPTY,
            idle_head: offset,
            idle_tail: offset + len - 1,
        });
        self.block_of_key.insert(key, block as u32);
        block
    }

    /// The key's block, if it has rows.
    pub fn block_of(&self, key: u32) -> Option<usize> {
        self.block_of_key.get(key)
    }

    /// `job` asks for a row of `key`: it gets one now or waits in line.
    #[inline]
    pub fn request(
        &mut self,
        key: u32,
        random_bits: u64,
        user: u64,
        job: u32,
        links: &mut [u32],
    ) -> Request {
        let block = self.block_for(key);
        let locks = &mut self.keys[block];
        if self.policy == Policy::EarliestFree {
            let row = locks.idle_head;
            if row == NONE {
                locks.waiting.push(job, links);
                return Request::Queued;
            }
            locks.idle_head = self.rows[row as usize].idle_next;
            if locks.idle_head == NONE {
                locks.idle_tail = NONE;
            } else {
                self.rows[locks.idle_head as usize].idle_prev = NONE;
            }
            self.rows[row as usize].busy = true;
            return Request::Granted(row);
        }
        let slot = pick_slot(self.policy, locks.len, &mut locks.cursor, random_bits, user);
        let row = locks.offset + slot;
        let lock = &mut self.rows[row as usize];
        if lock.busy {
            lock.waiting.push(job, links);
            Request::Queued
        } else {
            lock.busy = true;
            Request::Granted(row)
        }
    }

    /// The holder of `row` committed at `now`: the row goes to the first job waiting for it,
    /// or becomes idle.
    #[inline]
    pub fn release(&mut self, row: u32, now: SimTime, links: &[u32]) -> Option<Handover> {
        let block = self.rows[row as usize].block as usize;
        let waiting = if self.policy == Policy::EarliestFree {
            &mut self.keys[block].waiting
        } else {
            &mut self.rows[row as usize].waiting
        };
        if let Some(job) = waiting.pop(links) {
            return Some(Handover {
                job,
                waiters: waiting.len(),
            });
        }
        let lock = &mut self.rows[row as usize];
        lock.busy = false;
        lock.released_at = now;
        if self.policy == Policy::EarliestFree {
            self.insert_idle(block, row);
        }
        None
    }

    /// Puts a just-released row into its key's idle list, after the rows released earlier and
    /// those released at the same instant with a lower index.
    fn insert_idle(&mut self, block: usize, row: u32) {
        let released_at = self.rows[row as usize].released_at;
        let mut after = self.keys[block].idle_tail;
        while after != NONE {
            let other = &self.rows[after as usize];
            if other.released_at < released_at || after < row {
                break;
            }
            after = other.idle_prev;
        }
        let next = if after == NONE {
            self.keys[block].idle_head
        } else {
            self.rows[after as usize].idle_next
        };
        self.rows[row as usize].idle_prev = after;
        self.rows[row as usize].idle_next = next;
        if after == NONE {
            self.keys[block].idle_head = row;
        } else {
            self.rows[after as usize].idle_next = row;
        }
        if next == NONE {
            self.keys[block].idle_tail = row;
        } else {
            self.rows[next as usize].idle_prev = row;
        }
    }

    /// Adds one to `row`'s count.
    #[inline]
    pub fn add(&mut self, row: u32) {
        self.rows[row as usize].count += 1;
    }

    /// Adds to the time `row` was held in the measured period.
    #[inline]
    pub fn add_busy(&mut self, row: u32, ns: u64) {
        self.rows[row as usize].busy_ns += ns;
    }

    /// The longest time any row of `key` was held in the measured period.
    pub fn busiest_row_ns(&self, key: u32) -> u64 {
        self.block_of(key).map_or(0, |block| {
            let KeyLocks { offset, len, .. } = self.keys[block];
            self.rows[offset as usize..(offset + len) as usize]
                .iter()
                .map(|row| row.busy_ns)
                .max()
                .unwrap_or(0)
        })
    }

    /// `row`'s index within its key.
    #[inline]
    pub fn slot_of(&self, row: u32) -> u32 {
        let block = self.rows[row as usize].block as usize;
        row - self.keys[block].offset
    }

    /// The key's total: the sum of its rows (0 for a key never incremented).
    pub fn total(&self, key: u32) -> u64 {
        self.block_of(key).map_or(0, |block| {
            let KeyLocks { offset, len, .. } = self.keys[block];
            self.rows[offset as usize..(offset + len) as usize]
                .iter()
                .map(|row| row.count)
                .sum()
        })
    }

    /// Rows `key` has (0 for a key never incremented).
    pub fn rows_of(&self, key: u32) -> u32 {
        self.block_of(key).map_or(0, |block| self.keys[block].len)
    }

    /// Rows over all keys.
    pub fn rows_total(&self) -> u64 {
        self.rows.len() as u64
    }

    /// The most rows any key has.
    pub fn max_key_rows(&self) -> u32 {
        if self.keys.is_empty() { 0 } else { self.shards }
    }

    /// Keys that have rows.
    pub fn keys_touched(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_free_takes_the_row_released_first_then_the_lowest_index() {
        let mut links = vec![NONE; 16];
        let mut locks = LockTable::new(3, Policy::EarliestFree, 1);
        let grants: Vec<Request> = (0..4)
            .map(|job| locks.request(0, 0, 0, job, &mut links))
            .collect();
        assert_eq!(
            grants,
            [
                Request::Granted(0),
                Request::Granted(1),
                Request::Granted(2),
                Request::Queued
            ]
        );
        // Row 2 is released first and goes to the waiting job; then 1 and 0 at the same time.
        assert_eq!(
            locks.release(2, 5, &links),
            Some(Handover { job: 3, waiters: 0 })
        );
        assert_eq!(locks.release(1, 7, &links), None);
        assert_eq!(locks.release(0, 7, &links), None);
        assert_eq!(locks.request(0, 0, 0, 4, &mut links), Request::Granted(0));
        assert_eq!(locks.request(0, 0, 0, 5, &mut links), Request::Granted(1));
        assert_eq!(locks.request(0, 0, 0, 6, &mut links), Request::Queued);
    }

    #[test]
    fn fixed_policies_wait_for_their_own_row() {
        let mut links = vec![NONE; 16];
        let mut locks = LockTable::new(2, Policy::RoundRobin, 1);
        assert_eq!(locks.request(0, 0, 0, 0, &mut links), Request::Granted(0));
        assert_eq!(locks.request(0, 0, 0, 1, &mut links), Request::Granted(1));
        assert_eq!(locks.request(0, 0, 0, 2, &mut links), Request::Queued);
        assert_eq!(locks.request(0, 0, 0, 3, &mut links), Request::Queued);
        // Job 3 waits for row 1, so releasing row 0 hands it to job 2 only.
        assert_eq!(
            locks.release(0, 1, &links),
            Some(Handover { job: 2, waiters: 0 })
        );
        assert_eq!(locks.release(0, 2, &links), None);
        assert_eq!(
            locks.release(1, 3, &links),
            Some(Handover { job: 3, waiters: 0 })
        );
        assert_eq!(locks.rows_of(0), 2);
        assert_eq!(locks.rows_of(9), 0);
    }
}
