//! Scenarios: what to simulate. A TOML file is parsed into [`file::ScenarioFile`], command-line
//! [`Overrides`] are applied, and `validate` resolves it into a [`Scenario`] in simulation
//! units (nanoseconds, validated distributions, a scanned trace) — or a one-line
//! [`InputError`] naming the file, the field and what is allowed.

mod arrivals;
mod behaviours;
mod fields;
pub mod file;
pub mod grid;
pub mod include;
mod likes;
mod machine;
mod regions;
mod validate;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::model::{HoldDist, Policy, SimTime};

pub use behaviours::MAX_POOL;
pub use fields::{MAX_HOLD_MS, MAX_RATE_PER_S, MAX_TRAFFIC_FACTOR, MIN_RATE_PER_S};
pub use file::ScenarioFile;
pub use machine::MAX_CORES;

/// Values from the command line that replace the scenario's.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Overrides {
    /// `--shards`: the shard counts.
    pub shards: Option<Vec<u32>>,
    /// `--seed`: the seed.
    pub seed: Option<u64>,
    /// `--policy`: the slot-choice policies.
    pub policy: Option<Vec<Policy>>,
    /// `--replications`: independent replications per shard count.
    pub replications: Option<u32>,
    /// `--engine event`: run on the event-driven pipeline even without machine sections.
    pub event_path: bool,
    /// `--calibration`: a calibration's sections, added where the scenario has none.
    pub calibration: Option<std::path::PathBuf>,
    /// `--traffic`: the what-if traffic scale instead of `[arrivals] scale`.
    pub traffic: Option<f64>,
    /// Every time of the calibrations' `[hold]`, `[machine]`, `[wal]` and `[client]` this
    /// many times as long (`None`: 1): an end of a calibration's `[spread]`.
    pub calibration_scale: Option<f64>,
    /// `plan --pool`: the connection pool's size instead of `[pool] size` (a pool of this many
    /// connections when the scenario has none).
    pub pool: Option<u32>,
}

/// A validated scenario, in simulation units. Its fields are read through methods of the same
/// names and changed only through methods that keep it valid and its `scenario.toml` true
/// ([`Scenario::with_policy`], [`Scenario::with_shards`], [`Scenario::at_steady_peak`] …).
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario file it came from.
    path: PathBuf,
    /// Its name (the output folder's name).
    name: String,
    /// What it models.
    description: String,
    /// Seed of every random draw.
    seed: u64,
    /// Shard counts to simulate, ascending.
    shards: Vec<u32>,
    /// How an increment chooses its row: every policy runs over the same arrivals.
    policies: Vec<Policy>,
    /// The `skip-locked` policy's settings.
    skip_locked: crate::model::rows::SkipLocked,
    /// Time-series window length.
    window: SimTime,
    /// End of the simulated period.
    horizon: SimTime,
    /// The hold-time distribution.
    hold: HoldDist,
    /// Where arrivals come from (with the what-if traffic applied).
    arrivals: ArrivalPlan,
    /// The what-if traffic: how the arrivals were scaled (and a trace sped up).
    traffic: crate::arrivals::Traffic,
    /// Synthetic keys (a trace names its own keys).
    keys: KeyPlan,
    /// Size of the synthetic user population.
    users: u64,
    /// The targets a shard count must meet.
    slo: Slo,
    /// Independent replications per shard count (≥ 1).
    replications: u32,
    /// Start of the measured period of each replication (the warm-up's end).
    warmup: SimTime,
    /// Tolerances of `shardsim check` (numbers validated; column names checked by `check`).
    check: file::CheckTable,
    /// Timeouts, retries, batching and the connection pool.
    features: std::sync::Arc<crate::model::clients::Features>,
    /// Adaptive row counts, simulated beside the static shard counts.
    adaptive: Option<crate::model::adaptive::AdaptivePolicy>,
    /// Read requests per second over time: the like profile scaled by `per_write`, or a
    /// constant rate (`None` without `[reads]`).
    read_segments: Option<Vec<RateSegment>>,
    /// The machine behind the rows (all empty for the seed's lock model).
    machine: std::sync::Arc<crate::model::MachineModel>,
    /// Whether the sweep runs the event-driven pipeline: with machine sections, or when asked
    /// (`--engine event`); otherwise the exact core's closed form (the fast path).
    pipeline: bool,
    /// Regions taking the likes on their own rows (region i is key i), copying their counts.
    regions: Option<std::sync::Arc<crate::model::regions::RegionsPlan>>,
    /// The scenario's own fields that its calibration also gives (`hold.ms (calibration.toml)`):
    /// the scenario's values are used; the terminal and `scenario.toml` say so.
    calibration_kept: Vec<String>,
    /// Its calibration's `[spread]`, if it has one: `plan` answers at both ends.
    calibration_spread: Option<include::CalibrationSpread>,
    /// The likes table each like is recorded in before its increment (`[likes_table]`).
    likes: Option<std::sync::Arc<crate::model::likes::LikesPlan>>,
    /// The most requests one shard count may hold queued before it is stopped as saturated
    /// (a run setting from the memory budget, not a scenario field; see [`crate::budget`]).
    queue_limit: u64,
    /// The length of the text it was parsed from, calibration included, bytes: parsing takes
    /// memory in proportion ([`crate::budget`]).
    source_bytes: u64,
    /// The file as read (its calibration merged in), from which [`Scenario::resolved`] writes
    /// `scenario.toml` with every default filled in.
    file: ScenarioFile,
}

pub use crate::arrivals::{ArrivalPlan, RateSegment};
pub use crate::model::closed::ClosedLoop;

/// One engine of a sweep: a policy with a static shard count, or with adaptive rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// How its increments choose their rows.
    pub(crate) policy: Policy,
    /// Its rows: a static shard count, or adaptive rows and the count they start at.
    pub(crate) rows: crate::model::Rows,
}

impl Variant {
    /// Rows per key (for the adaptive variant: the rows a key starts with).
    pub fn shards(&self) -> u32 {
        self.rows.start()
    }

    /// Whether row counts adapt.
    pub fn adaptive(&self) -> bool {
        self.rows.is_adaptive()
    }
}

/// The targets a shard count must meet at the peak (`[slo]`); unset fields are not checked.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Slo {
    /// Highest acceptable p99 wait.
    pub p99_ns: Option<SimTime>,
    /// Highest acceptable p99.9 wait.
    pub p999_ns: Option<SimTime>,
    /// Highest acceptable peak utilization.
    pub max_utilization: Option<f64>,
}

impl Slo {
    /// Whether any target is set.
    pub fn is_set(&self) -> bool {
        self.p99_ns.is_some() || self.p999_ns.is_some() || self.max_utilization.is_some()
    }
}

/// The targets as text, e.g. `p99 ≤ 20 ms, peak utilization ≤ 0.5` (empty when none is set).
impl std::fmt::Display for Slo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(ns) = self.p99_ns {
            parts.push(format!("p99 ≤ {} ms", crate::time::fmt_ms(ns)));
        }
        if let Some(ns) = self.p999_ns {
            parts.push(format!("p99.9 ≤ {} ms", crate::time::fmt_ms(ns)));
        }
        if let Some(limit) = self.max_utilization {
            parts.push(format!("peak utilization ≤ {limit}"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// The synthetic key population.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyPlan {
    /// Number of keys.
    pub(crate) count: u32,
    /// Zipf exponent of their popularity.
    pub(crate) zipf_s: f64,
    /// How many of the hottest keys `keys.csv` lists.
    pub(crate) report_top: usize,
    /// The busiest key's (Zipf rank 1's) share of the arrivals, `1 / Σ k^−s`: a sum over
    /// every key, made once here rather than at each use (a million keys are a million
    /// `powf`s, and `plan` asks hundreds of times).
    pub(crate) hot_share: f64,
}

impl KeyPlan {
    /// The keys' popularity to draw a like's key from (rank k at `k − 1`), when there are
    /// several keys.
    pub fn popularity(&self) -> Option<rand_distr::Zipf<f64>> {
        (self.count > 1).then(|| {
            rand_distr::Zipf::new(f64::from(self.count), self.zipf_s)
                .expect("validated: count ≥ 1 and zipf_s ≥ 0")
        })
    }

    /// `count ≥ 1` keys of Zipf popularity `zipf_s`, the `report_top` hottest listed.
    pub fn new(count: u32, zipf_s: f64, report_top: usize) -> KeyPlan {
        let total: f64 = (1..=count).map(|k| f64::from(k).powf(-zipf_s)).sum();
        KeyPlan {
            count,
            zipf_s,
            report_top,
            hot_share: 1.0 / total,
        }
    }
}

/// The fields of a validated scenario, read-only.
impl Scenario {
    /// The scenario file it came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its name (the output folder's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it models.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Seed of every random draw.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Shard counts to simulate, ascending.
    pub fn shards(&self) -> &[u32] {
        &self.shards
    }

    /// How an increment chooses its row: every policy runs over the same arrivals.
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    /// The `skip-locked` policy's settings.
    pub fn skip_locked(&self) -> crate::model::rows::SkipLocked {
        self.skip_locked
    }

    /// Time-series window length.
    pub fn window(&self) -> SimTime {
        self.window
    }

    /// End of the simulated period.
    pub fn horizon(&self) -> SimTime {
        self.horizon
    }

    /// The hold-time distribution.
    pub fn hold(&self) -> &HoldDist {
        &self.hold
    }

    /// Where arrivals come from (with the what-if traffic applied).
    pub fn arrivals(&self) -> &ArrivalPlan {
        &self.arrivals
    }

    /// The what-if traffic: how the arrivals were scaled (and a trace sped up).
    pub fn traffic(&self) -> crate::arrivals::Traffic {
        self.traffic
    }

    /// Synthetic keys (a trace names its own keys).
    pub fn keys(&self) -> KeyPlan {
        self.keys
    }

    /// Size of the synthetic user population.
    pub fn users(&self) -> u64 {
        self.users
    }

    /// The targets a shard count must meet.
    pub fn slo(&self) -> Slo {
        self.slo
    }

    /// Independent replications per shard count (≥ 1).
    pub fn replications(&self) -> u32 {
        self.replications
    }

    /// Start of the measured period of each replication (the warm-up's end).
    pub fn warmup(&self) -> SimTime {
        self.warmup
    }

    /// Tolerances of `shardsim check`.
    pub fn check(&self) -> &file::CheckTable {
        &self.check
    }

    /// Timeouts, retries, batching and the connection pool.
    pub fn features(&self) -> &std::sync::Arc<crate::model::clients::Features> {
        &self.features
    }

    /// Adaptive row counts, simulated beside the static shard counts.
    pub fn adaptive(&self) -> Option<crate::model::adaptive::AdaptivePolicy> {
        self.adaptive
    }

    /// Read requests per second over time (`None` without `[reads]`).
    pub fn read_segments(&self) -> Option<&[RateSegment]> {
        self.read_segments.as_deref()
    }

    /// The machine behind the rows (all empty for the seed's lock model).
    pub fn machine(&self) -> &std::sync::Arc<crate::model::MachineModel> {
        &self.machine
    }

    /// Whether the sweep runs the event-driven pipeline rather than the exact core's closed form.
    pub fn pipeline(&self) -> bool {
        self.pipeline
    }

    /// Regions taking the likes on their own rows (`[regions]`).
    pub fn regions(&self) -> Option<&std::sync::Arc<crate::model::regions::RegionsPlan>> {
        self.regions.as_ref()
    }

    /// The scenario's own fields that its calibration also gives.
    pub fn calibration_kept(&self) -> &[String] {
        &self.calibration_kept
    }

    /// Its calibration's `[spread]`, if it has one.
    pub fn calibration_spread(&self) -> Option<&include::CalibrationSpread> {
        self.calibration_spread.as_ref()
    }

    /// The likes table each like is recorded in before its increment (`[likes_table]`).
    pub fn likes(&self) -> Option<&std::sync::Arc<crate::model::likes::LikesPlan>> {
        self.likes.as_ref()
    }

    /// The most requests one shard count may hold queued before it is stopped as saturated.
    pub fn queue_limit(&self) -> u64 {
        self.queue_limit
    }
}

/// Scenarios derived from a validated one: each keeps it valid and its `scenario.toml` true.
impl Scenario {
    /// The scenario as resolved, every default filled in and the seed used: `scenario.toml`.
    pub fn resolved(&self) -> ScenarioFile {
        validate::resolved_file(self.file.clone(), self)
    }

    /// This scenario with only `policy`, named `name`.
    pub fn with_policy(&self, policy: Policy, name: String) -> Scenario {
        Scenario {
            name,
            policies: vec![policy],
            ..self.clone()
        }
    }

    /// This scenario simulating only `shards` (ascending, each at least 1).
    pub fn with_shards(&self, shards: Vec<u32>) -> Scenario {
        debug_assert!(shards.iter().all(|&n| n >= 1) && shards.is_sorted());
        Scenario {
            shards,
            ..self.clone()
        }
    }

    /// Bounds each shard count's queue at `limit` requests (a run setting from the memory
    /// budget, not a field of the file).
    pub fn limit_queue(&mut self, limit: u64) {
        self.queue_limit = limit;
    }

    /// This scenario as a steady Poisson stream at `rate_per_s` over all keys (the rate offered
    /// after the traffic's scale), warmed up for `warmup` of a `horizon` measured in one window,
    /// with `replications`, and static shard counts only.
    pub fn at_steady_peak(
        &self,
        rate_per_s: f64,
        warmup: SimTime,
        horizon: SimTime,
        replications: u32,
    ) -> Scenario {
        let mut file = self.file.clone();
        let arrivals = file.arrivals.get_or_insert_with(Default::default);
        arrivals.rate_per_s = Some(rate_per_s / self.traffic.scale);
        arrivals.profile = None;
        arrivals.trace = None;
        arrivals.speed = None;
        arrivals.jitter_ms = None;
        arrivals.clients = None;
        arrivals.think_ms = None;
        arrivals.think_dist = None;
        file.adaptive = None;
        Scenario {
            arrivals: ArrivalPlan::Poisson {
                segments: vec![RateSegment {
                    end: horizon,
                    rate_per_s,
                }],
            },
            horizon,
            warmup,
            window: horizon,
            replications,
            adaptive: None,
            file,
            ..self.clone()
        }
    }
}

impl Scenario {
    /// Reads, parses and validates a scenario file with command-line overrides applied.
    pub fn load(path: &Path, overrides: &Overrides) -> Result<Scenario, InputError> {
        let text = crate::input::read_text(path, crate::input::MAX_SCENARIO_BYTES, "the scenario")?;
        Scenario::parse(path, &text, overrides)
    }

    /// A scenario built as values (by `validate`, say) rather than read from a file: it is
    /// serialised and read as a file would be, so its validation and its calibration
    /// (`overrides.calibration`) are exactly a file's; `path` names it in errors.
    pub fn from_values(
        path: &Path,
        file: &ScenarioFile,
        overrides: &Overrides,
    ) -> Result<Scenario, InputError> {
        let text = toml::to_string(file).map_err(|err| {
            InputError::file(path, format!("cannot be written as a scenario: {err}"))
        })?;
        Scenario::parse(path, &text, overrides)
    }

    /// Parses and validates scenario text; `path` names it in errors and anchors a relative
    /// trace path. A scenario with a `[sweep]` is refused: see [`Scenario::parse_grid`].
    pub fn parse(path: &Path, text: &str, overrides: &Overrides) -> Result<Scenario, InputError> {
        let merged = include::merged(
            path,
            text,
            overrides.calibration.as_deref(),
            overrides.calibration_scale.unwrap_or(1.0),
        )?;
        let file = validate::parse(path, &merged.text, merged.verbatim())
            .map_err(|err| merged.blame(err))?;
        if file.sweep.is_some() {
            return Err(InputError::scenario(
                path,
                "sweep",
                "this command takes one configuration; shardsim run and shardsim plan expand a [sweep]",
            ));
        }
        let mut scenario =
            validate::resolve(path, file, overrides).map_err(|err| merged.blame(err))?;
        scenario.calibration_kept = merged.kept();
        scenario.calibration_spread.clone_from(&merged.spread);
        scenario.source_bytes = merged.text.len() as u64;
        Ok(scenario)
    }

    /// Reads a scenario file and expands its `[sweep]` (if any) into every configuration.
    pub fn load_grid(path: &Path, overrides: &Overrides) -> Result<grid::Grid, InputError> {
        let text = crate::input::read_text(path, crate::input::MAX_SCENARIO_BYTES, "the scenario")?;
        Scenario::parse_grid(path, &text, overrides)
    }

    /// Parses scenario text and expands its `[sweep]` (if any) into every configuration, each
    /// validated as a scenario of its own.
    pub fn parse_grid(
        path: &Path,
        text: &str,
        overrides: &Overrides,
    ) -> Result<grid::Grid, InputError> {
        let mut merged = include::merged(
            path,
            text,
            overrides.calibration.as_deref(),
            overrides.calibration_scale.unwrap_or(1.0),
        )?;
        let file = validate::parse(path, &merged.text, merged.verbatim())
            .map_err(|err| merged.blame(err))?;
        if let Some(sweep) = &file.sweep {
            merged.swept(sweep.keys());
        }
        let mut grid = grid::expand(path, file, overrides).map_err(|err| merged.blame(err))?;
        for configuration in &mut grid.configurations {
            configuration.scenario.source_bytes = merged.text.len() as u64;
            configuration.scenario.calibration_kept = merged.kept();
            configuration
                .scenario
                .calibration_spread
                .clone_from(&merged.spread);
        }
        Ok(grid)
    }

    /// The length of the text it was parsed from, bytes.
    pub fn source_bytes(&self) -> u64 {
        self.source_bytes
    }

    /// The engines of a sweep, per policy in the scenario's order: every static shard count,
    /// then the adaptive rows if any.
    pub fn variants(&self) -> Vec<Variant> {
        self.policies
            .iter()
            .flat_map(|&policy| {
                let adaptive = self.adaptive.map(|a| Variant {
                    policy,
                    rows: crate::model::Rows::Adaptive { start: a.start },
                });
                self.shards
                    .iter()
                    .map(move |&shards| Variant {
                        policy,
                        rows: crate::model::Rows::Fixed(shards),
                    })
                    .chain(adaptive)
            })
            .collect()
    }

    /// The policies as shown in headers: `earliest-free`, or `earliest-free, random`.
    pub fn policies_label(&self) -> String {
        let names: Vec<&str> = self.policies.iter().map(|p| p.name()).collect();
        names.join(", ")
    }

    /// Whether the run compares several policies.
    pub fn compares_policies(&self) -> bool {
        self.policies.len() > 1
    }

    /// A row's mean hold with nobody waiting, ns: the drawn hold plus the machine's CPU and
    /// flush (the row is held until the commit).
    pub fn row_hold_ns(&self) -> f64 {
        self.machine.row_hold_ns(&self.hold)
    }

    /// A row's mean hold when updates queue for it back to back, ns: [`Self::row_hold_ns`]
    /// plus the wake-up of each waiter that takes it (`[machine] wake_ms`); sets a row's
    /// ceiling.
    pub fn saturated_row_hold_ns(&self) -> f64 {
        self.machine.saturated_row_hold_ns(&self.hold)
    }

    /// The mean time from send to answer when nothing waits, ns: the request's CPU before its
    /// row, the row's hold and the time outside the database.
    pub fn unqueued_response_ns(&self) -> f64 {
        self.machine.request_cpu as f64 + self.row_hold_ns() + self.machine.overhead_ns()
    }

    /// Number of time-series windows: `ceil(horizon / window)`.
    pub fn window_count(&self) -> usize {
        self.horizon.div_ceil(self.window) as usize
    }

    /// The simulated period in seconds.
    pub fn duration_s(&self) -> f64 {
        crate::time::ns_to_s(self.horizon)
    }

    /// The measured period (the simulated period less the warm-up) in seconds.
    pub fn measured_duration_s(&self) -> f64 {
        crate::time::ns_to_s(self.horizon - self.warmup)
    }

    /// The seed of replication `replication`: the scenario's own seed for the first, and
    /// independent seeds derived from it for the others.
    pub fn replication_seed(&self, replication: u32) -> u64 {
        if replication == 0 {
            self.seed
        } else {
            crate::model::rows::mix64(self.seed ^ crate::model::rows::mix64(u64::from(replication)))
        }
    }

    /// The highest arrival rate over all keys: the profile's busiest segment, or a trace's
    /// busiest window.
    pub fn peak_total_per_s(&self) -> f64 {
        match &self.arrivals {
            ArrivalPlan::Poisson { segments } => segments
                .iter()
                .map(|segment| segment.rate_per_s)
                .fold(0.0, f64::max),
            ArrivalPlan::Trace(info) => {
                info.peak_window_expected() / (crate::time::ns_to_s(self.window))
            }
            ArrivalPlan::Closed(closed) => closed.max_rate_per_s(self.unqueued_response_ns()),
        }
    }

    /// The busiest key's share of the arrivals: 1 for one key; `1 / Σ k^−s` for Zipf keys
    /// (rank 1); a trace's most frequent key's share.
    pub fn hot_key_share(&self) -> f64 {
        if let Some(regions) = &self.regions {
            return regions.shares.iter().copied().fold(0.0, f64::max);
        }
        match &self.arrivals {
            ArrivalPlan::Trace(info) => info.hot_key_share,
            ArrivalPlan::Poisson { .. } if self.keys.count > 1 => self.keys.hot_share,
            ArrivalPlan::Poisson { .. } | ArrivalPlan::Closed(_) => 1.0,
        }
    }

    /// The busiest key: Zipf rank 1 (key 0), or a trace's most frequent key.
    pub fn hot_key(&self) -> u32 {
        if let Some(regions) = &self.regions {
            let hottest = regions
                .shares
                .iter()
                .enumerate()
                .fold(
                    (0, 0.0),
                    |best, (i, &s)| if s > best.1 { (i, s) } else { best },
                );
            return hottest.0 as u32;
        }
        match &self.arrivals {
            ArrivalPlan::Trace(info) => info.hot_key,
            ArrivalPlan::Poisson { .. } | ArrivalPlan::Closed(_) => 0,
        }
    }

    /// The highest rate of updates offered to the busiest key's rows: its share of the peak —
    /// with batching, at most one update per server per flush.
    pub fn peak_offered_per_s(&self) -> f64 {
        let likes = self.peak_total_per_s() * self.hot_key_share();
        match &self.features.batching {
            // Batching sends a key at most one update per server per flush interval.
            Some(batching) => {
                likes.min(f64::from(batching.servers) / (crate::time::ns_to_s(batching.flush)))
            }
            None => likes,
        }
    }

    /// Expected number of arrivals: the profile's integral, or the trace's lines × its scale.
    pub fn expected_arrivals(&self) -> u64 {
        match &self.arrivals {
            ArrivalPlan::Poisson { segments } => {
                let mut start = 0;
                let total: f64 = segments
                    .iter()
                    .map(|segment| {
                        let seconds = crate::time::ns_to_s(segment.end - start);
                        start = segment.end;
                        seconds * segment.rate_per_s
                    })
                    .sum();
                total.round() as u64
            }
            ArrivalPlan::Trace(info) => info.expected_arrivals(),
            // At most: every client cycling without ever waiting.
            ArrivalPlan::Closed(closed) => (closed.max_rate_per_s(self.unqueued_response_ns())
                * self.duration_s())
            .round() as u64,
        }
    }

    /// Whether requests other than the likes arrive as an open stream: reads of the count,
    /// or the neighbour endpoints' requests for the pool's connections.
    pub fn has_open_requests(&self) -> bool {
        let plan = self.stream_plan();
        !plan.neighbours.is_empty() || plan.reads.is_some()
    }

    /// What the arrival stream is made of.
    pub fn stream_plan(&self) -> crate::arrivals::StreamPlan<'_> {
        let mut needs = crate::arrivals::DrawNeeds::for_policies(&self.policies);
        // A likes table partitioned by (post, user) spreads by the user.
        needs.users |= self
            .likes
            .as_ref()
            .is_some_and(|l| l.partition_by == crate::model::likes::PartitionBy::PostUser);
        crate::arrivals::StreamPlan {
            likes: &self.arrivals,
            hold: &self.hold,
            keys: self.keys.popularity(),
            region_shares: self.regions.as_ref().map(|plan| plan.shares.as_slice()),
            users: self.users,
            needs,
            neighbours: self
                .features
                .pool
                .as_ref()
                .map_or(&[], |pool| pool.neighbours.as_slice()),
            reads: match (&self.read_segments, self.features.reads) {
                (Some(segments), Some(reads)) => Some((segments.as_slice(), reads.feed_size)),
                _ => None,
            },
            horizon: self.horizon,
        }
    }

    /// Number of distinct keys the arrivals can name.
    pub fn key_count(&self) -> usize {
        if let Some(regions) = &self.regions {
            return regions.names.len();
        }
        match &self.arrivals {
            ArrivalPlan::Poisson { .. } => self.keys.count as usize,
            ArrivalPlan::Trace(info) => info.keys.len(),
            ArrivalPlan::Closed(_) => 1,
        }
    }

    /// The display name of a dense key id: the trace's key, or the synthetic key's rank − 1.
    pub fn key_name(&self, key: u32) -> Cow<'_, str> {
        if let Some(regions) = &self.regions {
            return Cow::Borrowed(&regions.names[key as usize]);
        }
        match &self.arrivals {
            ArrivalPlan::Trace(info) => Cow::Borrowed(info.keys.name(key)),
            ArrivalPlan::Poisson { .. } | ArrivalPlan::Closed(_) => Cow::Owned(key.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{ArrivalPlan, KeyPlan, Overrides, Scenario};

    #[test]
    fn a_closed_loop_at_its_steady_peak_is_an_open_stream_in_its_file_too() {
        let text = "name = \"closed\"\nshards = [1, 2]\nduration_s = 10\n[hold]\nms = 2\n\
                    [arrivals]\nclients = 32\nthink_ms = 5\n";
        let path = Path::new("closed.toml");
        let closed = Scenario::parse(path, text, &Overrides::default()).expect("a valid scenario");
        assert!(matches!(closed.arrivals, ArrivalPlan::Closed(_)));
        let peak = closed.at_steady_peak(400.0, 1_000_000_000, 5_000_000_000, 2);
        let file = toml::to_string(&peak.resolved()).expect("a scenario file serialises");
        let again = Scenario::parse(path, &file, &Overrides::default()).expect("it reads back");
        let ArrivalPlan::Poisson { segments } = &again.arrivals else {
            panic!("an open stream, not {:?}, from:\n{file}", again.arrivals);
        };
        assert_eq!(segments.len(), 1);
        assert!((segments[0].rate_per_s - 400.0).abs() < 1e-9);
        assert_eq!(
            (again.horizon, again.warmup, again.replications),
            (5_000_000_000, 1_000_000_000, 2)
        );
    }

    #[test]
    fn the_hot_keys_share_is_rank_ones_zipf_weight() {
        assert_eq!(KeyPlan::new(1, 1.3, 10).hot_share, 1.0);
        // s = 2 over three keys: 1 / (1 + 1/4 + 1/9).
        let share = KeyPlan::new(3, 2.0, 10).hot_share;
        assert!(
            (share - 1.0 / (1.0 + 0.25 + 1.0 / 9.0)).abs() < 1e-15,
            "{share}"
        );
        assert!((KeyPlan::new(4, 0.0, 10).hot_share - 0.25).abs() < 1e-15);
    }
}
