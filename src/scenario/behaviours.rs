//! Validation of the optional behaviours: `[client]`, `[batching]`, `[pool]` with
//! `[[neighbours]]`, `[adaptive]` and `[reads]`, each failure naming its field.

use super::fields::{
    FieldError, MAX_DURATION_S, MAX_HOLD_MS, MAX_RATE_PER_S, MAX_SHARDS, Min, check_rate, number,
    required_number,
};
use super::file::{
    AdaptiveTable, BatchingTable, ClientTable, NeighbourTable, PoolTable, ReadsTable, ScenarioFile,
};
use super::{ArrivalPlan, RateSegment};
use crate::model::adaptive::{AdaptivePolicy, GrowWhen};
use crate::model::clients::{
    Batching, ClientPolicy, Crash, Features, Neighbour, OnTimeout, Pool, ReadMode, Reads,
};
use crate::model::{HoldDist, SimTime};
use crate::time::{ms_f64_to_ns, s_f64_to_ns};

/// Most flushes a run may schedule (servers × period ÷ flush interval).
const MAX_FLUSHES: f64 = 1e8;
/// Most retries, batching servers, pool connections.
const MAX_RETRIES: u32 = 100;
const MAX_SERVERS: u32 = 100_000;
pub const MAX_POOL: u32 = 1_000_000;

pub(super) fn resolve_features(
    file: &ScenarioFile,
    hold: &HoldDist,
    horizon: SimTime,
) -> Result<Features, FieldError> {
    // A [client] with only the time outside the database is the machine's, not a policy.
    let client = file
        .client
        .as_ref()
        .filter(|table| super::machine::has_client_policy(table))
        .map(resolve_client)
        .transpose()?;
    let batching = file
        .batching
        .as_ref()
        .map(|table| resolve_batching(table, hold, horizon))
        .transpose()?;
    if client.is_some() && batching.is_some() {
        return Err((
            "client".into(),
            "not used with [batching]: a batched like is acknowledged from the app server's memory, so clients never wait on the row"
                .into(),
        ));
    }
    let pool = match (&file.pool, &file.neighbours) {
        (Some(table), neighbours) => Some(resolve_pool(
            table,
            neighbours.as_deref().unwrap_or_default(),
        )?),
        (None, Some(_)) => {
            return Err((
                "neighbours".into(),
                "need a [pool]: neighbours share its connections".into(),
            ));
        }
        (None, None) => None,
    };
    Ok(Features {
        client,
        batching,
        pool,
        reads: None,
    })
}

fn resolve_client(table: &ClientTable) -> Result<ClientPolicy, FieldError> {
    let timeout_ms = required_number(
        table.timeout_ms,
        "client.timeout_ms",
        "how long a client waits, in ms",
        Min::Above(0.0),
        MAX_HOLD_MS,
    )?;
    let on_timeout = match table.on_timeout.as_deref().unwrap_or("cancel") {
        "cancel" => OnTimeout::Cancel,
        "orphan" => OnTimeout::Orphan,
        other => {
            return Err((
                "client.on_timeout".into(),
                format!(
                    "unknown {other:?}: allowed are cancel (the database abandons the update) and orphan (it still runs)"
                ),
            ));
        }
    };
    let retries = table.retries.unwrap_or(0);
    if retries > MAX_RETRIES {
        return Err((
            "client.retries".into(),
            format!("must be from 0 to {MAX_RETRIES}, got {retries}"),
        ));
    }
    let backoff_ms = number(
        table.backoff_ms.unwrap_or(10.0),
        Min::AtLeast(0.0),
        MAX_HOLD_MS,
    )
    .map_err(|m| ("client.backoff_ms".to_owned(), m))?;
    Ok(ClientPolicy {
        timeout: ms_f64_to_ns(timeout_ms),
        on_timeout,
        retries,
        backoff: ms_f64_to_ns(backoff_ms),
        idempotent: table.idempotent.unwrap_or(true),
    })
}

fn resolve_batching(
    table: &BatchingTable,
    hold: &HoldDist,
    horizon: SimTime,
) -> Result<Batching, FieldError> {
    let servers = table.servers.ok_or_else(|| {
        (
            "batching.servers".to_owned(),
            "missing: how many app servers batch likes".to_owned(),
        )
    })?;
    if servers == 0 || servers > MAX_SERVERS {
        return Err((
            "batching.servers".into(),
            format!("must be from 1 to {MAX_SERVERS}, got {servers}"),
        ));
    }
    let flush_ms = table.flush_ms.ok_or_else(|| {
        (
            "batching.flush_ms".to_owned(),
            "missing: how often each server flushes, in ms".to_owned(),
        )
    })?;
    let flush_ms = number(flush_ms, Min::AtLeast(0.001), MAX_HOLD_MS)
        .map_err(|m| ("batching.flush_ms".to_owned(), m))?;
    let flushes = f64::from(servers) * (crate::time::ns_to_ms(horizon)) / flush_ms;
    if flushes > MAX_FLUSHES {
        return Err((
            "batching.flush_ms".into(),
            format!(
                "{servers} servers flushing every {flush_ms} ms make {flushes:.0} flushes, above the limit of {MAX_FLUSHES}; flush less often"
            ),
        ));
    }
    let mut crashes = Vec::new();
    for (i, crash) in table.crash.iter().flatten().enumerate() {
        let field = |name: &str| format!("batching.crash[{i}].{name}");
        let at_s = number(crash.at_s, Min::AtLeast(0.0), MAX_DURATION_S)
            .map_err(|m| (field("at_s"), m))?;
        let at = s_f64_to_ns(at_s);
        if at >= horizon {
            return Err((
                field("at_s"),
                format!(
                    "must be within the simulated period ({} s), got {at_s}",
                    crate::time::ns_to_s(horizon)
                ),
            ));
        }
        if crash.servers == 0 || crash.servers > servers {
            return Err((
                field("servers"),
                format!(
                    "must be from 1 to batching.servers ({servers}), got {}",
                    crash.servers
                ),
            ));
        }
        crashes.push(Crash {
            at,
            servers: crash.servers,
        });
    }
    crashes.sort_by_key(|c| c.at);
    Ok(Batching {
        servers,
        flush: ms_f64_to_ns(flush_ms).max(1),
        crashes,
        hold: hold.clone(),
    })
}

fn resolve_pool(table: &PoolTable, neighbours: &[NeighbourTable]) -> Result<Pool, FieldError> {
    let size = table.size.ok_or_else(|| {
        (
            "pool.size".to_owned(),
            "missing: how many connections the pool has".to_owned(),
        )
    })?;
    if size == 0 || size > MAX_POOL {
        return Err((
            "pool.size".into(),
            format!("must be from 1 to {MAX_POOL}, got {size}"),
        ));
    }
    let mut resolved: Vec<Neighbour> = Vec::new();
    for (i, neighbour) in neighbours.iter().enumerate() {
        let field = |name: &str| format!("neighbours[{i}].{name}");
        let name_ok = !neighbour.name.is_empty()
            && neighbour.name.len() <= 100
            && !neighbour.name.contains([',', '"', '\n']);
        if !name_ok {
            return Err((
                field("name"),
                "must be 1 to 100 characters without commas, quotes or line breaks".into(),
            ));
        }
        if resolved.iter().any(|n| n.name == neighbour.name) {
            return Err((
                field("name"),
                format!("{:?} is used twice: names must differ", neighbour.name),
            ));
        }
        let rate = check_rate(neighbour.rate_per_s).map_err(|m| (field("rate_per_s"), m))?;
        let hold_ms = number(neighbour.hold_ms, Min::AtLeast(0.0), MAX_HOLD_MS)
            .map_err(|m| (field("hold_ms"), m))?;
        resolved.push(Neighbour {
            name: neighbour.name.clone(),
            rate_per_s: rate,
            hold: ms_f64_to_ns(hold_ms),
        });
    }
    if resolved.len() > usize::from(u16::MAX - 1) {
        return Err(("neighbours".into(), "too many neighbour endpoints".into()));
    }
    Ok(Pool {
        size,
        neighbours: resolved,
    })
}

pub(super) fn resolve_adaptive(
    table: &AdaptiveTable,
    hold: &HoldDist,
) -> Result<AdaptivePolicy, FieldError> {
    let start = table.start.unwrap_or(1);
    if start == 0 || start > MAX_SHARDS {
        return Err((
            "adaptive.start".into(),
            format!("must be from 1 to {MAX_SHARDS}, got {start}"),
        ));
    }
    let max = table.max.ok_or_else(|| {
        (
            "adaptive.max".to_owned(),
            "missing: the most rows a key may grow to".to_owned(),
        )
    })?;
    if max < start || max > MAX_SHARDS {
        return Err((
            "adaptive.max".into(),
            format!("must be from start ({start}) to {MAX_SHARDS}, got {max}"),
        ));
    }
    let factor = number(table.factor.unwrap_or(2.0), Min::Above(1.0), 16.0)
        .map_err(|m| ("adaptive.factor".to_owned(), m))?;
    let grow_when = match table.grow_when.as_ref().map(|g| (g.p99_ms, g.utilization)) {
        Some((Some(p99), None)) => GrowWhen::P99Wait(ms_f64_to_ns(
            number(p99, Min::Above(0.0), MAX_HOLD_MS)
                .map_err(|m| ("adaptive.grow_when.p99_ms".to_owned(), m))?,
        )),
        Some((None, Some(u))) => GrowWhen::Utilization(
            number(u, Min::Above(0.0), 1.0)
                .map_err(|m| ("adaptive.grow_when.utilization".to_owned(), m))?,
        ),
        _ => {
            return Err((
                "adaptive.grow_when".into(),
                "set exactly one signal: { p99_ms = 5 } or { utilization = 0.7 }".into(),
            ));
        }
    };
    let window_s = number(
        table.signal_window_s.unwrap_or(1.0),
        Min::AtLeast(0.001),
        MAX_DURATION_S,
    )
    .map_err(|m| ("adaptive.signal_window_s".to_owned(), m))?;
    let ttl_s = number(
        table.writer_cache_ttl_s.unwrap_or(5.0),
        Min::AtLeast(0.0),
        MAX_DURATION_S,
    )
    .map_err(|m| ("adaptive.writer_cache_ttl_s".to_owned(), m))?;
    Ok(AdaptivePolicy {
        start,
        max,
        factor,
        grow_when,
        window: s_f64_to_ns(window_s),
        cache_ttl: s_f64_to_ns(ttl_s),
        mean_hold_ns: hold.mean_ns(),
    })
}

/// The reads' rate over time: `rate_per_s` for the whole period (beside synthetic likes or a
/// closed loop's clients), or `per_write` times the likes' profile.
fn read_segments(
    table: &ReadsTable,
    arrivals: &ArrivalPlan,
    horizon: SimTime,
) -> Result<Vec<RateSegment>, FieldError> {
    let no_trace = || {
        Err((
            "reads".into(),
            "need synthetic likes (rate_per_s, profile or clients): a trace has no read stream"
                .into(),
        ))
    };
    let segments = match (table.rate_per_s, table.per_write, arrivals) {
        (Some(_), None, ArrivalPlan::Trace(_)) | (None, Some(_), ArrivalPlan::Trace(_)) => {
            return no_trace();
        }
        (Some(rate), None, _) => {
            let rate = check_rate(rate).map_err(|m| ("reads.rate_per_s".to_owned(), m))?;
            vec![RateSegment {
                end: horizon,
                rate_per_s: rate,
            }]
        }
        (None, Some(_), ArrivalPlan::Closed(_)) => {
            return Err((
                "reads.per_write".into(),
                "scales the like rate, which a closed loop of clients does not fix in advance: give reads.rate_per_s".into(),
            ));
        }
        (None, Some(per_write), ArrivalPlan::Poisson { segments }) => {
            let per_write = number(per_write, Min::AtLeast(0.0), 1e6)
                .map_err(|m| ("reads.per_write".to_owned(), m))?;
            segments
                .iter()
                .map(|s| RateSegment {
                    end: s.end,
                    rate_per_s: s.rate_per_s * per_write,
                })
                .collect()
        }
        _ => {
            return Err((
                "reads".into(),
                "set exactly one of rate_per_s or per_write".into(),
            ));
        }
    };
    if segments.iter().any(|s| s.rate_per_s > MAX_RATE_PER_S) {
        return Err((
            "reads.per_write".into(),
            format!("gives more than {MAX_RATE_PER_S} reads a second"),
        ));
    }
    Ok(segments)
}

/// `[reads]`: how reads are served, and their rate over time.
pub(super) fn resolve_reads(
    table: &ReadsTable,
    hold: &HoldDist,
    arrivals: &ArrivalPlan,
    horizon: SimTime,
) -> Result<(Reads, Vec<RateSegment>), FieldError> {
    let segments = read_segments(table, arrivals, horizon)?;
    let mode = match table.mode.as_deref().unwrap_or("sum") {
        "sum" => ReadMode::Sum,
        "cached" => ReadMode::Cached,
        other => {
            return Err((
                "reads.mode".into(),
                format!("unknown {other:?}: allowed are sum and cached"),
            ));
        }
    };
    let ttl_s = number(
        table.cache_ttl_s.unwrap_or(5.0),
        Min::AtLeast(0.0),
        MAX_DURATION_S,
    )
    .map_err(|m| ("reads.cache_ttl_s".to_owned(), m))?;
    let feed_size = table.feed_size.unwrap_or(1);
    if feed_size == 0 || feed_size > 1000 {
        return Err((
            "reads.feed_size".into(),
            format!("must be from 1 to 1000, got {feed_size}"),
        ));
    }
    let lock_hold_ms = match table.lock_hold_ms {
        Some(ms) => number(ms, Min::AtLeast(0.0), MAX_HOLD_MS)
            .map_err(|m| ("reads.lock_hold_ms".to_owned(), m))?,
        None => hold.mean_ns() / 1e6,
    };
    let reads = Reads {
        mode,
        cache_ttl: s_f64_to_ns(ttl_s),
        feed_size,
        lock: table.reads_lock.unwrap_or(false),
        lock_hold: ms_f64_to_ns(lock_hold_ms),
    };
    Ok((reads, segments))
}
