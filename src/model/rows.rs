//! Each key's shard rows and the policies that choose one for an increment.
//!
//! A row is locked from the start of an update until its hold ends; an update that finds its
//! row busy starts when the row becomes free (`start = max(now, free_at)`), so every row serves
//! its updates first come, first served. Keys never share rows.

use std::fmt;
use std::str::FromStr;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::heaps::RowHeaps;
use crate::time::SimTime;

/// How an increment chooses one of its key's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// The row that becomes free earliest, lowest index on ties: the exact model. With FIFO
    /// arrivals this is one queue in front of `shards` servers (M/G/c).
    #[default]
    EarliestFree,
    /// A uniformly random row, as in the seeds' `random.randrange(N)`: `shards` independent
    /// queues, each offered `1/shards` of the load.
    Random,
    /// Rows in turn, per key: 0, 1, …, N−1, 0, …
    RoundRobin,
    /// Row = hash(user id) mod N, so one user's like and unlike land on the same row.
    HashUser,
    /// Two uniformly random rows (with replacement); the update takes the one that becomes
    /// free earlier, the first drawn on ties: an application that knows which rows are busy.
    PowerOfTwo,
    /// `FOR UPDATE SKIP LOCKED`: try rows in a random order without waiting, taking the first
    /// free one; each failed try costs [`SkipLocked::try_ns`]; after [`SkipLocked::tries`]
    /// failures, wait for the last row tried.
    SkipLocked,
}

/// The settings of the `skip-locked` policy (`[skip_locked]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkipLocked {
    /// Rows tried without waiting before the update waits for the last one (≥ 1).
    pub tries: u32,
    /// What one failed try costs the update, ns.
    pub try_ns: SimTime,
}

impl Default for SkipLocked {
    fn default() -> Self {
        SkipLocked {
            tries: 3,
            try_ns: 0,
        }
    }
}

impl Policy {
    /// Every policy, in documentation order.
    pub const ALL: [Policy; 6] = [
        Policy::EarliestFree,
        Policy::Random,
        Policy::RoundRobin,
        Policy::HashUser,
        Policy::PowerOfTwo,
        Policy::SkipLocked,
    ];

    /// The policy's name in scenarios and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Policy::EarliestFree => "earliest-free",
            Policy::Random => "random",
            Policy::RoundRobin => "round-robin",
            Policy::HashUser => "hash-user",
            Policy::PowerOfTwo => "power-of-two",
            Policy::SkipLocked => "skip-locked",
        }
    }

    /// Whether the policy draws uniform random bits per update.
    pub fn needs_random_bits(self) -> bool {
        matches!(
            self,
            Policy::Random | Policy::PowerOfTwo | Policy::SkipLocked
        )
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Policy::ALL
            .into_iter()
            .find(|policy| policy.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
                format!("unknown policy {s:?}: allowed are {}", names.join(", "))
            })
    }
}

/// Which per-arrival draws the policy needs (others are skipped to save time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrawNeeds {
    /// Draw uniform bits for the `random` policy.
    pub(crate) slot_bits: bool,
    /// Draw a synthetic user for `hash-user`.
    pub(crate) users: bool,
}

impl DrawNeeds {
    /// What `policy` needs.
    pub fn for_policy(policy: Policy) -> Self {
        DrawNeeds {
            slot_bits: policy.needs_random_bits(),
            users: policy == Policy::HashUser,
        }
    }

    /// What any of `policies` needs (each policy's draws come from their own stream, so a
    /// policy sees the same draws run alone or beside others).
    pub fn for_policies(policies: &[Policy]) -> Self {
        DrawNeeds {
            slot_bits: policies.iter().any(|p| p.needs_random_bits()),
            users: policies.contains(&Policy::HashUser),
        }
    }
}

/// The row a fixed-choice policy (every policy but earliest-free) gives an update of a key
/// with `len` rows: uniform from `random_bits`, the key's round-robin `cursor` (advanced), or
/// the user's hash.
#[inline(always)]
pub(super) fn pick_slot(
    policy: Policy,
    len: u32,
    cursor: &mut u32,
    random_bits: u64,
    user: u64,
) -> u32 {
    match policy {
        Policy::Random => ((u128::from(random_bits) * u128::from(len)) >> 64) as u32,
        Policy::RoundRobin => {
            let slot = *cursor;
            *cursor = if slot + 1 >= len { 0 } else { slot + 1 };
            slot
        }
        Policy::HashUser => (mix64(user) % u64::from(len)) as u32,
        Policy::EarliestFree | Policy::PowerOfTwo | Policy::SkipLocked => {
            unreachable!("{policy} chooses by the rows' locks")
        }
    }
}

/// The row an increment took and when its hold starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Index of the row within its key, `0..shards`.
    pub slot: u32,
    /// When the update takes the row lock (`≥` the arrival time).
    pub start: SimTime,
    /// Rows it tried (`skip-locked`; 1 under every other policy).
    pub(crate) tries: u32,
}

/// The row a policy picked for an update of one key, before the update takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    base: usize,
    len: u32,
    /// The row's index within its key.
    pub(crate) slot: u32,
    /// The earliest the update can take the row: when the row becomes free, or later when
    /// its failed tries (`skip-locked`) took longer.
    pub(crate) free_at: SimTime,
    /// Rows tried (`skip-locked`; 1 under every other policy).
    pub(crate) tries: u32,
}

const NO_BLOCK: u32 = u32::MAX;

/// Key spaces up to this size index their keys with a flat vector (4 bytes a key, fastest);
/// larger ones with a hash map, so memory follows the keys actually touched.
const DENSE_KEYS: usize = 1 << 20;

/// Dense key id → block number.
#[derive(Debug, Clone)]
pub(super) enum KeyIndex {
    /// `NO_BLOCK` for keys not yet touched; grows on demand.
    Dense(Vec<u32>),
    /// Only touched keys.
    Sparse(FxHashMap<u32, u32>),
}

impl KeyIndex {
    pub(super) fn new(key_hint: usize) -> Self {
        if key_hint <= DENSE_KEYS {
            KeyIndex::Dense(vec![NO_BLOCK; key_hint])
        } else {
            KeyIndex::Sparse(FxHashMap::default())
        }
    }

    #[inline]
    pub(super) fn get(&self, key: u32) -> Option<usize> {
        match self {
            KeyIndex::Dense(blocks) => match blocks.get(key as usize) {
                Some(&block) if block != NO_BLOCK => Some(block as usize),
                _ => None,
            },
            KeyIndex::Sparse(blocks) => blocks.get(&key).map(|&block| block as usize),
        }
    }

    pub(super) fn insert(&mut self, key: u32, block: u32) {
        match self {
            KeyIndex::Dense(blocks) => {
                let at = key as usize;
                if at >= blocks.len() {
                    blocks.resize(at + 1, NO_BLOCK);
                }
                blocks[at] = block;
            }
            KeyIndex::Sparse(blocks) => {
                blocks.insert(key, block);
            }
        }
    }
}

/// Where one key's rows live in the flat vectors, and how many it has.
#[derive(Debug, Clone, Copy)]
struct KeyRows {
    /// Index of its first row.
    offset: u32,
    /// Rows in use.
    len: u32,
    /// Rows reserved at `offset`.
    capacity: u32,
    /// Round-robin: the next row to use.
    cursor: u32,
}

/// One key's rows under earliest-free in the packed store, borrowed by the engine's fast path:
/// the min-heap of `free_at << slot_bits | slot` and the rows' counts by index.
pub(super) struct PackedRows<'a> {
    pub(super) heap: &'a mut [u64],
    pub(super) slot_bits: u32,
    pub(super) counts: &'a mut [u64],
}

/// The rows of every key, in flat vectors. A key's rows are created on its first increment,
/// so memory follows the keys actually touched; a key whose row count grows (adaptive
/// sharding) moves its rows to the end of the vectors when it outgrows its place.
#[derive(Debug, Clone)]
pub struct RowTable {
    /// Rows a key starts with.
    shards: u32,
    policy: Policy,
    /// Dense key id → block number (the key's position in first-touch order).
    block_of_key: KeyIndex,
    /// Per block, where its rows are.
    keys: Vec<KeyRows>,
    /// Earliest-free: per key, a binary min-heap of its rows.
    heaps: RowHeaps,
    /// Other policies: each row's free time by index.
    free_at: Vec<SimTime>,
    /// The `skip-locked` policy's settings.
    skip_locked: SkipLocked,
    /// Each row's count by index.
    counts: Vec<u64>,
    /// Rows in use over all keys.
    rows_in_use: u64,
}

impl RowTable {
    /// An empty table whose keys start with `shards` rows (`shards ≥ 1`), expecting about
    /// `key_hint` keys.
    pub fn new(shards: u32, policy: Policy, key_hint: usize) -> Self {
        assert!(shards >= 1, "a key needs at least one row");
        RowTable {
            shards,
            policy,
            block_of_key: KeyIndex::new(key_hint),
            keys: Vec::new(),
            heaps: RowHeaps::new(shards),
            free_at: Vec::new(),
            skip_locked: SkipLocked::default(),
            counts: Vec::new(),
            rows_in_use: 0,
        }
    }

    /// The same table with the `skip-locked` policy's settings.
    pub fn with_skip_locked(mut self, skip_locked: SkipLocked) -> Self {
        self.skip_locked = skip_locked;
        self
    }

    /// Rows a key starts with.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The slot-choice policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Takes a row of `key` for an update arriving at `now` and holding for `hold`, adds one to
    /// that row, and returns the row and the start time. `random_bits` (uniform) drives the
    /// `random` policy and `user` the `hash-user` policy; the others ignore them.
    #[inline(always)]
    pub fn acquire(
        &mut self,
        key: u32,
        now: SimTime,
        hold: SimTime,
        random_bits: u64,
        user: u64,
    ) -> Grant {
        let choice = self.choose(key, now, random_bits, user);
        let start = now.max(choice.free_at);
        self.occupy(choice, start.saturating_add(hold), 1);
        Grant {
            slot: choice.slot,
            start,
            tries: choice.tries,
        }
    }

    /// Picks the row an update of `key` reaching the rows at `now` would take, without taking
    /// it (a round-robin cursor does advance). [`RowTable::occupy`] must follow before any
    /// other choice for the key.
    #[inline(always)]
    pub fn choose(&mut self, key: u32, now: SimTime, random_bits: u64, user: u64) -> Choice {
        let block = self.block_for(key);
        let rows = self.keys[block];
        let base = rows.offset as usize;
        let slot = match self.policy {
            Policy::EarliestFree => {
                let (free_at, slot) = self.heaps.top(base);
                return Choice {
                    base,
                    len: rows.len,
                    slot,
                    free_at,
                    tries: 1,
                };
            }
            Policy::PowerOfTwo => {
                let free_at = &self.free_at[base..base + rows.len as usize];
                power_of_two(free_at, random_bits)
            }
            Policy::SkipLocked => {
                let free_at = &self.free_at[base..base + rows.len as usize];
                let (slot, ready_at, tries) =
                    skip_locked(free_at, now, random_bits, self.skip_locked);
                return Choice {
                    base,
                    len: rows.len,
                    slot,
                    free_at: ready_at.max(free_at[slot as usize]),
                    tries,
                };
            }
            policy => pick_slot(
                policy,
                rows.len,
                &mut self.keys[block].cursor,
                random_bits,
                user,
            ),
        };
        Choice {
            base,
            len: rows.len,
            slot,
            free_at: self.free_at[base + slot as usize],
            tries: 1,
        }
    }

    /// Takes the chosen row until `until` and adds `amount` to it.
    #[inline(always)]
    pub fn occupy(&mut self, choice: Choice, until: SimTime, amount: u64) {
        let index = choice.base + choice.slot as usize;
        match self.policy {
            Policy::EarliestFree => {
                debug_assert_eq!(
                    self.heaps.top(choice.base).1,
                    choice.slot,
                    "occupy follows its choice"
                );
                self.heaps
                    .replace_top(choice.base, choice.len as usize, until, choice.slot);
            }
            _ => self.free_at[index] = until,
        }
        self.counts[index] += amount;
    }

    /// Gives `key` `rows` rows if it has fewer: the new rows start at zero, free at once.
    /// Rows are never taken away.
    pub fn grow(&mut self, key: u32, rows: u32) {
        let block = self.block_for(key);
        let current = self.keys[block];
        if rows <= current.len {
            return;
        }
        if rows > current.capacity {
            self.relocate(block, rows);
        }
        let KeyRows { offset, len, .. } = self.keys[block];
        let base = offset as usize;
        for slot in len..rows {
            match self.policy {
                Policy::EarliestFree => self.heaps.add_row(base, slot),
                _ => self.free_at[base + slot as usize] = 0,
            }
            self.counts[base + slot as usize] = 0;
        }
        self.rows_in_use += u64::from(rows - len);
        self.keys[block].len = rows;
    }

    /// Moves a key's rows to the end of the vectors with room for `capacity` rows.
    fn relocate(&mut self, block: usize, capacity: u32) {
        let KeyRows { offset, len, .. } = self.keys[block];
        let (from, to) = (offset as usize, (offset + len) as usize);
        let new_offset = self.counts.len();
        let extra = capacity as usize;
        self.counts.extend_from_within(from..to);
        self.counts.resize(new_offset + extra, 0);
        match self.policy {
            Policy::EarliestFree => self.heaps.relocate(from..to, extra),
            _ => {
                self.free_at.extend_from_within(from..to);
                self.free_at.resize(new_offset + extra, 0);
            }
        }
        // The old place keeps stale values; nothing reads it again.
        self.keys[block].offset = u32::try_from(new_offset).expect("fewer than 2^32 rows");
        self.keys[block].capacity = capacity;
    }

    /// Earliest-free with the packed store: `key`'s rows (created if new) for the engine's
    /// one-key fast path, or `None` for another policy or the wide store.
    pub(super) fn packed_rows_mut(&mut self, key: u32) -> Option<PackedRows<'_>> {
        if self.policy != Policy::EarliestFree {
            return None;
        }
        let block = self.block_for(key);
        let KeyRows { offset, len, .. } = self.keys[block];
        let (base, len) = (offset as usize, len as usize);
        let (heap, slot_bits) = self.heaps.packed_mut(base, len)?;
        Some(PackedRows {
            heap,
            slot_bits,
            counts: &mut self.counts[base..base + len],
        })
    }

    /// Under `random`, the key's rows' free times and counts, by row (`None` under another
    /// policy), for the exact core's fast loop.
    pub(super) fn random_rows_mut(&mut self, key: u32) -> Option<(&mut [SimTime], &mut [u64])> {
        if self.policy != Policy::Random {
            return None;
        }
        let block = self.block_for(key);
        let KeyRows { offset, len, .. } = self.keys[block];
        let (base, len) = (offset as usize, len as usize);
        Some((
            &mut self.free_at[base..base + len],
            &mut self.counts[base..base + len],
        ))
    }

    /// The key's total: the sum of its rows (0 for a key never incremented).
    pub fn total(&self, key: u32) -> u64 {
        self.block_of(key)
            .map_or(0, |block| self.block_total(block))
    }

    fn block_total(&self, block: usize) -> u64 {
        let KeyRows { offset, len, .. } = self.keys[block];
        self.counts[offset as usize..(offset + len) as usize]
            .iter()
            .sum()
    }

    /// The count held by one row of `key` (0 for a key never incremented or a row it lacks).
    pub fn row_count(&self, key: u32, slot: u32) -> u64 {
        match self.block_of(key) {
            Some(block) if slot < self.keys[block].len => {
                self.counts[self.keys[block].offset as usize + slot as usize]
            }
            _ => 0,
        }
    }

    /// Rows `key` has now (0 for a key never incremented).
    pub fn rows_of(&self, key: u32) -> u32 {
        self.block_of(key).map_or(0, |block| self.keys[block].len)
    }

    /// The sum of every row of every key.
    pub fn grand_total(&self) -> u64 {
        (0..self.keys.len())
            .map(|block| self.block_total(block))
            .sum()
    }

    /// Rows over all keys.
    pub fn rows_total(&self) -> u64 {
        self.rows_in_use
    }

    /// The most rows any key has.
    pub fn max_key_rows(&self) -> u32 {
        self.keys.iter().map(|k| k.len).max().unwrap_or(0)
    }

    /// Keys that have rows (were incremented at least once).
    pub fn keys_touched(&self) -> usize {
        self.keys.len()
    }

    /// The block number of a touched key: its position in first-touch order.
    #[inline]
    pub fn block_of(&self, key: u32) -> Option<usize> {
        self.block_of_key.get(key)
    }

    #[inline]
    fn block_for(&mut self, key: u32) -> usize {
        if let Some(block) = self.block_of(key) {
            return block;
        }
        self.create_block(key)
    }

    #[cold]
    fn create_block(&mut self, key: u32) -> usize {
        let block = self.keys.len();
        self.block_of_key
            .insert(key, u32::try_from(block).expect("fewer than 2^32 keys"));
        let n = self.shards;
        let offset = u32::try_from(self.counts.len()).expect("fewer than 2^32 rows");
        self.keys.push(KeyRows {
            offset,
            len: n,
            capacity: n,
            cursor: 0,
        });
        self.rows_in_use += u64::from(n);
        self.counts.extend(std::iter::repeat_n(0, n as usize));
        match self.policy {
            // Rows all free at 0 in index order already form a valid min-heap.
            Policy::EarliestFree => self.heaps.push_key(n),
            _ => self.free_at.extend(std::iter::repeat_n(0, n as usize)),
        }
        block
    }
}

/// Two rows drawn uniformly from the halves of `random_bits`: the one free earlier, the first
/// drawn on ties.
#[inline]
fn power_of_two(free_at: &[SimTime], random_bits: u64) -> u32 {
    let len = free_at.len() as u64;
    let first = bounded_u32(random_bits as u32, len);
    let second = bounded_u32((random_bits >> 32) as u32, len);
    let chosen = if free_at[second as usize] < free_at[first as usize] {
        second
    } else {
        first
    };
    chosen as u32
}

/// `skip-locked` over one key's rows for an update reaching them at `now`: rows in a random
/// order without repeats (a random start, then a random stride prime to the row count), the
/// k-th try (from 0) at `now + k × try_ns`; the first row free at its try is taken then. When
/// `tries` rows were locked, the update waits for the last one from `now + tries × try_ns`.
/// Returns the row, the earliest its hold can start, and the rows tried.
#[inline]
fn skip_locked(
    free_at: &[SimTime],
    now: SimTime,
    random_bits: u64,
    settings: SkipLocked,
) -> (u32, SimTime, u32) {
    let len = free_at.len() as u64;
    let start = bounded_u32(random_bits as u32, len);
    let stride = stride_prime_to(bounded_u32((random_bits >> 32) as u32, len), len);
    let tries = u64::from(settings.tries).min(len.max(1)).max(1);
    let mut slot = start;
    for k in 0..tries {
        let at = now.saturating_add(k.saturating_mul(settings.try_ns));
        if free_at[slot as usize] <= at {
            return (slot as u32, at, k as u32 + 1);
        }
        if k + 1 < tries {
            slot = (slot + stride) % len;
        }
    }
    let waits_from = now.saturating_add(tries.saturating_mul(settings.try_ns));
    (slot as u32, waits_from, tries as u32)
}

/// `x` scaled to `0..bound` (multiply and shift).
#[inline(always)]
pub(super) fn bounded_u32(x: u32, bound: u64) -> u64 {
    (u64::from(x) * bound) >> 32
}

/// The stride from `candidate` (in `0..len`): the first of `candidate + 1, candidate + 2, …`
/// (wrapping within `1..len`) prime to `len`, so that `len` steps visit every row once.
pub(super) fn stride_prime_to(candidate: u64, len: u64) -> u64 {
    if len <= 1 {
        return 1;
    }
    let mut stride = candidate % (len - 1) + 1;
    while gcd(stride, len) != 1 {
        stride = stride % (len - 1) + 1;
    }
    stride
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The SplitMix64 finaliser: a fast, well-mixed, stable 64-bit hash of an integer
/// (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", OOPSLA 2014).
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
