//! The exact core's tightest loop: a run of arrivals of one key under earliest-free or
//! `random`, with no optional behaviour, no per-key statistics and no observer.
//!
//! It does what [`Engine::feed`]'s general path does for those arrivals — the same rows, the
//! same starts, the same statistics in the same order, so the outputs are byte-identical — but
//! with the key's heap borrowed once for the whole run instead of looked up per arrival, its
//! length known at compile time for 2 to 64 rows, the counters in locals, and every check that
//! cannot fire inside the run hoisted out of it. Up to 64 rows a long run does not keep the heap
//! at all: the rows are the leaves of a tournament tree (each inner node the least of its two
//! children), so the earliest row is the root and a new free time climbs one path of
//! log2(rows) minimums, without a branch (a heap's sift mispredicts about once per arrival).
//! Under `random` each row is its own line: the row comes from the arrival's random bits and
//! its free time is read and written by index, with no heap at all.
//! The counts of arrivals that wait for nothing are kept in a local and added to the run's and
//! the window's statistics when a window closes and when the loop ends. The loop asks for the
//! arrivals a little ahead of the one it simulates to be fetched into the cache. Anything else
//! (another key, a warm-up arrival, a free time too large for the packed heap, saturation)
//! ends the run and the general path takes over.

use super::calendar::Instants;
use super::config::{Arrival, Observer};
use super::engine::Engine;
use super::heaps::replace_top;
use super::rows::{PackedRows, Policy};
use crate::stats::{WaitStats, WindowSeries};
use crate::time::SimTime;

/// The most rows the loop keeps in a tournament tree instead of a heap.
const MOST_TREED: usize = 64;

/// The run of one key's arrivals that makes the tree worth building.
const TREE_RUN: usize = 64;

/// How many arrivals ahead of the one simulated the loop asks for the cache: a long stream of
/// arrivals does not fit in the caches, and without the hint the loop waits on loading each
/// arrival for about a third of its time (measured: 64 → 85 M increments/s at 24 to 96 ahead,
/// 63 M/s at 6 ahead).
const PREFETCH_AHEAD: usize = 32;

impl<O: Observer> Engine<O> {
    /// Simulates the longest prefix of `arrivals` the fast path can take; returns its length
    /// (0 when the path does not apply to the first arrival).
    #[inline]
    pub(super) fn feed_fast(&mut self, arrivals: &[Arrival]) -> usize {
        if !O::SILENT
            || self.keys.is_some()
            || self.adaptive.is_some()
            || self.saturated_at.is_some()
        {
            return 0;
        }
        let Some(first) = arrivals.first() else {
            return 0;
        };
        // The warm-up is left to the general path, arrival by arrival.
        if first.at < self.config.measure_from {
            return 0;
        }
        // A key's first arrival creates its rows (the general path does): within the run the
        // rows reported by the windows then stay as they are.
        if self.rows.block_of(first.key).is_none() {
            return 0;
        }
        let window_rows = (
            self.rows.rows_total(),
            self.rows.rows_of(self.config.hot_key),
        );
        self.feed_one_key(arrivals, window_rows)
    }

    /// The loop itself: under `random` on the key's rows by index, under earliest-free for
    /// the key's heap length known at compile time where it is common; returns how many
    /// arrivals it took.
    #[inline(always)]
    fn feed_one_key(&mut self, arrivals: &[Arrival], window_rows: (u64, u32)) -> usize {
        if self.config.policy == Policy::Random {
            return self.feed_random(arrivals, window_rows);
        }
        match self.rows.rows_of(arrivals[0].key) {
            2 => self.feed_treed_or_not::<2>(arrivals, window_rows),
            4 => self.feed_treed_or_not::<4>(arrivals, window_rows),
            8 => self.feed_treed_or_not::<8>(arrivals, window_rows),
            16 => self.feed_treed_or_not::<16>(arrivals, window_rows),
            32 => self.feed_treed_or_not::<32>(arrivals, window_rows),
            64 => self.feed_treed_or_not::<64>(arrivals, window_rows),
            _ => self.feed_sized::<0, false>(arrivals, window_rows),
        }
    }

    /// [`Engine::feed_sized`] for `N` rows (2 to 64), on a tournament tree when the run of the
    /// key's arrivals is long enough to pay for building one, on the heap otherwise: two loops,
    /// so that neither carries the other's registers and branches.
    #[inline(always)]
    fn feed_treed_or_not<const N: usize>(
        &mut self,
        arrivals: &[Arrival],
        window_rows: (u64, u32),
    ) -> usize {
        let key = arrivals[0].key;
        if arrivals.len() >= TREE_RUN && arrivals[..TREE_RUN].iter().all(|a| a.key == key) {
            self.feed_sized::<N, true>(arrivals, window_rows)
        } else {
            self.feed_sized::<N, false>(arrivals, window_rows)
        }
    }

    /// [`Engine::feed_one_key`] for a heap of `N` rows (0: any length), kept as the leaves of a
    /// tournament tree during the loop when `TREED` (2 to 64 rows).
    #[inline(never)]
    fn feed_sized<const N: usize, const TREED: bool>(
        &mut self,
        arrivals: &[Arrival],
        window_rows: (u64, u32),
    ) -> usize {
        let first_measured = !self.measuring;
        let Engine {
            rows,
            starts,
            series,
            waits,
            config,
            now,
            backlog,
            backlog_max,
            ..
        } = self;
        let Some(packed) = rows.packed_rows_mut(arrivals[0].key) else {
            return 0;
        };
        let earliest = EarliestRows::<N, TREED>::new(packed);
        let before = Before {
            last: *now,
            queued: *backlog,
            queued_max: *backlog_max,
            first_measured,
        };
        let limits = (config.horizon, config.queue_limit);
        let run = run_loop(
            earliest,
            arrivals,
            (starts, series, waits),
            before,
            limits,
            window_rows,
        );
        self.end_loop(run)
    }

    /// [`Engine::feed_one_key`] under `random`: each row its own line, the row picked from the
    /// arrival's random bits as [`super::rows::pick_slot`] does.
    #[inline(never)]
    fn feed_random(&mut self, arrivals: &[Arrival], window_rows: (u64, u32)) -> usize {
        let first_measured = !self.measuring;
        let Engine {
            rows,
            starts,
            series,
            waits,
            config,
            now,
            backlog,
            backlog_max,
            ..
        } = self;
        let Some((free_at, counts)) = rows.random_rows_mut(arrivals[0].key) else {
            return 0;
        };
        let picked = RandomRows { free_at, counts };
        let before = Before {
            last: *now,
            queued: *backlog,
            queued_max: *backlog_max,
            first_measured,
        };
        let limits = (config.horizon, config.queue_limit);
        let run = run_loop(
            picked,
            arrivals,
            (starts, series, waits),
            before,
            limits,
            window_rows,
        );
        self.end_loop(run)
    }

    /// Writes a loop's counters back (and stops serving if it saturated); returns how many
    /// arrivals it took.
    #[inline(always)]
    fn end_loop(&mut self, run: LoopRun) -> usize {
        if run.fed > 0 {
            self.end_run(
                run.fed as u64,
                run.completed,
                (run.last, run.queued, run.queued_max),
            );
        }
        if run.saturated {
            self.saturate();
        }
        run.fed
    }

    /// Ends a run of `fed` measured arrivals, `completed` of whose holds end by the horizon:
    /// the counters, and the time, backlog and backlog peak after its last arrival.
    #[inline(always)]
    fn end_run(&mut self, fed: u64, completed: u64, (now, backlog, backlog_max): (u64, u64, u64)) {
        self.measuring = true;
        (self.now, self.backlog, self.backlog_max) = (now, backlog, backlog_max);
        self.tries += fed;
        self.arrivals += fed;
        self.completed += completed;
    }
}

/// How the loop's rows give an arrival its row.
trait TakeRow {
    /// The row `arrival` would take, when it starts and when its hold ends, or `None` when the
    /// loop must end before it (nothing changed).
    fn choose(&self, arrival: &Arrival) -> Option<Taken>;

    /// Takes the chosen row until the hold's end.
    fn take(&mut self, taken: Taken);

    /// Hands the rows back to the table.
    fn put_back(self);
}

/// A row chosen for an arrival: its index (or packed entry), its start and its hold's end.
#[derive(Debug, Clone, Copy)]
struct Taken {
    slot: u64,
    start: SimTime,
    until: SimTime,
}

/// Earliest-free: the row free earliest, from the packed heap (or tree) of the key's rows.
struct EarliestRows<'a, const N: usize, const TREED: bool> {
    free: FreeRows<'a, N, TREED>,
    counts: &'a mut [u64],
    slot_bits: u32,
    slot_mask: u64,
    packable_below: u64,
}

impl<'a, const N: usize, const TREED: bool> EarliestRows<'a, N, TREED> {
    #[inline(always)]
    fn new(packed: PackedRows<'a>) -> Self {
        let PackedRows {
            heap,
            slot_bits,
            counts,
        } = packed;
        let slot_mask = (1u64 << slot_bits) - 1;
        EarliestRows {
            free: FreeRows::new(heap, slot_mask),
            counts,
            slot_bits,
            slot_mask,
            packable_below: 1u64 << (u64::BITS - slot_bits),
        }
    }
}

impl<const N: usize, const TREED: bool> TakeRow for EarliestRows<'_, N, TREED> {
    #[inline(always)]
    fn choose(&self, arrival: &Arrival) -> Option<Taken> {
        let top = self.free.earliest();
        let start = arrival.at.max(top >> self.slot_bits);
        let until = start.saturating_add(arrival.hold);
        (until < self.packable_below).then_some(Taken {
            slot: top & self.slot_mask,
            start,
            until,
        })
    }

    #[inline(always)]
    fn take(&mut self, Taken { slot, until, .. }: Taken) {
        self.free
            .replace_earliest(slot, (until << self.slot_bits) | slot);
        self.counts[slot as usize] += 1;
    }

    #[inline(always)]
    fn put_back(self) {
        self.free.put_back();
    }
}

/// `random`: the row picked from the arrival's random bits, each row its own line.
struct RandomRows<'a> {
    free_at: &'a mut [SimTime],
    counts: &'a mut [u64],
}

impl TakeRow for RandomRows<'_> {
    #[inline(always)]
    fn choose(&self, arrival: &Arrival) -> Option<Taken> {
        let len = self.free_at.len() as u64;
        let slot = ((u128::from(arrival.random_bits) * u128::from(len)) >> 64) as u64;
        let start = arrival.at.max(self.free_at[slot as usize]);
        Some(Taken {
            slot,
            start,
            until: start.saturating_add(arrival.hold),
        })
    }

    #[inline(always)]
    fn take(&mut self, Taken { slot, until, .. }: Taken) {
        self.free_at[slot as usize] = until;
        self.counts[slot as usize] += 1;
    }

    #[inline(always)]
    fn put_back(self) {}
}

/// The engine's state a loop starts from.
#[derive(Debug, Clone, Copy)]
struct Before {
    /// The time of the last arrival before the loop.
    last: SimTime,
    /// Updates waiting for their rows.
    queued: u64,
    /// The backlog's peak so far.
    queued_max: u64,
    /// Whether the loop's first arrival is the run's first measured one.
    first_measured: bool,
}

/// What a loop did.
#[derive(Debug, Clone, Copy)]
struct LoopRun {
    fed: usize,
    saturated: bool,
    completed: u64,
    last: SimTime,
    queued: u64,
    queued_max: u64,
}

/// The loop over a run of one key's arrivals: the rows `rows` give each its start, the
/// queued starts wait on `starts`, the statistics go to `waits` and `series`. `limits` are the
/// horizon and the queue limit.
#[inline(always)]
fn run_loop<R: TakeRow>(
    mut rows: R,
    arrivals: &[Arrival],
    (starts, series, waits): (&mut Instants, &mut WindowSeries, &mut WaitStats),
    before: Before,
    (horizon, queue_limit): (SimTime, u64),
    window_rows: (u64, u32),
) -> LoopRun {
    let key = arrivals[0].key;
    // Arrivals come in time order (checked below), so all are before the horizon when the
    // last is.
    let all_before_horizon = arrivals.last().is_some_and(|last| last.at < horizon);
    // Whether the first arrival below is the run's first measured one: the backlog's peak is
    // measured from there, after the holds due by then have started.
    let first_measured = before.first_measured;
    let (mut last, mut queued) = (before.last, before.queued);
    let mut queued_max = if first_measured { 0 } else { before.queued_max };
    let (mut fed, mut saturated, mut completed) = (0, false, 0);
    // Arrivals that waited for nothing since the statistics were last told.
    let mut unqueued = 0;
    for (index, arrival) in arrivals.iter().enumerate() {
        if let Some(ahead) = arrivals.get(index + PREFETCH_AHEAD) {
            prefetch(ahead);
        }
        let at = arrival.at;
        if arrival.key != key || at < last || (!all_before_horizon && at >= horizon) {
            break;
        }
        let Some(taken) = rows.choose(arrival) else {
            break;
        };
        let mut statistics = (&mut *waits, &mut *series, &mut unqueued);
        start_due_holds(starts, &mut statistics, &mut queued, at, window_rows);
        if first_measured && fed == 0 {
            queued_max = queued;
        }
        last = at;
        rows.take(taken);
        fed += 1;
        completed += u64::from(taken.until <= horizon);
        if taken.start == at {
            unqueued += 1;
            continue;
        }
        queued += 1;
        queued_max = queued_max.max(queued);
        queue(starts, (waits, series), (at, taken.start), queued);
        if starts.len() as u64 > queue_limit {
            saturated = true;
            break;
        }
    }
    tell_unqueued(waits, series, &mut unqueued);
    rows.put_back();
    LoopRun {
        fed,
        saturated,
        completed,
        last,
        queued,
        queued_max,
    }
}

/// One key's free rows during the loop, as packed (free time, row) entries: its heap of `N`
/// rows (0: any length), or up to 64 rows in a long run (`TREED`) the leaves of a tournament
/// tree, by index — the packed entries are distinct, so the root is the heap's top, the same
/// row — written back to the heap at the end.
struct FreeRows<'a, const N: usize, const TREED: bool> {
    heap: &'a mut [u64],
    tree: [u64; 2 * MOST_TREED],
}

impl<'a, const N: usize, const TREED: bool> FreeRows<'a, N, TREED> {
    const TREED: bool = TREED && N >= 2 && N <= MOST_TREED;

    /// The key's rows from its packed heap (row numbers under `slot_mask`).
    #[inline(always)]
    fn new(heap: &'a mut [u64], slot_mask: u64) -> Self {
        let mut tree = [0u64; 2 * MOST_TREED];
        if Self::TREED {
            heap.sort_unstable_by_key(|entry| entry & slot_mask);
            tree[N..2 * N].copy_from_slice(heap);
            for node in (1..N).rev() {
                tree[node] = tree[2 * node].min(tree[2 * node + 1]);
            }
        }
        FreeRows { heap, tree }
    }

    /// The entry of the row free earliest (lowest row on ties).
    #[inline(always)]
    fn earliest(&self) -> u64 {
        if Self::TREED {
            self.tree[1]
        } else {
            self.heap[0]
        }
    }

    /// Gives the earliest row, number `slot`, the entry `entry`.
    #[inline(always)]
    fn replace_earliest(&mut self, slot: u64, entry: u64) {
        if Self::TREED {
            replace_leaf::<N>(&mut self.tree, slot as usize, entry);
        } else if N == 0 {
            replace_top(self.heap, entry);
        } else if let Ok(heap) = <&mut [u64; N]>::try_from(&mut *self.heap) {
            replace_top(heap, entry);
        }
    }

    /// Writes the tree's leaves back to the heap (sorted is a valid min-heap).
    #[inline(always)]
    fn put_back(self) {
        if Self::TREED {
            self.heap.copy_from_slice(&self.tree[N..2 * N]);
            self.heap.sort_unstable();
        }
    }
}

/// An arrival at `at` that starts at `start`, later: its wait, and its start on the calendar
/// (`queued` waiting with it).
#[inline(always)]
fn queue(
    starts: &mut Instants,
    (waits, series): (&mut WaitStats, &mut WindowSeries),
    (at, start): (SimTime, SimTime),
    queued: u64,
) {
    waits.record_positive(start - at);
    series.record_arrival_queued(start - at);
    starts.schedule(start);
    series.note_backlog(queued);
}

/// The waits, the windows and the count of arrivals that waited for nothing not yet told.
type Statistics<'a> = (&'a mut WaitStats, &'a mut WindowSeries, &'a mut u64);

/// Starts the queued holds due by `at`, each in its window, and closes the windows that end
/// by `at` (`queued` holds waiting, the rows `window_rows`).
#[inline(always)]
fn start_due_holds(
    starts: &mut Instants,
    (waits, series, unqueued): &mut Statistics<'_>,
    queued: &mut u64,
    at: SimTime,
    window_rows: (u64, u32),
) {
    while let Some(due) = starts.pop_due(at) {
        while due >= series.current_end() {
            // The hold starting at `due` is still queued at the window's end.
            tell_unqueued(waits, series, unqueued);
            series.close_window(*queued, 0, window_rows);
        }
        *queued -= 1;
        series.record_start();
    }
    while at >= series.current_end() {
        tell_unqueued(waits, series, unqueued);
        series.close_window(*queued, 0, window_rows);
    }
}

/// Asks the processor to bring `arrival` into its cache before it is needed: a hint, which
/// changes no result.
#[inline(always)]
fn prefetch(arrival: &Arrival) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and never faults, whatever the
    // address; this one is a live reference's besides. SSE is part of every x86_64.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((arrival as *const Arrival).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = arrival;
}

/// Adds the `unqueued` arrivals (no wait, their hold started at once) to the run's waits and
/// the current window, and resets the count.
#[inline(always)]
fn tell_unqueued(waits: &mut WaitStats, series: &mut WindowSeries, unqueued: &mut u64) {
    waits.record_zeros(*unqueued);
    series.record_unqueued_starts(*unqueued);
    *unqueued = 0;
}

/// Puts `entry` at leaf `slot` of a tournament tree of `N` (a power of two) leaves — leaves at
/// `N..2N`, node `k`'s children at `2k` and `2k + 1`, the least at 1 — and updates the
/// minimums on its path to the root: log2(N) steps, no branch.
#[inline(always)]
fn replace_leaf<const N: usize>(tree: &mut [u64; 2 * MOST_TREED], slot: usize, entry: u64) {
    // N is a power of two and `slot` below it: the mask tells the compiler every node is in
    // the tree, and the constant trip count unrolls the climb.
    let mut node = N + (slot & (N - 1));
    let mut least = entry;
    tree[node] = least;
    for _ in 0..N.trailing_zeros() {
        least = least.min(tree[node ^ 1]);
        node >>= 1;
        tree[node] = least;
    }
}
