//! The likes table in front of the counter rows (`[likes_table]`): a like first records
//! (post, user) in its partition of the likes table — `INSERT … ON CONFLICT DO NOTHING`, a
//! first-come, first-served insert path per partition — then adds one to a counter row.
//!
//! - Partitioned by post, every like of one post takes the same partition; by (post, user)
//!   they spread over all of them.
//! - The primary key rejects a repeat: a double tap (`[users] repeat_fraction`), or a retry
//!   whose like an earlier attempt stored. A rejected like adds nothing.
//! - With `same_transaction` the insert and the increment commit together: the partition is
//!   held until the row's commit, and a failure between the steps rolls both back (the like
//!   is lost, the count stays true). Without it the insert commits at once: a failure between
//!   the steps (`step_failure_rate`), or a client that cancels after the insert, leaves a like
//!   stored but never counted — drift — until `[reconcile]` recounts the post.
//!
//! The state here is bounded by keys and partitions, never by likes.

use rand::RngExt;

use super::hold::HoldDist;
use super::random::{SimRng, Stream, stream_rng};
use super::resources::Links;
use super::rows::mix64;
use super::servers::Servers;
use crate::stats::WaitStats;
use crate::time::SimTime;

/// How a like's row of the likes table finds its partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PartitionBy {
    /// By the post: one post's likes all land in one partition.
    Post,
    /// By a hash of (post, user): one post's likes spread over every partition.
    PostUser,
}

impl PartitionBy {
    /// The scenario's name for it.
    pub fn name(self) -> &'static str {
        match self {
            PartitionBy::Post => "post",
            PartitionBy::PostUser => "post_user",
        }
    }
}

/// A recount of recently active posts (`[reconcile]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reconcile {
    /// A pass starts every this often (the next one waits for a pass still running).
    pub(crate) every: SimTime,
    /// Likes-table rows the recount reads a second: a post's recount takes its stored likes
    /// ÷ this.
    pub(crate) rows_per_s: f64,
}

impl Reconcile {
    /// How long recounting `rows` likes takes, ns (at least 1).
    pub fn scan_ns(&self, rows: u64) -> SimTime {
        ((rows as f64 / self.rows_per_s) * 1e9).ceil().max(1.0) as SimTime
    }
}

/// The likes table of a scenario, resolved.
#[derive(Debug, Clone)]
pub struct LikesPlan {
    /// Partitions of the likes table.
    pub(crate) partitions: u32,
    /// How a like finds its partition.
    pub(crate) partition_by: PartitionBy,
    /// How long an insert holds its partition's insert path.
    pub(crate) insert_hold: HoldDist,
    /// Whether the insert and the increment share one transaction.
    pub(crate) same_transaction: bool,
    /// Chance that the app fails between the insert and the increment.
    pub(crate) step_failure_rate: f64,
    /// Chance that a like is a double tap of an earlier one by the same user.
    pub(crate) repeat_fraction: f64,
    /// The reconciliation job, if any.
    pub(crate) reconcile: Option<Reconcile>,
}

impl LikesPlan {
    /// The partition of `key`'s like by `user`.
    pub fn partition(&self, key: u32, user: u64) -> u32 {
        let hash = match self.partition_by {
            PartitionBy::Post => mix64(u64::from(key) ^ 0x005e_ed0f_1ce5),
            PartitionBy::PostUser => mix64(mix64(u64::from(key)) ^ user),
        };
        super::random::bounded(hash, u64::from(self.partitions)) as u32
    }
}

impl LikesPlan {
    /// The busiest partition's load at the peak — likes a second × how long each holds it
    /// (its insert, and in one transaction the row's hold `row_hold_ns` too, waits aside):
    /// at 1 or more its line grows without bound whatever the shard count. By post the busiest
    /// key's likes (`hot_per_s`) all take one partition; by (post, user) every partition takes
    /// an equal share of all likes (`total_per_s`).
    pub fn hot_partition_load(&self, hot_per_s: f64, total_per_s: f64, row_hold_ns: f64) -> f64 {
        let rate = match self.partition_by {
            PartitionBy::Post => hot_per_s,
            PartitionBy::PostUser => total_per_s / f64::from(self.partitions),
        };
        let held_ns = self.insert_hold.mean_ns()
            + if self.same_transaction {
                row_hold_ns
            } else {
                0.0
            };
        rate * held_ns / 1e9
    }
}

/// How every attempt that reached the likes table ended (attempts = counted + rejected +
/// crashed + withdrawn + in flight).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LikeOutcomes {
    /// Attempts that took the insert path (likes and their retries, repeats included).
    pub attempts: u64,
    /// Of them, double taps (`repeat_fraction`).
    pub repeats: u64,
    /// Likes newly stored in the likes table.
    pub stored: u64,
    /// Increments committed for a stored like.
    pub counted: u64,
    /// Stored likes whose increment will never come (a failure between the steps, or a
    /// cancel after a separate insert committed): the drift before reconciliation.
    pub lost: u64,
    /// Attempts the primary key rejected: repeats, and retries of a like already stored.
    pub rejected: u64,
    /// Attempts that failed between the two steps (`step_failure_rate`).
    pub crashed: u64,
    /// Attempts their client cancelled (a timeout) before they committed.
    pub withdrawn: u64,
    /// Attempts still in the database at the end (saturated runs).
    pub in_flight: u64,
}

/// What the likes table did for one shard count.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LikesRun {
    /// How each attempt ended.
    pub outcomes: LikeOutcomes,
    /// Waits for the insert path, ns (measured attempts).
    pub insert_waits: WaitStats,
    /// Inserts (measured) per partition.
    pub partition_inserts: Vec<u64>,
    /// The busiest partition's share of the inserts.
    pub hot_partition_share: f64,
    /// The busiest partition's busy fraction over the measured period.
    pub hot_partition_utilization: f64,
    /// Stored likes the counts miss for good at the end (lost − reconciled), all posts.
    pub drift_final: u64,
    /// The most drift at any instant.
    pub drift_max: u64,
    /// Likes the reconciliation added back.
    pub reconciled: u64,
    /// Recounts of one post each.
    pub recounts: u64,
}

/// One post's ledger.
#[derive(Debug, Clone, Copy, Default)]
struct PostLedger {
    stored: u64,
    lost: u64,
    reconciled: u64,
    /// Whether a like was stored since its last recount began.
    active: bool,
}

impl PostLedger {
    fn drift(&self) -> u64 {
        self.lost - self.reconciled
    }
}

/// A recount in progress: the post, and its drift when the recount read it.
#[derive(Debug, Clone, Copy)]
pub struct Recount {
    /// Dense key of the post.
    pub(crate) key: u32,
    /// The drift it read.
    pub(crate) drift: u64,
}

/// The likes table's state during a run.
#[derive(Debug)]
pub struct LikesTable {
    plan: std::sync::Arc<LikesPlan>,
    partitions: Vec<Servers>,
    inserts: Vec<u64>,
    busy_ns: Vec<u128>,
    /// When each partition's current holder took it.
    held_since: Vec<SimTime>,
    /// The recount in progress.
    recount: Option<Recount>,
    repeat_draws: SimRng,
    insert_draws: SimRng,
    failure_draws: SimRng,
    posts: Vec<PostLedger>,
    drift: u64,
    drift_max: u64,
    /// Posts of the pass in progress still to recount, last first.
    pass: Vec<u32>,
    reconciled: u64,
    recounts: u64,
    outcomes: LikeOutcomes,
    insert_waits: WaitStats,
}

impl LikesTable {
    /// An empty likes table whose draws come from the streams of `seed`.
    pub fn new(plan: std::sync::Arc<LikesPlan>, seed: u64) -> Self {
        let partitions = plan.partitions as usize;
        LikesTable {
            partitions: (0..partitions).map(|_| Servers::new(1)).collect(),
            inserts: vec![0; partitions],
            busy_ns: vec![0; partitions],
            held_since: vec![0; partitions],
            recount: None,
            repeat_draws: stream_rng(seed, Stream::Repeats),
            insert_draws: stream_rng(seed, Stream::Inserts),
            failure_draws: stream_rng(seed, Stream::StepFailures),
            posts: Vec::new(),
            drift: 0,
            drift_max: 0,
            pass: Vec::new(),
            reconciled: 0,
            recounts: 0,
            outcomes: LikeOutcomes::default(),
            insert_waits: WaitStats::new(),
            plan,
        }
    }

    /// The plan.
    pub fn plan(&self) -> &LikesPlan {
        &self.plan
    }

    /// Whether a new like is a double tap of an earlier one (one draw per like, in arrival
    /// order, so every shard count sees the same repeats).
    pub fn draw_repeat(&mut self) -> bool {
        let repeat = self.plan.repeat_fraction > 0.0
            && self.repeat_draws.random::<f64>() < self.plan.repeat_fraction;
        self.outcomes.repeats += u64::from(repeat);
        repeat
    }

    /// Whether the app fails between the insert and the increment of this attempt.
    pub fn draw_step_failure(&mut self) -> bool {
        self.plan.step_failure_rate > 0.0
            && self.failure_draws.random::<f64>() < self.plan.step_failure_rate
    }

    /// An attempt enters the insert path of `partition`: `true` when it has the path now.
    pub fn request(&mut self, partition: u32, job: u32, links: &mut Links) -> bool {
        self.outcomes.attempts += 1;
        self.partitions[partition as usize].request(job, links)
    }

    /// A waiting attempt leaves `partition`'s line.
    pub fn withdraw(&mut self, partition: u32, job: u32, links: &mut Links) {
        self.partitions[partition as usize].withdraw(job, links);
    }

    /// An attempt takes `partition` at `now` after waiting `wait` (recorded when `measured`);
    /// returns how long its insert holds the path.
    pub fn take(&mut self, partition: u32, now: SimTime, wait: SimTime, measured: bool) -> SimTime {
        self.held_since[partition as usize] = now;
        if measured {
            self.insert_waits.record(wait);
            self.inserts[partition as usize] += 1;
        }
        self.plan.insert_hold.sample(&mut self.insert_draws)
    }

    /// `partition` is free again at `now`; `measured` gives the part of `[from, to)` in the
    /// measured period. Returns the attempt that takes it next.
    pub fn release(
        &mut self,
        partition: u32,
        now: SimTime,
        measured: impl Fn(SimTime, SimTime) -> u128,
        links: &mut Links,
    ) -> Option<u32> {
        self.busy_ns[partition as usize] += measured(self.held_since[partition as usize], now);
        self.partitions[partition as usize].release(links)
    }

    /// The primary key rejected an attempt.
    pub fn reject(&mut self) {
        self.outcomes.rejected += 1;
    }

    /// An attempt failed between its steps.
    pub fn crash(&mut self) {
        self.outcomes.crashed += 1;
    }

    /// A client cancelled an attempt before it committed.
    pub fn withdrawn(&mut self) {
        self.outcomes.withdrawn += 1;
    }

    /// A like of `key` is now stored in the likes table.
    pub fn store(&mut self, key: u32) {
        self.outcomes.stored += 1;
        let post = self.post(key);
        post.stored += 1;
        post.active = true;
    }

    /// A stored like of `key` is now counted.
    pub fn count(&mut self) {
        self.outcomes.counted += 1;
    }

    /// A stored like of `key` will never be counted: the count drifts by one more.
    pub fn lose(&mut self, key: u32) {
        self.outcomes.lost += 1;
        self.post(key).lost += 1;
        self.drift += 1;
        self.drift_max = self.drift_max.max(self.drift);
    }

    /// Stored likes the counts miss for good now, over every post.
    pub fn drift(&self) -> u64 {
        self.drift
    }

    fn post(&mut self, key: u32) -> &mut PostLedger {
        let index = key as usize;
        if index >= self.posts.len() {
            self.posts.resize(index + 1, PostLedger::default());
        }
        &mut self.posts[index]
    }

    /// Likes the reconciliation has added back so far.
    pub fn reconciled(&self) -> u64 {
        self.reconciled
    }

    /// Whether a reconciliation pass is running.
    pub fn pass_running(&self) -> bool {
        self.recount.is_some()
    }

    /// A reconciliation pass starts: it will recount every post active since its last recount.
    /// Returns `false` when none is.
    pub fn start_pass(&mut self) -> bool {
        self.pass.clear();
        for (key, post) in self.posts.iter().enumerate().rev() {
            if post.active {
                self.pass.push(key as u32);
            }
        }
        !self.pass.is_empty()
    }

    /// The next post of the pass starts its recount now; returns how long it takes.
    pub fn next_recount(&mut self) -> Option<SimTime> {
        let reconcile = self.plan.reconcile?;
        let key = self.pass.pop()?;
        let post = &mut self.posts[key as usize];
        post.active = false;
        self.recount = Some(Recount {
            key,
            drift: post.drift(),
        });
        Some(reconcile.scan_ns(post.stored))
    }

    /// The recount in progress ends: the count of its post gains the drift it read, which is
    /// returned with the post.
    pub fn finish_recount(&mut self) -> Option<Recount> {
        let recount = self.recount.take()?;
        self.posts[recount.key as usize].reconciled += recount.drift;
        self.drift -= recount.drift;
        self.reconciled += recount.drift;
        self.recounts += 1;
        Some(recount)
    }

    /// The figures, with `in_flight` attempts still in the database and `measured_ns` of
    /// measured period.
    pub fn finish(mut self, in_flight: u64, measured_ns: SimTime) -> LikesRun {
        self.outcomes.in_flight = in_flight;
        let total: u64 = self.inserts.iter().sum();
        let hottest = self.inserts.iter().copied().max().unwrap_or(0);
        let busiest = self.busy_ns.iter().copied().max().unwrap_or(0);
        LikesRun {
            outcomes: self.outcomes,
            insert_waits: self.insert_waits,
            hot_partition_share: if total == 0 {
                0.0
            } else {
                hottest as f64 / total as f64
            },
            hot_partition_utilization: busiest as f64 / measured_ns.max(1) as f64,
            partition_inserts: self.inserts,
            drift_final: self.drift,
            drift_max: self.drift_max,
            reconciled: self.reconciled,
            recounts: self.recounts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(partition_by: PartitionBy) -> LikesPlan {
        LikesPlan {
            partitions: 16,
            partition_by,
            insert_hold: HoldDist::Constant { hold_ns: 100_000 },
            same_transaction: false,
            step_failure_rate: 0.0,
            repeat_fraction: 0.0,
            reconcile: None,
        }
    }

    #[test]
    fn by_post_one_partition_by_post_user_all_of_them() {
        let by_post = plan(PartitionBy::Post);
        let first = by_post.partition(7, 0);
        assert!((0..10_000).all(|user| by_post.partition(7, user) == first));
        let spread = plan(PartitionBy::PostUser);
        let mut hits = [0u32; 16];
        for user in 0..16_000 {
            hits[spread.partition(7, user) as usize] += 1;
        }
        // 1,000 a partition expected; 5σ ≈ 150.
        assert!(hits.iter().all(|&h| (850..1150).contains(&h)), "{hits:?}");
    }

    #[test]
    fn a_recount_takes_the_drift_it_read() {
        let mut with_reconcile = plan(PartitionBy::Post);
        with_reconcile.reconcile = Some(Reconcile {
            every: 1,
            rows_per_s: 10.0,
        });
        let mut table = LikesTable::new(std::sync::Arc::new(with_reconcile), 1);
        for _ in 0..5 {
            table.store(3);
        }
        table.count();
        for _ in 0..4 {
            table.lose(3);
        }
        assert_eq!(table.drift(), 4);
        assert!(table.start_pass());
        let took = table.next_recount().expect("post 3 is active");
        assert_eq!(took, 500_000_000, "5 stored likes at 10 a second");
        table.store(3);
        table.lose(3);
        let recount = table.finish_recount().expect("a recount ran");
        assert_eq!((recount.key, recount.drift), (3, 4));
        assert_eq!(
            table.drift(),
            1,
            "the like lost during the recount is still missing"
        );
        assert!(table.start_pass(), "the post was active again");
    }
}
