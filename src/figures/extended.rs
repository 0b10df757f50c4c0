//! The figures of timeouts, retries, batching and the connection pool for one shard count:
//! means over replications of the counts, and pooled waits. Shared by the CSV files, the
//! terminal, the report page and the charts.

use crate::model::{ExtendedRun, ShardRun};
use crate::scenario::Scenario;
use crate::stats::replications::mean_by;
use crate::stats::{WaitStats, WaitSummary};

/// What clients experienced (means over replications; whole simulated period).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClientSummary {
    /// Original likes.
    pub(crate) likes: f64,
    /// Attempts, retries included.
    pub(crate) attempts: f64,
    /// Attempts that waited past the timeout.
    pub(crate) timeouts: f64,
    /// Likes that failed for the user after their last retry.
    pub(crate) failed: f64,
    /// Likes whose client got a success.
    pub(crate) succeeded: f64,
    /// Likes with a retry still scheduled at the end.
    pub(crate) pending: f64,
    /// Executions of a like beyond its first.
    pub(crate) duplicates: f64,
    /// Final count minus the likes that ran.
    pub(crate) drift: f64,
    /// Attempts per original like.
    pub(crate) amplification: f64,
    /// Successful likes per second.
    pub(crate) goodput_per_s: f64,
    /// Attempts per second.
    pub(crate) attempts_per_s: f64,
    /// Original likes per second.
    pub(crate) likes_per_s: f64,
}

/// What write batching did (means over replications; whole simulated period).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchSummary {
    /// Likes that reached an app server.
    pub(crate) likes: f64,
    /// Flush updates sent to the database.
    pub(crate) db_writes: f64,
    /// Database writes per second.
    pub(crate) db_writes_per_s: f64,
    /// Likes per second.
    pub(crate) likes_per_s: f64,
    /// Likes carried by flushes.
    pub(crate) flushed: f64,
    /// Likes lost in crashes.
    pub(crate) lost: f64,
    /// Likes still in memory at the end.
    pub(crate) pending: f64,
    /// Likes held in memory, time-averaged.
    pub(crate) at_risk_mean: f64,
    /// Most likes held in memory at once.
    pub(crate) at_risk_max: f64,
    /// Delay from a like to its flush's commit (all replications pooled).
    pub(crate) delay: WaitSummary,
}

/// What the connection pool did (waits pooled over replications; measured period).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PoolSummary {
    /// Likes' waits for a connection.
    pub(crate) like_wait: WaitSummary,
    /// Every neighbour request's wait for a connection.
    pub(crate) neighbour_wait: WaitSummary,
    /// Each neighbour endpoint's name, requests and waits.
    pub(crate) neighbours: Vec<(String, WaitSummary)>,
}

/// What the read path did (means over replications; measured period).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReadSummary {
    /// Read requests per second (each reads `feed_size` keys).
    pub(crate) requests_per_s: f64,
    /// Rows read per second.
    pub(crate) rows_touched_per_s: f64,
    /// Rows read per key read.
    pub(crate) rows_per_read: f64,
    /// Share of key reads answered from the cached total.
    pub(crate) cache_hit_ratio: f64,
    /// How many likes the shown count trailed the true one (pooled; counts, not ns).
    pub(crate) staleness_likes: WaitSummary,
    /// How old the shown count was (pooled).
    pub(crate) staleness: WaitSummary,
    /// Locking reads' waits for the rows (pooled).
    pub(crate) lock_wait: WaitSummary,
}

/// The optional behaviours' figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExtendedSummary {
    /// Timeouts and retries.
    pub(crate) client: Option<ClientSummary>,
    /// Write batching.
    pub(crate) batching: Option<BatchSummary>,
    /// The connection pool.
    pub(crate) pool: Option<PoolSummary>,
    /// The read path.
    pub(crate) reads: Option<ReadSummary>,
}

/// The figures of `runs` (one shard count's replications), when the scenario has any of the
/// behaviours.
pub fn summarize_extended(scenario: &Scenario, runs: &[ShardRun]) -> Option<ExtendedSummary> {
    let extended: Vec<&ExtendedRun> = runs
        .iter()
        .filter_map(|run| run.extended.as_ref())
        .collect();
    let first = extended.first()?;
    let duration_s = scenario.duration_s();
    Some(ExtendedSummary {
        client: first
            .client
            .map(|_| summarize_clients(&extended, duration_s)),
        batching: first
            .batching
            .as_ref()
            .map(|_| summarize_batching(&extended, duration_s)),
        pool: first
            .pool
            .as_ref()
            .map(|pool| summarize_pool(&extended, pool)),
        reads: first
            .reads
            .as_ref()
            .map(|_| summarize_reads(scenario, &extended)),
    })
}

/// The mean over the replications of `value`, a replication without it counting 0.
fn mean_over(extended: &[&ExtendedRun], value: impl Fn(&ExtendedRun) -> Option<f64>) -> f64 {
    mean_by(extended, |run| value(run).unwrap_or(0.0))
}

/// Timeouts and retries, averaged over the replications.
fn summarize_clients(extended: &[&ExtendedRun], duration_s: f64) -> ClientSummary {
    let field = |get: fn(&crate::model::clients::ClientCounts) -> u64| {
        mean_over(extended, |run| run.client.map(|c| get(&c.counts) as f64))
    };
    let likes = field(|c| c.likes);
    let attempts = field(|c| c.attempts);
    let succeeded = field(|c| c.succeeded);
    ClientSummary {
        likes,
        attempts,
        timeouts: field(|c| c.timeouts),
        failed: field(|c| c.failed),
        succeeded,
        pending: field(|c| c.pending),
        duplicates: field(|c| c.duplicates),
        drift: mean_over(extended, |run| run.client.map(|c| c.drift as f64)),
        amplification: if likes > 0.0 { attempts / likes } else { 0.0 },
        goodput_per_s: succeeded / duration_s,
        attempts_per_s: attempts / duration_s,
        likes_per_s: likes / duration_s,
    }
}

/// Write batching, averaged over the replications (the delays pooled).
fn summarize_batching(extended: &[&ExtendedRun], duration_s: f64) -> BatchSummary {
    let field = |get: fn(&crate::model::BatchRun) -> f64| {
        mean_over(extended, |run| run.batching.as_ref().map(get))
    };
    let mut delays = WaitStats::new();
    for batch in extended.iter().filter_map(|run| run.batching.as_ref()) {
        delays += &batch.delays;
    }
    let likes = field(|b| b.likes as f64);
    let db_writes = field(|b| b.db_writes as f64);
    BatchSummary {
        likes,
        db_writes,
        db_writes_per_s: db_writes / duration_s,
        likes_per_s: likes / duration_s,
        flushed: field(|b| b.flushed_likes as f64),
        lost: field(|b| b.lost as f64),
        pending: field(|b| b.pending as f64),
        at_risk_mean: field(|b| b.at_risk_mean),
        at_risk_max: field(|b| b.at_risk_max as f64),
        delay: delays.summary(),
    }
}

/// The pool's waits, pooled over the replications: the likes', every neighbour's, and each
/// neighbour's (named as in `first`).
fn summarize_pool(extended: &[&ExtendedRun], first: &crate::model::PoolRun) -> PoolSummary {
    let mut like_waits = WaitStats::new();
    let mut all = WaitStats::new();
    let mut each: Vec<WaitStats> = vec![WaitStats::new(); first.neighbour_waits.len()];
    for pool in extended.iter().filter_map(|run| run.pool.as_ref()) {
        like_waits += &pool.like_waits;
        for (neighbour, (_, waits)) in each.iter_mut().zip(&pool.neighbour_waits) {
            *neighbour += waits;
            all += waits;
        }
    }
    PoolSummary {
        like_wait: like_waits.summary(),
        neighbour_wait: all.summary(),
        neighbours: first
            .neighbour_waits
            .iter()
            .zip(&each)
            .map(|((name, _), waits)| (name.clone(), waits.summary()))
            .collect(),
    }
}

/// The read path, pooled over the replications.
fn summarize_reads(scenario: &Scenario, extended: &[&ExtendedRun]) -> ReadSummary {
    let feed = f64::from(scenario.features().reads.map_or(1, |r| r.feed_size));
    let (mut likes, mut ages, mut locks) = (WaitStats::new(), WaitStats::new(), WaitStats::new());
    let (mut key_reads, mut rows, mut hits) = (0u64, 0u64, 0u64);
    for r in extended.iter().filter_map(|run| run.reads.as_ref()) {
        likes += &r.staleness_likes;
        ages += &r.staleness;
        locks += &r.lock_waits;
        key_reads += r.key_reads;
        rows += r.rows_touched;
        hits += r.cache_hits;
    }
    let measured_s = scenario.measured_duration_s() * extended.len() as f64;
    let per_read = |value: u64| {
        if key_reads > 0 {
            value as f64 / key_reads as f64
        } else {
            0.0
        }
    };
    ReadSummary {
        requests_per_s: key_reads as f64 / feed / measured_s,
        rows_touched_per_s: rows as f64 / measured_s,
        rows_per_read: per_read(rows),
        cache_hit_ratio: per_read(hits),
        staleness_likes: likes.summary(),
        staleness: ages.summary(),
        lock_wait: locks.summary(),
    }
}
