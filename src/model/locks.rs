//! The row locks of the event-driven pipeline: each key's rows grant, queue and release jobs
//! on the calendar, because a job's hold is known only when it commits.
//!
//! `earliest-free` keeps one first-come-first-served queue per key in front of its rows: a job
//! takes the idle row that was released earliest (lowest index on ties) or waits for the next
//! release. When every hold is known at its grant this is exactly the exact core's choice (the
//! row free earliest) — but for one label: when rows of a key are released at the same
//! instant with updates waiting, they go to the waiters in the order they were released,
//! where the closed form gives the first waiter the lower index (the same starts and figures;
//! only `events.csv`'s slot can differ). The fixed policies (random, round-robin, hash-user)
//! pick the row when the job is sent, and the job waits in that row's own queue.
//!
//! The policies that look at the rows decide from what the database knows when the request
//! reaches it, not from future free times: `power-of-two` draws two rows and asks for the one
//! with the shorter queue (its holder and its waiters; the first drawn on ties), and
//! `skip-locked` tries rows one at a time ([`LockTable::skip_locked_row`],
//! [`LockTable::try_row`]) — the pipeline spaces the tries by their cost.
//!
//! Under `[hold] grant_order = "random"` a released row goes to a waiter drawn uniformly from
//! those waiting instead of the first: PostgreSQL wakes a row's waiters at each commit and
//! they race for the new row version, so its lock is not first come, first served.

use super::machine::GrantOrder;
use super::random::{SimRng, Stream, stream_rng};
use super::resources::{Bag, Fifo, Links, NONE};
use super::rows::{KeyIndex, Policy, bounded_u32, pick_slot, stride_prime_to};
use crate::time::SimTime;

/// What a lock request got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// The job holds this row (a global row number) from now.
    Granted(u32),
    /// The job waits for this row, or for any row of its key ([`NONE`], earliest-free).
    Queued(u32),
}

/// The job that takes a released row, and how many still wait for the same row (or, for
/// earliest-free, for the key's rows) when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handover {
    /// The job now holding the row.
    pub(crate) job: u32,
    /// The updates still waiting.
    pub(crate) waiters: u32,
    /// The row.
    pub(crate) row: u32,
}

/// One key's rows: `first` rows from `offset`, then the extents its growths added.
#[derive(Debug, Clone, Copy)]
struct KeyLocks {
    offset: u32,
    first: u32,
    len: u32,
    /// The first extent beyond the first rows, or [`NONE`].
    more: u32,
    cursor: u32,
    /// Earliest-free: the jobs waiting for any of its rows.
    waiting: Fifo,
    /// Earliest-free: idle rows by (release time, index), linked through `RowLock::idle_next`.
    idle_head: u32,
    idle_tail: u32,
    /// Jobs waiting for any of its rows, or for one of them.
    waiters: u32,
}

/// Rows a growth added to a key, at the end of the table.
#[derive(Debug, Clone, Copy)]
struct Extent {
    offset: u32,
    len: u32,
    next: u32,
}

/// One row.
#[derive(Debug, Clone, Copy)]
struct RowLock {
    block: u32,
    slot: u32,
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

/// A line of waiting jobs: a key's (earliest-free) or one row's.
#[derive(Debug, Clone, Copy)]
enum Line {
    Key(usize),
    Row(u32),
}

/// The waiting lines in random order, beside the first-come-first-served ones it replaces.
#[derive(Debug, Clone)]
struct RandomGrants {
    /// By key block, under earliest-free (its jobs wait for any row of their key).
    keys: Vec<Bag>,
    /// By row, under the other policies (a job, or a locking read's part, waits for its row).
    rows: Vec<Bag>,
    /// One draw per handover with at least two waiters.
    draws: SimRng,
}

/// Every key's row locks, in flat vectors; a key's rows are created on its first request.
#[derive(Debug, Clone)]
pub struct LockTable {
    shards: u32,
    policy: Policy,
    block_of_key: KeyIndex,
    keys: Vec<KeyLocks>,
    rows: Vec<RowLock>,
    extents: Vec<Extent>,
    max_key_rows: u32,
    /// `Some` when released rows go to a random waiter.
    random: Option<Box<RandomGrants>>,
    /// Whether each key counts its waiters ([`LockTable::count_key_waiters`]).
    counts_waiters: bool,
}

impl LockTable {
    /// No key yet; each will have `shards ≥ 1` rows chosen by `policy`, handed to waiters in
    /// `order` (random draws from `seed`'s own stream).
    pub fn new(shards: u32, policy: Policy, key_hint: usize, order: GrantOrder, seed: u64) -> Self {
        assert!(shards >= 1, "a key needs at least one row");
        LockTable {
            shards,
            policy,
            block_of_key: KeyIndex::new(key_hint),
            keys: Vec::new(),
            rows: Vec::new(),
            extents: Vec::new(),
            max_key_rows: 0,
            counts_waiters: false,
            random: (order == GrantOrder::Random).then(|| {
                Box::new(RandomGrants {
                    keys: Vec::new(),
                    rows: Vec::new(),
                    draws: stream_rng(seed, Stream::Grants),
                })
            }),
        }
    }

    /// Gives every key (earliest-free) or row (the other policies) created since the last
    /// call its random-order line.
    fn extend_random_lines(&mut self) {
        if let Some(random) = self.random.as_mut() {
            if self.policy == Policy::EarliestFree {
                random.keys.resize(self.keys.len(), Bag::default());
            } else {
                random.rows.resize(self.rows.len(), Bag::default());
            }
        }
    }

    /// Counts, from now on, the jobs waiting for each key's rows (for
    /// [`LockTable::waiting_for_other_rows`]); off by default, so that queueing costs nothing
    /// more where nobody reads the count. Call it before the first request.
    pub fn count_key_waiters(&mut self) {
        self.counts_waiters = true;
    }

    /// Counts a job joining (`joins`) or leaving `line` among its key's waiters, when they
    /// are counted.
    #[inline]
    fn count_waiter(&mut self, line: Line, joins: bool) {
        if self.counts_waiters {
            let block = self.block_of_line(line);
            let waiters = &mut self.keys[block].waiters;
            if joins {
                *waiters += 1;
            } else {
                *waiters -= 1;
            }
        }
    }

    /// The key block a line belongs to.
    #[inline]
    fn block_of_line(&self, line: Line) -> usize {
        match line {
            Line::Key(block) => block,
            Line::Row(row) => self.rows[row as usize].block as usize,
        }
    }

    /// `job` joins `line`.
    #[inline]
    fn push_waiter(&mut self, line: Line, job: u32, links: &mut Links) {
        self.count_waiter(line, true);
        match (self.random.as_mut(), line) {
            (Some(random), Line::Key(block)) => random.keys[block].push(job, links),
            (Some(random), Line::Row(row)) => random.rows[row as usize].push(job, links),
            (None, Line::Key(block)) => self.keys[block].waiting.push(job, links),
            (None, Line::Row(row)) => self.rows[row as usize].waiting.push(job, links),
        }
    }

    /// The job of `line` served next (its first, or a random one), and how many still wait.
    #[inline]
    fn pop_waiter(&mut self, line: Line, links: &mut Links) -> Option<(u32, u32)> {
        let popped = self.pop_from_line(line, links);
        if popped.is_some() {
            self.count_waiter(line, false);
        }
        popped
    }

    /// [`LockTable::pop_waiter`]'s draw from the line itself.
    #[inline]
    fn pop_from_line(&mut self, line: Line, links: &mut Links) -> Option<(u32, u32)> {
        match self.random.as_mut() {
            Some(random) => {
                let bag = match line {
                    Line::Key(block) => &mut random.keys[block],
                    Line::Row(row) => &mut random.rows[row as usize],
                };
                let bits = if bag.len() > 1 {
                    rand::Rng::next_u64(&mut random.draws)
                } else {
                    0
                };
                bag.take(bits, links).map(|job| (job, bag.len()))
            }
            None => {
                let fifo = match line {
                    Line::Key(block) => &mut self.keys[block].waiting,
                    Line::Row(row) => &mut self.rows[row as usize].waiting,
                };
                fifo.pop(links).map(|job| (job, fifo.len()))
            }
        }
    }

    /// `job`, in `line`, leaves it.
    fn remove_waiter(&mut self, line: Line, job: u32, links: &mut Links) {
        self.count_waiter(line, false);
        match (self.random.as_mut(), line) {
            (Some(random), Line::Key(block)) => random.keys[block].remove(job, links),
            (Some(random), Line::Row(row)) => random.rows[row as usize].remove(job, links),
            (None, Line::Key(block)) => self.keys[block].waiting.remove(job, links),
            (None, Line::Row(row)) => self.rows[row as usize].waiting.remove(job, links),
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
            slot,
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
            first: len,
            len,
            more: NONE,
            cursor: 0,
            waiting: Fifo::EMPTY,
            idle_head: offset,
            idle_tail: offset + len - 1,
            waiters: 0,
        });
        self.block_of_key.insert(key, block as u32);
        self.max_key_rows = self.max_key_rows.max(len);
        self.extend_random_lines();
        block
    }

    /// The global number of `slot` of the key in `block`.
    pub fn row_of_slot(&self, block: usize, slot: u32) -> u32 {
        let locks = &self.keys[block];
        if slot < locks.first {
            return locks.offset + slot;
        }
        let (mut extent, mut base) = (locks.more, locks.first);
        loop {
            let Extent { offset, len, next } = self.extents[extent as usize];
            if slot < base + len {
                return offset + slot - base;
            }
            (extent, base) = (next, base + len);
        }
    }

    /// Every row of the key in `block`, by slot.
    fn rows_of_block(&self, block: usize) -> impl Iterator<Item = &RowLock> {
        let locks = self.keys[block];
        let first = locks.offset as usize..(locks.offset + locks.first) as usize;
        let extents = std::iter::successors(
            (locks.more != NONE).then(|| self.extents[locks.more as usize]),
            |extent| (extent.next != NONE).then(|| self.extents[extent.next as usize]),
        );
        self.rows[first].iter().chain(
            extents.flat_map(|e| self.rows[e.offset as usize..(e.offset + e.len) as usize].iter()),
        )
    }

    /// Gives `key` `rows` rows (adaptive growth; no change if it has as many): the new rows
    /// start idle at zero, as if released at time 0, and under earliest-free go to the jobs
    /// already waiting, which are appended to `handovers`.
    pub fn grow(&mut self, key: u32, rows: u32, links: &mut Links, handovers: &mut Vec<Handover>) {
        let block = self.block_for(key);
        let KeyLocks { len, .. } = self.keys[block];
        if rows <= len {
            return;
        }
        let offset = u32::try_from(self.rows.len()).expect("fewer than 2^32 rows");
        let added = rows - len;
        self.rows.extend((0..added).map(|i| RowLock {
            block: block as u32,
            slot: len + i,
            busy: false,
            released_at: 0,
            waiting: Fifo::EMPTY,
            idle_prev: NONE,
            idle_next: NONE,
            count: 0,
            busy_ns: 0,
        }));
        let extent = u32::try_from(self.extents.len()).expect("fewer than 2^32 extents");
        self.extents.push(Extent {
            offset,
            len: added,
            next: NONE,
        });
        match self.keys[block].more {
            NONE => self.keys[block].more = extent,
            mut last => {
                while self.extents[last as usize].next != NONE {
                    last = self.extents[last as usize].next;
                }
                self.extents[last as usize].next = extent;
            }
        }
        self.keys[block].len = rows;
        self.max_key_rows = self.max_key_rows.max(rows);
        self.extend_random_lines();
        if self.policy != Policy::EarliestFree {
            return;
        }
        for row in offset..offset + added {
            match self.pop_waiter(Line::Key(block), links) {
                Some((job, waiters)) => {
                    self.rows[row as usize].busy = true;
                    handovers.push(Handover { job, waiters, row });
                }
                None => self.insert_idle(block, row),
            }
        }
    }

    /// Chooses `job`'s row of `key` now, before it asks for it (it waits for a connection
    /// first): the row under the fixed policies, as the application picks it when it sends;
    /// [`NONE`] under the policies that look at the rows (earliest-free, power-of-two,
    /// skip-locked), which decide when the request reaches them. Creates the key's rows on
    /// its first use.
    pub fn choose(&mut self, key: u32, random_bits: u64, user: u64) -> u32 {
        let block = self.block_for(key);
        if self.decides_at_the_rows() {
            return NONE;
        }
        let locks = &mut self.keys[block];
        let slot = pick_slot(self.policy, locks.len, &mut locks.cursor, random_bits, user);
        self.row_of_slot(block, slot)
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
        links: &mut Links,
    ) -> Request {
        let block = self.block_for(key);
        let locks = &mut self.keys[block];
        if self.policy == Policy::EarliestFree {
            let row = locks.idle_head;
            if row == NONE {
                self.push_waiter(Line::Key(block), job, links);
                return Request::Queued(NONE);
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
        let slot = match self.policy {
            Policy::PowerOfTwo => self.shorter_queue_of_two(block, random_bits),
            Policy::SkipLocked => unreachable!("skip-locked tries its rows one by one"),
            policy => pick_slot(policy, locks.len, &mut locks.cursor, random_bits, user),
        };
        let row = self.row_of_slot(block, slot);
        self.request_row(row, job, links)
    }

    /// Whether the policy chooses a row when the request reaches the rows, from their state
    /// then, rather than when the application sends it.
    pub fn decides_at_the_rows(&self) -> bool {
        matches!(
            self.policy,
            Policy::EarliestFree | Policy::PowerOfTwo | Policy::SkipLocked
        )
    }

    /// Power-of-two: two slots drawn uniformly from the halves of `random_bits` (with
    /// replacement, as in the exact core); the one whose row has fewer jobs on it (holder and
    /// waiters), the first drawn on ties.
    fn shorter_queue_of_two(&self, block: usize, random_bits: u64) -> u32 {
        let len = u64::from(self.keys[block].len);
        let first = bounded_u32(random_bits as u32, len) as u32;
        let second = bounded_u32((random_bits >> 32) as u32, len) as u32;
        let on = |slot| self.jobs_on(self.row_of_slot(block, slot));
        if on(second) < on(first) {
            second
        } else {
            first
        }
    }

    /// The jobs on `row`: its holder, if any, and those waiting for it.
    fn jobs_on(&self, row: u32) -> u32 {
        let lock = &self.rows[row as usize];
        let waiting = match self.random.as_ref() {
            Some(random) => random.rows[row as usize].len(),
            None => lock.waiting.len(),
        };
        u32::from(lock.busy) + waiting
    }

    /// Skip-locked: the row of `key` for try number `try_index` (from 0) of an update with
    /// `random_bits` — rows in a random order without repeats (a random start, then a random
    /// stride prime to the row count), as in the exact core — and how many tries the update
    /// makes before it waits for the last row tried (`tries`, at most the key's rows).
    pub fn skip_locked_row(
        &mut self,
        key: u32,
        random_bits: u64,
        try_index: u32,
        tries: u32,
    ) -> (u32, u32) {
        let block = self.block_for(key);
        let len = u64::from(self.keys[block].len);
        let start = bounded_u32(random_bits as u32, len);
        let stride = stride_prime_to(bounded_u32((random_bits >> 32) as u32, len), len);
        let slot = (start + u64::from(try_index) * stride) % len;
        let allowed = u64::from(tries).clamp(1, len.max(1)) as u32;
        (self.row_of_slot(block, slot as u32), allowed)
    }

    /// Takes `row` now if nobody holds it (a skip-locked try); `false` leaves it alone.
    pub fn try_row(&mut self, row: u32) -> bool {
        let lock = &mut self.rows[row as usize];
        if lock.busy {
            return false;
        }
        lock.busy = true;
        true
    }

    /// `job` asks for `row` itself (a locking read's part, under a policy other than
    /// earliest-free).
    #[inline]
    pub fn request_row(&mut self, row: u32, job: u32, links: &mut Links) -> Request {
        let lock = &mut self.rows[row as usize];
        if lock.busy {
            self.push_waiter(Line::Row(row), job, links);
            Request::Queued(row)
        } else {
            lock.busy = true;
            Request::Granted(row)
        }
    }

    /// `job`, waiting for a row of `key` (`queued` as [`Request::Queued`] said), gives up.
    pub fn withdraw(&mut self, key: u32, queued: u32, job: u32, links: &mut Links) {
        let line = if queued == NONE {
            Line::Key(self.block_of(key).expect("a waiting job's key has rows"))
        } else {
            Line::Row(queued)
        };
        self.remove_waiter(line, job, links);
    }

    /// The holder of `row` committed at `now`: the row goes to the first job waiting for it
    /// (a random one in random grant order), or becomes idle.
    #[inline]
    pub fn release(&mut self, row: u32, now: SimTime, links: &mut Links) -> Option<Handover> {
        let block = self.rows[row as usize].block as usize;
        let line = if self.policy == Policy::EarliestFree {
            Line::Key(block)
        } else {
            Line::Row(row)
        };
        if let Some((job, waiters)) = self.pop_waiter(line, links) {
            return Some(Handover { job, waiters, row });
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

    /// Adds `amount` to `row`'s count.
    #[inline]
    pub fn add(&mut self, row: u32, amount: u64) {
        self.rows[row as usize].count += amount;
    }

    /// Adds to the time `row` was held in the measured period.
    #[inline]
    pub fn add_busy(&mut self, row: u32, ns: u64) {
        self.rows[row as usize].busy_ns += ns;
    }

    /// The longest time any row of `key` was held in the measured period.
    pub fn busiest_row_ns(&self, key: u32) -> u64 {
        self.block_of(key).map_or(0, |block| {
            self.rows_of_block(block)
                .map(|row| row.busy_ns)
                .max()
                .unwrap_or(0)
        })
    }

    /// Jobs waiting for a row of `row`'s key other than `row` itself, given the `waiters`
    /// still in `row`'s own line (counted once [`LockTable::count_key_waiters`] is on).
    #[inline]
    pub fn waiting_for_other_rows(&self, row: u32, waiters: u32) -> u32 {
        debug_assert!(self.counts_waiters, "the waiters are counted");
        if self.policy == Policy::EarliestFree {
            return 0;
        }
        let block = self.rows[row as usize].block as usize;
        self.keys[block].waiters - waiters
    }

    /// `row`'s index within its key.
    #[inline]
    pub fn slot_of(&self, row: u32) -> u32 {
        self.rows[row as usize].slot
    }

    /// The key's total: the sum of its rows (0 for a key never incremented).
    pub fn total(&self, key: u32) -> u64 {
        self.block_of(key).map_or(0, |block| {
            self.rows_of_block(block).map(|row| row.count).sum()
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
        self.max_key_rows
    }

    /// The rows' counts over all keys.
    pub fn grand_total(&self) -> u64 {
        self.rows.iter().map(|row| row.count).sum()
    }

    /// Keys that have rows.
    pub fn keys_touched(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests;
