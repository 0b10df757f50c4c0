//! Adaptive shard counts (seed 000: "start every counter with one shard and add shards only to
//! counters that get hot"). Every key starts with `start` rows. Its signal — the share of waits
//! above a target, or its utilization — is measured over fixed windows of simulated time; at
//! the end of a window whose signal crosses the threshold the key's row count is raised by
//! `factor` (up to `max`) and published, and writers, who cache the row count, use the new rows
//! only once their cache expires, `writer_cache_ttl` later. While a growth waits for the
//! writers' caches, the key does not grow again: its signal still reflects the old rows. New rows start at zero; rows are
//! never removed (shrinking needs moving counts between rows, and the seeds advise against it).

use crate::time::SimTime;

/// What makes a key grow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GrowWhen {
    /// The window's 99th-percentile wait exceeds this (more than 1% of its waits do).
    P99Wait(SimTime),
    /// The window's utilization (increments × mean hold ÷ (window × rows)) exceeds this.
    Utilization(f64),
}

/// `[adaptive]`: how keys grow their row counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptivePolicy {
    /// Rows a key starts with.
    pub start: u32,
    /// Most rows a key may have.
    pub max: u32,
    /// Growth factor (> 1); the new count is rounded up.
    pub factor: f64,
    /// The signal and its threshold.
    pub grow_when: GrowWhen,
    /// Length of a signal window.
    pub window: SimTime,
    /// Delay from publishing a new row count to writers using it.
    pub cache_ttl: SimTime,
    /// Mean hold, for the utilization signal, in ns.
    pub mean_hold_ns: f64,
}

/// Fewest increments in a window for the p99 signal to count (fewer cannot show a p99).
const MIN_SAMPLES: u32 = 100;

/// One growth of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Growth {
    /// Dense key id.
    pub(crate) key: u32,
    /// When the new row count was published (the end of the signal window).
    pub published: SimTime,
    /// When writers started using it (publication + the writers' cache time).
    pub effective: SimTime,
    /// Rows before.
    pub from: u32,
    /// Rows after.
    pub to: u32,
}

/// A key's signal window and its published row count.
#[derive(Debug, Clone, Copy)]
struct KeySignal {
    window_end: SimTime,
    count: u32,
    over: u32,
    /// The row count writers use now.
    rows: u32,
    /// The latest published row count (≥ `rows`).
    published: u32,
    /// When writers start using `published`.
    effective_at: SimTime,
}

/// The adaptive state of every key, indexed like the rows (first-touch order).
#[derive(Debug, Clone)]
pub struct Adaptive {
    policy: AdaptivePolicy,
    keys: Vec<KeySignal>,
    growths: Vec<Growth>,
}

impl Adaptive {
    /// No keys yet.
    pub fn new(policy: AdaptivePolicy) -> Self {
        Adaptive {
            policy,
            keys: Vec::new(),
            growths: Vec::new(),
        }
    }

    /// The rows writers of the key in `block` use at `now`, if that is more than it has:
    /// a published growth whose cache delay has passed.
    #[inline]
    pub fn due_rows(&mut self, block: usize, now: SimTime) -> Option<u32> {
        let key = self.keys.get_mut(block)?;
        if key.published > key.rows && now >= key.effective_at {
            key.rows = key.published;
            return Some(key.rows);
        }
        None
    }

    /// Counts a wait of `key` (rows in `block`) at `now`, closing its signal window — and
    /// publishing a growth — when `now` has passed the window's end.
    pub fn record(&mut self, block: usize, key: u32, now: SimTime, wait: SimTime) {
        let window = self.policy.window;
        // A key can get its rows before its first wait is known (see the key tracker).
        while block >= self.keys.len() {
            self.keys.push(KeySignal {
                window_end: (now / window + 1) * window,
                count: 0,
                over: 0,
                rows: self.policy.start,
                published: self.policy.start,
                effective_at: 0,
            });
        }
        if now >= self.keys[block].window_end {
            self.close_window(block, key);
            let signal = &mut self.keys[block];
            signal.window_end = (now / window + 1) * window;
            signal.count = 0;
            signal.over = 0;
        }
        let signal = &mut self.keys[block];
        signal.count += 1;
        if let GrowWhen::P99Wait(target) = self.policy.grow_when {
            signal.over += u32::from(wait > target);
        }
    }

    fn close_window(&mut self, block: usize, key: u32) {
        let policy = self.policy;
        let signal = &mut self.keys[block];
        let crossed = match policy.grow_when {
            GrowWhen::P99Wait(_) => signal.count >= MIN_SAMPLES && signal.over * 100 > signal.count,
            GrowWhen::Utilization(limit) => {
                let busy = f64::from(signal.count) * policy.mean_hold_ns;
                busy / (policy.window as f64 * f64::from(signal.published)) > limit
            }
        };
        // No new growth while writers have yet to see the last one: the signal still
        // reflects the old row count.
        if !crossed || signal.published >= policy.max || signal.published > signal.rows {
            return;
        }
        let to = ((f64::from(signal.published) * policy.factor).ceil() as u32)
            .clamp(signal.published + 1, policy.max);
        let published = signal.window_end;
        let effective = published.saturating_add(policy.cache_ttl);
        self.growths.push(Growth {
            key,
            published,
            effective,
            from: signal.published,
            to,
        });
        signal.published = to;
        signal.effective_at = effective;
    }

    /// Every growth so far, in the order they were published per key.
    pub fn growths(&self) -> &[Growth] {
        &self.growths
    }
}
