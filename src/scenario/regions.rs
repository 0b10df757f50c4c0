//! `[regions]`: resolved and checked. Regions take the likes of one post on their own rows on
//! the exact core, so they go with a synthetic stream of one key and no client behaviours,
//! machine or adaptive rows (each an explicit refusal naming the section).

use super::ArrivalPlan;
use super::fields::{FieldError, MAX_HOLD_MS, Min, hold_only_field, number, resolve_hold};
use super::file::{RegionsTable, ReplicationList, ScenarioFile};
use crate::model::regions::{RegionsPlan, Replication};
use crate::time::ms_f64_to_ns;

/// Most regions.
pub const MAX_REGIONS: usize = 64;

/// The regions of `file`, if it has `[regions]`, checked against the rest of the scenario.
pub(super) fn resolve_regions(
    file: &ScenarioFile,
    arrivals: &ArrivalPlan,
    every_like_commits: bool,
) -> Result<Option<RegionsPlan>, FieldError> {
    let Some(table) = &file.regions else {
        return Ok(None);
    };
    let refuse = |field: &str, why: &str| Err((field.to_owned(), why.to_owned()));
    if !matches!(arrivals, ArrivalPlan::Poisson { .. }) {
        return refuse(
            "regions",
            "regions share a synthetic stream of likes (arrivals.rate_per_s or profile); a trace or a closed loop is not split by region",
        );
    }
    if file
        .keys
        .as_ref()
        .and_then(|k| k.count)
        .is_some_and(|c| c > 1)
    {
        return refuse(
            "regions",
            "regions model one post's likes: leave out [keys] count (each region is its own key)",
        );
    }
    if !every_like_commits || file.adaptive.is_some() {
        return refuse(
            "regions",
            "regions follow each like from its tap to its commit in every region: leave out [client], [batching], [pool], [reads], [adaptive] and [likes_table], which drop, repeat, delay or move likes outside the rows",
        );
    }
    resolve_table(table).map(Some)
}

fn resolve_table(table: &RegionsTable) -> Result<RegionsPlan, FieldError> {
    let field = |name: &str| format!("regions.{name}");
    let names = resolve_names(table)?;
    let shares = resolve_shares(table, names.len())?;
    let replications = resolve_replications(table)?;
    let lag = match &table.lag_ms {
        Some(lag) => {
            if let Some(name) = hold_only_field(lag) {
                return Err((
                    field(&format!("lag_ms.{name}")),
                    "belongs to [hold] only".into(),
                ));
            }
            resolve_hold(lag).map_err(|(f, m)| (field(&format!("lag_ms.{f}")), m))?
        }
        None => {
            return Err((
                field("lag_ms"),
                "missing: the copy's lag between regions, e.g. lag_ms = { dist = \"constant\", ms = 120 }".into(),
            ));
        }
    };
    // The floor keeps the number of syncs finite in practice; the work budget counts them.
    let sync_every_ms = number(
        table.sync_every_ms.unwrap_or(1000.0),
        Min::AtLeast(0.001),
        MAX_HOLD_MS,
    )
    .map_err(|m| (field("sync_every_ms"), m))?;
    let sync_every = ms_f64_to_ns(sync_every_ms).max(1);
    let unlike_fraction = number(table.unlike_fraction.unwrap_or(0.0), Min::AtLeast(0.0), 0.5)
        .map_err(|m| (field("unlike_fraction"), m))?;
    let initial = table.initial.unwrap_or(0);
    if initial > 1 << 50 {
        return Err((
            field("initial"),
            format!("must be at most {}, got {initial}", 1u64 << 50),
        ));
    }
    Ok(RegionsPlan {
        names,
        shares,
        replications,
        lag,
        sync_every,
        unlike_fraction,
        initial,
    })
}

/// The regions' names: 2 to [`MAX_REGIONS`], each once.
fn resolve_names(table: &RegionsTable) -> Result<Vec<String>, FieldError> {
    let names = table.names.clone().unwrap_or_default();
    if names.len() < 2 || names.len() > MAX_REGIONS {
        return Err((
            "regions.names".into(),
            format!("list 2 to {MAX_REGIONS} region names, e.g. [\"mumbai\", \"singapore\"]"),
        ));
    }
    for (i, name) in names.iter().enumerate() {
        if name.trim().is_empty() || names[..i].contains(name) {
            return Err((
                "regions.names".into(),
                format!("{name:?} is empty or repeated: name each region once"),
            ));
        }
    }
    Ok(names)
}

/// Each of the `regions` regions' share of the likes, summing to 1.
fn resolve_shares(table: &RegionsTable, regions: usize) -> Result<Vec<f64>, FieldError> {
    let shares = table.shares.clone().unwrap_or_default();
    if shares.len() != regions {
        return Err((
            "regions.shares".into(),
            format!(
                "give one share per region ({regions} names, {} shares)",
                shares.len()
            ),
        ));
    }
    for &share in &shares {
        number(share, Min::Above(0.0), 1.0).map_err(|m| ("regions.shares".to_owned(), m))?;
    }
    let total: f64 = shares.iter().sum();
    if (total - 1.0).abs() > 1e-6 {
        return Err((
            "regions.shares".into(),
            format!("must sum to 1, got {total}"),
        ));
    }
    Ok(shares)
}

/// The merge rules to compare, each once.
fn resolve_replications(table: &RegionsTable) -> Result<Vec<Replication>, FieldError> {
    let rules: Vec<String> = match &table.replication {
        Some(ReplicationList::One(rule)) => vec![rule.clone()],
        Some(ReplicationList::Many(rules)) => rules.clone(),
        None => Vec::new(),
    };
    let mut replications = Vec::with_capacity(rules.len());
    for rule in &rules {
        let replication = match rule.as_str() {
            "g-counter" => Replication::GCounter,
            "lww" => Replication::Lww,
            other => {
                return Err((
                    "regions.replication".into(),
                    format!(
                        "{other:?} is not a merge rule: use \"g-counter\" (no likes lost), \"lww\" (last write wins) or both"
                    ),
                ));
            }
        };
        if replications.contains(&replication) {
            return Err(("regions.replication".into(), format!("lists {rule} twice")));
        }
        replications.push(replication);
    }
    if replications.is_empty() {
        return Err((
            "regions.replication".into(),
            "missing: \"g-counter\", \"lww\" or [\"g-counter\", \"lww\"] to compare them".into(),
        ));
    }
    Ok(replications)
}
