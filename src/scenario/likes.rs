//! `[likes_table]`, `[reconcile]` and `[users] repeat_fraction`: resolved and checked. The
//! likes table runs on the event-driven pipeline; write batching (no per-like insert) and
//! regions (a rejected like commits nowhere) are explicit refusals naming the section.

use super::ArrivalPlan;
use super::fields::{
    FieldError, MAX_DURATION_S, Min, hold_only_field, number, required_number, resolve_hold,
};
use super::file::{HoldTable, LikesTableFile, ReconcileTable, ScenarioFile};
use crate::model::likes::{LikesPlan, PartitionBy, Reconcile};
use crate::time::s_f64_to_ns;

/// Most partitions of the likes table.
pub const MAX_PARTITIONS: u32 = 65_536;

/// The likes table of `file`, if it has `[likes_table]`, checked against the rest of it.
pub(super) fn resolve_likes(
    file: &ScenarioFile,
    arrivals: &ArrivalPlan,
) -> Result<Option<LikesPlan>, FieldError> {
    let repeat_fraction = file.users.as_ref().and_then(|u| u.repeat_fraction);
    let Some(table) = &file.likes_table else {
        if repeat_fraction.is_some() {
            return refuse(
                "users.repeat_fraction",
                "needs [likes_table]: its primary key is what rejects a repeated like",
            );
        }
        if file.reconcile.is_some() {
            return refuse(
                "reconcile",
                "needs [likes_table]: the recount reads the likes from it",
            );
        }
        return Ok(None);
    };
    if file.batching.is_some() {
        return refuse(
            "likes_table",
            "not with [batching]: a batching server sends one +k update per post, with no insert per like",
        );
    }
    if file.regions.is_some() {
        return refuse(
            "likes_table",
            "not with [regions]: regions follow every like to its commit in each region, and the likes table rejects double taps before they reach the rows",
        );
    }
    let partition_by = resolve_partition_by(table, arrivals)?;
    let partitions = table.partitions.unwrap_or(16);
    if !(1..=MAX_PARTITIONS).contains(&partitions) {
        return refuse(
            "likes_table.partitions",
            &format!("must be 1 to {MAX_PARTITIONS}, got {partitions}"),
        );
    }
    let insert_hold = resolve_insert_hold(table.insert_hold.as_ref())?;
    let step_failure_rate = number(
        table.step_failure_rate.unwrap_or(0.0),
        Min::AtLeast(0.0),
        1.0,
    )
    .map_err(|m| ("likes_table.step_failure_rate".to_owned(), m))?;
    let repeat_fraction = number(repeat_fraction.unwrap_or(0.0), Min::AtLeast(0.0), 1.0)
        .map_err(|m| ("users.repeat_fraction".to_owned(), m))?;
    let reconcile = file.reconcile.as_ref().map(resolve_reconcile).transpose()?;
    Ok(Some(LikesPlan {
        partitions,
        partition_by,
        insert_hold,
        same_transaction: table.same_transaction.unwrap_or(true),
        step_failure_rate,
        repeat_fraction,
        reconcile,
    }))
}

fn refuse<T>(field: &str, why: &str) -> Result<T, FieldError> {
    Err((field.to_owned(), why.to_owned()))
}

fn resolve_partition_by(
    table: &LikesTableFile,
    arrivals: &ArrivalPlan,
) -> Result<PartitionBy, FieldError> {
    let by = match table.partition_by.as_deref().unwrap_or("post") {
        "post" => PartitionBy::Post,
        "post_user" => PartitionBy::PostUser,
        other => {
            return refuse(
                "likes_table.partition_by",
                &format!(
                    "{other:?} is not a partitioning: use \"post\" (a post's likes in one partition) or \"post_user\" (spread by a hash of post and user)"
                ),
            );
        }
    };
    if by == PartitionBy::PostUser
        && let ArrivalPlan::Trace(info) = arrivals
        && !info.has_user
    {
        return refuse(
            "likes_table.partition_by",
            "post_user needs a user column in the trace; use \"post\" or add user ids",
        );
    }
    Ok(by)
}

fn resolve_insert_hold(table: Option<&HoldTable>) -> Result<crate::model::HoldDist, FieldError> {
    let field = |name: &str| format!("likes_table.insert_hold.{name}");
    match table {
        Some(hold) => match hold_only_field(hold) {
            Some(name) => refuse(&field(name), "belongs to [hold] only"),
            None => resolve_hold(hold).map_err(|(f, m)| (field(&f), m)),
        },
        None => refuse(
            "likes_table.insert_hold",
            "missing: how long an insert holds its partition, e.g. insert_hold = { dist = \"constant\", ms = 0.1 }",
        ),
    }
}

fn resolve_reconcile(table: &ReconcileTable) -> Result<Reconcile, FieldError> {
    let every_s = required_number(
        table.every_s,
        "reconcile.every_s",
        "seconds between passes, e.g. every_s = 60",
        Min::AtLeast(0.001),
        MAX_DURATION_S,
    )?;
    let rows_per_s = required_number(
        table.rows_per_s,
        "reconcile.rows_per_s",
        "likes-table rows a recount reads a second, e.g. rows_per_s = 100000",
        Min::AtLeast(0.001),
        1e12,
    )?;
    Ok(Reconcile {
        every: s_f64_to_ns(every_s).max(1),
        rows_per_s,
    })
}
