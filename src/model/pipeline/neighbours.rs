//! Requests to the neighbour endpoints (`[[endpoints]]`): they share the connection pool with
//! the updates and need nothing else, so a slow endpoint's requests make the updates wait for
//! a connection.

use super::super::engine::{Arrival, Observer};
use super::{Job, Kind, Pipeline, Stage, Step};

/// The neighbours' requests' events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NeighbourEvent {
    /// The request (this job) is done with its connection.
    Done(u32),
}

impl<O: Observer> Pipeline<O> {
    /// Handles one of the neighbours' requests' events.
    #[inline]
    pub(super) fn on_neighbour(&mut self, event: NeighbourEvent) {
        match event {
            NeighbourEvent::Done(job) => self.connection_end(job),
        }
    }

    /// A neighbour endpoint's request: it waits only for a connection.
    pub(super) fn neighbour_request(&mut self, arrival: &Arrival) {
        let job = Job {
            link: u32::from(arrival.endpoint - 1),
            ..Job::new(*arrival, Kind::Neighbour)
        };
        let id = self.allocate(job);
        self.connect_then(id);
    }

    /// A neighbour's request got its connection now: it holds it for its hold.
    pub(super) fn neighbour_connected(&mut self, id: u32) {
        let job = self.jobs[id as usize];
        if job.arrival.at >= self.config.measure_from
            && let Some(ext) = self.ext.as_mut()
        {
            ext.neighbour_waits[job.link as usize].record(self.now - job.arrival.at);
        }
        self.jobs[id as usize].stage = Stage::Holding;
        let end = self.now.saturating_add(job.arrival.hold);
        self.calendar
            .schedule(end, Step::Neighbour(NeighbourEvent::Done(id)));
    }

    /// A neighbour's request is done: its connection goes to the next in line.
    fn connection_end(&mut self, id: u32) {
        self.free(id);
        self.release_connection();
    }
}
