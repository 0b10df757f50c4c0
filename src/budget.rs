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
use crate::units::human_bytes;

/// Bytes of one wait histogram (HDR, 1 ns to 2⁵⁰ ns, 3 significant digits; 1,000
/// replications of 3 shard counts peaked at 1.0 GB while each kept its own: 337 KB a run).
pub const HISTOGRAM_BYTES: u64 = 344 << 10;
/// Bytes of the list of a window's waits (at most 2¹⁶ before they go to its histogram).
const WINDOW_LIST_BYTES: u64 = 512 << 10;
/// Bytes a finished replication beyond the first keeps when its waits are frozen to their
/// summary (measured: 1,000 replications of 3 shard counts peak at 24 MB, 3,000 at 35 MB).
const FROZEN_RUN_BYTES: u64 = 4 << 10;
/// Bytes of one per-key histogram (2 significant digits) and how many keys get one.
const KEY_HISTOGRAM_BYTES: u64 = 46 << 10;
const KEY_HISTOGRAMS: u64 = 512;
/// Bytes per row of a key (free time, count, heap slot) and per touched key (index, figures).
const ROW_BYTES: u64 = 32;
const KEY_BYTES: u64 = 96;
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
/// Bytes one copy of a trace line takes while it waits for its jittered time (with the heap's
/// growth).
const PENDING_COPY_BYTES: u64 = 64;

/// Bytes one queued request takes on the event-driven pipeline: its job (120 bytes) and links
/// (8), allowing for the slab's doubling, and its calendar entries (an event and a deadline,
/// 24 each).
pub const PIPELINE_QUEUED_BYTES: u64 = 304;
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

/// A run's estimated cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Memory for everything but the queues, bytes.
    pub fixed_bytes: u64,
    /// The largest part of it: its scenario field and bytes.
    pub largest: (&'static str, u64),
    /// Engines alive at once (shard counts × replications in flight).
    pub live_engines: u64,
    /// Bytes one queued request takes on this run's engine.
    pub queued_bytes: u64,
    /// Requests simulated over every shard count and replication.
    pub requests: f64,
}

/// A memory budget, and where it comes from (named when a run is refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// Bytes a run may take.
    pub bytes: u64,
    /// What set it: `--max-memory`, or the default's binding limit.
    pub source: String,
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
    let replications = u64::from(scenario.replications);
    // Replication 0, then the others in batches of one per thread (see `sweep`).
    let in_flight = replications.min(1 + threads as u64);
    let live_engines = variant_count * in_flight;
    let windows = scenario.window_count() as u64;
    let window_bytes = windows * size_of::<WindowRow>() as u64;
    let (first_run, later_run) = run_bytes(scenario);
    let arrivals = scenario.expected_arrivals() as f64;
    let trace_keys = match &scenario.arrivals {
        ArrivalPlan::Trace(info) => info.keys.len() as u64 * TRACE_KEY_BYTES,
        ArrivalPlan::Poisson { .. } | ArrivalPlan::Closed(_) => 0,
    };
    // Every replication's summary is kept until the end; the live engines hold their windows,
    // rows and the histograms of the windows they close.
    let late_waits = if scenario.pipeline {
        live_engines * (arrivals as u64) * LATE_WAIT_BYTES
    } else {
        0
    };
    let parts: [(&'static str, u64); 6] = [
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
    ];
    let largest = parts
        .iter()
        .copied()
        .max_by_key(|&(_, bytes)| bytes)
        .unwrap_or(("shards", 0));
    Estimate {
        fixed_bytes: parts.iter().map(|&(_, bytes)| bytes).sum(),
        largest,
        live_engines,
        queued_bytes: if scenario.pipeline {
            PIPELINE_QUEUED_BYTES
        } else {
            QUEUED_BYTES
        },
        requests: requests_per_run(scenario, arrivals) * variant_count as f64 * replications as f64,
    }
}

/// What one shard count's results keep: the first replication's (its waits' histogram and
/// the behaviours'), and each later one's (its summary and the behaviours' histograms, which
/// are pooled over replications).
fn run_bytes(scenario: &Scenario) -> (u64, u64) {
    let features = &scenario.features;
    let neighbours = features
        .pool
        .as_ref()
        .map_or(0, |pool| pool.neighbours.len());
    let pooled = if features.is_empty() {
        0
    } else {
        6 + neighbours as u64
    };
    (
        (1 + pooled) * HISTOGRAM_BYTES,
        FROZEN_RUN_BYTES + pooled * HISTOGRAM_BYTES,
    )
}

/// What one engine's rows and per-key figures take, for `arrivals` expected arrivals.
fn engine_rows_bytes(scenario: &Scenario, variants: &[Variant], arrivals: f64) -> u64 {
    let (keys, key_rows) = touched_keys_and_rows(scenario, variants, arrivals);
    let key_tables = if scenario.key_count() > 1 {
        KEY_HISTOGRAMS * KEY_HISTOGRAM_BYTES
    } else {
        0
    };
    let random_lines = if scenario.machine.grant_order == GrantOrder::Random {
        (keys + key_rows) * RANDOM_LINE_BYTES
    } else {
        0
    };
    keys * KEY_BYTES
        + key_rows * ROW_BYTES
        + random_lines
        + key_tables
        + HISTOGRAM_BYTES
        + WINDOW_LIST_BYTES
}

/// A trace's extra copies waiting in a heap for up to the jitter (one replay per replication
/// in flight).
fn copies_waiting_bytes(scenario: &Scenario, in_flight: u64) -> u64 {
    match &scenario.arrivals {
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
    let features = &scenario.features;
    let retries = features
        .client
        .as_ref()
        .map_or(1.0, |c| 1.0 + f64::from(c.retries));
    let reads = scenario.read_segments.as_deref().map_or(0.0, over_segments);
    let neighbour_requests: f64 = features.pool.as_ref().map_or(0.0, |pool| {
        pool.neighbours.iter().map(|n| n.rate_per_s).sum::<f64>() * scenario.duration_s()
    });
    arrivals * retries + reads + neighbour_requests + periodic_events(scenario)
}

/// The events a run schedules on a clock rather than per request: each region's syncs to
/// every other region, and the reconciliation's passes.
fn periodic_events(scenario: &Scenario) -> f64 {
    let seconds = scenario.duration_s();
    let syncs = scenario.regions.as_ref().map_or(0.0, |plan| {
        let regions = plan.names.len() as f64;
        let per_s = 1e9 / plan.sync_every.max(1) as f64;
        seconds * per_s * regions * (regions - 1.0).max(1.0)
    });
    let passes = scenario
        .likes
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
        .filter(|v| !v.adaptive)
        .map(|v| u64::from(v.shards))
        .max()
        .unwrap_or(0);
    let adaptive = scenario
        .adaptive
        .filter(|_| variants.iter().any(|v| v.adaptive));
    let grown = adaptive.map_or(0, |a| 2 * u64::from(a.max));
    let start = adaptive.map_or(0, |a| u64::from(a.start));
    let count = scenario.key_count() as u64;
    let synthetic = matches!(scenario.arrivals, ArrivalPlan::Poisson { .. })
        && scenario.regions.is_none()
        && count > 1;
    if !synthetic {
        let keys = count.min(arrivals.max(1.0) as u64).max(1);
        return (keys, keys * fixed.max(start + grown));
    }
    let plan = &scenario.keys;
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
/// work limit, and the memory of the configurations that may run at once — with `threads`
/// workers, rayon's nested parallelism can hold up to `threads × (log₂ configurations + 1)` —
/// against `budget`.
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
    let configurations = estimates.len().max(1);
    let depth = (usize::BITS - configurations.leading_zeros()) as usize;
    let in_flight = configurations.min(threads.max(1) * (depth + 1)) as u64;
    let largest = estimates
        .iter()
        .map(|e| e.fixed_bytes + e.live_engines * MIN_QUEUED * e.queued_bytes)
        .max()
        .unwrap_or(0);
    if largest.saturating_mul(in_flight) > budget.bytes {
        return Err(InputError::scenario(
            path,
            "sweep",
            format!(
                "up to {in_flight} configurations may run at once, needing about {} of memory ({} each), more than {} of {}; \
                 use fewer --threads, split the sweep with --partition K/M, or raise --max-memory",
                human_bytes(largest.saturating_mul(in_flight)),
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
            &scenario.path,
            if scenario.replications > 1 {
                "replications"
            } else {
                "duration_s"
            },
            format!(
                "the run would simulate {:.2e} requests over {} shard counts × {} replications, more than the {:.0e} \
                 one run may take (about an hour on two cores); shorten the period, lower the rate or simulate fewer shard counts",
                estimate.requests,
                scenario.variants().len(),
                scenario.replications,
                MAX_REQUESTS
            ),
        ));
    }
    let queues_min = estimate.live_engines * MIN_QUEUED * estimate.queued_bytes;
    if estimate.fixed_bytes.saturating_add(queues_min) > budget {
        let (field, bytes) = estimate.largest;
        return Err(InputError::scenario(
            &scenario.path,
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
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario(replications: u32, window_s: f64) -> Scenario {
        let text = format!(
            "shards = [1, 2, 4]\nduration_s = 600\nwindow_s = {window_s}\nreplications = {replications}\n\
             [hold]\nms = 1\n[arrivals]\nrate_per_s = 10\n"
        );
        Scenario::parse(Path::new("t.toml"), &text, &Default::default()).unwrap()
    }

    #[test]
    fn replications_beyond_the_first_cost_only_their_summaries() {
        // Measured: 1,000 replications of this scenario peak at 24 MB, 3,000 at 35 MB.
        let mb = |r| crate::time::ns_to_ms(estimate(&scenario(r, 1.0), 2).fixed_bytes);
        assert!((5.0..40.0).contains(&mb(1000)), "{} MB", mb(1000));
        assert!(
            (mb(3000) - mb(1000)) < 40.0,
            "grows by kilobytes a replication"
        );
        assert_eq!(
            estimate(&scenario(10_000, 1.0), 2).largest.0,
            "replications"
        );
    }

    #[test]
    fn the_default_budget_is_the_least_of_half_the_machine_the_cgroup_and_slurm() {
        let meminfo = "MemTotal:       16777216 kB\nMemFree: 1 kB\n";
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let none = vars(&[]);
        let half = budget_from(Some(meminfo), None, &none);
        assert_eq!(half.bytes, 8 << 30);
        assert!(half.source.contains("half of this machine"), "{half:?}");
        let cgroup = budget_from(Some(meminfo), Some(4 << 30), &none);
        assert_eq!(cgroup.bytes, 4 << 30);
        assert!(cgroup.source.contains("cgroup"), "{cgroup:?}");
        let per_node = vars(&[("SLURM_MEM_PER_NODE", "2048")]);
        let slurm = budget_from(Some(meminfo), Some(4 << 30), &per_node);
        assert_eq!(slurm.bytes, 2 << 30);
        assert!(slurm.source.contains("SLURM_MEM_PER_NODE"), "{slurm:?}");
        let per_cpu = vars(&[("SLURM_MEM_PER_CPU", "1000"), ("SLURM_CPUS_ON_NODE", "2")]);
        assert_eq!(budget_from(Some(meminfo), None, &per_cpu).bytes, 2000 << 20);
        // A larger limit than half the machine does not raise the budget.
        let big = vars(&[("SLURM_MEM_PER_NODE", "65536")]);
        assert_eq!(
            budget_from(Some(meminfo), Some(64 << 30), &big).bytes,
            8 << 30
        );
        assert_eq!(budget_from(None, None, &none).bytes, FALLBACK_BUDGET);
    }

    #[test]
    fn a_run_over_the_budget_is_refused_naming_the_field() {
        let big = scenario(3, 0.0001);
        let err = admit(&big, &estimate(&big, 2), &Budget::of(Some(4 << 30))).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("window_s") && text.contains("--max-memory"),
            "{text}"
        );
        let small = scenario(1, 1.0);
        let limit = admit(&small, &estimate(&small, 2), &Budget::of(Some(4 << 30))).unwrap();
        assert_eq!(limit, MAX_QUEUED, "a small run leaves the full queue limit");
    }
}
