//! What people look at: charts, the report page, JSON for scripts, the terminal table and the
//! progress bars.

use std::fs;
use std::path::Path;

use crate::common::{repo, shardsim, stderr};

const CHARTS: [&str; 4] = ["waits", "backlog", "throughput", "wait_over_time"];

/// Runs the final (its target: p99 ≤ 20 ms) on a few shard counts into `dir/out`.
/// Runs the final with the seed's exact policy alone (the comparison of policies has its own
/// tests in `policies.rs`).
fn run_final(dir: &Path, extra: &[&str]) -> std::process::Output {
    let scenario = repo("scenarios/final.toml");
    let mut args = vec![
        "run",
        scenario.to_str().unwrap(),
        "--policy",
        "earliest-free",
        "--shards",
        "1,4,8,16",
        "--out",
        "out",
    ];
    args.extend_from_slice(extra);
    let output = shardsim(dir, &args);
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn every_chart_is_a_1200_by_800_png_and_an_svg() {
    let dir = tempfile::tempdir().unwrap();
    run_final(dir.path(), &["--quiet"]);
    for chart in CHARTS {
        let png = fs::read(dir.path().join(format!("out/{chart}.png"))).unwrap();
        assert_eq!(png_size(&png), (1200, 800), "{chart}.png");
        assert!(png.len() > 10_000, "{chart}.png has content");
        let svg = fs::read_to_string(dir.path().join(format!("out/{chart}.svg"))).unwrap();
        assert!(
            svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
            "{chart}.svg"
        );
        assert!(
            svg.contains("width=\"1200\"") && svg.contains("height=\"800\""),
            "{chart}.svg size"
        );
        assert!(
            svg.contains("final: "),
            "{chart}.svg has a title naming the scenario"
        );
    }
}

#[test]
fn charts_carry_axis_labels_and_a_series_per_shard_count() {
    let dir = tempfile::tempdir().unwrap();
    run_final(dir.path(), &["--quiet"]);
    let svg =
        |chart: &str| fs::read_to_string(dir.path().join(format!("out/{chart}.svg"))).unwrap();
    let waits = svg("waits");
    for label in [
        "shards (rows per key, log scale)",
        "wait for the row, log scale",
        "wait p50",
        "wait p99",
        "wait p99.9",
        "target p99 20 ms",
        "overloaded or saturated",
        "recommended: 8 shards",
        "1,000 s",
    ] {
        assert!(waits.contains(label), "waits.svg lacks {label:?}");
    }
    let backlog = svg("backlog");
    for label in [
        "time (s)",
        "backlog (increments waiting",
        "likes offered (per second)",
    ] {
        assert!(backlog.contains(label), "backlog.svg lacks {label:?}");
    }
    let over_time = svg("wait_over_time");
    for shards in [1, 4, 8, 16] {
        let label = format!("N = {shards}");
        assert!(backlog.contains(&label), "backlog.svg lacks {label}");
        assert!(
            over_time.contains(&label),
            "wait_over_time.svg lacks {label}"
        );
    }
    // One polyline per shard count (plus the offered-rate area) in the backlog chart.
    assert!(backlog.matches("<polyline").count() >= 4);
    let throughput = svg("throughput");
    for label in [
        "rows (shards ÷ mean hold)",
        "peak offered",
        "achieved throughput",
        "increments per second",
    ] {
        assert!(throughput.contains(label), "throughput.svg lacks {label:?}");
    }
}

#[test]
fn the_report_page_is_self_contained_and_lists_every_shard_count() {
    let dir = tempfile::tempdir().unwrap();
    run_final(dir.path(), &["--quiet"]);
    let page = fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    for external in ["src=", "<link", "<script", "url(", "href=\"http", "@import"] {
        assert!(
            !page.contains(external),
            "report.html loads something: {external}"
        );
    }
    for shards in [1, 4, 8, 16] {
        assert!(
            page.contains(&format!("<td>{shards}</td>")),
            "row for {shards}"
        );
    }
    assert_eq!(page.matches("<svg").count(), 4, "every chart inline");
    assert!(page.contains("The smallest shard count that stays stable at the peak is 8"));
    assert!(page.contains("The smallest that meets the target (p99 ≤ 20 ms) is 8"));
    assert!(page.contains("Cricket final"), "the scenario's description");
}

#[test]
fn json_output_matches_summary_csv() {
    let dir = tempfile::tempdir().unwrap();
    let output = run_final(dir.path(), &["--format", "json"]);
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("stdout is only JSON");
    assert_eq!(json["recommended_shards"], 8);
    let csv = fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows = json["rows"].as_array().unwrap();
    let csv_rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), csv_rows.len());
    for (row, line) in rows.iter().zip(csv_rows) {
        for (column, field) in header.iter().zip(line.split(',')) {
            let value = &row[*column];
            match field.parse::<f64>() {
                Ok(number) => assert_eq!(value.as_f64(), Some(number), "{column}"),
                Err(_) if field.is_empty() => assert!(value.is_null(), "{column}"),
                Err(_) => assert_eq!(value.as_str(), Some(field), "{column}"),
            }
        }
    }
}

#[test]
fn the_table_shows_verdicts_and_the_recommendation_without_colour_when_piped() {
    let dir = tempfile::tempdir().unwrap();
    let output = run_final(dir.path(), &[]);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(!stdout.contains('\u{1b}'), "no escape codes when piped");
    let row = |shards: &str| {
        stdout
            .lines()
            .find(|line| line.split_whitespace().next() == Some(shards))
            .unwrap_or_else(|| panic!("a row for {shards}"))
            .to_owned()
    };
    assert!(row("1").contains("overloaded"));
    assert!(row("8").contains("stable") && row("8").contains("◀ recommended"));
    assert!(!row("16").contains("recommended"));
}

#[test]
fn no_progress_is_drawn_when_stderr_is_not_a_terminal() {
    // The final on four shard counts runs for longer than the half second before bars show.
    let dir = tempfile::tempdir().unwrap();
    let output = run_final(dir.path(), &[]);
    assert!(output.stderr.is_empty(), "{}", stderr(&output));
    let quiet = run_final(dir.path(), &["--quiet"]);
    assert!(quiet.stdout.is_empty() && quiet.stderr.is_empty());
}
