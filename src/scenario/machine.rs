//! Validation of the machine sections: `[hold] per_waiter_ms`, `[machine]` with
//! `[machine.cpu]`, `[wal]` and `[client] overhead_ms` / `[client.overhead]`, each failure
//! naming its field. Any of them puts the scenario on the event-driven pipeline.

use super::fields::{
    FieldError, MAX_HOLD_MS, Min, hold_only_field, number, required_number, resolve_hold,
};
use super::file::{ClientTable, HoldTable, MachineTable, ScenarioFile, StallsTable, WalTable};
use crate::model::HoldDist;
use crate::model::machine::{Cpu, MachineModel, WalModel};
use crate::model::stalls::StallPlan;
use crate::time::{SimTime, ms_f64_to_ns, s_f64_to_ns};

/// Most cores a machine may have.
pub const MAX_CORES: u32 = 4096;

/// The machine sections of `file`, resolved.
pub(super) fn resolve_machine(file: &ScenarioFile) -> Result<MachineModel, FieldError> {
    let per_waiter = optional_ms(
        file.hold.as_ref().and_then(|hold| hold.per_waiter_ms),
        "hold.per_waiter_ms",
    )?;
    let grant_order = file
        .hold
        .as_ref()
        .and_then(|hold| hold.grant_order)
        .unwrap_or_default();
    let machine = file.machine.as_ref();
    let wake = optional_ms(machine.and_then(|m| m.wake_ms), "machine.wake_ms")?;
    let wake_cpu = optional_ms(machine.and_then(|m| m.wake_cpu_ms), "machine.wake_cpu_ms")?;
    let herd_cpu = herd_ns(machine.and_then(|m| m.herd_cpu_ms), wake_cpu)?;
    let idle_wake_cpu = optional_ms(
        machine.and_then(|m| m.idle_wake_cpu_ms),
        "machine.idle_wake_cpu_ms",
    )?;
    let request_cpu = optional_ms(
        machine.and_then(|m| m.request_cpu_ms),
        "machine.request_cpu_ms",
    )?;
    let page_scan_cpu = optional_ms(
        machine.and_then(|m| m.page_scan_cpu_ms),
        "machine.page_scan_cpu_ms",
    )?;
    let cpu = machine.map(resolve_cpu).transpose()?;
    let wal = file
        .wal
        .as_ref()
        .map(|table| resolve_wal(table, machine.is_some()))
        .transpose()?;
    let client = file.client.as_ref();
    let overhead = client
        .map(|c| resolve_overhead(c.overhead_ms, c.overhead.as_ref(), "overhead"))
        .transpose()?
        .flatten();
    let idle_overhead = client
        .map(|c| {
            resolve_overhead(
                c.idle_overhead_ms,
                c.idle_overhead.as_ref(),
                "idle_overhead",
            )
        })
        .transpose()?
        .flatten();
    let stalls = file.stalls.as_ref().map(resolve_stalls).transpose()?;
    Ok(MachineModel {
        stalls,
        per_waiter,
        grant_order,
        wake,
        wake_cpu,
        herd_cpu,
        idle_wake_cpu,
        request_cpu,
        page_scan_cpu,
        cpu,
        wal,
        overhead,
        idle_overhead,
    })
}

/// `[machine]`'s cores and `[machine.cpu]`, the CPU one update needs on them.
fn resolve_cpu(table: &MachineTable) -> Result<Cpu, FieldError> {
    let cores = table.cores.ok_or_else(|| {
        (
            "machine.cores".to_owned(),
            "missing: the cores every update's CPU runs on, e.g. cores = 2".to_owned(),
        )
    })?;
    if cores == 0 || cores > MAX_CORES {
        return Err((
            "machine.cores".to_owned(),
            format!("must be from 1 to {MAX_CORES}, got {cores}"),
        ));
    }
    let demand = table.cpu.as_ref().ok_or_else(|| {
        (
            "machine.cpu".to_owned(),
            "missing: add [machine.cpu] with the CPU of one update, e.g. dist = \"constant\" and ms = 0.036".to_owned(),
        )
    })?;
    let demand = distribution(demand, "machine.cpu")?;
    Ok(Cpu {
        cores,
        demand,
        scheduler: table.scheduler.unwrap_or_default(),
    })
}

/// `[wal]`: the flush, its leader's CPU (which needs `[machine]`'s cores, `has_cores`) and
/// group commit.
fn resolve_wal(table: &WalTable, has_cores: bool) -> Result<WalModel, FieldError> {
    let flush_ms = required_number(
        table.flush_ms,
        "wal.flush_ms",
        "how long one WAL flush takes, ms, e.g. flush_ms = 0.087",
        Min::Above(0.0),
        MAX_HOLD_MS,
    )?;
    let cpu = optional_ms(table.cpu_ms, "wal.cpu_ms")?;
    if cpu > 0 && !has_cores {
        return Err((
            "wal.cpu_ms".to_owned(),
            "needs [machine]: the cores the flush's leader runs on".to_owned(),
        ));
    }
    Ok(WalModel {
        flush: ms_f64_to_ns(flush_ms).max(1),
        cpu,
        group_commit: table.group_commit.unwrap_or(true),
    })
}

/// Most seconds between stalls or checkpoints.
const MAX_STALL_EVERY_S: f64 = 1e6;

/// `[stalls]`: their rate (`every_s`) and checkpoints (`checkpoint_s`), at least one, and their
/// duration (`duration_ms` or `[stalls.duration]`, exactly one).
fn resolve_stalls(table: &StallsTable) -> Result<StallPlan, FieldError> {
    let seconds = |value: Option<f64>, field: &str| {
        value
            .map(|s| {
                number(s, Min::AtLeast(0.001), MAX_STALL_EVERY_S)
                    .map(s_f64_to_ns)
                    .map_err(|m| (format!("stalls.{field}"), m))
            })
            .transpose()
    };
    let every = seconds(table.every_s, "every_s")?;
    let checkpoint = seconds(table.checkpoint_s, "checkpoint_s")?;
    if every.is_none() && checkpoint.is_none() {
        return Err((
            "stalls.every_s".to_owned(),
            "missing: the mean time between stalls, s (every_s = 30), or a stall per \
             checkpoint (checkpoint_s = 300), or both"
                .to_owned(),
        ));
    }
    let duration = resolve_overhead_like(
        table.duration_ms,
        table.duration.as_ref(),
        "stalls",
        "duration",
    )?
    .ok_or_else(|| {
        (
            "stalls.duration_ms".to_owned(),
            "missing: how long one stall lasts, ms (duration_ms = 50), or \
                 [stalls.duration] with the fields of [hold]"
                .to_owned(),
        )
    })?;
    let longest = table
        .longest_ms
        .map(|ms| {
            number(ms, Min::Above(0.0), MAX_HOLD_MS)
                .map(ms_f64_to_ns)
                .map_err(|m| ("stalls.longest_ms".to_owned(), m))
        })
        .transpose()?;
    Ok(StallPlan {
        every,
        checkpoint,
        duration,
        seen: table.seen,
        longest,
        injected: None,
    })
}

/// An optional time in ms (≥ 0, default 0) as nanoseconds; an error names `field`.
fn optional_ms(ms: Option<f64>, field: &str) -> Result<SimTime, FieldError> {
    ms.map_or(Ok(0), |ms| {
        number(ms, Min::AtLeast(0.0), MAX_HOLD_MS)
            .map(ms_f64_to_ns)
            .map_err(|m| (field.to_owned(), m))
    })
}

/// `[machine] herd_cpu_ms` in signed nanoseconds: at least −`wake_cpu` (a waiter woken with
/// one other costs at least nothing; with more, the engine keeps each at 0 or above).
fn herd_ns(ms: Option<f64>, wake_cpu: SimTime) -> Result<i64, FieldError> {
    let Some(ms) = ms else { return Ok(0) };
    let floor = crate::time::ns_to_ms(wake_cpu);
    if ms.is_finite() && ms >= -floor && ms <= MAX_HOLD_MS {
        return Ok((ms * 1e6).round() as i64);
    }
    Err((
        "machine.herd_cpu_ms".to_owned(),
        format!(
            "must be a finite number ≥ −wake_cpu_ms ({}) and ≤ {MAX_HOLD_MS}, got {ms}: below 0, \
             waiters woken together share part of their wake-up, never more than all of it",
            if floor > 0.0 { -floor } else { 0.0 }
        ),
    ))
}

/// `[client] {name}_ms` (a constant) or `[client.{name}]` (a distribution), for `overhead`
/// and `idle_overhead`.
fn resolve_overhead(
    ms: Option<f64>,
    table: Option<&HoldTable>,
    name: &str,
) -> Result<Option<HoldDist>, FieldError> {
    resolve_overhead_like(ms, table, "client", name)
}

/// `[{section}] {name}_ms` (a constant) or `[{section}.{name}]` (a distribution): a time
/// given once either way.
fn resolve_overhead_like(
    ms: Option<f64>,
    table: Option<&HoldTable>,
    section: &str,
    name: &str,
) -> Result<Option<HoldDist>, FieldError> {
    match (ms, table) {
        (Some(_), Some(_)) => Err((
            format!("{section}.{name}_ms"),
            format!("give it once: {name}_ms (a constant) or [{section}.{name}] (a distribution)"),
        )),
        (Some(ms), None) => {
            let ms = number(ms, Min::AtLeast(0.0), MAX_HOLD_MS)
                .map_err(|m| (format!("{section}.{name}_ms"), m))?;
            Ok(Some(HoldDist::Constant {
                hold_ns: ms_f64_to_ns(ms),
            }))
        }
        (None, Some(dist)) => distribution(dist, &format!("{section}.{name}")).map(Some),
        (None, None) => Ok(None),
    }
}

/// A distribution table with `[hold]`'s fields under `prefix`.
fn distribution(table: &HoldTable, prefix: &str) -> Result<HoldDist, FieldError> {
    if let Some(name) = hold_only_field(table) {
        return Err((
            format!("{prefix}.{name}"),
            "belongs to [hold]: it describes a row's lock".into(),
        ));
    }
    resolve_hold(table).map_err(|(field, m)| (format!("{prefix}.{field}"), m))
}

/// Whether `[client]` sets a timeout policy (not only the time outside the database).
pub(super) fn has_client_policy(table: &ClientTable) -> bool {
    let policy = ClientTable {
        overhead_ms: None,
        overhead: None,
        idle_overhead_ms: None,
        idle_overhead: None,
        ..table.clone()
    };
    policy != ClientTable::default()
}
