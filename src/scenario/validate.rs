//! Parsing and validation: every rule a scenario must meet, each failure a one-line message
//! naming the field and what is allowed.

use std::path::Path;

use super::arrivals::{check_closed_loop, resolve_arrivals, resolve_traffic};
use super::behaviours::{resolve_adaptive, resolve_features, resolve_reads};
use super::fields::{
    DEFAULT_REPORT_TOP, DEFAULT_SEED, DEFAULT_USERS, FieldError, MAX_DURATION_S, MAX_HOLD_MS,
    MAX_KEYS, MAX_REPLICATIONS, MAX_REPORT_TOP, MAX_SHARDS, MAX_TOTAL_ROWS, MAX_WINDOWS,
    MIN_HORIZON_NS, Min, number, resolve_hold,
};
use super::file::{
    ClientTable, KeysTable, PolicyList, ScenarioFile, SkipLockedTable, SloTable, UsersTable,
};
use super::{ArrivalPlan, KeyPlan, Overrides, RateSegment, Scenario, Slo};
use crate::error::{InputError, clip};
use crate::model::adaptive::AdaptivePolicy;
use crate::model::clients::{Features, OnTimeout};
use crate::model::likes::LikesPlan;
use crate::model::machine::GrantOrder;
use crate::model::regions::RegionsPlan;
use crate::model::rows::SkipLocked;
use crate::model::{HoldDist, MachineModel, Policy, SimTime};
use crate::time::{NS_PER_S, ms_f64_to_ns, s_f64_to_ns};

/// Parses the TOML text, naming the field path of any error, and its line when `verbatim`
/// (the text is the file as written: with a calibration merged in, it is rewritten, and its
/// line numbers would point nowhere in either file).
pub(super) fn parse(path: &Path, text: &str, verbatim: bool) -> Result<ScenarioFile, InputError> {
    let error = |field: &str, err: &toml::de::Error| toml_error(path, text, field, err, verbatim);
    let deserializer = toml::Deserializer::parse(text).map_err(|err| error(".", &err))?;
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let field = err.path().to_string();
        error(&field, err.inner())
    })
}

fn toml_error(
    path: &Path,
    text: &str,
    field: &str,
    err: &toml::de::Error,
    verbatim: bool,
) -> InputError {
    let line = err
        .span()
        .filter(|_| verbatim)
        .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
    let message = plain_message(
        err.message().trim(),
        field,
        line.and_then(|n| text.lines().nth(n - 1)),
    );
    match (field, line) {
        ("." | "", Some(line)) => InputError::scenario(path, format!("line {line}"), message),
        ("." | "", None) => InputError::scenario(path, "(file)", message),
        (field, Some(line)) => {
            InputError::scenario(path, field, format!("{message} (line {line})"))
        }
        (field, None) => InputError::scenario(path, field, message),
    }
}

/// The TOML reader's message in the scenario's words: a number written with a unit says which
/// unit the field's name already holds, and a duplicate key is named.
fn plain_message(message: &str, field: &str, source_line: Option<&str>) -> String {
    let message = message.replace('\n', " ");
    if message.starts_with("invalid type") && message.ends_with("expected f64") {
        let unit = unit_of(field);
        let got = message
            .strip_prefix("invalid type: ")
            .and_then(|rest| rest.strip_suffix(", expected f64"))
            .unwrap_or("something else");
        return format!("must be a number{unit}, written without quotes or a unit, got {got}");
    }
    if message == "duplicate key" {
        let key = source_line
            .and_then(|line| line.split_once('='))
            .map(|(key, _)| key.trim().trim_matches('"'))
            .filter(|key| !key.is_empty());
        return match key {
            Some(key) => format!("duplicate key `{}`: give each field once", clip(key)),
            None => "duplicate key: give each field once".to_owned(),
        };
    }
    message
}

/// The unit a field's name states: ` of milliseconds` for `hold.ms` or `p99_ms`, and so on.
fn unit_of(field: &str) -> &'static str {
    let last = field.rsplit('.').next().unwrap_or(field);
    let last = last.split('[').next().unwrap_or(last);
    if last == "ms" || last.ends_with("_ms") {
        " of milliseconds (e.g. 1 or 0.5)"
    } else if last.ends_with("_per_s") {
        " per second"
    } else if last == "seconds" || last.ends_with("_s") {
        " of seconds"
    } else {
        ""
    }
}

/// Applies the overrides and checks every field, producing the resolved scenario.
pub(super) fn resolve(
    path: &Path,
    mut file: ScenarioFile,
    overrides: &Overrides,
) -> Result<Scenario, InputError> {
    if let Some(size) = overrides.pool {
        file.pool = Some(super::file::PoolTable { size: Some(size) });
    }
    let err = |(field, message): FieldError| InputError::scenario(path, &field, message);
    let named = |field: &'static str| move |message: String| err((field.to_owned(), message));
    let name = resolve_name(path, file.name.as_deref()).map_err(named("name"))?;
    let shards = resolve_shards(path, &file, overrides)?;
    let seed = overrides.seed.or(file.seed).unwrap_or(DEFAULT_SEED);
    let policies = resolve_policies(&file, overrides).map_err(named("policy"))?;
    let skip_locked = resolve_skip_locked(file.skip_locked.as_ref()).map_err(err)?;
    let window = resolve_window(&file).map_err(named("window_s"))?;
    let hold = required_hold(&file).map_err(err)?;
    let (traffic, arrivals, horizon) = resolve_load(path, &file, overrides, window)?;
    let is_trace = matches!(arrivals, ArrivalPlan::Trace(_));
    let keys = resolve_keys(file.keys.as_ref(), is_trace).map_err(err)?;
    let users = resolve_users(file.users.as_ref(), is_trace).map_err(err)?;
    check_hash_user(&arrivals, &policies).map_err(named("policy"))?;
    let slo = resolve_slo(file.slo.as_ref()).map_err(err)?;
    let replications = resolve_replications(path, &file, overrides)?;
    let warmup = resolve_warmup(&file, horizon).map_err(named("warmup_s"))?;
    let check = file.check.clone().unwrap_or_default();
    check_tolerances(&check).map_err(err)?;
    let stages = resolve_stages(&file, &hold, &arrivals, horizon).map_err(err)?;
    check_row_limit(&arrivals, &keys, &shards, stages.adaptive.as_ref()).map_err(err)?;
    let pipeline = overrides.event_path || stages.need_pipeline(&arrivals);
    let mut scenario = Scenario {
        path: path.to_path_buf(),
        name,
        description: file.description.clone().unwrap_or_default(),
        seed,
        shards,
        policies,
        skip_locked,
        window,
        horizon,
        hold,
        arrivals,
        traffic,
        keys,
        users,
        slo,
        replications,
        warmup,
        check,
        features: std::sync::Arc::new(stages.features),
        adaptive: stages.adaptive,
        read_segments: stages.read_segments,
        machine: std::sync::Arc::new(stages.machine),
        pipeline,
        regions: stages.regions.map(std::sync::Arc::new),
        likes: stages.likes.map(std::sync::Arc::new),
        calibration_kept: Vec::new(),
        calibration_spread: None,
        queue_limit: crate::model::engine::MAX_QUEUED,
        source_bytes: 0,
        file: ScenarioFile::default(),
    };
    check_closed_loop(&scenario).map_err(err)?;
    scenario.file = file;
    Ok(scenario)
}

/// The sections around the rows, resolved.
struct Stages {
    features: Features,
    read_segments: Option<Vec<RateSegment>>,
    adaptive: Option<AdaptivePolicy>,
    machine: MachineModel,
    likes: Option<LikesPlan>,
    regions: Option<RegionsPlan>,
}

impl Stages {
    /// Whether the run needs the event-driven pipeline: the client behaviours (deadlines,
    /// retries, batching, the pool, reads, neighbours), the closed loop's clients, the machine
    /// and the likes table live there; the closed form is the row stage alone.
    fn need_pipeline(&self, arrivals: &ArrivalPlan) -> bool {
        !self.machine.is_empty()
            || self.likes.is_some()
            || !self.features.is_empty()
            || matches!(arrivals, ArrivalPlan::Closed(_))
    }
}

/// The client behaviours, adaptive rows, the machine, the likes table and regions.
fn resolve_stages(
    file: &ScenarioFile,
    hold: &HoldDist,
    arrivals: &ArrivalPlan,
    horizon: SimTime,
) -> Result<Stages, FieldError> {
    let (features, read_segments) = resolve_behaviours(file, hold, arrivals, horizon)?;
    let adaptive = file
        .adaptive
        .as_ref()
        .map(|table| resolve_adaptive(table, hold))
        .transpose()?;
    let machine = super::machine::resolve_machine(file)?;
    let likes = super::likes::resolve_likes(file, arrivals)?;
    // Regions follow every like from its tap to its commit in each region.
    let every_like_commits = features.is_empty() && likes.is_none();
    let regions = super::regions::resolve_regions(file, arrivals, every_like_commits)?;
    Ok(Stages {
        features,
        read_segments,
        adaptive,
        machine,
        likes,
        regions,
    })
}

/// The shard counts: `--shards`, else the scenario's `shards`.
fn resolve_shards(
    path: &Path,
    file: &ScenarioFile,
    overrides: &Overrides,
) -> Result<Vec<u32>, InputError> {
    match (&overrides.shards, &file.shards) {
        (Some(shards), _) => {
            check_shards(shards).map_err(|message| InputError::flag("--shards", message))
        }
        (None, Some(shards)) => {
            check_shards(shards).map_err(|m| InputError::scenario(path, "shards", m))
        }
        (None, None) => Err(InputError::scenario(
            path,
            "shards",
            "missing: list the shard counts to simulate, e.g. shards = [1, 4, 16]".to_owned(),
        )),
    }
}

/// The policies: `--policy`, else the scenario's `policy`, else earliest-free.
fn resolve_policies(file: &ScenarioFile, overrides: &Overrides) -> Result<Vec<Policy>, String> {
    check_policies(
        overrides
            .policy
            .clone()
            .or_else(|| file.policy.clone().map(|list| list.0))
            .unwrap_or_else(|| vec![Policy::default()]),
    )
}

/// The time-series window in simulated time.
fn resolve_window(file: &ScenarioFile) -> Result<SimTime, String> {
    let window_s = number(
        file.window_s.unwrap_or(1.0),
        Min::Above(0.0),
        MAX_DURATION_S,
    )?;
    Ok(s_f64_to_ns(window_s).max(1))
}

/// The `[hold]` table, which every scenario needs (or takes from a calibration).
fn required_hold(file: &ScenarioFile) -> Result<HoldDist, FieldError> {
    let table = file.hold.as_ref().ok_or_else(|| {
        (
            "hold".to_owned(),
            "missing: add a [hold] table, e.g. dist = \"constant\" and ms = 1, or take it from a calibration (--calibration FILE, or include = \"calibration.toml\")".to_owned(),
        )
    })?;
    resolve_hold(table).map_err(|(field, m)| (format!("hold.{field}"), m))
}

/// The arrivals (with their what-if traffic) and the simulated period they cover, which
/// must be at least 1 µs and at most [`MAX_WINDOWS`] windows long.
fn resolve_load(
    path: &Path,
    file: &ScenarioFile,
    overrides: &Overrides,
    window: SimTime,
) -> Result<(crate::arrivals::Traffic, ArrivalPlan, SimTime), InputError> {
    let err = |field: &str, message: String| InputError::scenario(path, field, message);
    let table = file.arrivals.as_ref().ok_or_else(|| {
        err(
            "arrivals",
            "missing: add an [arrivals] table with rate_per_s, profile or trace".into(),
        )
    })?;
    let traffic = resolve_traffic(table, overrides.traffic).map_err(|(field, m)| err(&field, m))?;
    let (arrivals, horizon) = resolve_arrivals(path, table, file.duration_s, window, traffic)?;
    if horizon < MIN_HORIZON_NS {
        return Err(err(
            "duration_s",
            format!("the simulated period must last at least {MIN_HORIZON_NS} ns (1 µs)"),
        ));
    }
    if horizon.div_ceil(window) > MAX_WINDOWS {
        return Err(err(
            "window_s",
            format!("gives more than {MAX_WINDOWS} windows over the duration; use a longer window"),
        ));
    }
    Ok((traffic, arrivals, horizon))
}

/// `hash-user` on a trace needs its user column.
fn check_hash_user(arrivals: &ArrivalPlan, policies: &[Policy]) -> Result<(), String> {
    if let ArrivalPlan::Trace(info) = arrivals
        && policies.contains(&Policy::HashUser)
        && !info.has_user
    {
        return Err(
            "hash-user needs a user column in the trace; use another policy or add user ids".into(),
        );
    }
    Ok(())
}

/// The replications: `--replications`, else the scenario's, else 1.
fn resolve_replications(
    path: &Path,
    file: &ScenarioFile,
    overrides: &Overrides,
) -> Result<u32, InputError> {
    match overrides.replications {
        Some(r) => check_replications(r).map_err(|m| InputError::flag("--replications", m)),
        None => check_replications(file.replications.unwrap_or(1))
            .map_err(|m| InputError::scenario(path, "replications", m)),
    }
}

/// The warm-up in simulated time: shorter than the simulated period.
fn resolve_warmup(file: &ScenarioFile, horizon: SimTime) -> Result<SimTime, String> {
    let warmup_s = number(
        file.warmup_s.unwrap_or(0.0),
        Min::AtLeast(0.0),
        MAX_DURATION_S,
    )?;
    let warmup = s_f64_to_ns(warmup_s);
    if warmup >= horizon {
        return Err(format!(
            "must be shorter than the simulated period ({} s), got {warmup_s}",
            crate::time::ns_to_s(horizon)
        ));
    }
    Ok(warmup)
}

/// The clients' behaviours (`[client]`, `[batching]`, `[pool]`, `[reads]`) and the read
/// stream's rate over time.
fn resolve_behaviours(
    file: &ScenarioFile,
    hold: &HoldDist,
    arrivals: &ArrivalPlan,
    horizon: SimTime,
) -> Result<(crate::model::clients::Features, Option<Vec<RateSegment>>), FieldError> {
    let mut features = resolve_features(file, hold, horizon)?;
    let Some(table) = &file.reads else {
        return Ok((features, None));
    };
    let (reads, segments) = resolve_reads(table, hold, arrivals, horizon)?;
    let random_grants = file.hold.as_ref().and_then(|h| h.grant_order) == Some(GrantOrder::Random);
    if reads.lock && random_grants {
        // Two locking reads could each be handed some of a key's rows and wait forever for
        // the rest: the model has no deadlock detection, and first come, first served
        // never lets that happen.
        return Err((
            "reads.reads_lock".into(),
            "cannot be used with [hold] grant_order = \"random\": two locking reads could each hold part of a key's rows and wait for the rest forever; use grant_order = \"fifo\"".into(),
        ));
    }
    features.reads = Some(reads);
    Ok((features, Some(segments)))
}

/// The scenario file as resolved: every default filled in, the overrides applied.
pub(super) fn resolved_file(mut file: ScenarioFile, scenario: &Scenario) -> ScenarioFile {
    let window_s = crate::time::ns_to_s(scenario.window);
    let warmup_s = crate::time::ns_to_s(scenario.warmup);
    let is_trace = matches!(scenario.arrivals, ArrivalPlan::Trace(_));
    file.name = Some(scenario.name.clone());
    file.seed = Some(scenario.seed);
    file.shards = Some(scenario.shards.clone());
    file.policy = Some(PolicyList(scenario.policies.clone()));
    file.skip_locked = scenario
        .policies
        .contains(&Policy::SkipLocked)
        .then_some(SkipLockedTable {
            tries: Some(scenario.skip_locked.tries),
            try_ms: Some(crate::time::ns_to_ms(scenario.skip_locked.try_ns)),
        });
    if let Some(arrivals) = file.arrivals.as_mut()
        && !matches!(scenario.arrivals, ArrivalPlan::Closed(_))
    {
        arrivals.scale = Some(scenario.traffic.scale);
        if is_trace {
            arrivals.speed = Some(scenario.traffic.speed);
            arrivals.jitter_ms = Some(crate::time::ns_to_ms(scenario.traffic.jitter));
        }
    }
    if let Some(arrivals) = file.arrivals.as_mut()
        && arrivals.counts.is_some()
        && let ArrivalPlan::Poisson { segments } = &scenario.arrivals
    {
        // The counts file's intervals as the profile they replay: the folder repeats the run
        // without the file.
        let mut start = 0;
        arrivals.profile = Some(
            segments
                .iter()
                .map(|segment| {
                    let seconds = (segment.end - start) as f64 / NS_PER_S as f64;
                    start = segment.end;
                    super::file::ProfileSegment {
                        seconds,
                        rate_per_s: segment.rate_per_s,
                    }
                })
                .collect(),
        );
        arrivals.counts = None;
        arrivals.count_column = None;
        arrivals.rate_column = None;
        arrivals.interval_s = None;
        arrivals.time_column = None;
        arrivals.time_format = None;
    }
    file.window_s = Some(window_s);
    file.replications = Some(scenario.replications);
    file.warmup_s = Some(warmup_s);
    file.duration_s = Some(scenario.horizon as f64 / NS_PER_S as f64);
    if let Some(client) = &scenario.features.client {
        file.client = Some(ClientTable {
            timeout_ms: Some(crate::time::ns_to_ms(client.timeout)),
            on_timeout: Some(match client.on_timeout {
                OnTimeout::Cancel => "cancel".into(),
                OnTimeout::Orphan => "orphan".into(),
            }),
            retries: Some(client.retries),
            backoff_ms: Some(crate::time::ns_to_ms(client.backoff)),
            idempotent: Some(client.idempotent),
            ..file.client.take().unwrap_or_default()
        });
    }
    if let (Some(table), Some(likes)) = (file.likes_table.as_mut(), scenario.likes.as_ref()) {
        table.partitions = Some(likes.partitions);
        table.partition_by = Some(likes.partition_by.name().to_owned());
        table.same_transaction = Some(likes.same_transaction);
        table.step_failure_rate = Some(likes.step_failure_rate);
    }
    file.keys = Some(KeysTable {
        count: (!is_trace).then_some(scenario.keys.count),
        zipf_s: (!is_trace).then_some(scenario.keys.zipf_s),
        report_top: Some(scenario.keys.report_top as u32),
    });
    file.users = (!is_trace).then_some(UsersTable {
        count: Some(scenario.users),
        repeat_fraction: scenario.likes.as_ref().map(|likes| likes.repeat_fraction),
    });
    file
}

/// Keeps the rows a sweep may create — keys × the sum of the shard counts, and keys × the
/// adaptive maximum — within [`MAX_TOTAL_ROWS`].
fn check_row_limit(
    arrivals: &ArrivalPlan,
    keys: &KeyPlan,
    shards: &[u32],
    adaptive: Option<&crate::model::adaptive::AdaptivePolicy>,
) -> Result<(), FieldError> {
    let key_count = key_count_for_limit(arrivals, keys);
    if let Some(policy) = adaptive {
        let total_rows = key_count * u64::from(policy.max);
        if total_rows > MAX_TOTAL_ROWS {
            return Err((
                "adaptive.max".into(),
                format!(
                    "the keys could grow to {total_rows} rows, above the limit of {MAX_TOTAL_ROWS}; lower max or the key count"
                ),
            ));
        }
    }
    let total_rows = key_count * shards.iter().map(|&s| u64::from(s)).sum::<u64>();
    if total_rows > MAX_TOTAL_ROWS {
        return Err((
            "shards".into(),
            format!(
                "{key_count} keys × the sum of the shard counts is {total_rows} rows, above the limit of {MAX_TOTAL_ROWS}; simulate fewer keys or shard counts"
            ),
        ));
    }
    Ok(())
}

fn resolve_name(path: &Path, name: Option<&str>) -> Result<String, String> {
    let name = match name {
        Some(name) => name.to_owned(),
        None => path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    if name.is_empty() || name.len() > 100 || name.starts_with('.') || !name.chars().all(allowed) {
        return Err(format!(
            "{name:?} cannot name an output folder: use 1 to 100 letters, digits, '.', '_' or '-', not starting with '.'"
        ));
    }
    Ok(name)
}

/// The most policies one run compares.
const MAX_POLICIES: usize = 6;

fn check_policies(policies: Vec<Policy>) -> Result<Vec<Policy>, String> {
    if policies.is_empty() {
        return Err("is empty: name at least one policy, e.g. \"earliest-free\"".into());
    }
    if policies.len() > MAX_POLICIES {
        return Err(format!(
            "lists {} policies; at most {MAX_POLICIES}",
            policies.len()
        ));
    }
    if let Some((_, twice)) = policies
        .iter()
        .enumerate()
        .find(|(at, p)| policies[..*at].contains(p))
    {
        return Err(format!(
            "{twice} is listed twice: each policy may appear once"
        ));
    }
    Ok(policies)
}

fn resolve_skip_locked(table: Option<&SkipLockedTable>) -> Result<SkipLocked, (String, String)> {
    let Some(table) = table else {
        return Ok(SkipLocked::default());
    };
    let tries = table.tries.unwrap_or(3);
    if tries == 0 || tries > MAX_SHARDS {
        return Err((
            "skip_locked.tries".into(),
            format!("must be from 1 to {MAX_SHARDS}, got {tries}"),
        ));
    }
    let try_ms = number(table.try_ms.unwrap_or(0.0), Min::AtLeast(0.0), MAX_HOLD_MS)
        .map_err(|m| ("skip_locked.try_ms".to_owned(), m))?;
    Ok(SkipLocked {
        tries,
        try_ns: ms_f64_to_ns(try_ms),
    })
}

fn check_shards(shards: &[u32]) -> Result<Vec<u32>, String> {
    if shards.is_empty() {
        return Err("is empty: list at least one shard count, e.g. [1, 4, 16]".into());
    }
    if let Some(bad) = shards.iter().find(|&&s| s == 0 || s > MAX_SHARDS) {
        return Err(format!(
            "{bad} is not allowed: each shard count must be from 1 to {MAX_SHARDS}"
        ));
    }
    let mut sorted = shards.to_vec();
    sorted.sort_unstable();
    if let Some(pair) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(format!(
            "{} is listed twice: each shard count may appear once",
            pair[0]
        ));
    }
    Ok(sorted)
}

fn resolve_keys(table: Option<&KeysTable>, is_trace: bool) -> Result<KeyPlan, FieldError> {
    let report_top = table
        .and_then(|t| t.report_top)
        .unwrap_or(DEFAULT_REPORT_TOP);
    if report_top == 0 || report_top > MAX_REPORT_TOP {
        return Err((
            "keys.report_top".into(),
            format!("must be from 1 to {MAX_REPORT_TOP}, got {report_top}"),
        ));
    }
    let report_top = report_top as usize;
    let Some(table) = table else {
        return Ok(KeyPlan::new(1, 1.0, report_top));
    };
    if is_trace && (table.count.is_some() || table.zipf_s.is_some()) {
        return Err((
            "keys".into(),
            "count and zipf_s are not used with arrivals.trace: the trace's key column names the keys".into(),
        ));
    }
    let count = table.count.unwrap_or(1);
    if count == 0 || count > MAX_KEYS {
        return Err((
            "keys.count".into(),
            format!("must be from 1 to {MAX_KEYS}, got {count}"),
        ));
    }
    let zipf_s = number(table.zipf_s.unwrap_or(1.0), Min::AtLeast(0.0), 100.0)
        .map_err(|m| ("keys.zipf_s".to_owned(), m))?;
    Ok(KeyPlan::new(count, zipf_s, report_top))
}

fn resolve_users(table: Option<&UsersTable>, is_trace: bool) -> Result<u64, FieldError> {
    match table {
        Some(_) if is_trace => Err((
            "users".into(),
            "not used with arrivals.trace: the trace's user column names the users".into(),
        )),
        Some(table) => match table.count.unwrap_or(DEFAULT_USERS) {
            0 => Err(("users.count".into(), "must be ≥ 1, got 0".into())),
            count => Ok(count),
        },
        None => Ok(DEFAULT_USERS),
    }
}

fn resolve_slo(table: Option<&SloTable>) -> Result<Slo, FieldError> {
    let Some(table) = table else {
        return Ok(Slo::default());
    };
    let wait = |value: Option<f64>, field: &str| {
        value
            .map(|ms| {
                number(ms, Min::Above(0.0), MAX_HOLD_MS)
                    .map(ms_f64_to_ns)
                    .map_err(|m| (format!("slo.{field}"), m))
            })
            .transpose()
    };
    let max_utilization = table
        .max_utilization
        .map(|u| number(u, Min::Above(0.0), 1.0).map_err(|m| ("slo.max_utilization".to_owned(), m)))
        .transpose()?;
    Ok(Slo {
        p99_ns: wait(table.p99_ms, "p99_ms")?,
        p999_ns: wait(table.p999_ms, "p999_ms")?,
        max_utilization,
    })
}

fn check_replications(replications: u32) -> Result<u32, String> {
    if replications == 0 || replications > MAX_REPLICATIONS {
        return Err(format!(
            "must be from 1 to {MAX_REPLICATIONS}, got {replications}"
        ));
    }
    Ok(replications)
}

fn check_tolerances(table: &super::file::CheckTable) -> Result<(), FieldError> {
    let tolerance = |value: Option<f64>, field: String| match value {
        Some(v) => number(v, Min::AtLeast(0.0), 1e12)
            .map(|_| ())
            .map_err(|m| (field, m)),
        None => Ok(()),
    };
    tolerance(table.rel, "check.rel".into())?;
    tolerance(table.abs_ms, "check.abs_ms".into())?;
    tolerance(table.abs_count, "check.abs_count".into())?;
    for (column, limits) in table.columns.iter().flatten() {
        tolerance(limits.rel, format!("check.columns.{column}.rel"))?;
        tolerance(limits.abs, format!("check.columns.{column}.abs"))?;
    }
    Ok(())
}

fn key_count_for_limit(arrivals: &ArrivalPlan, keys: &KeyPlan) -> u64 {
    match arrivals {
        ArrivalPlan::Trace(info) => info.keys.len() as u64,
        ArrivalPlan::Poisson { .. } => u64::from(keys.count),
        ArrivalPlan::Closed(_) => 1,
    }
}
