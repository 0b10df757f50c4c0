//! The clients' behaviours on the exact core — timeouts and retries, batching, the pool, the
//! read path — deciding each at the arrival, since a start is known there (their state and
//! figures are [`super::extended::Extension`]'s, shared with the queued row stage).

use rand::Rng;

use super::clients::{Attempt, OnTimeout, READ_ENDPOINT, ReadMode};
use super::config::{Arrival, Observer};
use super::engine::{Engine, Event};
use super::extended::{ExtendedRun, Extension};
use super::rows::Grant;
use super::time::SimTime;

impl<O: Observer> Engine<O> {
    /// Likes held in batching servers' memory now (0 without batching). Windows close only
    /// between events, never while the extension is taken out by the extended path.
    pub(super) fn at_risk(&self) -> u64 {
        self.ext.as_ref().map_or(0, |ext| ext.at_risk)
    }

    /// Schedules every batching server's first flush and every crash.
    pub(super) fn schedule_batching(&mut self) {
        let Some(batching) = self.ext.as_ref().and_then(|e| e.features.batching.clone()) else {
            return;
        };
        for server in 0..batching.servers {
            let first = batching.flush * u64::from(server + 1) / u64::from(batching.servers);
            if first < self.config.horizon {
                self.calendar.schedule(first, Event::Flush(server));
            }
        }
        for crash in batching
            .crashes
            .iter()
            .filter(|c| c.at < self.config.horizon)
        {
            self.calendar
                .schedule(crash.at, Event::Crash(crash.servers));
        }
    }

    /// An arrival when some behaviour is on: a read, a neighbour's request, a like for a
    /// batching server, or a like's first attempt.
    pub(super) fn extended_arrival(&mut self, arrival: &Arrival) {
        // The extension is taken out while it works, so that it and the engine's other state
        // can be borrowed apart; it is always put back.
        let mut ext = self.ext.take().expect("the extended path has an extension");
        if arrival.endpoint == READ_ENDPOINT {
            self.read(&mut ext, arrival.key);
        } else if arrival.endpoint > 0 {
            self.neighbour_request(&mut ext, usize::from(arrival.endpoint - 1), arrival.hold);
        } else if ext.features.batching.is_some() {
            self.batch_like(&mut ext, arrival);
        } else {
            ext.counts.likes += 1;
            let attempt = Attempt::first_of(arrival);
            self.attempt(&mut ext, attempt, arrival.random_bits);
        }
        self.ext = Some(ext);
    }

    /// A retry, flush or crash falling due.
    pub(super) fn handle_extended_event(&mut self, event: Event) {
        let mut ext = self.ext.take().expect("extended events have an extension");
        match event {
            Event::Retry(index) => {
                let attempt = ext.unpark(index);
                let random_bits = ext.slot_rng.next_u64();
                self.attempt(&mut ext, attempt, random_bits);
            }
            Event::Flush(server) => self.flush(&mut ext, server),
            Event::Crash(servers) => self.crash(&mut ext, servers),
            Event::Abandon => unreachable!("handled by the engine"),
        }
        self.ext = Some(ext);
    }

    /// Sends one request to the database now: it waits for a connection (with a pool) and
    /// then for its row. Returns the start of its hold if it runs.
    fn attempt(
        &mut self,
        ext: &mut Extension,
        attempt: Attempt,
        random_bits: u64,
    ) -> Option<SimTime> {
        let now = self.now;
        let connected = ext
            .pool
            .as_ref()
            .map_or(now, |pool| pool.earliest().max(now));
        let choice = self
            .rows
            .choose(attempt.key, connected, random_bits, attempt.user);
        let start = connected.max(choice.free_at);
        let client = ext.features.client;
        let deadline = client.as_ref().map(|c| now.saturating_add(c.timeout));
        let timed_out = deadline.is_some_and(|d| start > d);
        let measured = now >= self.config.measure_from;
        if attempt.is_like {
            ext.counts.attempts += 1;
            ext.counts.timeouts += u64::from(timed_out);
        }
        if let (true, Some(client), Some(deadline)) = (timed_out, &client, deadline)
            && client.on_timeout == OnTimeout::Cancel
        {
            // Abandoned at the deadline: it never takes its row, and holds a connection only
            // if it got one before giving up.
            if let Some(pool) = ext.pool.as_mut().filter(|_| connected <= deadline) {
                pool.take_earliest(deadline);
            }
            if measured {
                self.arrivals += 1;
            }
            self.enter_backlog(measured);
            self.calendar.schedule(deadline, Event::Abandon);
            self.fail(ext, attempt, deadline);
            return None;
        }
        let end = start.saturating_add(attempt.hold);
        if let Some(pool) = ext.pool.as_mut() {
            pool.take_earliest(end);
            if attempt.is_like && measured {
                ext.like_connection_waits.record(connected - now);
            }
        }
        let amount = ext.count_execution(&attempt, timed_out);
        self.rows.occupy(choice, end, amount);
        self.record_update(now, start, attempt.hold, measured);
        self.record_for_key(attempt.key, start - now, measured);
        let arrival = Arrival {
            at: now,
            hold: attempt.hold,
            random_bits,
            user: attempt.user,
            key: attempt.key,
            endpoint: 0,
        };
        let grant = Grant {
            slot: choice.slot,
            start,
            tries: choice.tries,
        };
        self.observer.on_increment(&arrival, &grant, &self.rows);
        if let (true, Some(deadline)) = (timed_out, deadline) {
            // An orphan: the update runs, but the client has already given up.
            self.fail(
                ext,
                Attempt {
                    executed_before: true,
                    ..attempt
                },
                deadline,
            );
        }
        Some(start)
    }

    /// The like of `attempt` failed for its client at `at`: retry after a jittered backoff,
    /// or give up for good.
    fn fail(&mut self, ext: &mut Extension, attempt: Attempt, at: SimTime) {
        if let Some((retry, jitter)) = ext.retry_of(attempt) {
            let index = ext.park(retry);
            self.calendar
                .schedule(at.saturating_add(jitter), Event::Retry(index));
        }
    }

    /// A read of `key`'s count: summed from its rows, or from a cached total rebuilt from the
    /// rows once it is older than the cache time.
    fn read(&mut self, ext: &mut Extension, key: u32) {
        let now = self.now;
        let measured = now >= self.config.measure_from;
        let reads = ext.features.reads.expect("reads come from [reads]");
        let true_count = self.rows.total(key);
        let rows = match self.rows.rows_of(key) {
            0 => self.config.adaptive.map_or(self.config.shards, |a| a.start),
            n => n,
        };
        let (shown, age) = match ext.cached_total(key, now, measured) {
            Some((built, value)) => (value, now - built),
            None => {
                // Summing the rows: a snapshot, or — with locks — after every row is free.
                let ready = if reads.lock {
                    self.rows.lock_all(key, now, reads.lock_hold)
                } else {
                    now
                };
                if measured {
                    ext.rows_touched += u64::from(rows);
                    if reads.lock {
                        ext.lock_waits.record(ready - now);
                    }
                }
                if reads.mode == ReadMode::Cached {
                    ext.read_cache.insert(key, (ready, true_count));
                }
                (true_count, 0)
            }
        };
        ext.record_read(true_count - shown, age, measured);
    }

    /// A neighbour endpoint's request: it waits only for a connection.
    fn neighbour_request(&mut self, ext: &mut Extension, index: usize, hold: SimTime) {
        let now = self.now;
        let measured = now >= self.config.measure_from;
        let pool = ext.pool.as_mut().expect("neighbours need a pool");
        let connected = pool.earliest().max(now);
        pool.take_earliest(connected.saturating_add(hold));
        if measured {
            ext.neighbour_waits[index].record(connected - now);
        }
    }

    /// A like lands in a random batching server's memory.
    fn batch_like(&mut self, ext: &mut Extension, arrival: &Arrival) {
        ext.batch_like(self.now, arrival.key, arrival.at);
    }

    /// A server sends one `+k` update per key it holds, and schedules its next flush.
    fn flush(&mut self, ext: &mut Extension, server: u32) {
        let now = self.now;
        let batching = ext
            .features
            .batching
            .clone()
            .expect("flushes come from batching");
        let memory = ext.take_memory(server, now);
        for group in memory.chunk_by(|a, b| a.0 == b.0) {
            let (attempt, random_bits) = ext.flush_update(server, group, &batching.hold);
            let hold = attempt.hold;
            let start = self
                .attempt(ext, attempt, random_bits)
                .expect("flushes have no timeout");
            let committed = start.saturating_add(hold);
            if committed <= self.config.horizon {
                for &(_, at) in group {
                    ext.delays.record(committed - at);
                }
            }
        }
        ext.return_memory(server, memory);
        let next = now.saturating_add(batching.flush);
        if next < self.config.horizon {
            self.calendar.schedule(next, Event::Flush(server));
        }
    }

    /// The first `servers` batching servers lose what they hold.
    fn crash(&mut self, ext: &mut Extension, servers: u32) {
        ext.crash(self.now, servers);
    }

    /// The figures of the behaviours that are on.
    pub(super) fn finish_extension(&mut self) -> Option<ExtendedRun> {
        let horizon = self.config.horizon;
        let rows_total = self.rows.grand_total();
        let ext = self.ext.as_mut()?;
        Some(ext.figures(horizon, rows_total))
    }
}
