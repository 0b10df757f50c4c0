//! `[regions]`: regions on their own rows, copying their counts (g-counter against LWW).

use crate::common;

fn regions_text(extra: &str) -> String {
    format!(
        "seed = 9\nshards = [1, 4]\nduration_s = 20\n[hold]\ndist = \"constant\"\nms = 1\n\
         [arrivals]\nrate_per_s = 1500\n[regions]\nnames = [\"mumbai\", \"singapore\"]\nshares = [0.6, 0.4]\n\
         replication = [\"g-counter\", \"lww\"]\nsync_every_ms = 500\nunlike_fraction = 0.05\ninitial = 1000\n\
         lag_ms = {{ dist = \"exponential\", mean_ms = 120 }}\n{extra}"
    )
}

/// `regions.csv` as rows of named fields.
fn regions_rows(dir: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("out/regions.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    lines
        .map(|line| {
            header
                .iter()
                .cloned()
                .zip(line.split(',').map(str::to_owned))
                .collect()
        })
        .collect()
}

#[test]
fn every_like_is_counted_lost_or_removed_under_both_rules() {
    let dir = tempfile::tempdir().unwrap();
    let output = common::run_text(dir.path(), &regions_text(""), &["--quiet"]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    let summary = std::fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    let arrivals: u64 = summary
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(3)
        .unwrap()
        .parse()
        .unwrap();
    let rows = regions_rows(dir.path());
    assert_eq!(rows.len(), 2 * 2 * 2, "shard counts × rules × regions");
    let number = |row: &std::collections::HashMap<String, String>, column: &str| -> i64 {
        row[column]
            .parse()
            .unwrap_or_else(|_| panic!("{column}: {:?}", row[column]))
    };
    for group in rows.chunks(2) {
        // Every update is one region's like or unlike.
        let updates: i64 = group
            .iter()
            .map(|r| number(r, "likes") + number(r, "removals"))
            .sum();
        assert_eq!(updates as u64, arrivals);
        let truth = number(&group[0], "truth");
        let sum = |column: &str| group.iter().map(|r| number(r, column)).sum::<i64>();
        assert_eq!(truth, 1000 + sum("likes") - sum("removals"));
        // The converged count is the truth less what the merge rule lost.
        let converged = number(&group[0], "converged");
        assert_eq!(
            converged,
            truth - sum("lost_likes") + sum("lost_removals"),
            "{}",
            group[0]["replication"]
        );
        if group[0]["replication"] == "g-counter" {
            assert_eq!(converged, truth);
            assert_eq!(sum("lost_likes") + sum("lost_removals"), 0);
            assert_eq!(group[0]["converged_ok"], "true");
        } else {
            assert!(
                sum("lost_likes") > 0,
                "concurrent writers lose likes with lww"
            );
        }
    }
    // Four rows keep up (0.6 × 1500/s on 4 rows of 1 ms): a g-counter region trails by at most
    // a sync period plus its copy's lag, the lags being exponential (p99 ≈ 4.6 × 120 ms).
    let stale: Vec<f64> = rows
        .iter()
        .filter(|r| r["shards"] == "4" && r["replication"] == "g-counter")
        .map(|r| r["staleness_ms_p99"].parse().unwrap())
        .collect();
    assert!(
        stale.iter().all(|&ms| ms > 500.0 && ms < 500.0 + 1000.0),
        "{stale:?}"
    );
}

#[test]
fn the_merge_rules_see_the_same_likes_and_the_rows_their_own_region() {
    let dir = tempfile::tempdir().unwrap();
    let output = common::run_text(dir.path(), &regions_text(""), &["--quiet"]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    let rows = regions_rows(dir.path());
    for shards in ["1", "4"] {
        let of = |rule: &str| -> Vec<(String, String)> {
            rows.iter()
                .filter(|r| r["shards"] == shards && r["replication"] == rule)
                .map(|r| (r["likes"].clone(), r["removals"].clone()))
                .collect()
        };
        assert_eq!(of("g-counter"), of("lww"));
    }
    // Each region has its own rows: two keys, one per region, in keys.csv.
    let keys = std::fs::read_to_string(dir.path().join("out/keys.csv")).unwrap();
    assert!(
        keys.contains("mumbai") && keys.contains("singapore"),
        "{keys}"
    );
}

#[test]
fn bad_regions_are_bad_input_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let base = regions_text("");
    let cases = [
        (
            base.replace("shares = [0.6, 0.4]", "shares = [0.6, 0.5]"),
            "regions.shares",
        ),
        (
            base.replace("shares = [0.6, 0.4]", "shares = [1.0]"),
            "regions.shares",
        ),
        (
            base.replace("[\"g-counter\", \"lww\"]", "\"crdt\""),
            "regions.replication",
        ),
        (
            base.replace("sync_every_ms = 500", "sync_every_ms = 0"),
            "regions.sync_every_ms",
        ),
        (
            base.replace("mean_ms = 120", "mean_ms = -1"),
            "regions.lag_ms",
        ),
        (format!("{base}[client]\ntimeout_ms = 50\n"), "regions"),
        (
            base.replace("[\"mumbai\", \"singapore\"]", "[\"mumbai\", \"mumbai\"]"),
            "regions.names",
        ),
    ];
    for (text, field) in cases {
        let output = common::run_text(dir.path(), &text, &[]);
        let stderr = common::stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{field}: {stderr}");
        assert!(stderr.contains(field), "{field}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!dir.path().join("out").exists());
    }
}

#[test]
fn regions_on_the_queued_row_stage_agree_with_the_exact_core() {
    // Without unlikes (whose draws each row stage makes its own way) and without a machine,
    // both row stages commit every like at the same time: the same regions.csv, byte for byte.
    let text = regions_text("").replace("unlike_fraction = 0.05", "unlike_fraction = 0");
    let exact = tempfile::tempdir().unwrap();
    let queued = tempfile::tempdir().unwrap();
    for (dir, args) in [
        (&exact, vec!["--quiet"]),
        (&queued, vec!["--quiet", "--engine", "event"]),
    ] {
        let output = common::run_text(dir.path(), &text, &args);
        assert!(output.status.success(), "{}", common::stderr(&output));
    }
    let csv = |dir: &tempfile::TempDir| std::fs::read(dir.path().join("out/regions.csv")).unwrap();
    assert_eq!(csv(&exact), csv(&queued));
}

#[test]
fn a_machine_delays_every_commit_and_the_regions_agree_that_much_later() {
    // Syncs every 1 ms with a constant 10 ms lag, 16 rows a region at 300 likes/s (nobody
    // waits): the regions agree 1 ms (the hold) + 10 ms (the lag) + the wait for the next
    // sync after the last like. 5 ms of CPU per update on 64 cores (none waits for one)
    // commits every like 5 ms later, so they agree exactly 5 ms later, and no region's
    // oldest unshown like is ever older than the 16 ms from tap to heard.
    let base = regions_text("")
        .replace("shards = [1, 4]", "shards = [16]")
        .replace("rate_per_s = 1500", "rate_per_s = 300")
        .replace("sync_every_ms = 500", "sync_every_ms = 1")
        .replace(
            "lag_ms = { dist = \"exponential\", mean_ms = 120 }",
            "lag_ms = { dist = \"constant\", ms = 10 }",
        );
    let machine =
        format!("{base}[machine]\ncores = 64\n[machine.cpu]\ndist = \"constant\"\nms = 5\n");
    let agree_ms = |text: &str| -> (f64, f64) {
        let dir = tempfile::tempdir().unwrap();
        let output = common::run_text(dir.path(), text, &["--quiet"]);
        assert!(output.status.success(), "{}", common::stderr(&output));
        let rows = regions_rows(dir.path());
        let max = rows
            .iter()
            .map(|r| r["staleness_ms_max"].parse::<f64>().unwrap())
            .fold(0.0, f64::max);
        (rows[0]["convergence_ms"].parse().unwrap(), max)
    };
    let (plain, plain_max) = agree_ms(&base);
    let (delayed, delayed_max) = agree_ms(&machine);
    assert!((11.0..=12.0).contains(&plain), "{plain} ms");
    assert!(
        (delayed - plain - 5.0).abs() < 1e-6,
        "{plain} ms → {delayed} ms"
    );
    assert!(
        plain_max <= 11.0 && delayed_max <= 16.0,
        "{plain_max}, {delayed_max}"
    );
    assert!(delayed_max > 15.0, "{delayed_max}");
}
