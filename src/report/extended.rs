//! The figures of timeouts, retries, batching and the connection pool for one shard count:
//! means over replications of the counts, and pooled waits. Shared by the CSV files, the
//! terminal, the report page and the charts.

use crate::model::{ExtendedRun, ShardRun};
use crate::report::SummaryRow;
use crate::scenario::Scenario;
use crate::stats::{WaitStats, WaitSummary};
use crate::units::{self, count, duration as ms, quantity, quantity as compact};

/// What clients experienced (means over replications; whole simulated period).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClientSummary {
    /// Original likes.
    pub likes: f64,
    /// Attempts, retries included.
    pub attempts: f64,
    /// Attempts that waited past the timeout.
    pub timeouts: f64,
    /// Likes that failed for the user after their last retry.
    pub failed: f64,
    /// Likes whose client got a success.
    pub succeeded: f64,
    /// Likes with a retry still scheduled at the end.
    pub pending: f64,
    /// Executions of a like beyond its first.
    pub duplicates: f64,
    /// Final count minus the likes that ran.
    pub drift: f64,
    /// Attempts per original like.
    pub amplification: f64,
    /// Successful likes per second.
    pub goodput_per_s: f64,
    /// Attempts per second.
    pub attempts_per_s: f64,
    /// Original likes per second.
    pub likes_per_s: f64,
}

/// What write batching did (means over replications; whole simulated period).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchSummary {
    /// Likes that reached an app server.
    pub likes: f64,
    /// Flush updates sent to the database.
    pub db_writes: f64,
    /// Database writes per second.
    pub db_writes_per_s: f64,
    /// Likes per second.
    pub likes_per_s: f64,
    /// Likes carried by flushes.
    pub flushed: f64,
    /// Likes lost in crashes.
    pub lost: f64,
    /// Likes still in memory at the end.
    pub pending: f64,
    /// Likes held in memory, time-averaged.
    pub at_risk_mean: f64,
    /// Most likes held in memory at once.
    pub at_risk_max: f64,
    /// Delay from a like to its flush's commit (all replications pooled).
    pub delay: WaitSummary,
}

/// What the connection pool did (waits pooled over replications; measured period).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PoolSummary {
    /// Likes' waits for a connection.
    pub like_wait: WaitSummary,
    /// Every neighbour request's wait for a connection.
    pub neighbour_wait: WaitSummary,
    /// Each neighbour endpoint's name, requests and waits.
    pub neighbours: Vec<(String, WaitSummary)>,
}

/// What the read path did (means over replications; measured period).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReadSummary {
    /// Read requests per second (each reads `feed_size` keys).
    pub requests_per_s: f64,
    /// Rows read per second.
    pub rows_touched_per_s: f64,
    /// Rows read per key read.
    pub rows_per_read: f64,
    /// Share of key reads answered from the cached total.
    pub cache_hit_ratio: f64,
    /// How many likes the shown count trailed the true one (pooled; counts, not ns).
    pub staleness_likes: WaitSummary,
    /// How old the shown count was (pooled).
    pub staleness: WaitSummary,
    /// Locking reads' waits for the rows (pooled).
    pub lock_wait: WaitSummary,
}

/// The optional behaviours' figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExtendedSummary {
    /// Timeouts and retries.
    pub client: Option<ClientSummary>,
    /// Write batching.
    pub batching: Option<BatchSummary>,
    /// The connection pool.
    pub pool: Option<PoolSummary>,
    /// The read path.
    pub reads: Option<ReadSummary>,
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

/// The mean over the replications of `value` (of those that have it).
fn mean_over(extended: &[&ExtendedRun], value: impl Fn(&ExtendedRun) -> Option<f64>) -> f64 {
    extended.iter().filter_map(|run| value(run)).sum::<f64>() / extended.len() as f64
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
    let feed = f64::from(scenario.features.reads.map_or(1, |r| r.feed_size));
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

/// A small table of text cells for the terminal and the report page.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// What the table shows.
    pub title: String,
    /// Column headings.
    pub header: Vec<String>,
    /// One row per shard count.
    pub rows: Vec<Vec<String>>,
}

/// The tables of the behaviours the scenario has (none without them).
pub fn extended_tables(rows: &[SummaryRow]) -> Vec<Table> {
    let machine = || {
        rows.iter()
            .any(|row| row.machine.is_some())
            .then(|| machine_table(rows))
    };
    let likes = || {
        rows.iter()
            .any(|row| row.likes.is_some())
            .then(|| likes_table(rows))
    };
    [
        rows_table(rows),
        machine(),
        stalls_table(rows),
        likes(),
        responses_table(rows),
        client_table(rows),
        batching_table(rows),
        reads_table(rows),
        pool_table(rows),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A table titled `title` with columns `header` and one row per shard count.
fn table(title: &str, header: &[&str], rows: Vec<Vec<String>>) -> Table {
    Table {
        title: title.into(),
        header: header.iter().map(|h| (*h).to_owned()).collect(),
        rows,
    }
}

/// One row per shard count from the behaviours' figures — the shard count's label, then
/// `get`'s cells — or `None` when a shard count lacks them.
fn each_extended(
    rows: &[SummaryRow],
    get: &dyn Fn(&ExtendedSummary) -> Option<Vec<String>>,
) -> Option<Vec<Vec<String>>> {
    rows.iter()
        .map(|row| {
            let cells = get(row.extended.as_ref()?)?;
            Some(std::iter::once(row.label()).chain(cells).collect())
        })
        .collect()
}

/// The rows each shard count created (adaptive rows or many keys).
fn rows_table(rows: &[SummaryRow]) -> Option<Table> {
    if !rows.iter().any(|row| row.adaptive || row.keys_touched > 1) {
        return None;
    }
    let cells = |row: &SummaryRow| {
        vec![
            row.label(),
            count(row.keys_touched as u64),
            count(row.rows_total),
            count(u64::from(row.max_key_rows)),
        ]
    };
    Some(table(
        "rows created",
        &["shards", "keys touched", "rows", "most rows on one key"],
        rows.iter().map(cells).collect(),
    ))
}

/// Response times: a closed loop's clients', or open arrivals' on a machine.
fn responses_table(rows: &[SummaryRow]) -> Option<Table> {
    let responses = |row: &SummaryRow| {
        row.closed
            .map(|c| (Some(c.clients), c.responses))
            .or_else(|| row.machine.and_then(|m| m.responses).map(|r| (None, r)))
    };
    if !rows.iter().any(|row| responses(row).is_some()) {
        return None;
    }
    let title = if rows.iter().any(|row| row.closed.is_some()) {
        "closed-loop clients: response time (send → commit)"
    } else {
        "response time (send → commit acknowledged)"
    };
    let cells = |row: &SummaryRow| {
        let (clients, r) = responses(row)?;
        Some(vec![
            row.label(),
            clients.map_or_else(|| "open".into(), |c| count(u64::from(c))),
            compact(row.throughput_per_s),
            ms(r.mean_ns),
            ms(r.p50_ns),
            ms(r.p99_ns),
            ms(r.p999_ns),
        ])
    };
    Some(table(
        title,
        &[
            "shards",
            "clients",
            "throughput/s",
            "mean",
            "p50",
            "p99",
            "p99.9",
        ],
        rows.iter().filter_map(cells).collect(),
    ))
}

/// Timeouts and retries (`[client]`).
fn client_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells = each_extended(rows, &|e| {
        e.client.map(|c| {
            vec![
                format!("{:.2}", c.amplification),
                compact(c.timeouts),
                compact(c.failed),
                compact(c.succeeded),
                compact(c.pending),
                compact(c.duplicates),
                compact(c.drift),
                compact(c.goodput_per_s),
            ]
        })
    })?;
    Some(table(
        "clients: timeouts and retries",
        &[
            "shards",
            "attempts/like",
            "timeouts",
            "failed",
            "succeeded",
            "pending",
            "duplicates",
            "drift",
            "goodput/s",
        ],
        cells,
    ))
}

/// Write batching (`[batching]`).
fn batching_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells = each_extended(rows, &|e| {
        e.batching.as_ref().map(|b| {
            vec![
                compact(b.likes_per_s),
                compact(b.db_writes_per_s),
                ms(b.delay.p50_ns),
                ms(b.delay.p99_ns),
                compact(b.at_risk_mean),
                compact(b.at_risk_max),
                compact(b.lost),
            ]
        })
    })?;
    Some(table(
        "write batching",
        &[
            "shards",
            "likes/s",
            "db writes/s",
            "count delay p50",
            "p99",
            "at risk mean",
            "at risk max",
            "lost",
        ],
        cells,
    ))
}

/// The read path (`[reads]`).
fn reads_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells = each_extended(rows, &|e| {
        e.reads.as_ref().map(|r| {
            vec![
                compact(r.requests_per_s),
                compact(r.rows_touched_per_s),
                compact(r.rows_per_read),
                format!("{:.3}", r.cache_hit_ratio),
                ms(r.staleness.mean_ns),
                ms(r.staleness.p99_ns),
                compact(r.staleness_likes.mean_ns as f64),
                compact(r.staleness_likes.p99_ns as f64),
            ]
        })
    })?;
    Some(table(
        "reads",
        &[
            "shards",
            "reads/s",
            "rows read/s",
            "rows/read",
            "cache hits",
            "stale mean",
            "stale p99",
            "stale likes mean",
            "p99",
        ],
        cells,
    ))
}

/// The connection pool's waits (`[pool]`), the likes' and each neighbour's.
fn pool_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells = each_extended(rows, &|e| {
        e.pool.as_ref().map(|p| {
            std::iter::once(ms(p.like_wait.p99_ns))
                .chain(p.neighbours.iter().map(|(_, w)| ms(w.p99_ns)))
                .collect()
        })
    })?;
    let pool = rows
        .first()
        .and_then(|r| r.extended.as_ref()?.pool.as_ref())?;
    let header = ["shards".to_owned(), "likes p99".to_owned()]
        .into_iter()
        .chain(
            pool.neighbours
                .iter()
                .map(|(name, _)| format!("{name} p99")),
        )
        .collect();
    Some(Table {
        title: "connection pool: waits for a connection".into(),
        header,
        rows: cells,
    })
}

/// The machine's table: per shard count, what binds and how busy each part was.
fn machine_table(rows: &[SummaryRow]) -> Table {
    let compact = quantity;
    let share =
        |value: Option<f64>| value.map_or_else(|| "–".into(), |v| format!("{:.0}%", v * 100.0));
    Table {
        title: "the machine: what limits each shard count (busy fractions, measured)".into(),
        header: [
            "shards",
            "throughput/s",
            "ceiling/s",
            "bottleneck",
            "row",
            "cpu",
            "wal",
            "fsyncs/commit",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .filter_map(|row| {
                let m = row.machine.as_ref()?;
                Some(vec![
                    row.label(),
                    compact(row.throughput_per_s),
                    compact(row.ceiling_per_s),
                    m.bottleneck.name().into(),
                    share(Some(m.row_utilization)),
                    share(m.cpu_utilization),
                    share(m.wal_utilization),
                    m.fsyncs_per_commit
                        .map_or_else(|| "–".into(), |f| format!("{f:.2}")),
                ])
            })
            .collect(),
    }
}
/// The stalls' table, when the machine stalls: per shard count, how often and how long, and
/// the p99 wait with and without them.
fn stalls_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|row| {
            let stalls = row.machine.as_ref()?.stalls?;
            Some(vec![
                row.label(),
                units::count(stalls.stalls.round() as u64),
                units::duration(crate::time::s_f64_to_ns(stalls.stalled_s)),
                units::duration(row.waits.p99_ns),
                units::duration(stalls.wait_p99_without_ns.round() as u64),
            ])
        })
        .collect();
    (!cells.is_empty()).then(|| Table {
        title: "stalls: spells in which the machine completed nothing, and the p99 wait with and without them".into(),
        header: ["shards", "stalls", "stalled", "p99 wait", "without stalls"]
            .map(String::from)
            .to_vec(),
        rows: cells,
    })
}

/// The likes table, one row per shard count.
fn likes_table(rows: &[SummaryRow]) -> Table {
    let header = [
        "shards",
        "insert p50",
        "insert p99",
        "hot partition",
        "like p50",
        "like p99",
        "stored",
        "counted",
        "rejected",
        "crashed",
        "drift max",
        "drift end",
    ];
    let count = |value: f64| units::count(value.round() as u64);
    let rows = rows
        .iter()
        .filter_map(|row| {
            let likes = row.likes.as_ref()?;
            let latency = |get: fn(&WaitSummary) -> u64| {
                likes
                    .latency
                    .as_ref()
                    .map_or_else(|| "–".to_owned(), |l| units::duration(get(l)))
            };
            Some(vec![
                row.label(),
                units::duration(likes.insert_waits.p50_ns),
                units::duration(likes.insert_waits.p99_ns),
                format!(
                    "{:.0}% of inserts, {:.0}% busy",
                    likes.hot_partition_share * 100.0,
                    likes.hot_partition_utilization * 100.0
                ),
                latency(|w| w.p50_ns),
                latency(|w| w.p99_ns),
                count(likes.stored),
                count(likes.counted),
                count(likes.rejected),
                count(likes.crashed),
                count(likes.drift_max),
                count(likes.drift_final),
            ])
        })
        .collect();
    Table {
        title: "likes table: the insert path's wait and its hottest partition, the like end to end (send → answer), and the count's drift"
            .to_owned(),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}
