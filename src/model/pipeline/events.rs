//! The pipeline's events and its loop. Each event belongs to an owner — the database's work
//! on a job, the clients, the batching servers, the neighbours' requests, the locking reads,
//! the likes table — which defines its own kinds of event, schedules them and handles them in
//! its own module. The loop only takes the next event off the calendars and hands it to its
//! owner, so a new behaviour adds a kind of event and its handler where its owner lives; a new
//! owner adds one line here. An event with its time and its place on the calendar takes 32
//! bytes, as one flat enum's did.

use super::batching::BatchingEvent;
use super::clients::ClientEvent;
use super::likes::LikesEvent;
use super::neighbours::NeighbourEvent;
use super::reads::ReadEvent;
use super::stages::DatabaseEvent;
use super::{Observer, Pipeline};
use crate::time::SimTime;

/// What happens next, and whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The database's work on a job: a hold, a CPU slice or a flush ends, or a skip-locked
    /// update tries again (`stages`).
    Database(DatabaseEvent),
    /// A client sends, gives up or retries (`clients`).
    Client(ClientEvent),
    /// A batching server flushes or crashes (`batching`).
    Batching(BatchingEvent),
    /// A neighbour's request is done with its connection (`neighbours`).
    Neighbour(NeighbourEvent),
    /// A locking read is done with its rows (`reads`).
    Read(ReadEvent),
    /// The likes table: an insert ends, a reconciliation is due or its recount ends (`likes`).
    Likes(LikesEvent),
}

impl Step {
    /// Whether this is work the database completes — a stalled machine puts it off to the
    /// end of the stall — rather than something a client or a timer does.
    fn completes_work(self) -> bool {
        match self {
            Step::Database(event) => event.completes_work(),
            Step::Likes(event) => event.completes_work(),
            Step::Neighbour(_) | Step::Read(_) => true,
            Step::Client(_) | Step::Batching(_) => false,
        }
    }
}

impl<O: Observer> Pipeline<O> {
    /// Handles the next event, due at `time`: the database's calendar first (at equal times
    /// its releases and grants come before the clients' events), each event to its owner.
    pub(super) fn handle(&mut self, time: SimTime) {
        self.close_windows_through(time);
        self.now = time;
        let (place, step) = if self.calendar.next_time() == Some(time) {
            let (_, place, step) = self.calendar.pop_entry().expect("an event is due");
            if self.stalls.is_some() && self.defer_past_stall(time, step) {
                return;
            }
            (place, step)
        } else {
            let (_, place, step) = self.sends.pop_entry().expect("an event is due");
            (place, step)
        };
        match step {
            Step::Database(event) => self.on_database(event),
            Step::Client(event) => self.on_client(event, place),
            Step::Batching(event) => self.on_batching(event),
            Step::Neighbour(event) => self.on_neighbour(event),
            Step::Read(event) => self.on_read(event),
            Step::Likes(event) => self.on_likes(event),
        }
    }

    /// Puts `step`, due at `time`, off to the end of the stall covering it, when it is work
    /// the stalled machine cannot complete; returns whether it did.
    #[inline(never)]
    fn defer_past_stall(&mut self, time: SimTime, step: Step) -> bool {
        if !step.completes_work() {
            return false;
        }
        let Some(end) = self.stalls.as_mut().and_then(|s| s.stalled_until(time)) else {
            return false;
        };
        self.calendar.schedule(end, step);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calendar_entry_is_as_small_as_with_the_flat_enum() {
        // The calendar keeps an event beside its time and place; the memory budget counts an
        // entry at 32 bytes.
        assert!(std::mem::size_of::<(SimTime, u64, Step)>() <= 32);
    }

    #[test]
    fn only_work_the_database_completes_waits_out_a_stall() {
        let work = [
            Step::Database(DatabaseEvent::HoldEnd(0)),
            Step::Database(DatabaseEvent::CpuEnd(0)),
            Step::Database(DatabaseEvent::FlushEnd),
            Step::Likes(LikesEvent::InsertEnd(0)),
            Step::Likes(LikesEvent::RecountEnd),
            Step::Neighbour(NeighbourEvent::Done(0)),
            Step::Read(ReadEvent::Done(0)),
        ];
        let not_work = [
            Step::Database(DatabaseEvent::CpuCheck),
            Step::Database(DatabaseEvent::TryRow(0, 0)),
            Step::Client(ClientEvent::Send(0)),
            Step::Client(ClientEvent::Deadline(0, 0)),
            Step::Client(ClientEvent::Retry(0)),
            Step::Batching(BatchingEvent::Flush(0)),
            Step::Batching(BatchingEvent::Crash(0)),
            Step::Likes(LikesEvent::Reconcile),
        ];
        for step in work {
            assert!(step.completes_work(), "{step:?} is the database's work");
        }
        for step in not_work {
            assert!(
                !step.completes_work(),
                "{step:?} is not the database's work"
            );
        }
    }
}
