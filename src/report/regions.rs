//! `regions.csv` and the terminal's regions table (`[regions]`): per shard count and region,
//! the likes lost by the merge rule, how stale each region's shown total was, and how long the
//! regions took to agree after the last like.

use std::fmt::Write;

use crate::model::regions::RegionsRun;
use crate::scenario::Variant;

use super::csv::decimal;
use super::table::Table;
use super::units;

/// The columns of `regions.csv`.
pub const REGION_COLUMNS: [&str; 19] = [
    "policy",
    "shards",
    "replication",
    "region",
    "share",
    "likes",
    "removals",
    "lost_likes",
    "lost_removals",
    "staleness_ms_p50",
    "staleness_ms_p99",
    "staleness_ms_max",
    "staleness_likes_p50",
    "staleness_likes_p99",
    "staleness_likes_max",
    "truth",
    "converged",
    "convergence_ms",
    "converged_ok",
];

/// Renders `regions.csv`: one row per shard count (first replication) and region.
pub fn regions_csv(variants: &[Variant], runs: &[Vec<RegionsRun>]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut write = |fields: Vec<String>| {
        writer
            .write_record(fields)
            .expect("writing CSV to memory cannot fail");
    };
    write(REGION_COLUMNS.iter().map(|c| c.to_string()).collect());
    let ms = |ns: u64| crate::time::fmt_ms(ns);
    for (variant, run) in variants
        .iter()
        .zip(runs)
        .flat_map(|(v, rules)| rules.iter().map(move |r| (v, r)))
    {
        for region in &run.regions {
            write(vec![
                variant.policy.to_string(),
                variant.rows.to_string(),
                run.replication.name().to_owned(),
                region.name.clone(),
                decimal(region.share, 6),
                region.likes.to_string(),
                region.removals.to_string(),
                region.lost_likes.to_string(),
                region.lost_removals.to_string(),
                ms(region.staleness_ns.p50_ns),
                ms(region.staleness_ns.p99_ns),
                ms(region.staleness_ns.max_ns),
                region.staleness_likes.p50_ns.to_string(),
                region.staleness_likes.p99_ns.to_string(),
                region.staleness_likes.max_ns.to_string(),
                run.truth.to_string(),
                run.converged.to_string(),
                run.convergence_ns.map(ms).unwrap_or_default(),
                (run.converged == run.truth).to_string(),
            ]);
        }
    }
    writer
        .into_inner()
        .expect("flushing CSV to memory cannot fail")
}

/// The regions table, one row per shard count × merge rule × region (first replication).
pub fn table(variants: &[Variant], runs: &[Vec<RegionsRun>]) -> Table {
    let header = [
        "shards",
        "merge",
        "region",
        "likes",
        "lost likes",
        "behind p99",
        "likes behind",
        "agree after",
    ];
    let rows = variants
        .iter()
        .zip(runs)
        .flat_map(|(v, rules)| rules.iter().map(move |r| (v, r)))
        .flat_map(|(variant, run)| {
            run.regions.iter().map(move |region| {
                vec![
                    format!("{} {}", variant.policy, variant.rows),
                    run.replication.name().to_owned(),
                    region.name.clone(),
                    units::count(region.likes),
                    units::count(region.lost_likes),
                    units::duration(region.staleness_ns.p99_ns),
                    format!("p99 {}", units::count(region.staleness_likes.p99_ns)),
                    run.convergence_ns
                        .map_or("never".to_owned(), units::duration),
                ]
            })
        })
        .collect();
    Table {
        title: "Regions (first replication): likes lost by the merge rule, and how far each region's shown count trails"
            .to_owned(),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// The terminal's regions table.
pub fn render(variants: &[Variant], runs: &[Vec<RegionsRun>]) -> String {
    let table = table(variants, runs);
    let widths = [20, 10, 10, 10, 11, 11, 12, 12];
    let line = |cells: &[String]| -> String {
        cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:>width$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = String::new();
    let _ = writeln!(out, "\n{}", table.title.replacen("Regions", "regions", 1));
    let _ = writeln!(out, "{}", line(&table.header));
    for row in &table.rows {
        let _ = writeln!(out, "{}", line(row));
    }
    out
}
