//! The event calendar: a priority queue of future events ordered by time, ties broken by the
//! order in which they were scheduled (first scheduled, first out), so runs are deterministic.
//!
//! Most events of a run come in a few streams that are each scheduled in time order (every
//! hold's end is "now + a constant hold", every CPU slice's end "now + its demand"…), so the
//! calendar keeps `LANES` first-in-first-out lanes beside a binary heap: an event goes to the
//! first lane whose last event is not later than it, and only the rest pay for the heap. The
//! next event is the earliest of the lanes' fronts and the heap's top; the order is exactly
//! (time, scheduling order) whichever way an event was kept.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use crate::time::SimTime;

/// In-order lanes beside the heap.
const LANES: usize = 4;

/// Future events, popped in (time, scheduling order).
#[derive(Debug)]
pub struct Calendar<E> {
    lanes: [VecDeque<Entry<E>>; LANES],
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    /// The earliest event's (time, place) and where it is kept.
    front: Option<((SimTime, u64), Source)>,
}

#[derive(Debug)]
struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    #[inline(always)]
    fn key(&self) -> (SimTime, u64) {
        (self.time, self.seq)
    }
}

/// Where the next event is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Lane(usize),
    Heap,
}

impl<E> Calendar<E> {
    /// An empty calendar.
    pub fn new() -> Self {
        Calendar {
            lanes: std::array::from_fn(|_| VecDeque::new()),
            heap: BinaryHeap::new(),
            next_seq: 0,
            front: None,
        }
    }

    /// Schedules `event` at `time`; among events at the same time it comes after those
    /// scheduled before it.
    #[inline]
    pub fn schedule(&mut self, time: SimTime, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.push(Entry { time, seq, event });
    }

    /// Schedules `event` at `time` like [`Calendar::schedule`], and keeps the next place in
    /// the scheduling order for an event decided later ([`Calendar::pop_entry`] gives this
    /// one's place; [`Calendar::schedule_in_place`] the kept one, one after it).
    pub fn schedule_keeping_next(&mut self, time: SimTime, event: E) {
        self.schedule(time, event);
        self.next_seq += 1;
    }

    /// Schedules `event` at `time` in the place `seq` in the scheduling order (kept by
    /// [`Calendar::schedule_keeping_next`]).
    pub fn schedule_in_place(&mut self, time: SimTime, seq: u64, event: E) {
        self.push(Entry { time, seq, event });
    }

    /// Keeps `entry` at the back of the first lane it does not precede, or in the heap.
    #[inline(always)]
    fn push(&mut self, entry: Entry<E>) {
        let key = entry.key();
        let source = self.place(entry);
        if self.front.is_none_or(|(front, _)| key < front) {
            self.front = Some((key, source));
        }
    }

    /// Puts `entry` at the back of the first lane it does not precede, or in the heap.
    #[inline(always)]
    fn place(&mut self, entry: Entry<E>) -> Source {
        let key = entry.key();
        for (index, lane) in self.lanes.iter_mut().enumerate() {
            if lane.back().is_none_or(|last| last.key() <= key) {
                lane.push_back(entry);
                return Source::Lane(index);
            }
        }
        self.heap.push(entry);
        Source::Heap
    }

    /// The earliest event's key and where it is kept, found anew.
    #[inline(always)]
    fn find_front(&self) -> Option<((SimTime, u64), Source)> {
        let mut best: Option<((SimTime, u64), Source)> =
            self.heap.peek().map(|top| (top.key(), Source::Heap));
        for (index, lane) in self.lanes.iter().enumerate() {
            if let Some(front) = lane.front()
                && best.is_none_or(|(key, _)| front.key() < key)
            {
                best = Some((front.key(), Source::Lane(index)));
            }
        }
        best
    }

    /// Removes and returns the next event with its time and its place in the scheduling order.
    #[inline]
    pub fn pop_entry(&mut self) -> Option<(SimTime, u64, E)> {
        let (_, source) = self.front?;
        let entry = match source {
            Source::Lane(index) => self.lanes[index].pop_front(),
            Source::Heap => self.heap.pop(),
        }?;
        self.front = self.find_front();
        Some((entry.time, entry.seq, entry.event))
    }

    /// The time of the next event, if any.
    #[inline(always)]
    pub fn next_time(&self) -> Option<SimTime> {
        self.front.map(|((time, _), _)| time)
    }

    /// Removes and returns the next event with its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.pop_entry().map(|(time, _, event)| (time, event))
    }

    /// The number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(VecDeque::len).sum::<usize>()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.front.is_none()
    }
}

/// Future instants with nothing attached (when queued updates take their rows), popped
/// earliest first. Times scheduled in non-decreasing order — every start of one key under
/// `earliest-free` — wait in a plain queue; only the others pay for a heap.
#[derive(Debug, Default)]
pub struct Instants {
    in_order: std::collections::VecDeque<SimTime>,
    others: BinaryHeap<std::cmp::Reverse<SimTime>>,
}

impl Instants {
    /// No instant.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `time`.
    #[inline(always)]
    pub fn schedule(&mut self, time: SimTime) {
        match self.in_order.back() {
            Some(&last) if time < last => self.others.push(std::cmp::Reverse(time)),
            _ => self.in_order.push_back(time),
        }
    }

    /// The earliest instant, if any.
    #[inline(always)]
    pub fn next_time(&self) -> Option<SimTime> {
        let queued = self.in_order.front().copied();
        match self.others.peek() {
            None => queued,
            Some(&std::cmp::Reverse(other)) => Some(queued.map_or(other, |q| q.min(other))),
        }
    }

    /// Removes the earliest instant.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<SimTime> {
        let queued = self.in_order.front().copied();
        match (queued, self.others.peek()) {
            (Some(q), Some(&std::cmp::Reverse(other))) if other < q => {
                self.others.pop().map(|r| r.0)
            }
            (Some(_), _) => self.in_order.pop_front(),
            (None, _) => self.others.pop().map(|r| r.0),
        }
    }

    /// Removes and returns the earliest instant if it is at or before `time`.
    #[inline(always)]
    pub fn pop_due(&mut self, time: SimTime) -> Option<SimTime> {
        if self.others.is_empty() {
            return match self.in_order.front() {
                Some(&due) if due <= time => self.in_order.pop_front(),
                _ => None,
            };
        }
        self.next_time()
            .filter(|&due| due <= time)
            .and_then(|_| self.pop())
    }

    /// The number of instants.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.in_order.len() + self.others.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<E> Default for Calendar<E> {
    fn default() -> Self {
        Self::new()
    }
}

// `BinaryHeap` is a max-heap: the "greatest" entry is the earliest (time, seq).
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}

impl<E> Eq for Entry<E> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_scheduling_order() {
        let mut calendar = Calendar::new();
        calendar.schedule(5, 'a');
        calendar.schedule(3, 'b');
        calendar.schedule(5, 'c');
        calendar.schedule(3, 'd');
        let order: Vec<_> = std::iter::from_fn(|| calendar.pop()).collect();
        assert_eq!(order, [(3, 'b'), (3, 'd'), (5, 'a'), (5, 'c')]);
    }

    #[test]
    fn lanes_and_heap_together_pop_by_time_then_scheduling_order() {
        // Interleaved increasing streams fill the lanes, the rest the heap; the order is the
        // plain sort of (time, scheduling order) whatever the mix.
        let mut calendar = Calendar::new();
        let mut expected = Vec::new();
        let mut state = 7u64;
        for i in 0..2000u64 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let time = match i % 3 {
                0 => i * 10,
                1 => i * 10 + 5,
                _ => (state >> 40) % 20_000,
            };
            calendar.schedule(time, i);
            expected.push((time, i));
            if i % 7 == 0 {
                let (t, e) = calendar.pop().unwrap();
                let first = expected.iter().copied().min().unwrap();
                assert_eq!((t, e), first);
                expected.retain(|&x| x != first);
            }
        }
        expected.sort_unstable();
        assert_eq!(calendar.len(), expected.len());
        let order: Vec<_> = std::iter::from_fn(|| calendar.pop()).collect();
        assert_eq!(order, expected);
    }

    #[test]
    fn instants_pop_in_time_order_however_they_come() {
        let mut instants = Instants::new();
        for time in [3, 5, 5, 2, 8, 1, 9, 4] {
            instants.schedule(time);
        }
        assert_eq!(instants.len(), 8);
        let order: Vec<_> = std::iter::from_fn(|| instants.pop()).collect();
        assert_eq!(order, [1, 2, 3, 4, 5, 5, 8, 9]);
        assert!(instants.is_empty() && instants.next_time().is_none());
    }

    #[test]
    fn a_kept_place_orders_a_later_event_as_if_scheduled_then() {
        let mut calendar = Calendar::new();
        calendar.schedule_keeping_next(5, 'a');
        calendar.schedule(5, 'c');
        let (time, seq, event) = calendar.pop_entry().unwrap();
        assert_eq!((time, event), (5, 'a'));
        calendar.schedule_in_place(5, seq + 1, 'b');
        let order: Vec<_> = std::iter::from_fn(|| calendar.pop()).collect();
        assert_eq!(order, [(5, 'b'), (5, 'c')]);
    }
}
