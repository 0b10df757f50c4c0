//! `summary.csv`'s columns: a feature's columns are written exactly when the run has the
//! feature, and written with values; three scenarios between them bring every feature.

use std::collections::BTreeSet;

use shardsim::figures::columns::Feature;
use shardsim::figures::record::SummaryRecord;

use crate::common::{run_text, stderr};

/// Every feature an open stream can have at once: many keys, replications, both policies,
/// clients with retries, the pool and a neighbour, reads, the machine with its WAL, stalls
/// and the likes table.
const EVERYTHING_OPEN: &str = r#"
name = "everything"
seed = 1
shards = [1, 4]
policy = ["earliest-free", "skip-locked"]
duration_s = 2
replications = 2

[hold]
dist = "constant"
ms = 0.5

[arrivals]
rate_per_s = 1000

[keys]
count = 10
zipf_s = 1.1

[users]
repeat_fraction = 0.02

[client]
timeout_ms = 50
retries = 1
backoff_ms = 10

[pool]
size = 20

[[neighbours]]
name = "feed"
rate_per_s = 100
hold_ms = 1

[reads]
rate_per_s = 200

[machine]
cores = 2

[machine.cpu]
dist = "constant"
ms = 0.05

[wal]
flush_ms = 0.1

[stalls]
every_s = 0.5
duration_ms = 5

[likes_table]
partitions = 4
insert_hold = { dist = "constant", ms = 0.1 }
"#;

/// A closed loop of clients (which batching cannot join).
const CLOSED_LOOP: &str = r#"
name = "closed"
seed = 2
shards = [1, 4]
duration_s = 2

[hold]
dist = "constant"
ms = 0.5

[arrivals]
clients = 8
think_ms = 1
"#;

/// A closed loop on a machine: its clients' knee.
const CLOSED_ON_A_MACHINE: &str = r#"
name = "knee"
seed = 4
shards = [1, 4]
duration_s = 2

[hold]
dist = "constant"
ms = 0.1
per_waiter_ms = 0.01

[machine]
cores = 2

[machine.cpu]
dist = "constant"
ms = 0.05

[arrivals]
clients = 16
"#;

/// Batching app servers (which a closed loop and the likes table cannot join).
const BATCHING: &str = r#"
name = "batching"
seed = 3
shards = [1, 4]
duration_s = 2

[hold]
dist = "constant"
ms = 0.5

[arrivals]
rate_per_s = 1000

[batching]
servers = 2
flush_ms = 100
"#;

/// The header and rows of the `summary.csv` a scenario writes.
fn summary(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let dir = tempfile::tempdir().unwrap();
    // The calibration a scenario with a band includes.
    std::fs::write(dir.path().join("band.toml"), BAND_CALIBRATION).unwrap();
    let output = run_text(dir.path(), text, &["--no-fail", "--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let mut reader = csv::Reader::from_path(dir.path().join("out/summary.csv")).unwrap();
    let header = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect();
    (header, rows)
}

/// The columns of `features` (and of every run), in `summary.csv`'s order.
fn columns_of(features: &[Feature]) -> Vec<String> {
    SummaryRecord::COLUMNS
        .iter()
        .map(|&(name, _)| name)
        .filter(|name| {
            let feature = Feature::of(name);
            feature == Feature::Always || features.contains(&feature)
        })
        .map(str::to_owned)
        .collect()
}

/// A calibration with a band at 90% coverage.
const BAND_CALIBRATION: &str = "[machine]\ncores = 1\n[machine.cpu]\nms = 0.1\n\n\
    [spread]\nslower = 1.2\nfaster = 0.9\ncoverage = 0.9\n";

/// An open stream on a calibrated machine whose calibration has a band.
const BANDED: &str = r#"
include = "band.toml"
name = "banded"
shards = [1, 2]
duration_s = 2

[hold]
ms = 0.1

[arrivals]
rate_per_s = 2000
"#;

/// Asserts the scenario writes exactly its features' columns, each feature's columns with a
/// value in some row (`undefined` lists those its rows may all leave empty), and returns them.
fn writes_its_features(text: &str, features: &[Feature], undefined: &[&str]) -> Vec<String> {
    let (header, rows) = summary(text);
    assert_eq!(header, columns_of(features), "the columns of {features:?}");
    for (at, column) in header.iter().enumerate() {
        if Feature::of(column) == Feature::Always || undefined.contains(&column.as_str()) {
            continue;
        }
        assert!(
            rows.iter().any(|row| !row[at].is_empty()),
            "{column} is written but empty in every row"
        );
    }
    header
}

#[test]
fn a_feature_brings_its_columns_exactly_when_the_run_has_it() {
    use Feature::*;
    let open = writes_its_features(
        EVERYTHING_OPEN,
        &[
            Intervals, Likes, Clients, Pool, Neighbours, Keys, Reads, Responses, Machine, Wal,
            SkipLocked, LikesTable, Stalls, Stability,
        ],
        &["recovery_s"],
    );
    let closed = writes_its_features(CLOSED_LOOP, &[Responses, ClosedLoop], &[]);
    let batching = writes_its_features(BATCHING, &[Likes, Batching], &[]);
    let knee = writes_its_features(
        CLOSED_ON_A_MACHINE,
        &[Responses, ClosedLoop, Machine, Knee],
        &[],
    );
    let banded = writes_its_features(BANDED, &[Responses, Machine, Band], &[]);
    let written: BTreeSet<String> = [open, closed, batching, knee, banded]
        .into_iter()
        .flatten()
        .collect();
    let every: BTreeSet<String> = columns_of(&[]).into_iter().collect();
    let missing: Vec<&str> = SummaryRecord::COLUMNS
        .iter()
        .map(|&(name, _)| name)
        .filter(|name| !written.contains(*name) && !every.contains(*name))
        .collect();
    assert!(missing.is_empty(), "no scenario here writes {missing:?}");
}

#[test]
fn the_final_has_at_most_30_columns() {
    let text = std::fs::read_to_string(crate::common::repo("scenarios/final.toml")).unwrap();
    let (header, _) = summary(&text);
    assert!(header.len() <= 30, "{} columns: {header:?}", header.len());
}

#[test]
fn a_calibrations_band_is_shaded_on_the_charts_and_tabled_on_the_page() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("band.toml"), BAND_CALIBRATION).unwrap();
    let output = run_text(dir.path(), BANDED, &["--no-fail", "--quiet"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let read = |name: &str| std::fs::read_to_string(dir.path().join("out").join(name)).unwrap();
    let unescaped = |text: String| text.replace("&apos;", "'").replace("&#39;", "'");
    for (chart, legend) in [
        (
            "throughput.svg",
            "throughput over the calibration's band (90%)",
        ),
        (
            "responses.svg",
            "response p99 over the calibration's band (90%)",
        ),
    ] {
        assert!(unescaped(read(chart)).contains(legend), "{chart}: {legend}");
    }
    let page = unescaped(read("report.html"));
    assert!(
        page.contains("Over the calibration's band"),
        "the page's table"
    );
}
