//! `[likes_table]`, `[users] repeat_fraction` and `[reconcile]`: the likes table's insert path
//! in front of the rows, exactly-once likes, and the drift a reconciliation job repairs.

use shardsim::model::ShardRun;
use shardsim::model::likes::LikesRun;

use crate::common;

/// The final's busiest stretch on the likes table, with `table` (fields of `[likes_table]`)
/// and `extra` sections.
fn likes_text(table: &str, extra: &str) -> String {
    format!(
        "seed = 7\nshards = [2, 4, 16]\nduration_s = 20\n[hold]\ndist = \"exponential\"\nmean_ms = 1\n\
         [arrivals]\nrate_per_s = 3000\n[likes_table]\npartitions = 16\n\
         insert_hold = {{ dist = \"exponential\", mean_ms = 0.15 }}\n{table}\n{extra}"
    )
}

fn likes_of(run: &ShardRun) -> &LikesRun {
    run.likes.as_ref().expect("a likes table run reports it")
}

/// Every attempt ends counted, rejected by the primary key, crashed between its steps,
/// cancelled by its client, or still in flight; every stored like is counted or lost to the
/// count; the drift at the end is the lost likes the reconciliation has not added back.
fn assert_conserved(runs: &[ShardRun], what: &str) {
    for run in runs {
        let likes = likes_of(run);
        let o = likes.outcomes;
        assert_eq!(
            o.attempts,
            o.counted + o.rejected + o.crashed + o.withdrawn + o.in_flight,
            "{what}, {} shards: {o:?}",
            run.shards
        );
        assert_eq!(
            o.stored,
            o.counted + o.lost,
            "{what}, {} shards: {o:?}",
            run.shards
        );
        assert_eq!(
            likes.drift_final,
            o.lost - likes.reconciled,
            "{what}, {} shards",
            run.shards
        );
        assert!(o.attempts > 20_000, "{what}: the likes ran ({o:?})");
    }
}

#[test]
fn likes_are_conserved_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let client = |on_timeout: &str| {
        format!(
            "[client]\ntimeout_ms = 5\non_timeout = \"{on_timeout}\"\nretries = 2\nbackoff_ms = 10\n"
        )
    };
    let users = "[users]\nrepeat_fraction = 0.02\n";
    let reconcile = "[reconcile]\nevery_s = 5\nrows_per_s = 100000\n";
    for same_transaction in [true, false] {
        for by in ["post", "post_user"] {
            for behaviour in [String::new(), client("cancel"), client("orphan")] {
                let table = format!(
                    "partition_by = \"{by}\"\nsame_transaction = {same_transaction}\nstep_failure_rate = 0.001"
                );
                let text = likes_text(&table, &format!("{users}{reconcile}{behaviour}"));
                let runs = common::simulate(&common::scenario(dir.path(), &text));
                let what = format!("same_transaction {same_transaction}, by {by}, {behaviour:?}");
                assert_conserved(&runs, &what);
                for run in &runs {
                    let o = likes_of(run).outcomes;
                    if behaviour.is_empty() {
                        assert!(
                            o.rejected >= o.repeats,
                            "{what}: every double tap is rejected"
                        );
                    } else {
                        // The primary key makes a retried like count once.
                        let client = run.extended.as_ref().and_then(|e| e.client).unwrap();
                        assert_eq!(client.counts.duplicates, 0, "{what}");
                        assert_eq!(client.drift, 0, "{what}: no like counted twice");
                    }
                    if same_transaction {
                        assert_eq!(o.lost, 0, "{what}: one transaction never drifts");
                    }
                }
            }
        }
    }
}

#[test]
fn without_a_client_every_like_is_counted_rejected_or_crashed() {
    let dir = tempfile::tempdir().unwrap();
    let text = likes_text(
        "partition_by = \"post_user\"\nsame_transaction = false\nstep_failure_rate = 0.01",
        "[users]\nrepeat_fraction = 0.05\n",
    );
    let runs = common::simulate(&common::scenario(dir.path(), &text));
    for run in &runs {
        let o = likes_of(run).outcomes;
        // One attempt per like: the likes are the arrivals (none in flight after the drain).
        assert_eq!(o.attempts, run.arrivals);
        assert_eq!(o.in_flight, 0);
        assert_eq!(
            o.rejected, o.repeats,
            "only double taps repeat without retries"
        );
        assert_eq!(o.attempts, o.counted + o.rejected + o.crashed);
        // Binomial counts within 4σ.
        let within = |count: u64, p: f64, n: u64| {
            let mean = p * n as f64;
            (count as f64 - mean).abs() < 4.0 * (mean * (1.0 - p)).sqrt()
        };
        assert!(within(o.repeats, 0.05, o.attempts), "{o:?}");
        assert!(within(o.crashed, 0.01, o.attempts - o.repeats), "{o:?}");
        assert_eq!(
            o.lost, o.crashed,
            "a separate insert committed before each crash"
        );
    }
    // Every shard count sees the same double taps (one draw per like, in arrival order).
    let repeats: Vec<u64> = runs.iter().map(|r| likes_of(r).outcomes.repeats).collect();
    assert!(repeats.windows(2).all(|w| w[0] == w[1]), "{repeats:?}");
}

#[test]
fn by_post_one_partition_takes_every_insert_and_by_post_user_they_spread() {
    let dir = tempfile::tempdir().unwrap();
    let by_post = common::simulate(&common::scenario(
        dir.path(),
        &likes_text("partition_by = \"post\"\nsame_transaction = false", ""),
    ));
    for run in &by_post {
        let likes = likes_of(run);
        let used: Vec<u64> = likes
            .partition_inserts
            .iter()
            .copied()
            .filter(|&n| n > 0)
            .collect();
        assert_eq!(
            used.len(),
            1,
            "one post, one partition: {:?}",
            likes.partition_inserts
        );
        assert_eq!(likes.hot_partition_share, 1.0);
        assert_eq!(used[0], likes.outcomes.attempts);
    }
    let spread = common::simulate(&common::scenario(
        dir.path(),
        &likes_text("partition_by = \"post_user\"\nsame_transaction = false", ""),
    ));
    for run in &spread {
        let likes = likes_of(run);
        assert_eq!(likes.partition_inserts.len(), 16);
        // ~60,000 inserts: 3,750 a partition, σ ≈ 59; the hottest stays within 5%.
        assert!(
            likes.hot_partition_share < 1.05 / 16.0,
            "hottest share {} against 1/16",
            likes.hot_partition_share
        );
        assert!(likes.partition_inserts.iter().all(|&n| n > 3_400));
        // A 16th of the inserts, 0.15 ms each: a partition is busy about 3% of the time, the
        // single partition by post about 45%.
        assert!(likes.hot_partition_utilization < 0.04);
    }
    let hot = likes_of(&by_post[0]).hot_partition_utilization;
    assert!((0.40..0.50).contains(&hot), "by post: {hot}");
}

#[test]
fn a_shared_transaction_holds_the_partition_through_the_row() {
    // By post in one transaction, a post's likes queue for one partition held for the insert
    // and the whole row wait: no shard count helps. Separate transactions free it at once.
    let dir = tempfile::tempdir().unwrap();
    let shared = common::simulate(&common::scenario(
        dir.path(),
        &likes_text("partition_by = \"post\"\nsame_transaction = true", ""),
    ));
    let separate = common::simulate(&common::scenario(
        dir.path(),
        &likes_text("partition_by = \"post\"\nsame_transaction = false", ""),
    ));
    for (shared, separate) in shared.iter().zip(&separate) {
        let (a, b) = (likes_of(shared), likes_of(separate));
        assert!(
            a.hot_partition_utilization > 0.99,
            "shared: {}",
            a.hot_partition_utilization
        );
        assert!(
            a.insert_waits.summary().p99_ns > 1_000_000_000,
            "the insert queue grows"
        );
        if shared.shards >= 4 {
            assert!(b.insert_waits.summary().p99_ns < 5_000_000);
        }
    }
}

#[test]
fn reconciliation_repairs_drift_at_its_scan_rate() {
    // 1,000 likes, one a millisecond in the first second; each fails after its separate
    // insert, so each is stored and lost: drift 1,000 at 1 s. The pass at 1 s recounts the
    // post's 1,000 likes at 500 rows a second, ending at 3 s; the pass due at 2 s waits for
    // it, and the one at 3 s finds nothing new.
    let dir = tempfile::tempdir().unwrap();
    let trace: String = std::iter::once("t_ms,key\n".to_owned())
        .chain((0..1000).map(|ms| format!("{ms},p\n")))
        .collect();
    std::fs::write(dir.path().join("likes.csv"), trace).unwrap();
    let text = "seed = 1\nshards = [2]\nduration_s = 4\n[hold]\nms = 0.5\n[arrivals]\ntrace = \"likes.csv\"\n\
                [likes_table]\npartitions = 4\nsame_transaction = false\nstep_failure_rate = 1\n\
                insert_hold = { ms = 0.1 }\n[reconcile]\nevery_s = 1\nrows_per_s = 500\n";
    let runs = common::simulate(&common::scenario(dir.path(), text));
    let likes = likes_of(&runs[0]);
    assert_eq!(likes.outcomes.stored, 1000);
    assert_eq!(likes.outcomes.lost, 1000);
    assert_eq!(likes.drift_max, 1000);
    assert_eq!(likes.reconciled, 1000);
    assert_eq!(likes.recounts, 1);
    assert_eq!(likes.drift_final, 0);
    let drift: Vec<u32> = runs[0].windows.iter().map(|w| w.drift).collect();
    assert_eq!(drift, [1000, 1000, 1000, 0], "drift at each window's end");
}

#[test]
fn the_summary_and_timeseries_carry_the_likes_table() {
    let dir = tempfile::tempdir().unwrap();
    let text = likes_text(
        "partition_by = \"post_user\"\nsame_transaction = false\nstep_failure_rate = 0.002",
        "[users]\nrepeat_fraction = 0.02\n[reconcile]\nevery_s = 5\nrows_per_s = 100000\n",
    );
    let output = common::run_text(dir.path(), &text, &[]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("likes table: the insert path"), "{stdout}");
    let summary = std::fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cell = |name: &str| first[header.iter().position(|h| *h == name).unwrap()];
    for column in [
        "repeats_rejected",
        "insert_wait_p99_ms",
        "hot_partition_share",
        "like_latency_p99_ms",
        "drift_max",
        "drift_final",
    ] {
        assert!(!cell(column).is_empty(), "{column} is filled");
    }
    let series = std::fs::read_to_string(dir.path().join("out/timeseries.csv")).unwrap();
    assert!(series.lines().next().unwrap().ends_with(",drift"));
    let resolved = std::fs::read_to_string(dir.path().join("out/scenario.toml")).unwrap();
    assert!(
        resolved.contains("partition_by = \"post_user\""),
        "{resolved}"
    );
    assert!(resolved.contains("repeat_fraction = 0.02"), "{resolved}");
}

#[test]
fn bad_likes_sections_are_one_line_errors_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let base = "shards = [2]\nduration_s = 5\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 100\n";
    for (extra, field) in [
        ("[users]\nrepeat_fraction = 0.1\n", "users.repeat_fraction"),
        ("[reconcile]\nevery_s = 1\nrows_per_s = 10\n", "reconcile"),
        (
            "[likes_table]\npartition_by = \"user\"\ninsert_hold = { ms = 0.1 }\n",
            "likes_table.partition_by",
        ),
        ("[likes_table]\npartitions = 4\n", "likes_table.insert_hold"),
        (
            "[likes_table]\ninsert_hold = { ms = 0.1, per_waiter_ms = 1 }\n",
            "likes_table.insert_hold.per_waiter_ms",
        ),
        (
            "[likes_table]\npartitions = 0\ninsert_hold = { ms = 0.1 }\n",
            "likes_table.partitions",
        ),
        (
            "[likes_table]\nstep_failure_rate = 2\ninsert_hold = { ms = 0.1 }\n",
            "likes_table.step_failure_rate",
        ),
        (
            "[likes_table]\ninsert_hold = { ms = 0.1 }\n[reconcile]\nevery_s = 1\n",
            "reconcile.rows_per_s",
        ),
        (
            "[likes_table]\ninsert_hold = { ms = 0.1 }\n[batching]\nservers = 2\nflush_ms = 100\n",
            "likes_table",
        ),
    ] {
        let output = common::run_text(dir.path(), &format!("{base}{extra}"), &[]);
        let stderr = common::stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{extra}: {stderr}");
        assert!(stderr.contains("test.toml"), "{stderr}");
        assert!(stderr.contains(field), "{extra}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!dir.path().join("out").exists(), "no half-written output");
    }
}

#[test]
fn check_compares_a_sweep_configuration_by_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "name = \"layouts\"\n{}\n[sweep]\n\"likes_table.partition_by\" = [\"post\", \"post_user\"]\n",
        likes_text("same_transaction = false", "")
    );
    std::fs::write(dir.path().join("test.toml"), text).unwrap();
    let update = common::shardsim(
        dir.path(),
        &["check", "test.toml", "--baseline", "base.csv", "--update"],
    );
    assert!(update.status.success(), "{}", common::stderr(&update));
    let baseline = std::fs::read_to_string(dir.path().join("base.csv")).unwrap();
    assert!(baseline.starts_with("likes_table.partition_by,scenario,"));
    let same = common::shardsim(
        dir.path(),
        &["check", "test.toml", "--baseline", "base.csv"],
    );
    assert!(same.status.success(), "{}", common::stderr(&same));
    // The post_user rows' p99 wait was better in the baseline: only they regress.
    let mut lines: Vec<String> = baseline.lines().map(str::to_owned).collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let p99 = header.iter().position(|h| *h == "wait_p99_ms").unwrap();
    let header_len = header.len();
    for line in lines.iter_mut().skip(1) {
        if line.starts_with("post_user,") {
            let mut cells: Vec<String> = line.split(',').map(str::to_owned).collect();
            assert_eq!(cells.len(), header_len);
            let value: f64 = cells[p99].parse().unwrap();
            cells[p99] = format!("{}", value / 10.0);
            *line = cells.join(",");
        }
    }
    std::fs::write(dir.path().join("base.csv"), lines.join("\n") + "\n").unwrap();
    let moved = common::shardsim(
        dir.path(),
        &["check", "test.toml", "--baseline", "base.csv"],
    );
    assert_eq!(moved.status.code(), Some(1), "{}", common::stderr(&moved));
    let stdout = String::from_utf8_lossy(&moved.stdout);
    assert!(
        stdout.contains("likes_table.partition_by=post_user"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("likes_table.partition_by=post earliest"),
        "{stdout}"
    );
}

#[test]
fn a_closed_loop_through_the_likes_table_spreads_and_conserves() {
    // 16 connections: each like is another user's, so by (post, user) they spread over the
    // 4 partitions (the clients are not the users).
    let dir = tempfile::tempdir().unwrap();
    let text = "shards = [1, 4]\nduration_s = 5\n[hold]\nms = 0.2\n[arrivals]\nclients = 16\nthink_ms = 1\n\
                [likes_table]\npartitions = 4\npartition_by = \"post_user\"\ninsert_hold = { ms = 0.05 }\n\
                same_transaction = false\nstep_failure_rate = 0.01\n[users]\nrepeat_fraction = 0.1\n";
    let runs = common::simulate(&common::scenario(dir.path(), text));
    assert_conserved(&runs, "closed loop");
    for run in &runs {
        let likes = likes_of(run);
        let o = likes.outcomes;
        assert!(
            (0.24..0.27).contains(&likes.hot_partition_share),
            "{}",
            likes.hot_partition_share
        );
        let repeats = o.repeats as f64 / o.attempts as f64;
        assert!((0.09..0.11).contains(&repeats), "{repeats}");
        assert_eq!(o.rejected, o.repeats);
    }
}

#[test]
fn plan_answers_at_once_when_the_likes_table_is_the_hot_spot() {
    use shardsim::plan::{self, PlanSettings};
    use shardsim::scenario::Slo;
    let dir = tempfile::tempdir().unwrap();
    let settings = PlanSettings {
        every_run: false,
        max_shards: 64,
        duration_s: 5.0,
        warmup_s: 1.0,
        replications: 2,
    };
    let targets = Slo {
        p99_ns: Some(20_000_000),
        ..Slo::default()
    };
    // By post in one transaction: 3,000 likes/s × (0.15 + 1) ms on one partition = 3.45.
    let hot = common::scenario(
        dir.path(),
        &likes_text("partition_by = \"post\"\nsame_transaction = true", ""),
    );
    let planned = plan::plan(&hot, targets, settings).unwrap();
    assert_eq!(planned.answer, None);
    assert!(planned.evaluations.is_empty(), "nothing simulated");
    let reason = planned.unmet_reason.unwrap();
    assert!(reason.contains("offered 3.45×"), "{reason}");
    // Separate transactions free the partition after 0.15 ms: 0.45 of it, so plan searches.
    let separate = common::scenario(
        dir.path(),
        &likes_text("partition_by = \"post\"\nsame_transaction = false", ""),
    );
    let planned = plan::plan(&separate, targets, settings).unwrap();
    assert!(planned.answer.is_some(), "{:?}", planned.unmet_reason);
}

#[test]
fn a_client_that_gives_up_during_its_insert_is_told_once() {
    // One closed-loop client, a 10 ms insert, a 5 ms timeout that cancels, no retry: each
    // like times out during (or waiting for) the insert and the client sends the next at
    // once: 200 in a second. The insert it gave up on ends later and must answer nobody (it
    // answered the client a second time, and the loop's population doubled: 10,100 likes).
    let dir = tempfile::tempdir().unwrap();
    let text = "shards = [1]\nduration_s = 1\n[hold]\nms = 0.1\n[arrivals]\nclients = 1\nthink_ms = 0\n\
                [likes_table]\npartitions = 1\ninsert_hold = { dist = \"constant\", ms = 10 }\n\
                same_transaction = false\n[client]\ntimeout_ms = 5\non_timeout = \"cancel\"\nretries = 0\n";
    let runs = common::simulate(&common::scenario(dir.path(), text));
    let client = runs[0].extended.as_ref().unwrap().client.as_ref().unwrap();
    assert_eq!((client.counts.likes, client.counts.timeouts), (200, 200));
}
