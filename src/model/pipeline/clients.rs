//! The clients on the pipeline: a closed loop's clients, each sending its next like a think
//! time after the last is done, and every client's deadline and retries. A wait is known only
//! when the update takes its row, so a timeout is decided when its deadline passes: an update
//! still waiting then (for a connection or its row) has timed out — under `cancel` it leaves
//! its queue, under `orphan` it stays and runs for nobody.

use rand::Rng;
use rand_distr::{Distribution, Zipf};

use super::super::clients::{Attempt, OnTimeout};
use super::super::closed::{ClientStreams, ClosedLoop};
use super::super::engine::{Arrival, Observer, ShardRun};
use super::super::hold::HoldDist;
use super::super::resources::NONE;
use super::super::rows::DrawNeeds;
use super::behaviours::attempt_of;
use super::{Job, Kind, Pipeline, Stage, Step, draw, overhead_for};
use crate::time::SimTime;

/// Updates a closed loop sends between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 14;

/// The clients' events: a closed loop's sends (on the database's calendar, after the commit
/// that freed the client), deadlines and retries (on the clients' calendar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClientEvent {
    /// A closed-loop client sends its next update.
    Send(u32),
    /// A client's deadline for a job (of this generation of its slot).
    Deadline(u32, u32),
    /// A failed like's retry (parked in the extension at this index) is sent.
    Retry(u32),
}

/// A closed loop run on the pipeline.
#[derive(Debug)]
pub(super) struct Clients {
    /// How many clients loop.
    pub(super) count: u32,
    think: HoldDist,
    hold: HoldDist,
    /// The keys' popularity, when the likes spread over many keys.
    keys: Option<Zipf<f64>>,
    streams: Vec<ClientStreams>,
    needs: DrawNeeds,
    sent: u64,
}

impl<O: Observer> Pipeline<O> {
    /// Handles one of the clients' events; `place` is its place among its calendar's events
    /// (a deadline's retry takes the one after it).
    #[inline]
    pub(super) fn on_client(&mut self, event: ClientEvent, place: u64) {
        match event {
            ClientEvent::Send(client) => self.send(client),
            ClientEvent::Deadline(job, generation) => self.deadline(job, generation, place + 1),
            ClientEvent::Retry(index) => self.retry(index),
        }
    }

    /// Starts a closed loop of clients at time 0: each sends its first like now, and its next
    /// one a think time after the last is done (each client drawing from its own streams of
    /// `seed`, as on the fast path; with `keys`, the key of each like from that popularity).
    /// Open requests beside it — reads, the neighbours' — come through [`Pipeline::feed`].
    pub fn start_clients(
        &mut self,
        closed: &ClosedLoop,
        hold: &HoldDist,
        keys: Option<Zipf<f64>>,
        seed: u64,
    ) {
        self.records_responses = true;
        self.clients = Some(Clients {
            count: closed.clients,
            think: closed.think.clone(),
            hold: hold.clone(),
            keys,
            streams: (0..closed.clients)
                .map(|id| ClientStreams::new(seed, id))
                .collect(),
            needs: DrawNeeds::for_policy(self.config.policy),
            sent: 0,
        });
        for id in 0..closed.clients {
            self.calendar
                .schedule(0, Step::Client(ClientEvent::Send(id)));
        }
    }

    /// Runs a closed loop of clients (see [`Pipeline::start_clients`]) to the horizon, with
    /// no other requests, and returns the results; `progress` hears how many updates were
    /// sent, now and then.
    pub fn run_closed(
        mut self,
        closed: &ClosedLoop,
        hold: &HoldDist,
        keys: Option<Zipf<f64>>,
        seed: u64,
        progress: &mut dyn FnMut(u64),
    ) -> (ShardRun, O) {
        self.start_clients(closed, hold, keys, seed);
        let mut reported = 0;
        while let Some(time) = self.next_time_before_horizon() {
            self.handle(time);
            let sent = self.clients.as_ref().map_or(0, |c| c.sent);
            if sent - reported >= PROGRESS_EVERY {
                progress(sent - reported);
                reported = sent;
            }
        }
        let sent = self.clients.as_ref().map_or(0, |c| c.sent);
        progress(sent - reported);
        self.finish()
    }

    /// A closed-loop client's like is done at `at` (answered, or given up): it thinks, then
    /// sends its next one.
    pub(super) fn client_done(&mut self, client: u32, at: SimTime) {
        let Some(clients) = self.clients.as_mut() else {
            return;
        };
        let streams = &mut clients.streams[client as usize];
        let think = clients.think.sample(&mut streams.thinks);
        streams.thought = think > 0;
        let next = at.saturating_add(think);
        if next < self.config.horizon {
            self.calendar
                .schedule(next, Step::Client(ClientEvent::Send(client)));
        }
    }

    /// A closed-loop client sends its next update now.
    fn send(&mut self, client: u32) {
        let Some(clients) = self.clients.as_mut() else {
            return;
        };
        clients.sent += 1;
        let streams = &mut clients.streams[client as usize];
        let arrival = Arrival {
            at: self.now,
            hold: clients.hold.sample(&mut streams.holds),
            random_bits: if clients.needs.slot_bits {
                streams.slots.next_u64()
            } else {
                0
            },
            // A client is a connection: with a likes table each of its likes is another
            // user's, so its (post, user) rows spread as an open stream's do.
            user: if self.likes.is_some() {
                super::super::rows::mix64(u64::from(client) << 40 ^ clients.sent)
            } else {
                u64::from(client)
            },
            key: clients
                .keys
                .as_ref()
                .map_or(0, |zipf| zipf.sample(&mut streams.keys) as u32 - 1),
            endpoint: 0,
        };
        let cpu = draw(
            self.machine.cpu.as_ref().map(|c| &c.demand),
            &mut streams.cpu,
        );
        let overhead = draw(self.machine.overhead.as_ref(), &mut streams.overhead);
        // After a think time the client's connection sat idle.
        let idle = streams.thought;
        let overhead = overhead_for(&self.machine, overhead, &mut streams.idle_overhead, idle);
        if let Some(ext) = self.ext.as_mut() {
            // Through the clients' behaviours: its deadline, its retries, the pool.
            ext.counts.likes += 1;
            let attempt = Attempt {
                stored: self.draw_repeat(),
                client,
                ..Attempt::first_of(&arrival)
            };
            self.dispatch(attempt, arrival.random_bits, (cpu, overhead, idle));
            return;
        }
        let job = Job {
            client,
            repeat: self.draw_repeat(),
            ..Job::new(arrival, Kind::Update)
        };
        self.arrive(job, cpu, overhead, idle);
    }

    /// Sends one request to the database now, with its deadline when the client has one.
    pub(super) fn send_attempt(&mut self, attempt: Attempt, random_bits: u64) -> Option<u32> {
        let machine = self.draw_machine();
        self.dispatch(attempt, random_bits, machine)
    }

    /// Sends one request to the database now, with its machine draws (CPU, the time outside
    /// the database, and whether it goes out on an idle connection) already made, and its
    /// deadline when the client has one. Returns the job, unless the run is saturated.
    pub(super) fn dispatch(
        &mut self,
        attempt: Attempt,
        random_bits: u64,
        (cpu, overhead, idle): (SimTime, SimTime, bool),
    ) -> Option<u32> {
        let now = self.now;
        let arrival = Arrival {
            at: now,
            hold: attempt.hold,
            random_bits,
            user: attempt.user,
            key: attempt.key,
            endpoint: 0,
        };
        let job = Job {
            amount: attempt.amount,
            retry: attempt.retry,
            is_like: attempt.is_like,
            executed_before: attempt.executed_before,
            repeat: attempt.stored,
            client: attempt.client,
            ..Job::new(arrival, Kind::Update)
        };
        let ext = self.ext.as_mut().expect("attempts come from behaviours");
        let timeout = ext.features.client.as_ref().map(|client| client.timeout);
        if attempt.is_like {
            ext.counts.attempts += 1;
        }
        let id = self.arrive(job, cpu, overhead, idle)?;
        if let Some(timeout) = timeout.filter(|_| attempt.is_like) {
            let generation = self.jobs[id as usize].generation;
            self.sends.schedule_keeping_next(
                now.saturating_add(timeout),
                Step::Client(ClientEvent::Deadline(id, generation)),
            );
        }
        Some(id)
    }

    /// A client's deadline passed: an update still waiting for a connection or its row has
    /// timed out (its retry takes the place `retry_place` among the clients' events).
    fn deadline(&mut self, id: u32, generation: u32, retry_place: u64) {
        let job = self.jobs[id as usize];
        if job.generation != generation || job.stage == Stage::Holding {
            return;
        }
        let ext = self.ext.as_mut().expect("deadlines come from [client]");
        let client = ext.features.client.expect("deadlines come from [client]");
        ext.counts.timeouts += 1;
        self.jobs[id as usize].timed_out = true;
        if client.on_timeout == OnTimeout::Orphan {
            // The client gives up; the update stays in line and runs for nobody (its commit
            // answers no closed-loop client: the retry carries it). With the likes table it
            // will store the like before any retry can (it is ahead of it in its partition's
            // line), so the retry is a repeat.
            self.jobs[id as usize].client = NONE;
            let attempt = Attempt {
                executed_before: true,
                stored: self.likes.is_some(),
                ..attempt_of(&job)
            };
            self.fail(attempt, retry_place);
            return;
        }
        let on_likes_path =
            self.likes.is_some() && !matches!(job.stage, Stage::Connecting | Stage::Preparing);
        let stored = on_likes_path && self.likes_cancel(id);
        match job.stage {
            Stage::Connecting => {
                if let Some(pool) = self.pool.as_mut() {
                    pool.withdraw(id, &mut self.links);
                }
            }
            // Leaves when its insert ends (its connection with it), answering nobody: its
            // client is told now.
            Stage::InsertHolding => self.jobs[id as usize].client = NONE,
            // Leaves when its request's CPU ends (its connection with it).
            Stage::Preparing => self.jobs[id as usize].abandoned = true,
            // Between two skip-locked tries it is in no line.
            Stage::Trying => {
                if job.connected {
                    self.release_connection();
                }
            }
            Stage::Inserting => {
                if job.connected {
                    self.release_connection();
                }
            }
            _ => {
                self.locks
                    .withdraw(job.arrival.key, job.row, id, &mut self.links);
                if job.connected {
                    self.release_connection();
                }
            }
        }
        if job.in_backlog {
            self.backlog -= 1;
            self.jobs[id as usize].in_backlog = false;
        }
        self.series.forget_late_arrival(job.window);
        if !matches!(job.stage, Stage::InsertHolding | Stage::Preparing) {
            self.free(id);
        }
        let attempt = Attempt {
            stored,
            ..attempt_of(&job)
        };
        self.fail(attempt, retry_place);
    }

    /// The like of `attempt` failed for its client now: retry after a jittered backoff (in
    /// `place` among the clients' events), or give up for good — a closed-loop client then
    /// thinks and sends its next like.
    fn fail(&mut self, attempt: Attempt, place: u64) {
        let ext = self.ext.as_mut().expect("failures come from [client]");
        if let Some((retry, jitter)) = ext.retry_of(attempt) {
            let index = ext.park(retry);
            self.sends.schedule_in_place(
                self.now.saturating_add(jitter),
                place,
                Step::Client(ClientEvent::Retry(index)),
            );
        } else if attempt.client != NONE {
            self.client_done(attempt.client, self.now);
        }
    }

    /// A retry falls due; after the horizon it stays pending (no update arrives then).
    fn retry(&mut self, index: u32) {
        if self.now >= self.config.horizon {
            return;
        }
        let ext = self.ext.as_mut().expect("retries come from [client]");
        let attempt = ext.unpark(index);
        let random_bits = ext.slot_rng.next_u64();
        self.send_attempt(attempt, random_bits);
    }
}
