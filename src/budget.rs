//! What a run will cost before it starts: its memory, estimated from the scenario (time-series
//! windows × shard counts × live replications, histograms, keys and rows, the trace's key
//! names), and its work in simulated requests. A run over the memory budget (`--max-memory`,
//! by default half of the machine's memory) or over [`MAX_REQUESTS`] is refused with the field
//! that drives it and the estimate, before the first event; what remains of the budget bounds
//! each shard count's queue, so an overloaded shard count is stopped as saturated instead of
//! exhausting the machine.

use std::mem::size_of;
use std::path::Path;

use crate::error::InputError;
use crate::model::machine::GrantOrder;
use crate::scenario::{ArrivalPlan, RateSegment, Scenario, Variant};
use crate::stats::WindowRow;
use crate::time::ns_to_s;
use crate::units::human_bytes;

/// Bytes of one wait histogram (HDR, 1 ns to 2⁵⁰ ns, 3 significant digits; 1,000
/// replications of 3 shard counts peaked at 1.0 GB while each kept its own: 337 KB a run).
pub const HISTOGRAM_BYTES: u64 = 344 << 10;
/// Bytes of the list of a window's waits (at most 2¹⁶ before they go to its histogram).
const WINDOW_LIST_BYTES: u64 = 512 << 10;
/// Bytes a finished replication beyond the first keeps when its waits are frozen to their
/// summary (measured: 1,000 replications of 3 shard counts peak at 24 MB, 3,000 at 35 MB).
const FROZEN_RUN_BYTES: u64 = 4 << 10;
/// Bytes of one per-key histogram (2 significant digits) as it is resident, and how many keys
/// get one: its 46 KB of counts are zeroed pages the operating system commits only where a
/// wait lands (measured: 1,000 keys over two shard counts peak 14 MB above 100 keys).
const KEY_HISTOGRAM_BYTES: u64 = 20 << 10;
const KEY_HISTOGRAMS: u64 = 512;
/// Bytes per row of a key (free time, count, heap slot) and per touched key (index, figures).
const ROW_BYTES: u64 = 24;
const KEY_BYTES: u64 = 64;
/// Bytes of a random-order waiting line (`[hold] grant_order = "random"`), one per key or row.
const RANDOM_LINE_BYTES: u64 = 24;
/// Bytes per distinct key name of a trace (the name twice, in a vector and a map).
const TRACE_KEY_BYTES: u64 = 2 * 48;
/// Bytes per window and shard count of the output: the first replication's row, its copy for
/// the reports and its line of `timeseries.csv`, rendered in memory (measured: 1 M windows × 7
/// shard counts peak at 1.1 GB).
const OUTPUT_WINDOW_BYTES: u64 = 200;
/// Bytes one queued request takes on a calendar, allowing for the heap's doubling.
pub const QUEUED_BYTES: u64 = 48;
/// Bytes one queued request takes on the exact core at its peak: a start time (8 bytes) in a
/// heap that may have doubled. [`QUEUED_BYTES`], which sets the queue's limit, allows for more.
const EXACT_QUEUED_BYTES: u64 = 16;
/// Bytes one queued request keeps resident on the pipeline: its job (120 bytes), links (8)
/// and two calendar entries (32 each: a time, a place and the event). [`PIPELINE_QUEUED_BYTES`] allows for the doubling of
/// their vectors as well, whose spare half stays untouched, so not resident (measured: 355,000
/// queued by the retry storm take about 50 MB).
const PIPELINE_RESIDENT_BYTES: u64 = 192;
/// Bytes two regions keep besides for each update still queued: its commit waiting to be
/// copied (in an ordered map and a log; measured: 25 MB for 250,000 queued).
const REGION_QUEUED_BYTES: u64 = 112;
/// Bytes one copy of a trace line takes while it waits for its jittered time (with the heap's
/// growth).
const PENDING_COPY_BYTES: u64 = 64;

/// Bytes one queued request takes on the event-driven pipeline: its job (120 bytes) and links
/// (8), allowing for the slab's doubling, and its calendar entries (an event and a deadline,
/// 32 each).
pub const PIPELINE_QUEUED_BYTES: u64 = 320;
/// Bytes the pipeline may keep per arrival for the waits of windows with an update still
/// waiting (at worst every arrival since the queue last drained), allowing for doubling.
const LATE_WAIT_BYTES: u64 = 16;
pub use crate::model::engine::MAX_QUEUED;
/// The fewest a shard count's queue must be allowed to hold for a run to start.
const MIN_QUEUED: u64 = 10_000;
/// The most simulated requests (arrivals, retries, reads and neighbours' requests, over every
/// shard count and replication) one run may take: at the engine's 20–40 M a second, about an
/// hour on two cores.
pub const MAX_REQUESTS: f64 = 1e11;
/// The budget when the machine's memory cannot be read.
const FALLBACK_BUDGET: u64 = 8 << 30;
/// What the process takes before any scenario's memory: code, the allocator's arenas, the
/// worker threads' stacks, the arrival chunks and the output rendered in memory (measured:
/// 12–15 MB peak for grids of 25 and 400 configurations of ten arrivals each, 18 MB for a run
/// of 400,000 on two keys whose other parts are a few MB).
pub const BASE_BYTES: u64 = 14 << 20;
/// What parsing a scenario takes per byte of its text, at its peak (measured: a crash list of
/// 10,000 and of 100,000 inline tables, 0.32 and 3.2 MB of text, peaked 15 and 158 MB above a
/// small scenario's parse: 48–49 bytes a byte).
const PARSE_BYTES_PER_BYTE: u64 = 50;
/// A calendar entry (time, place, event), as the pipeline keeps one per batching crash from
/// the start.
const CALENDAR_ENTRY_BYTES: u64 = 32;

/// A run's estimated cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Memory for everything but the queues, bytes ([`BASE_BYTES`] included).
    pub fixed_bytes: u64,
    /// The requests the run's live engines are expected to hold queued at once at the worst
    /// moment, by a fluid model of each shard count's rows (see [`fluid_queue`]); the queue
    /// limit caps each engine's share of it.
    pub(crate) expected_queued: Vec<f64>,
    /// Bytes one queued request is expected to take at the peak (less than `queued_bytes`,
    /// which sets the queue's limit and allows for the worst case).
    pub(crate) expected_queued_bytes: u64,
    /// What the results keep after the engines are done: every shard count's windows as the
    /// reports render them (a grid keeps every configuration's until it writes them).
    pub(crate) output_bytes: u64,
    /// The largest part of it: its scenario field and bytes.
    pub(crate) largest: (&'static str, u64),
    /// Engines alive at once (shard counts × replications in flight).
    pub(crate) live_engines: u64,
    /// Bytes one queued request takes on this run's engine.
    pub(crate) queued_bytes: u64,
    /// Requests simulated over every shard count and replication.
    pub(crate) requests: f64,
}

/// A memory budget, and where it comes from (named when a run is refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// Bytes a run may take.
    pub(crate) bytes: u64,
    /// What set it: `--max-memory`, or the default's binding limit.
    pub(crate) source: String,
}

impl Budget {
    /// `--max-memory` when given, else the [`default_budget`].
    pub fn of(flag: Option<u64>) -> Budget {
        match flag {
            Some(bytes) => Budget {
                bytes,
                source: "--max-memory".into(),
            },
            None => default_budget(),
        }
    }
}

/// The process's resident memory now, bytes (Linux's `/proc/self/statm`; none elsewhere).
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The most memory the process has held resident so far, bytes (`VmHWM` of
/// `/proc/self/status`; none elsewhere).
pub fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// How often the memory watch samples the process's resident memory.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// Watches the process's resident memory against `budget` for the rest of the run, whatever
/// the estimate said: past it, the run is stopped as an interrupt stops it (its temporary
/// output removed, a commit in progress finished first) and exits 3 in one line naming the
/// budget. Started once per process, by the first admission; later calls do nothing.
pub fn watch(budget: &Budget) {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        if resident_bytes().is_none() {
            return;
        }
        let mut budget = budget.clone();
        if crate::faults::planned_at("memory-watch", "TIGHT") {
            budget.bytes = 1 << 20;
        }
        let spawned = std::thread::Builder::new()
            .name("memory-watch".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(WATCH_EVERY);
                    let Some(now) = resident_bytes() else { return };
                    if now > budget.bytes {
                        crate::interrupt::abort(
                            &format!(
                                "the run took {} of memory, more than {} of {}: stopped; \
                                 lower the rate, the duration or the shard counts, or raise --max-memory",
                                human_bytes(now),
                                budget.source,
                                human_bytes(budget.bytes)
                            ),
                            i32::from(crate::error::EXIT_FAILURE),
                        );
                    }
                }
            });
        // Without a thread the run goes on; the estimate and the queue limit still hold.
        drop(spawned);
    });
}

/// The default memory budget: the least of half of the machine's memory (`MemTotal` of
/// `/proc/meminfo`), the memory limit of this process's cgroup (a container's or a scheduler's
/// task's) and the memory Slurm gave this job (`SLURM_MEM_PER_NODE`, or `SLURM_MEM_PER_CPU` ×
/// `SLURM_CPUS_ON_NODE`, in MiB).
pub fn default_budget() -> Budget {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let env = |name: &str| std::env::var(name).ok();
    budget_from(meminfo.as_deref(), cgroup_memory_limit(), &env)
}

/// [`default_budget`] from what it reads.
fn budget_from(
    meminfo: Option<&str>,
    cgroup_limit: Option<u64>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Budget {
    let half = meminfo.and_then(|text| {
        let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024 / 2)
    });
    let mut budget = Budget {
        bytes: half.unwrap_or(FALLBACK_BUDGET),
        source: "the default --max-memory (half of this machine's memory)".into(),
    };
    let mut lower = |bytes: u64, source: String| {
        if bytes < budget.bytes {
            budget = Budget { bytes, source };
        }
    };
    if let Some(limit) = cgroup_limit {
        lower(
            limit,
            "the default --max-memory (this process's cgroup memory limit)".into(),
        );
    }
    let mib = |name: &str| env(name)?.trim().parse::<u64>().ok().filter(|&m| m > 0);
    let slurm = mib("SLURM_MEM_PER_NODE")
        .map(|m| (m, "SLURM_MEM_PER_NODE"))
        .or_else(|| {
            let cpus = mib("SLURM_CPUS_ON_NODE").unwrap_or(1);
            mib("SLURM_MEM_PER_CPU").map(|m| (m.saturating_mul(cpus), "SLURM_MEM_PER_CPU"))
        });
    if let Some((mib, name)) = slurm {
        lower(
            mib.saturating_mul(1 << 20),
            format!("the default --max-memory (the Slurm job's memory, {name})"),
        );
    }
    budget
}

/// The memory limit of this process's cgroup: the least `memory.max` (cgroup v2) or
/// `memory.limit_in_bytes` (v1) of its cgroup and those above it, as `/proc/self/cgroup`
/// names them under `/sys/fs/cgroup`; none when unlimited or unreadable.
fn cgroup_memory_limit() -> Option<u64> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let root = Path::new("/sys/fs/cgroup");
    let mut least: Option<u64> = None;
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (base, file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut folder = base.join(path.trim_start_matches('/'));
        loop {
            let limit = std::fs::read_to_string(folder.join(file))
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .filter(|&bytes| bytes < UNLIMITED_CGROUP);
            if let Some(limit) = limit {
                least = Some(least.map_or(limit, |l| l.min(limit)));
            }
            if folder == base || !folder.pop() {
                break;
            }
        }
    }
    least
}

/// cgroup v1 writes "no limit" as a page-rounded `i64::MAX`; anything this large is none.
const UNLIMITED_CGROUP: u64 = 1 << 60;

/// Requests expected over a rate profile.
fn over_segments(segments: &[RateSegment]) -> f64 {
    let mut start = 0;
    segments
        .iter()
        .map(|segment| {
            let seconds = crate::time::ns_to_s(segment.end - start);
            start = segment.end;
            seconds * segment.rate_per_s
        })
        .sum()
}

/// Estimates what `scenario` costs with `threads` worker threads.
pub fn estimate(scenario: &Scenario, threads: usize) -> Estimate {
    let variants = scenario.variants();
    let variant_count = variants.len() as u64;
    let replications = u64::from(scenario.replications());
    // Replication 0, then the others in batches of one per thread (see `sweep`).
    let in_flight = replications.min(1 + threads as u64);
    let live_engines = variant_count * in_flight;
    let windows = scenario.window_count() as u64;
    let window_bytes = windows * size_of::<WindowRow>() as u64;
    let (first_run, later_run) = run_bytes(scenario, scenario.expected_arrivals() as f64);
    let arrivals = scenario.expected_arrivals() as f64;
    let trace_keys = match &scenario.arrivals() {
        ArrivalPlan::Trace(info) => info.keys.len() as u64 * TRACE_KEY_BYTES,
        ArrivalPlan::Poisson { .. } | ArrivalPlan::Closed(_) => 0,
    };
    // Every replication's summary is kept until the end; the live engines hold their windows,
    // rows and the histograms of the windows they close.
    let queues: Vec<FluidQueue> = variants
        .iter()
        .map(|variant| fluid_queue(scenario, variant))
        .collect();
    let late_waits = if scenario.pipeline() {
        let busy: f64 = queues.iter().map(|q| q.busy_arrivals).sum();
        in_flight * (busy as u64) * LATE_WAIT_BYTES
    } else {
        0
    };
    // A neighbour's histogram lives in each live engine and in each shard count's results,
    // and once more while the summary pools it (measured: 1,000 neighbours over 7 shard counts
    // peak at 5.5 GB).
    let neighbours = scenario
        .features()
        .pool
        .as_ref()
        .map_or(0, |pool| pool.neighbours.len() as u64);
    let neighbour_copies = (live_engines + variant_count) * neighbours * HISTOGRAM_BYTES;
    let crashes = scenario
        .features()
        .batching
        .as_ref()
        .map_or(0, |b| b.crashes.len() as u64);
    let text = scenario.source_bytes() * PARSE_BYTES_PER_BYTE
        + live_engines * crashes * CALENDAR_ENTRY_BYTES;
    // Each region's staleness, in seconds and in likes, is a histogram per merge rule in the
    // first replication's observer of every shard count (measured: 64 regions over two shard
    // counts peak 110 MB).
    let regions = scenario.regions().map_or(0, |plan| {
        variant_count
            * plan.replications.len() as u64
            * plan.names.len() as u64
            * 2
            * HISTOGRAM_BYTES
    });
    let parts: [(&'static str, u64); 9] = [
        (
            "window_s",
            live_engines * window_bytes + variant_count * windows * OUTPUT_WINDOW_BYTES,
        ),
        (
            "replications",
            variant_count * (first_run + replications.saturating_sub(1) * later_run),
        ),
        (
            "keys.count",
            live_engines * engine_rows_bytes(scenario, &variants, arrivals),
        ),
        ("arrivals.trace", trace_keys),
        ("duration_s", late_waits),
        (
            "arrivals.jitter_ms",
            copies_waiting_bytes(scenario, in_flight),
        ),
        ("neighbours", neighbour_copies),
        (longest_list(scenario), text),
        ("regions.names", regions),
    ];
    let largest = parts
        .iter()
        .copied()
        .max_by_key(|&(_, bytes)| bytes)
        .unwrap_or(("shards", 0));
    let expected_queued = queues
        .iter()
        .flat_map(|q| std::iter::repeat_n(q.most_queued, in_flight as usize))
        .collect();
    Estimate {
        fixed_bytes: BASE_BYTES + parts.iter().map(|&(_, bytes)| bytes).sum::<u64>(),
        expected_queued,
        expected_queued_bytes: match (scenario.pipeline(), scenario.regions().is_some()) {
            (true, _) => PIPELINE_RESIDENT_BYTES,
            (false, true) => EXACT_QUEUED_BYTES + REGION_QUEUED_BYTES,
            (false, false) => EXACT_QUEUED_BYTES,
        },
        output_bytes: variant_count * windows * OUTPUT_WINDOW_BYTES,
        largest,
        live_engines,
        queued_bytes: if scenario.pipeline() {
            PIPELINE_QUEUED_BYTES
        } else {
            QUEUED_BYTES
        },
        requests: requests_per_run(scenario, arrivals) * variant_count as f64 * replications as f64,
    }
}

impl Estimate {
    /// The memory the run is expected to take at its peak: everything but the queues, and the
    /// queues at their expected worst, each engine's capped at `queue_limit` requests.
    pub fn expected_bytes(&self, queue_limit: u64) -> u64 {
        let queued: f64 = self
            .expected_queued
            .iter()
            .map(|&q| q.min(queue_limit as f64))
            .sum();
        self.fixed_bytes + (queued * self.expected_queued_bytes as f64) as u64
    }
}

/// The field that makes a scenario's text long, for a refusal to name: its longest list of
/// tables (a batching crash list, the neighbour endpoints, a profile's segments).
fn longest_list(scenario: &Scenario) -> &'static str {
    let features = scenario.features();
    let segments = match scenario.arrivals() {
        ArrivalPlan::Poisson { segments } => segments.len(),
        ArrivalPlan::Trace(_) | ArrivalPlan::Closed(_) => 0,
    };
    [
        (
            features.batching.as_ref().map_or(0, |b| b.crashes.len()),
            "batching.crash",
        ),
        (
            features.pool.as_ref().map_or(0, |p| p.neighbours.len()),
            "neighbours",
        ),
        (segments, "arrivals.profile"),
    ]
    .into_iter()
    .filter(|&(length, _)| length > 1)
    .max_by_key(|&(length, _)| length)
    .map_or("the scenario's length", |(_, field)| field)
}

/// How many of a grid's `configurations` are in memory at once on `threads` threads: one a
/// thread (measured: the final's grid of 1,000 configurations on two threads peaks at 96 MB,
/// the memory of two of its runs and its results).
fn grid_in_flight(configurations: usize, threads: usize) -> u64 {
    configurations.max(1).min(threads.max(1)) as u64
}

/// The memory a grid is expected to take at its peak: the process itself once, the
/// configurations in flight at a time (the largest ones, their queues at their expected
/// worst), and every configuration's results, which the grid keeps until it writes them.
/// `estimates` pairs each configuration's estimate with its queue limit.
pub fn expected_grid_bytes(estimates: &[(Estimate, u64)], threads: usize) -> u64 {
    let each: Vec<u64> = estimates
        .iter()
        .map(|(e, limit)| e.expected_bytes(*limit) - BASE_BYTES)
        .collect();
    grid_bytes(estimates.iter().map(|(e, _)| e), &each, threads)
}

/// The process once, the largest of `each` configuration's own bytes as many as are in
/// flight, and every configuration's results.
fn grid_bytes<'a>(
    estimates: impl ExactSizeIterator<Item = &'a Estimate>,
    each: &[u64],
    threads: usize,
) -> u64 {
    let in_flight = grid_in_flight(estimates.len(), threads) as usize;
    let kept: u64 = estimates.map(|e| e.output_bytes).sum();
    let mut largest = each.to_vec();
    largest.sort_unstable_by(|a, b| b.cmp(a));
    let at_once: u64 = largest.iter().take(in_flight).sum();
    BASE_BYTES.saturating_add(at_once).saturating_add(kept)
}

/// A shard count's queue by a fluid model of its offered load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FluidQueue {
    /// The most requests queued at once.
    pub(crate) most_queued: f64,
    /// The most arrivals since the queue was last empty (the pipeline keeps a late wait for
    /// each, until its window closes).
    pub(crate) busy_arrivals: f64,
}

/// The queue of one shard count as a fluid: each key's rows serve `rows / mean hold` requests
/// a second, and over each segment of the profile the queue grows by the rate beyond that, or
/// drains by the room below it. Summed over the keys that carry a share of the likes (the
/// busiest key, or each region's). A closed loop's queue is bounded by its clients, which
/// [`estimate`]'s other parts count.
pub fn fluid_queue(scenario: &Scenario, variant: &Variant) -> FluidQueue {
    let segments: Vec<RateSegment> = match &scenario.arrivals() {
        ArrivalPlan::Poisson { segments } => segments.clone(),
        ArrivalPlan::Trace(_) => vec![RateSegment {
            end: scenario.horizon(),
            rate_per_s: scenario.peak_total_per_s(),
        }],
        ArrivalPlan::Closed(_) => Vec::new(),
    };
    let features = &scenario.features();
    // Batching servers send one increment a flush each: the rows see at most that rate.
    let batched_per_s = features
        .batching
        .as_ref()
        .map(|b| f64::from(b.servers) * 1e9 / b.flush.max(1) as f64);
    let rows = if variant.adaptive() {
        scenario.adaptive().map_or(variant.shards(), |a| a.max)
    } else {
        variant.shards()
    };
    let hold_s = scenario.row_hold_ns() / 1e9;
    let capacity_per_s = if hold_s > 0.0 {
        f64::from(rows) / hold_s
    } else {
        f64::INFINITY
    };
    let shares: Vec<f64> = match &scenario.regions() {
        Some(regions) => regions.shares.clone(),
        None => vec![scenario.hot_key_share()],
    };
    // Through a likes table, a like first takes its partition's insert path (and, in one
    // transaction, holds it through the row's hold): by post the key's likes share one
    // partition; by (post, user) they spread over all.
    let partition_capacity = |share: f64| {
        scenario.likes().map_or(f64::INFINITY, |likes| {
            let held_ns = likes.insert_hold.mean_ns()
                + if likes.same_transaction {
                    scenario.row_hold_ns()
                } else {
                    0.0
                };
            let per_partition = if held_ns > 0.0 {
                1e9 / held_ns
            } else {
                f64::INFINITY
            };
            match likes.partition_by {
                crate::model::likes::PartitionBy::Post => per_partition,
                crate::model::likes::PartitionBy::PostUser => {
                    per_partition * f64::from(likes.partitions) * share
                }
            }
        })
    };
    let mut total = FluidQueue {
        most_queued: 0.0,
        busy_arrivals: 0.0,
    };
    let peak = scenario.peak_total_per_s();
    let reads = locking_reads(scenario, rows);
    for share in shares {
        let capacity_per_s = capacity_per_s.min(partition_capacity(share));
        let mut one = fluid_over(&segments, share, capacity_per_s, batched_per_s, reads);
        // Once a queue forms, waits pass the timeout and every like comes back as retries: a
        // row that overflows without them is offered up to (1 + retries) times the likes.
        if let Some(client) = features.client.as_ref()
            && client.retries > 0
            && one.most_queued > 0.0
        {
            let storm = share * (1.0 + f64::from(client.retries));
            one = fluid_over(&segments, storm, capacity_per_s, batched_per_s, reads);
        }
        // A cancelled request leaves the queue at its timeout: by Little's law at most the
        // rate times the timeout wait at once (an orphaned one stays until it runs).
        if let Some(client) = features.client.as_ref()
            && client.on_timeout == crate::model::clients::OnTimeout::Cancel
        {
            let bound = peak * share * (1.0 + f64::from(client.retries)) * ns_to_s(client.timeout);
            one.most_queued = one.most_queued.min(bound);
            one.busy_arrivals = one.busy_arrivals.min(bound);
        }
        total.most_queued += one.most_queued;
        total.busy_arrivals += one.busy_arrivals;
    }
    total
}

/// Reads that lock a key's rows (`[reads] reads_lock` summing them on every read), as the
/// fluid queue sees them.
#[derive(Debug, Clone, Copy)]
struct LockingReads {
    /// Key reads per like (read requests per like × keys a request reads).
    per_like: f64,
    /// How long a read holds all of a key's rows, seconds.
    hold_s: f64,
    /// Jobs a waiting read takes: itself and one part per row.
    jobs: f64,
}

/// The scenario's locking reads, if its reads lock the rows on every read (a cached total
/// locks only at its rare rebuilds, which the fluid leaves out).
fn locking_reads(scenario: &Scenario, rows: u32) -> Option<LockingReads> {
    let reads = scenario.features().reads.as_ref()?;
    if !reads.lock || reads.mode != crate::model::clients::ReadMode::Sum {
        return None;
    }
    let likes = match &scenario.arrivals() {
        ArrivalPlan::Poisson { segments } => over_segments(segments),
        ArrivalPlan::Trace(_) | ArrivalPlan::Closed(_) => scenario.expected_arrivals() as f64,
    };
    let read_requests = scenario.read_segments().map_or(0.0, over_segments);
    Some(LockingReads {
        per_like: read_requests / likes.max(1.0) * f64::from(reads.feed_size),
        hold_s: ns_to_s(reads.lock_hold),
        jobs: 1.0 + f64::from(rows),
    })
}

/// [`fluid_queue`] of one key taking `share` of the profile's rate (at most `batched_per_s`
/// reaches the rows). Locking reads of the key take its rows for a share of the time, leaving
/// the rest to the likes; past all of it the reads queue too, each with its parts.
fn fluid_over(
    segments: &[RateSegment],
    share: f64,
    capacity_per_s: f64,
    batched_per_s: Option<f64>,
    reads: Option<LockingReads>,
) -> FluidQueue {
    let (mut queued, mut since_empty) = (0.0_f64, 0.0_f64);
    let mut most = FluidQueue {
        most_queued: 0.0,
        busy_arrivals: 0.0,
    };
    let mut start = 0;
    for segment in segments {
        let seconds = ns_to_s(segment.end.saturating_sub(start));
        start = segment.end;
        let rate = segment.rate_per_s * share;
        let (mut capacity, mut read_growth) = (capacity_per_s, 0.0);
        if let Some(reads) = reads {
            let read_rate = rate * reads.per_like;
            let locked = read_rate * reads.hold_s;
            capacity *= (1.0 - locked).max(0.0);
            if locked > 1.0 {
                read_growth = read_rate * (1.0 - 1.0 / locked) * reads.jobs;
            }
        }
        let growth = batched_per_s.map_or(rate, |b| rate.min(b)) + read_growth - capacity;
        if growth > 0.0 || queued > 0.0 {
            // Draining, the queue empties after `queued / −growth` seconds.
            let busy_s = if growth >= 0.0 {
                seconds
            } else {
                (queued / -growth).min(seconds)
            };
            queued = (queued + growth * busy_s).max(0.0);
            since_empty += rate * busy_s;
            most.most_queued = most.most_queued.max(queued);
            most.busy_arrivals = most.busy_arrivals.max(since_empty);
            if queued <= 0.0 {
                since_empty = 0.0;
            }
        }
    }
    most
}

/// What one shard count's results keep: the first replication's (its waits' histogram and
/// the behaviours'), and each later one's (its summary and the behaviours' histograms, which
/// are pooled over replications).
fn run_bytes(scenario: &Scenario, arrivals: f64) -> (u64, u64) {
    let features = &scenario.features();
    let neighbours = features
        .pool
        .as_ref()
        .map_or(0, |pool| pool.neighbours.len());
    let pooled = if features.is_empty() {
        0
    } else {
        6 + neighbours as u64
    };
    let histogram = resident(HISTOGRAM_BYTES, arrivals);
    (
        (1 + pooled) * histogram,
        FROZEN_RUN_BYTES + pooled * histogram,
    )
}

/// What one engine's rows and per-key figures take, for `arrivals` expected arrivals.
fn engine_rows_bytes(scenario: &Scenario, variants: &[Variant], arrivals: f64) -> u64 {
    let (keys, key_rows) = touched_keys_and_rows(scenario, variants, arrivals);
    let key_tables = if scenario.key_count() > 1 {
        KEY_HISTOGRAMS.min(keys) * KEY_HISTOGRAM_BYTES
    } else {
        0
    };
    let random_lines = if scenario.machine().grant_order == GrantOrder::Random {
        (keys + key_rows) * RANDOM_LINE_BYTES
    } else {
        0
    };
    keys * KEY_BYTES
        + key_rows * ROW_BYTES
        + random_lines
        + key_tables
        + resident(HISTOGRAM_BYTES, arrivals)
        + resident(WINDOW_LIST_BYTES, arrivals)
}

/// What of `bytes` of zeroed or growing memory a run of `arrivals` keeps resident: at most a
/// page for each (the operating system commits a zeroed page only where a value lands, and a
/// list grows with what it holds), so a run of ten arrivals does not count a whole histogram.
fn resident(bytes: u64, arrivals: f64) -> u64 {
    const PAGE: f64 = 4096.0;
    bytes.min((PAGE * (arrivals.max(0.0) + 1.0)) as u64)
}

/// A trace's extra copies waiting in a heap for up to the jitter (one replay per replication
/// in flight).
fn copies_waiting_bytes(scenario: &Scenario, in_flight: u64) -> u64 {
    match &scenario.arrivals() {
        ArrivalPlan::Trace(info) if info.traffic.scale > 1.0 => {
            let waiting =
                scenario.peak_total_per_s() * crate::time::ns_to_s(info.traffic.jitter) + 1.0;
            in_flight * waiting.ceil() as u64 * PENDING_COPY_BYTES
        }
        ArrivalPlan::Trace(_) | ArrivalPlan::Poisson { .. } | ArrivalPlan::Closed(_) => 0,
    }
}

/// The requests one run serves: the likes with every retry, the reads and the neighbours'.
fn requests_per_run(scenario: &Scenario, arrivals: f64) -> f64 {
    let features = &scenario.features();
    let retries = features
        .client
        .as_ref()
        .map_or(1.0, |c| 1.0 + f64::from(c.retries));
    let reads = scenario.read_segments().map_or(0.0, over_segments);
    let neighbour_requests: f64 = features.pool.as_ref().map_or(0.0, |pool| {
        pool.neighbours.iter().map(|n| n.rate_per_s).sum::<f64>() * scenario.duration_s()
    });
    arrivals * retries + reads + neighbour_requests + periodic_events(scenario)
}

/// The events a run schedules on a clock rather than per request: each region's syncs to
/// every other region, and the reconciliation's passes.
fn periodic_events(scenario: &Scenario) -> f64 {
    let seconds = scenario.duration_s();
    let syncs = scenario.regions().map_or(0.0, |plan| {
        let regions = plan.names.len() as f64;
        let per_s = 1e9 / plan.sync_every.max(1) as f64;
        seconds * per_s * regions * (regions - 1.0).max(1.0)
    });
    let passes = scenario
        .likes()
        .as_ref()
        .and_then(|plan| plan.reconcile.as_ref())
        .map_or(0.0, |r| seconds * 1e9 / r.every.max(1) as f64);
    syncs + passes
}

/// The keys one engine is expected to touch and the rows they hold (the most of any variant).
///
/// Keys get their rows when first touched, so a million synthetic keys cost only those the
/// arrivals reach: `Σ 1 − e^(−n·p_k)` for `n` arrivals and key `k`'s Zipf share `p_k`. A
/// fixed variant gives each touched key its shard count; an adaptive one its start, plus — for
/// a key that may grow — its largest row count twice over (each growth moves the key's rows
/// and leaves the old ones behind). A key grows only once two of its updates meet within a
/// hold, so its growth is counted with the chance of that, at most 1: at the peak rate `r_k`
/// over the run's `T` seconds and a mean hold `h`, about `r_k² · h · T` such meetings. A trace's
/// keys are all counted, each at its largest.
fn touched_keys_and_rows(scenario: &Scenario, variants: &[Variant], arrivals: f64) -> (u64, u64) {
    let fixed = variants
        .iter()
        .filter(|v| !v.adaptive())
        .map(|v| u64::from(v.shards()))
        .max()
        .unwrap_or(0);
    let adaptive = scenario
        .adaptive()
        .filter(|_| variants.iter().any(|v| v.adaptive()));
    let grown = adaptive.map_or(0, |a| 2 * u64::from(a.max));
    let start = adaptive.map_or(0, |a| u64::from(a.start));
    let count = scenario.key_count() as u64;
    let synthetic = matches!(scenario.arrivals(), ArrivalPlan::Poisson { .. })
        && scenario.regions().is_none()
        && count > 1;
    if !synthetic {
        let keys = count.min(arrivals.max(1.0) as u64).max(1);
        return (keys, keys * fixed.max(start + grown));
    }
    let plan = &scenario.keys();
    let peak = scenario.peak_total_per_s();
    let meetings_per_share2 = peak * peak * scenario.row_hold_ns() / 1e9 * scenario.duration_s();
    let (mut touched, mut growth) = (0.0, 0.0);
    for rank in 1..=plan.count {
        let share = f64::from(rank).powf(-plan.zipf_s) * plan.hot_share;
        touched += -(-arrivals * share).exp_m1();
        growth += (meetings_per_share2 * share * share).min(1.0);
    }
    let touched = touched.ceil();
    let rows = (touched * fixed as f64).max(touched * start as f64 + growth * grown as f64);
    (touched as u64, rows.ceil() as u64)
}

/// Checks a grid sweep as a whole: the work of every configuration (`estimates`) against the
/// work limit, and the memory of the configurations that run at once on `threads` workers,
/// counted as `--dry-run` counts them, against `budget`.
pub fn admit_grid(
    path: &std::path::Path,
    estimates: &[Estimate],
    threads: usize,
    budget: &Budget,
) -> Result<(), InputError> {
    let requests: f64 = estimates.iter().map(|e| e.requests).sum();
    if requests > MAX_REQUESTS {
        return Err(InputError::scenario(
            path,
            "sweep",
            format!(
                "the sweep would simulate {requests:.2e} requests over its {} configurations, more than the {MAX_REQUESTS:.0e} \
                 one run may take; sweep fewer values, or split it with --partition K/M across machines",
                estimates.len()
            ),
        ));
    }
    // The process itself is counted once; each configuration in flight its own engines (with
    // their least queues), as `--dry-run` counts them.
    let in_flight = grid_in_flight(estimates.len(), threads);
    let each: Vec<u64> = estimates
        .iter()
        .map(|e| e.fixed_bytes - BASE_BYTES + e.live_engines * MIN_QUEUED * e.queued_bytes)
        .collect();
    let largest = each.iter().copied().max().unwrap_or(0);
    let needed = grid_bytes(estimates.iter(), &each, threads);
    if needed > budget.bytes {
        return Err(InputError::scenario(
            path,
            "sweep",
            format!(
                "up to {in_flight} configurations may run at once, needing about {} of memory ({} each), more than {} of {}; \
                 use fewer --threads, split the sweep with --partition K/M, or raise --max-memory",
                human_bytes(needed),
                human_bytes(largest),
                budget.source,
                human_bytes(budget.bytes)
            ),
        ));
    }
    Ok(())
}

/// Checks `estimate` against the memory `budget` and the work limit, and returns how many
/// requests each shard count may hold queued.
pub fn admit(scenario: &Scenario, estimate: &Estimate, budget: &Budget) -> Result<u64, InputError> {
    let Budget {
        bytes: budget,
        source,
    } = budget;
    let budget = *budget;
    if estimate.requests > MAX_REQUESTS {
        return Err(InputError::scenario(
            scenario.path(),
            if scenario.replications() > 1 {
                "replications"
            } else {
                "duration_s"
            },
            format!(
                "the run would simulate {:.2e} requests over {} shard counts × {} replications, more than the {:.0e} \
                 one run may take (about an hour on two cores); shorten the period, lower the rate or simulate fewer shard counts",
                estimate.requests,
                scenario.variants().len(),
                scenario.replications(),
                MAX_REQUESTS
            ),
        ));
    }
    let queues_min = estimate.live_engines * MIN_QUEUED * estimate.queued_bytes;
    if estimate.fixed_bytes.saturating_add(queues_min) > budget {
        let (field, bytes) = estimate.largest;
        return Err(InputError::scenario(
            scenario.path(),
            field,
            format!(
                "the run would need about {} of memory ({} of it for this field), more than {source} of {}; \
                 reduce it or raise --max-memory",
                human_bytes(estimate.fixed_bytes + queues_min),
                human_bytes(bytes),
                human_bytes(budget)
            ),
        ));
    }
    let per_engine =
        (budget - estimate.fixed_bytes) / (estimate.live_engines.max(1) * estimate.queued_bytes);
    Ok(per_engine.min(MAX_QUEUED))
}

#[cfg(test)]
mod tests;
