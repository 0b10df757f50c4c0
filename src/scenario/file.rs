//! The scenario file as written: serde types mirroring the TOML, every table closed to unknown
//! fields. `validate` turns it into a resolved [`super::Scenario`]; the resolved form
//! is written back as this type, with every default filled in.

use serde::{Deserialize, Serialize};

use crate::model::Policy;

/// A scenario file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Names the output folder `output/<name>/`; defaults to the file's stem.
    pub(crate) name: Option<String>,
    /// What the scenario models, in a sentence or two.
    pub(crate) description: Option<String>,
    /// Seed of every random draw; the same seed gives the same bytes. Default 1.
    pub(crate) seed: Option<u64>,
    /// Simulated period in seconds. Required with `arrivals.rate_per_s`; defaults to the
    /// profile's length, or to the trace's last arrival rounded up to a whole window.
    pub(crate) duration_s: Option<f64>,
    /// The shard counts (rows per key) to simulate, each ≥ 1.
    pub(crate) shards: Option<Vec<u32>>,
    /// How an increment chooses its row: one policy, or a list run side by side on the same
    /// arrivals. Default `earliest-free`.
    pub(crate) policy: Option<PolicyList>,
    /// The `skip-locked` policy's tries and their cost.
    pub(crate) skip_locked: Option<SkipLockedTable>,
    /// Time-series window in seconds. Default 1.
    pub(crate) window_s: Option<f64>,
    /// Independent replications per shard count, each with its own seed. Default 1.
    pub(crate) replications: Option<u32>,
    /// Seconds at the start of each replication left out of the statistics. Default 0.
    pub(crate) warmup_s: Option<f64>,
    /// How long an update holds its row.
    pub(crate) hold: Option<HoldTable>,
    /// When increments arrive.
    pub(crate) arrivals: Option<ArrivalsTable>,
    /// How many keys share the traffic, and how skewed it is.
    pub(crate) keys: Option<KeysTable>,
    /// The synthetic user population (for `hash-user`).
    pub(crate) users: Option<UsersTable>,
    /// The wait target: drawn on charts, and what a recommendation must meet.
    pub(crate) slo: Option<SloTable>,
    /// Tolerances of `shardsim check`.
    pub(crate) check: Option<CheckTable>,
    /// Client timeouts and retries.
    pub(crate) client: Option<ClientTable>,
    /// Write batching in app servers.
    pub(crate) batching: Option<BatchingTable>,
    /// The shared connection pool.
    pub(crate) pool: Option<PoolTable>,
    /// Other endpoints that share the pool (`[[neighbours]]`).
    pub(crate) neighbours: Option<Vec<NeighbourTable>>,
    /// Adaptive row counts, simulated beside the static shard counts.
    pub(crate) adaptive: Option<AdaptiveTable>,
    /// The read path.
    pub(crate) reads: Option<ReadsTable>,
    /// The database machine's CPU.
    pub(crate) machine: Option<MachineTable>,
    /// The WAL flush every commit waits for.
    pub(crate) wal: Option<WalTable>,
    /// Spells during which the database machine completes nothing.
    pub(crate) stalls: Option<StallsTable>,
    /// Regions taking the likes, each on its own rows, copying their counts to each other.
    pub(crate) regions: Option<RegionsTable>,
    /// The likes table each like is recorded in before its increment.
    pub(crate) likes_table: Option<LikesTableFile>,
    /// A job recounting recently active posts from the likes table.
    pub(crate) reconcile: Option<ReconcileTable>,
    /// A grid sweep: scenario fields by path (`"hold.ms"`, `"arrivals.scale"`, `policy`) and the
    /// values to try; every combination is run as its own configuration (see
    /// [`super::grid`]).
    pub(crate) sweep: Option<toml::Table>,
}

/// `policy`: one policy (`policy = "random"`) or several (`policy = ["earliest-free",
/// "random"]`), written back in the form it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyList(pub Vec<Policy>);

impl Serialize for PolicyList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => one.serialize(serializer),
            many => many.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for PolicyList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = PolicyList;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a policy name or a list of policy names")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<PolicyList, E> {
                name.parse().map(|p| PolicyList(vec![p])).map_err(E::custom)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<PolicyList, A::Error> {
                let mut policies = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    policies.push(name.parse().map_err(serde::de::Error::custom)?);
                }
                Ok(PolicyList(policies))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `[skip_locked]`: how the `skip-locked` policy tries rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkipLockedTable {
    /// Rows tried without waiting before waiting for the last one. Default 3.
    pub(crate) tries: Option<u32>,
    /// What one failed try costs, ms. Default 0.
    pub(crate) try_ms: Option<f64>,
}

/// `[machine]`: the cores every update's CPU runs on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineTable {
    /// Cores shared by every row and key.
    pub(crate) cores: Option<u32>,
    /// `[machine.cpu]`: CPU time of one update, with the fields of `[hold]`.
    pub(crate) cpu: Option<HoldTable>,
    /// The wake-up of a process that slept on a lock, ms: added to the hold of an update that
    /// waited for its row, and before a flush whose leader waited for the last one. Default 0.
    pub(crate) wake_ms: Option<f64>,
    /// CPU on the shared cores for every waiter woken when a row is released (all of a
    /// row's waiters wake and race for it), ms. Default 0.
    pub(crate) wake_cpu_ms: Option<f64>,
    /// CPU on the shared cores for each waiter woken, for every other waiter woken with it
    /// (the herd contends as it races: a release waking `w` costs `w × (w − 1)` of it), ms.
    /// Default 0.
    pub(crate) herd_cpu_ms: Option<f64>,
    /// CPU on the shared cores for every request sent on an idle connection (waking its
    /// server process, and the client where it runs on the same machine), ms. Default 0.
    pub(crate) idle_wake_cpu_ms: Option<f64>,
    /// CPU on the shared cores every update's request needs before it asks for its row: the
    /// server's work before the lock, and the load driver's where it runs on the same
    /// machine, ms. Default 0.
    pub(crate) request_cpu_ms: Option<f64>,
    /// How the cores share themselves: `"fifo"` (a piece of work keeps its core to its end,
    /// the default) or `"shared"` (processor sharing: `n` pieces ready to run each get
    /// `min(1, cores / n)` of a core).
    pub(crate) scheduler: Option<crate::model::cores::Scheduler>,
    /// CPU on the shared cores that every release of a row costs for each update waiting for
    /// another row of the same key, ms: a key's rows share a page, and InnoDB (MariaDB,
    /// MySQL) scans the page's whole lock list at every release. Default 0 (PostgreSQL keeps
    /// a line per row).
    pub(crate) page_scan_cpu_ms: Option<f64>,
}

/// `[wal]`: the flush of the write-ahead log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalTable {
    /// How long one flush takes, ms.
    pub(crate) flush_ms: Option<f64>,
    /// Whether one flush covers every commit waiting when it starts. Default true.
    pub(crate) group_commit: Option<bool>,
    /// The CPU of the flush's leader on the machine's shared cores before the write, ms
    /// (needs `[machine]`). Default 0.
    pub(crate) cpu_ms: Option<f64>,
}

/// `[stalls]`: spells during which the database machine completes nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StallsTable {
    /// The mean time between stalls arriving at random (a Poisson process), s.
    pub(crate) every_s: Option<f64>,
    /// A stall at every checkpoint too, this many seconds apart, s.
    pub(crate) checkpoint_s: Option<f64>,
    /// How long one stall lasts, ms (a constant).
    pub(crate) duration_ms: Option<f64>,
    /// `[stalls.duration]`: how long one stall lasts, with the fields of `[hold]`.
    pub(crate) duration: Option<HoldTable>,
    /// How many stalls the calibration that fitted these saw (written by `calibrate`; not
    /// simulated).
    pub(crate) seen: Option<u64>,
    /// The longest stall the calibration saw, ms (written by `calibrate`): not drawn, but
    /// one of the triggers a stream must recover from (docs/model.md, "Metastable points").
    pub(crate) longest_ms: Option<f64>,
}

/// `[hold]`: the hold-time distribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldTable {
    /// `constant`, `exponential`, `lognormal` or `uniform`.
    pub(crate) dist: Option<String>,
    /// `constant`: the hold in milliseconds.
    pub(crate) ms: Option<f64>,
    /// `exponential`: the mean hold in milliseconds.
    pub(crate) mean_ms: Option<f64>,
    /// `lognormal`: the median hold in milliseconds.
    pub(crate) median_ms: Option<f64>,
    /// `lognormal`: the 99th-percentile hold in milliseconds.
    pub(crate) p99_ms: Option<f64>,
    /// `uniform`: the shortest hold in milliseconds.
    pub(crate) min_ms: Option<f64>,
    /// `uniform`: the longest hold in milliseconds.
    pub(crate) max_ms: Option<f64>,
    /// `[hold]` only: extra hold per update waiting for the same row when an update takes
    /// it, ms (the lock manager's and wake-ups' cost). Default 0.
    pub(crate) per_waiter_ms: Option<f64>,
    /// `[hold]` only: which waiter a released row goes to, `fifo` (default) or `random`
    /// (PostgreSQL's waiters race for the row again at each commit).
    pub(crate) grant_order: Option<crate::model::machine::GrantOrder>,
}

/// `[arrivals]`: exactly one of a constant rate, a profile or a trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrivalsTable {
    /// Poisson arrivals at this many increments a second.
    pub(crate) rate_per_s: Option<f64>,
    /// Piecewise-constant Poisson rate: consecutive segments.
    pub(crate) profile: Option<Vec<ProfileSegment>>,
    /// A CSV trace to replay exactly, relative to the scenario file (plain, `.gz` or `.zst`).
    pub(crate) trace: Option<String>,
    /// A dashboard's export replayed as a Poisson profile: a CSV of a time and a count (or a
    /// rate) per interval, relative to the scenario file (plain, `.gz` or `.zst`).
    pub(crate) counts: Option<String>,
    /// A counts file's count column (default `count`).
    pub(crate) count_column: Option<String>,
    /// A counts file's rate column, per second (default `rate`, used without a count column).
    pub(crate) rate_column: Option<String>,
    /// The seconds each line of a counts file covers (default: the first two lines' spacing).
    pub(crate) interval_s: Option<f64>,
    /// A trace's or a counts file's time column (default: the first of `t_ms`, `timestamp`,
    /// `time`, `ts`).
    pub(crate) time_column: Option<String>,
    /// How a trace writes its times: `auto` (default), `ms-offset`, `rfc3339`, `epoch-s`,
    /// `epoch-ms`, `epoch-us`, `epoch-ns` or a strftime pattern with a zone.
    pub(crate) time_format: Option<String>,
    /// A trace's lines may be out of time order by up to this many seconds; they are replayed
    /// in order. Default 0: each line's time must not be before the previous one's.
    pub(crate) reorder_window_s: Option<f64>,
    /// A closed loop of this many clients, each sending its next update when its previous
    /// one commits plus a think time (what load tools and most apps do).
    pub(crate) clients: Option<u32>,
    /// Closed loop: the think time between a commit and the client's next update, ms (the
    /// mean, for an exponential think time; default 0).
    pub(crate) think_ms: Option<f64>,
    /// Closed loop: `constant` (default) or `exponential` think times.
    pub(crate) think_dist: Option<ThinkDist>,
    /// What-if traffic: multiplies every rate (`rate_per_s`, each profile segment); a trace
    /// is thinned below 1 and replayed with extra copies above it. Default 1.
    pub(crate) scale: Option<f64>,
    /// A trace's clock runs this many times faster (2 halves its duration). Default 1.
    pub(crate) speed: Option<f64>,
    /// A trace's extra copies (`scale` > 1) arrive up to this many ms after their original,
    /// uniformly. Default 1.
    pub(crate) jitter_ms: Option<f64>,
}

/// How think times are distributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkDist {
    /// Every think time is `think_ms`.
    Constant,
    /// Exponential think times with mean `think_ms`.
    Exponential,
}

/// One segment of a rate profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSegment {
    /// Length of the segment in seconds (> 0).
    pub(crate) seconds: f64,
    /// Poisson rate during the segment (≥ 0).
    pub(crate) rate_per_s: f64,
}

/// `[keys]`: many keys with Zipf popularity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeysTable {
    /// Number of keys (≥ 1). Default 1.
    pub(crate) count: Option<u32>,
    /// Zipf exponent: key of rank k gets weight 1/k^s (0 is uniform). Default 1.
    pub(crate) zipf_s: Option<f64>,
    /// How many of the hottest keys `keys.csv` lists. Default 20.
    pub(crate) report_top: Option<u32>,
}

/// `[users]`: the synthetic user population.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsersTable {
    /// Number of distinct users, each equally likely to send an increment. Default 1,000,000.
    pub(crate) count: Option<u64>,
    /// With `[likes_table]`: the share of likes that are a double tap of an earlier like by the
    /// same user (rejected by the primary key). Default 0.
    pub(crate) repeat_fraction: Option<f64>,
}

/// `[slo]`: the targets a shard count must meet at the peak. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloTable {
    /// Highest acceptable 99th-percentile wait, in milliseconds.
    pub(crate) p99_ms: Option<f64>,
    /// Highest acceptable 99.9th-percentile wait, in milliseconds.
    pub(crate) p999_ms: Option<f64>,
    /// Highest acceptable utilization at the peak (for headroom), in (0, 1].
    pub(crate) max_utilization: Option<f64>,
}

/// `[check]`: how far a summary may move from its baseline before `shardsim check` fails.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckTable {
    /// Relative tolerance for every column (default 0.05, or `--rel`).
    pub(crate) rel: Option<f64>,
    /// Absolute tolerance in ms for the wait columns (default 0.05, or `--abs-ms`).
    pub(crate) abs_ms: Option<f64>,
    /// Absolute tolerance of the count columns (backlogs, failures, lost likes, drift; default
    /// 2, or `--abs-count`): a backlog of 3 against 2 is noise, not a 50% regression.
    pub(crate) abs_count: Option<f64>,
    /// Per-column tolerances, by `summary.csv` column name.
    pub(crate) columns: Option<std::collections::BTreeMap<String, ColumnTolerance>>,
}

/// The tolerance of one column: it passes when `|new − old| ≤ max(abs, rel × |old|)`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnTolerance {
    /// Relative tolerance.
    pub(crate) rel: Option<f64>,
    /// Absolute tolerance, in the column's unit.
    pub(crate) abs: Option<f64>,
}

/// `[client]`: how long a client waits and what it does after a failure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientTable {
    /// Longest wait for a connection and the row before the like fails for the user, ms.
    pub(crate) timeout_ms: Option<f64>,
    /// `cancel` (the database abandons the queued update) or `orphan` (it still runs).
    pub(crate) on_timeout: Option<String>,
    /// Times a failed like is tried again. Default 0.
    pub(crate) retries: Option<u32>,
    /// Base of the exponential backoff with full jitter, ms. Default 10.
    pub(crate) backoff_ms: Option<f64>,
    /// Whether a repeated like is recognised and counted once. Default true.
    pub(crate) idempotent: Option<bool>,
    /// Time every request spends outside the database (round trip, scheduling), ms: part of
    /// the response time, never of a row's hold.
    pub(crate) overhead_ms: Option<f64>,
    /// `[client.overhead]`: that time as a distribution, with the fields of `[hold]`.
    pub(crate) overhead: Option<HoldTable>,
    /// Time outside the database of a request sent on an idle connection (an open stream's
    /// request that finds a free connection, a closed-loop client's after a think time), ms:
    /// waking a sleeping client and server costs more than a round trip back to back.
    /// Default: `overhead_ms`.
    pub(crate) idle_overhead_ms: Option<f64>,
    /// `[client.idle_overhead]`: that time as a distribution, with the fields of `[hold]`.
    pub(crate) idle_overhead: Option<HoldTable>,
}

/// `[batching]`: app servers keep counts in memory and flush them periodically.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchingTable {
    /// App servers (likes are spread over them at random).
    pub(crate) servers: Option<u32>,
    /// Flush interval of each server, ms.
    pub(crate) flush_ms: Option<f64>,
    /// Crashes: `[{ at_s = 300, servers = 1 }]`.
    pub(crate) crash: Option<Vec<CrashTable>>,
}

/// One crash of batching servers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashTable {
    /// When, seconds from the start.
    pub(crate) at_s: f64,
    /// How many servers crash (the lowest-numbered).
    pub(crate) servers: u32,
}

/// `[pool]`: the connections shared by likes and neighbour endpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolTable {
    /// Connections in the pool.
    pub(crate) size: Option<u32>,
}

/// `[[neighbours]]`: an endpoint that needs only a connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighbourTable {
    /// Its name in the outputs.
    pub(crate) name: String,
    /// Its requests per second (Poisson).
    pub(crate) rate_per_s: f64,
    /// How long each request holds its connection, ms.
    pub(crate) hold_ms: f64,
}

/// `[adaptive]`: keys start small and grow their row counts when they get hot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveTable {
    /// Rows a key starts with. Default 1.
    pub(crate) start: Option<u32>,
    /// Most rows a key may have.
    pub(crate) max: Option<u32>,
    /// Growth factor per step (> 1). Default 2.
    pub(crate) factor: Option<f64>,
    /// The signal: `{ p99_ms = 5 }` or `{ utilization = 0.7 }`.
    pub(crate) grow_when: Option<GrowWhenTable>,
    /// Length of a signal window, seconds. Default 1.
    pub(crate) signal_window_s: Option<f64>,
    /// How long writers cache a key's row count, seconds. Default 5.
    pub(crate) writer_cache_ttl_s: Option<f64>,
}

/// `grow_when`: exactly one signal with its threshold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrowWhenTable {
    /// Grow when a window's p99 wait exceeds this, ms.
    pub(crate) p99_ms: Option<f64>,
    /// Grow when a window's utilization exceeds this (0 to 1).
    pub(crate) utilization: Option<f64>,
}

/// `[reads]`: how the count is read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadsTable {
    /// Read requests per second (Poisson)…
    pub(crate) rate_per_s: Option<f64>,
    /// …or read requests per like, following the likes' rate.
    pub(crate) per_write: Option<f64>,
    /// `sum` (add up the rows on every read) or `cached` (a cached total). Default `sum`.
    pub(crate) mode: Option<String>,
    /// Age at which a cached total is rebuilt, seconds. Default 5.
    pub(crate) cache_ttl_s: Option<f64>,
    /// Keys one read request reads (a feed of posts). Default 1.
    pub(crate) feed_size: Option<u32>,
    /// Whether summing rows takes their locks and queues with the writes. Default false.
    pub(crate) reads_lock: Option<bool>,
    /// How long a locking read holds the rows, ms. Default: the mean hold.
    pub(crate) lock_hold_ms: Option<f64>,
}

/// `[regions]`: regions that each take a share of the likes on their own rows and copy their
/// counts to each other in the background.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionsTable {
    /// The regions' names, e.g. `["mumbai", "singapore"]`.
    pub(crate) names: Option<Vec<String>>,
    /// Each region's share of the likes, in the same order (summing to 1).
    pub(crate) shares: Option<Vec<f64>>,
    /// `g-counter` (per-region entries merged by the larger) or `lww` (last write wins), or
    /// both as a list, each on the same likes and lags.
    pub(crate) replication: Option<ReplicationList>,
    /// The lag of one copy between regions (the fields of `[hold]`).
    pub(crate) lag_ms: Option<HoldTable>,
    /// How often each region sends its counts, ms. Default 1000.
    pub(crate) sync_every_ms: Option<f64>,
    /// The share of updates that are unlikes. Default 0.
    pub(crate) unlike_fraction: Option<f64>,
    /// The count every region shows at the start. Default 0.
    pub(crate) initial: Option<u64>,
}

/// `replication`: one merge rule or a list of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReplicationList {
    /// One rule.
    One(String),
    /// Several, compared side by side.
    Many(Vec<String>),
}

/// `[likes_table]`: the table of (post, user) each like is first inserted into.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LikesTableFile {
    /// Partitions of the likes table. Default 16.
    pub(crate) partitions: Option<u32>,
    /// `post` (a post's likes in one partition) or `post_user` (spread by a hash of both).
    /// Default `post`; compare them side by side with `[sweep] "likes_table.partition_by"`.
    pub(crate) partition_by: Option<String>,
    /// How long an insert holds its partition's insert path (the fields of `[hold]`).
    pub(crate) insert_hold: Option<HoldTable>,
    /// Whether the insert and the increment share a transaction. Default true.
    pub(crate) same_transaction: Option<bool>,
    /// Chance that the app fails between the insert and the increment, in [0, 1]. Default 0.
    pub(crate) step_failure_rate: Option<f64>,
}

/// `[reconcile]`: recount recently active posts from the likes table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileTable {
    /// A pass starts every this many seconds.
    pub(crate) every_s: Option<f64>,
    /// Likes-table rows a recount reads a second.
    pub(crate) rows_per_s: Option<f64>,
}
