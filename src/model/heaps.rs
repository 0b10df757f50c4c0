//! Min-heaps of free times: which row (or server) becomes free earliest, lowest index on ties.
//!
//! The earliest-free policy keeps one binary min-heap per key, all in one flat vector. An entry
//! orders by (free time, index). Most runs store it packed in one `u64` — the free time in the
//! high bits, the index in the low `slot_bits` — so that a comparison is one integer compare;
//! the order is the same as the pair's. A free time or an index too large for the packed form
//! turns the whole store into explicit pairs, once, keeping every heap's order as it is.

use crate::time::SimTime;

/// A row in a heap as an explicit pair, ordered by (free time, index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct FreeRow {
    pub(super) free_at: SimTime,
    pub(super) slot: u32,
}

/// Indices below `1 << MIN_SLOT_BITS` always fit the packed form, so a key may grow to 256
/// rows (adaptive sharding) before the store widens.
const MIN_SLOT_BITS: u32 = 8;

/// Every key's heap of free rows, in one flat vector (a key's heap is a range of it).
#[derive(Debug, Clone)]
pub(super) enum RowHeaps {
    /// `free_at << slot_bits | slot`.
    Packed { entries: Vec<u64>, slot_bits: u32 },
    /// Explicit pairs, for free times or indices the packed form cannot hold.
    Wide(Vec<FreeRow>),
}

impl RowHeaps {
    /// An empty store for keys of up to `rows` rows each (more are allowed; they widen it).
    pub(super) fn new(rows: u32) -> Self {
        let slot_bits = (u32::BITS - rows.saturating_sub(1).leading_zeros()).max(MIN_SLOT_BITS);
        RowHeaps::Packed {
            entries: Vec::new(),
            slot_bits,
        }
    }

    /// The top of the heap at `base`: its row's free time and index.
    #[inline(always)]
    pub(super) fn top(&self, base: usize) -> (SimTime, u32) {
        match self {
            RowHeaps::Packed { entries, slot_bits } => {
                let entry = entries[base];
                (entry >> slot_bits, (entry & ((1 << slot_bits) - 1)) as u32)
            }
            RowHeaps::Wide(rows) => (rows[base].free_at, rows[base].slot),
        }
    }

    /// Replaces the top of the heap `base..base + len` (row `slot`) with that row free at
    /// `until`, and restores the heap's order: O(log len).
    #[inline(always)]
    pub(super) fn replace_top(&mut self, base: usize, len: usize, until: SimTime, slot: u32) {
        if let RowHeaps::Packed { entries, slot_bits } = self {
            if let Some(entry) = pack(until, slot, *slot_bits) {
                replace_top(&mut entries[base..base + len], entry);
                return;
            }
            self.widen();
        }
        if let RowHeaps::Wide(rows) = self {
            replace_top(
                &mut rows[base..base + len],
                FreeRow {
                    free_at: until,
                    slot,
                },
            );
        }
    }

    /// The packed heap `base..base + len` and its index bits, or `None` once the store is wide.
    #[inline]
    pub(super) fn packed_mut(&mut self, base: usize, len: usize) -> Option<(&mut [u64], u32)> {
        match self {
            RowHeaps::Packed { entries, slot_bits } => {
                Some((&mut entries[base..base + len], *slot_bits))
            }
            RowHeaps::Wide(_) => None,
        }
    }

    /// Appends a heap of `n` rows, all free at 0 (in index order: already a valid heap).
    pub(super) fn push_key(&mut self, n: u32) {
        self.push_free_rows(0, n);
    }

    /// Adds row `slot` (free at 0) to the heap `base..base + slot` that holds the rows before
    /// it, at index `base + slot` (already reserved), and restores the order.
    pub(super) fn add_row(&mut self, base: usize, slot: u32) {
        let at = base + slot as usize;
        if let RowHeaps::Packed { entries, slot_bits } = self {
            if let Some(entry) = pack(0, slot, *slot_bits) {
                entries[at] = entry;
                sift_up(&mut entries[base..=at], slot as usize);
                return;
            }
            self.widen();
        }
        if let RowHeaps::Wide(rows) = self {
            rows[at] = FreeRow { free_at: 0, slot };
            sift_up(&mut rows[base..=at], slot as usize);
        }
    }

    /// The latest free time in `range` (0 for an empty range).
    #[cfg(test)]
    pub(super) fn latest_free(&self, range: std::ops::Range<usize>) -> SimTime {
        range.map(|at| self.free_at(at)).max().unwrap_or(0)
    }

    /// Copies the heap at `from` to the end of the store and reserves room for `capacity`
    /// rows there (the reserved rows' contents are unspecified until written).
    pub(super) fn relocate(&mut self, from: std::ops::Range<usize>, capacity: usize) {
        match self {
            RowHeaps::Packed { entries, .. } => {
                let new_offset = entries.len();
                entries.extend_from_within(from);
                entries.resize(new_offset + capacity, 0);
            }
            RowHeaps::Wide(rows) => {
                let new_offset = rows.len();
                rows.extend_from_within(from);
                rows.resize(
                    new_offset + capacity,
                    FreeRow {
                        free_at: 0,
                        slot: 0,
                    },
                );
            }
        }
    }

    /// The free time of the row at `at` in the store.
    #[cfg(test)]
    fn free_at(&self, at: usize) -> SimTime {
        match self {
            RowHeaps::Packed { entries, slot_bits } => entries[at] >> slot_bits,
            RowHeaps::Wide(rows) => rows[at].free_at,
        }
    }

    fn push_free_rows(&mut self, free_at: SimTime, n: u32) {
        if let RowHeaps::Packed { slot_bits, .. } = self
            && n > 0
            && pack(free_at, n - 1, *slot_bits).is_none()
        {
            self.widen();
        }
        match self {
            RowHeaps::Packed { entries, slot_bits } => {
                let bits = *slot_bits;
                entries.extend((0..n).map(|slot| pack(free_at, slot, bits).expect("checked")));
            }
            RowHeaps::Wide(rows) => rows.extend((0..n).map(|slot| FreeRow { free_at, slot })),
        }
    }

    /// Turns the packed store into pairs. The order of (free time, index) is the order of the
    /// packed integers, so every heap stays a valid heap.
    #[cold]
    fn widen(&mut self) {
        if let RowHeaps::Packed { entries, slot_bits } = self {
            let mask = (1u64 << *slot_bits) - 1;
            let rows = entries
                .iter()
                .map(|&entry| FreeRow {
                    free_at: entry >> *slot_bits,
                    slot: (entry & mask) as u32,
                })
                .collect();
            *self = RowHeaps::Wide(rows);
        }
    }
}

/// The packed entry of row `slot` free at `free_at`, if both fit.
#[inline(always)]
fn pack(free_at: SimTime, slot: u32, slot_bits: u32) -> Option<u64> {
    let fits = free_at >> (u64::BITS - slot_bits) == 0 && u64::from(slot) >> slot_bits == 0;
    fits.then_some((free_at << slot_bits) | u64::from(slot))
}

/// Moves a heap entry up to its place: O(log n).
fn sift_up<T: Ord + Copy>(heap: &mut [T], mut at: usize) {
    while at > 0 {
        let parent = (at - 1) / 2;
        if heap[parent] <= heap[at] {
            break;
        }
        heap.swap(parent, at);
        at = parent;
    }
}

/// Replaces a min-heap's top and restores the heap order: O(log n).
#[inline(always)]
pub(super) fn replace_top<T: Ord + Copy>(heap: &mut [T], item: T) {
    let len = heap.len();
    let mut hole = 0;
    loop {
        let left = 2 * hole + 1;
        if left >= len {
            break;
        }
        let right = left + 1;
        let child = if right < len && heap[right] < heap[left] {
            right
        } else {
            left
        };
        if heap[child] >= item {
            break;
        }
        heap[hole] = heap[child];
        hole = child;
    }
    heap[hole] = item;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tops(heaps: &mut RowHeaps, len: usize, holds: &[(SimTime, SimTime)]) -> Vec<(u64, u32)> {
        holds
            .iter()
            .map(|&(now, hold)| {
                let (free_at, slot) = heaps.top(0);
                heaps.replace_top(0, len, now.max(free_at) + hold, slot);
                (free_at, slot)
            })
            .collect()
    }

    #[test]
    fn the_packed_and_wide_stores_choose_the_same_rows_lowest_index_on_ties() {
        let holds: Vec<(SimTime, SimTime)> = (0..200).map(|i| (i * 3, 10 + i % 7)).collect();
        let mut packed = RowHeaps::new(5);
        packed.push_key(5);
        let mut wide = RowHeaps::new(5);
        wide.push_key(5);
        wide.widen();
        assert_eq!(tops(&mut packed, 5, &holds), tops(&mut wide, 5, &holds));
        assert!(matches!(packed, RowHeaps::Packed { .. }));
        let mut ties = RowHeaps::new(3);
        ties.push_key(3);
        let first: Vec<u32> = tops(&mut ties, 3, &[(0, 10), (0, 10), (0, 10), (0, 10)])
            .into_iter()
            .map(|(_, slot)| slot)
            .collect();
        assert_eq!(first, [0, 1, 2, 0]);
    }

    #[test]
    fn a_free_time_too_large_to_pack_widens_the_store_and_keeps_the_order() {
        let mut heaps = RowHeaps::new(4);
        heaps.push_key(4);
        heaps.replace_top(0, 4, 7, 0);
        heaps.replace_top(0, 4, u64::MAX - 1, 1);
        assert!(matches!(heaps, RowHeaps::Wide(_)));
        assert_eq!(heaps.top(0), (0, 2));
        heaps.replace_top(0, 4, 9, 2);
        assert_eq!(heaps.top(0), (0, 3));
        heaps.replace_top(0, 4, 8, 3);
        assert_eq!(heaps.top(0), (7, 0));
        assert_eq!(heaps.latest_free(0..4), u64::MAX - 1);
    }

    #[test]
    fn a_row_index_too_large_to_pack_widens_the_store() {
        let mut heaps = RowHeaps::new(2);
        heaps.push_key(256);
        assert!(matches!(heaps, RowHeaps::Packed { .. }));
        heaps.relocate(0..256, 300);
        heaps.add_row(256, 256);
        assert!(matches!(heaps, RowHeaps::Wide(_)));
        assert_eq!(heaps.top(256), (0, 0));
    }
}
