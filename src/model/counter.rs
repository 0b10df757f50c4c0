//! [`ShardedCounter`]: the exact model as a small library API, keyed by strings.

use std::collections::HashMap;

use super::rows::{Policy, RowTable};
use crate::time::SimTime;

/// An increment arrived earlier than the previous increment of the same key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("increment of key {key:?} at {now} ns is before its previous increment at {previous} ns")]
pub struct TimeWentBackwards {
    /// The key.
    pub(crate) key: String,
    /// The rejected arrival time.
    pub(crate) now: SimTime,
    /// The key's previous arrival time.
    pub(crate) previous: SimTime,
}

/// A sharded counter: each key has `slots` rows; an increment takes the row that becomes free
/// earliest (lowest index on ties), starts at `max(now, free_at)`, holds the row for `hold`,
/// adds one, and returns its wait `start − now`.
#[derive(Debug, Clone)]
pub struct ShardedCounter {
    rows: RowTable,
    hold: SimTime,
    ids: HashMap<String, u32>,
    last_now: Vec<SimTime>,
}

impl ShardedCounter {
    /// A counter with `slots ≥ 1` rows per key, each update holding its row for `hold`.
    pub fn new(slots: u32, hold: SimTime) -> Self {
        ShardedCounter {
            rows: RowTable::new(slots, Policy::EarliestFree, 0),
            hold,
            ids: HashMap::new(),
            last_now: Vec::new(),
        }
    }

    /// Increments `key` at `now` and returns how long the update waited for its row.
    /// Each key's calls must come with non-decreasing `now`.
    pub fn increment(&mut self, key: &str, now: SimTime) -> Result<SimTime, TimeWentBackwards> {
        let id = self.id_of(key);
        let previous = self.last_now[id as usize];
        if now < previous {
            return Err(TimeWentBackwards {
                key: key.to_owned(),
                now,
                previous,
            });
        }
        self.last_now[id as usize] = now;
        let grant = self.rows.acquire(id, now, self.hold, 0, 0);
        Ok(grant.start - now)
    }

    /// The key's count: the sum of its rows, 0 for an unknown key.
    pub fn get(&self, key: &str) -> u64 {
        self.ids.get(key).map_or(0, |&id| self.rows.total(id))
    }

    fn id_of(&mut self, key: &str) -> u32 {
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = u32::try_from(self.ids.len()).expect("fewer than 2^32 keys");
        self.ids.insert(key.to_owned(), id);
        self.last_now.push(0);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::ms;

    #[test]
    fn rejects_time_going_backwards_for_one_key_only() {
        let mut counter = ShardedCounter::new(1, ms(1));
        counter.increment("p", ms(5)).unwrap();
        assert!(counter.increment("q", ms(0)).is_ok());
        let err = counter.increment("p", ms(4)).unwrap_err();
        assert_eq!(err.previous, ms(5));
        assert_eq!(counter.get("p"), 1);
    }
}
