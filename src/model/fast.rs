//! The exact core's tightest loop: a run of arrivals of one key under earliest-free, with no
//! optional behaviour, no per-key statistics and no observer.
//!
//! It does what [`Engine::feed`]'s general path does for those arrivals — the same rows, the
//! same starts, the same statistics in the same order, so the outputs are byte-identical — but
//! with the key's heap borrowed once for the whole run instead of looked up per arrival, and
//! every check that cannot fire inside the run hoisted out of it. Anything else (another key, a
//! warm-up arrival, a free time too large for the packed heap, saturation) ends the run and
//! the general path takes over.

use super::engine::{Arrival, Engine, Observer};
use super::heaps::replace_top;
use super::rows::PackedRows;

impl<O: Observer> Engine<O> {
    /// Simulates the longest prefix of `arrivals` the fast path can take; returns its length
    /// (0 when the path does not apply to the first arrival).
    #[inline]
    pub(super) fn feed_fast(&mut self, arrivals: &[Arrival]) -> usize {
        if !O::SILENT
            || self.ext.is_some()
            || self.keys.is_some()
            || self.adaptive.is_some()
            || self.saturated_at.is_some()
            || !self.calendar.is_empty()
        {
            return 0;
        }
        let Some(first) = arrivals.first() else {
            return 0;
        };
        // A key's first arrival creates its rows (the general path does): within the run the
        // rows reported by the windows then stay as they are.
        if self.rows.block_of(first.key).is_none() {
            return 0;
        }
        let window_rows = (
            self.rows.rows_total(),
            self.rows.rows_of(self.config.hot_key),
        );
        let (fed, saturated) = self.feed_one_key(arrivals, window_rows);
        if saturated {
            self.saturate();
        }
        fed
    }

    /// The loop itself, for the key's heap length known at compile time where it is common;
    /// returns how many arrivals it took and whether the queue passed its limit with the last.
    #[inline(always)]
    fn feed_one_key(&mut self, arrivals: &[Arrival], window_rows: (u64, u32)) -> (usize, bool) {
        match self.rows.rows_of(arrivals[0].key) {
            2 => self.feed_sized::<2>(arrivals, window_rows),
            4 => self.feed_sized::<4>(arrivals, window_rows),
            8 => self.feed_sized::<8>(arrivals, window_rows),
            16 => self.feed_sized::<16>(arrivals, window_rows),
            32 => self.feed_sized::<32>(arrivals, window_rows),
            64 => self.feed_sized::<64>(arrivals, window_rows),
            _ => self.feed_sized::<0>(arrivals, window_rows),
        }
    }

    /// [`Engine::feed_one_key`] for a heap of `N` rows (0: any length). The counters live in
    /// locals during the loop and are written back once at its end.
    #[inline(never)]
    fn feed_sized<const N: usize>(
        &mut self,
        arrivals: &[Arrival],
        window_rows: (u64, u32),
    ) -> (usize, bool) {
        let key = arrivals[0].key;
        let (horizon, queue_limit) = (self.config.horizon, self.config.queue_limit);
        if arrivals[0].at < self.config.measure_from {
            return (0, false);
        }
        // Arrivals come in time order (checked below), so all are before the horizon when the
        // last is.
        let all_before_horizon = arrivals.last().is_some_and(|last| last.at < horizon);
        let Engine {
            rows,
            starts,
            series,
            waits,
            now,
            backlog,
            backlog_max,
            measuring,
            ..
        } = self;
        let Some(PackedRows {
            heap,
            slot_bits,
            counts,
        }) = rows.packed_rows_mut(key)
        else {
            return (0, false);
        };
        let slot_mask = (1u64 << slot_bits) - 1;
        let packable_below = 1u64 << (u64::BITS - slot_bits);
        let (mut last, mut queued, mut queued_max) = (*now, *backlog, *backlog_max);
        if !*measuring {
            // The backlog's peak is measured from the first measured arrival, after the
            // holds due by then have started: set at the first arrival below.
            queued_max = 0;
        }
        let mut fed = 0;
        let mut saturated = false;
        let mut completed = 0;
        for arrival in arrivals {
            let at = arrival.at;
            if arrival.key != key || at < last || (!all_before_horizon && at >= horizon) {
                break;
            }
            let top = heap[0];
            let start = at.max(top >> slot_bits);
            let until = start.saturating_add(arrival.hold);
            if until >= packable_below {
                break;
            }
            // The holds that start by this arrival, each in its window.
            while let Some(due) = starts.next_time().filter(|&due| due <= at) {
                while due >= series.current_end() {
                    series.close_window(queued, 0, window_rows);
                }
                starts.pop();
                queued -= 1;
                series.record_start();
            }
            while at >= series.current_end() {
                series.close_window(queued, 0, window_rows);
            }
            if fed == 0 && !*measuring {
                queued_max = queued;
            }
            last = at;
            let slot = top & slot_mask;
            if N == 0 {
                replace_top(heap, (until << slot_bits) | slot);
            } else if let Ok(heap) = <&mut [u64; N]>::try_from(&mut *heap) {
                replace_top(heap, (until << slot_bits) | slot);
            }
            counts[slot as usize] += 1;
            let wait = start - at;
            waits.record(wait);
            series.record_arrival(wait);
            fed += 1;
            completed += u64::from(until <= horizon);
            if start > at {
                starts.schedule(start);
                queued += 1;
                series.note_backlog(queued);
                queued_max = queued_max.max(queued);
                if starts.len() as u64 > queue_limit {
                    saturated = true;
                    break;
                }
            } else {
                series.record_start();
            }
        }
        if fed > 0 {
            *measuring = true;
            (*now, *backlog, *backlog_max) = (last, queued, queued_max);
            self.tries += fed as u64;
            self.arrivals += fed as u64;
            self.completed += completed;
        }
        (fed, saturated)
    }
}
