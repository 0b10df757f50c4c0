//! Capacity planning, confidence intervals and regression gates.

use std::fs;
use std::path::Path;

use shardsim::figures::summarize;
use shardsim::plan::{self, PlanSettings};
use shardsim::scenario::Slo;
use shardsim::stats::replications::mean_and_half_width;
use shardsim::theory;

use crate::common::{self, repo, shardsim, stderr};

#[test]
fn plan_for_the_final_shows_n_minus_one_failing_and_n_passing() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = repo("scenarios/final.toml");
    let output = shardsim(
        dir.path(),
        &[
            "plan",
            scenario.to_str().unwrap(),
            "--p99-ms",
            "20",
            "--format",
            "json",
            "--out",
            "plan",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let plans: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // The final compares earliest-free and random: one plan each, in that order.
    assert_eq!(plans["plans"][1]["policy"], "random");
    let random_answer = plans["plans"][1]["answer_shards"].as_u64().unwrap();
    let plan = &plans["plans"][0];
    assert_eq!(plan["policy"], "earliest-free");
    let answer = plan["answer_shards"].as_u64().unwrap();
    assert!(
        random_answer >= answer,
        "random needs at least as many rows"
    );
    assert_eq!(plan["evidence"]["answer"]["shards"], answer);
    assert_eq!(plan["evidence"]["answer"]["meets"], true);
    assert_eq!(plan["evidence"]["below"]["shards"], answer - 1);
    assert_eq!(plan["evidence"]["below"]["meets"], false);
    // 5,000/s at 1 ms needs more than 5 rows just to keep up.
    assert!(answer >= 6, "{answer}");
    let upper = plan["evidence"]["answer"]["wait_p99_ms_ci"][1]
        .as_f64()
        .unwrap();
    assert!(upper <= 20.0);
    for file in ["plan.csv", "plan.json"] {
        assert!(dir.path().join("plan").join(file).is_file(), "{file}");
    }
}

/// The counts a plan judges by their peak utilization alone, and the replications it stops
/// once the first ones decide, change nothing: `--every-run` simulates them all, with the same
/// verdicts and answer; the count below the answer is simulated either way, as the evidence.
#[test]
fn counts_ruled_out_unsimulated_fail_when_simulated_with_the_same_answer() {
    let dir = tempfile::tempdir().unwrap();
    let base = small_scenario(dir.path(), "random", "dist = \"constant\"\nms = 1", 7500.0);
    let targets = Slo {
        p99_ns: Some(30_000_000),
        max_utilization: Some(0.8),
        ..Slo::default()
    };
    let settings = PlanSettings {
        every_run: false,
        max_shards: 64,
        duration_s: 5.0,
        warmup_s: 1.0,
        replications: 8,
    };
    let shortcut = plan::plan(&base, targets, settings).unwrap();
    let every = plan::plan(
        &base,
        targets,
        PlanSettings {
            every_run: true,
            ..settings
        },
    )
    .unwrap();
    // 7,500/s at 1 ms: 7 rows are overloaded, 8 and 9 above max_utilization 0.8 (0.94, 0.83);
    // the search starts at 7, meets at 14, then bisects 10, 8, 9.
    assert_eq!(shortcut.answer, Some(10));
    assert_eq!(every.answer, shortcut.answer);
    let json = |p: &plan::Plan| -> serde_json::Value {
        serde_json::from_str(&shardsim::report::plan::plan_json(std::slice::from_ref(p))).unwrap()
    };
    let ruled_out: Vec<u64> = json(&shortcut)["unsimulated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["shards"].as_u64().unwrap())
        .collect();
    assert_eq!(ruled_out, [7, 8]);
    assert_eq!(json(&every)["unsimulated"], serde_json::json!([]));
    for count in [7, 8] {
        assert!(!every.evaluations[&count].meets, "{count} shards");
        assert!(!shortcut.evaluations.contains_key(&count));
    }
    assert!(
        !shortcut.evaluations[&9].meets,
        "the evidence below the answer"
    );
    // Whatever both simulated is judged the same; a count the shortcut simulated to the end
    // is the same, byte for byte, and one it stopped early is the start of the same runs.
    let mut stopped = 0;
    for (shards, evaluation) in &shortcut.evaluations {
        let full = &every.evaluations[shards];
        assert_eq!(evaluation.meets, full.meets, "{shards} shards");
        if evaluation.row.replications() == full.row.replications() {
            assert_eq!(format!("{:?}", evaluation.row), format!("{:?}", full.row));
        } else {
            stopped += 1;
            assert!(evaluation.row.replications() < full.row.replications());
        }
    }
    assert!(stopped > 0, "some count's first replications decide it");
}

fn small_scenario(dir: &Path, policy: &str, hold: &str, rate: f64) -> shardsim::scenario::Scenario {
    common::scenario(
        dir,
        &format!(
            "shards = [1]\npolicy = \"{policy}\"\nduration_s = 10\n[hold]\n{hold}\n[arrivals]\nrate_per_s = {rate}\n"
        ),
    )
}

#[test]
fn the_search_agrees_with_a_brute_force_scan() {
    let dir = tempfile::tempdir().unwrap();
    let base = small_scenario(
        dir.path(),
        "earliest-free",
        "dist = \"exponential\"\nmean_ms = 1",
        3000.0,
    );
    let settings = PlanSettings {
        every_run: false,
        max_shards: 64,
        duration_s: 10.0,
        warmup_s: 1.0,
        replications: 4,
    };
    for target_ms in [0.5, 3.0, 40.0] {
        let targets = Slo {
            p99_ns: Some((target_ms * 1e6) as u64),
            ..Slo::default()
        };
        let planned = plan::plan(&base, targets, settings).unwrap();
        let brute = (1..=20)
            .find(|&n| {
                plan::evaluate_at(&base, &targets, settings, n)
                    .unwrap()
                    .meets
            })
            .unwrap();
        assert_eq!(planned.answer, Some(brute), "target {target_ms} ms");
    }
}

#[test]
fn plan_reports_an_unmeetable_target_with_exit_code_one() {
    let dir = tempfile::tempdir().unwrap();
    let output = shardsim(
        dir.path(),
        &[
            "plan",
            "--rate",
            "5000",
            "--hold-ms",
            "1",
            "--max-utilization",
            "0.5",
            "--max-shards",
            "8",
            "--out",
            "p",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("needs at least 10 shards, more than --max-shards 8"));
}

#[test]
fn plan_without_a_target_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let output = shardsim(dir.path(), &["plan", "--rate", "5000", "--hold-ms", "1"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no target"));
}

#[test]
fn simulated_p99_follows_erlang_c_over_a_grid_of_utilizations() {
    // Earliest-free with exponential holds is M/M/8. Five replications of 200,000 increments
    // each; the mean p99 over replications has a relative standard error below 1% at every
    // utilization here (measured), so 5% is a few percent that a wrong model cannot meet.
    let dir = tempfile::tempdir().unwrap();
    let settings = PlanSettings {
        every_run: false,
        max_shards: 64,
        duration_s: 0.0,
        warmup_s: 2.0,
        replications: 5,
    };
    for rho in [0.5, 0.6, 0.7, 0.8, 0.9] {
        let rate = rho * 8.0 * 1000.0;
        let base = small_scenario(
            dir.path(),
            "earliest-free",
            "dist = \"exponential\"\nmean_ms = 1",
            rate,
        );
        let settings = PlanSettings {
            duration_s: 200_000.0 / rate,
            ..settings
        };
        let evaluation = plan::evaluate_at(&base, &Slo::default(), settings, 8).unwrap();
        let simulated = evaluation.row.waits.p99_ns as f64 / 1e6;
        let exact = theory::mmc_wait_quantile(8, rate / 1e3, 1.0, 0.99);
        // Wiring only: plan reports the Erlang C p99 (the formula is checked against closed
        // forms and a textbook value in theory.rs); the simulation is what is judged below.
        assert_eq!(evaluation.theory.unwrap().p99_ms, exact);
        let error = (simulated / exact - 1.0).abs();
        assert!(
            error < 0.05,
            "ρ = {rho}: simulated {simulated} ms, Erlang C {exact} ms"
        );
    }
}

#[test]
fn simulated_p99_follows_exact_mdc_over_a_grid_of_utilizations() {
    // Earliest-free with a constant hold is M/D/8; plan's analytic estimate is Crommelin's
    // exact distribution. Same design as the Erlang C grid above (relative standard error of
    // the mean p99 below 1% here, measured).
    let dir = tempfile::tempdir().unwrap();
    for rho in [0.5, 0.7, 0.9] {
        let rate = rho * 8.0 * 1000.0;
        let base = small_scenario(
            dir.path(),
            "earliest-free",
            "dist = \"constant\"\nms = 1",
            rate,
        );
        let settings = PlanSettings {
            every_run: false,
            max_shards: 64,
            duration_s: 200_000.0 / rate,
            warmup_s: 2.0,
            replications: 5,
        };
        let evaluation = plan::evaluate_at(&base, &Slo::default(), settings, 8).unwrap();
        let simulated = evaluation.row.waits.p99_ns as f64 / 1e6;
        let theory = evaluation.theory.expect("M/D/c is known here");
        assert_eq!(theory.model, "M/D/c (Crommelin)");
        let exact = theory::MdcWait::new(8, rate / 1e3, 1.0).unwrap();
        // Wiring only, as above: the M/D/c quantile is checked against Crommelin's series and
        // Erlang's M/D/1 in theory.rs.
        assert_eq!(theory.p99_ms, exact.quantile(0.99));
        let error = (simulated / theory.p99_ms - 1.0).abs();
        assert!(
            error < 0.05,
            "ρ = {rho}: simulated {simulated} ms, M/D/c {} ms",
            theory.p99_ms
        );
    }
}

#[test]
fn confidence_intervals_shrink_as_one_over_root_r() {
    // Half-width = t(R−1) · s / √R: from R = 10 to R = 40 it shrinks by 2 × t(9)/t(39) ≈ 2.24
    // if the sample deviation holds steady; s itself varies by about 25% at R = 10.
    let dir = tempfile::tempdir().unwrap();
    let text = "shards = [2]\nduration_s = 5\nreplications = 40\n[hold]\ndist = \"exponential\"\nmean_ms = 1\n[arrivals]\nrate_per_s = 1500\n";
    let scenario = common::scenario(dir.path(), text);
    let (runs, _) = shardsim::sweep::run_replications(
        &scenario,
        vec![shardsim::model::NoEvents],
        &shardsim::sweep::NoProgress,
    )
    .unwrap();
    let p99: Vec<f64> = runs[0]
        .iter()
        .map(|run| run.waits.summary().p99_ns as f64)
        .collect();
    let (_, few) = mean_and_half_width(&p99[..10]);
    let (_, many) = mean_and_half_width(&p99);
    let ratio = few.unwrap() / many.unwrap();
    assert!(
        (1.5..3.3).contains(&ratio),
        "half-widths {few:?} / {many:?} = {ratio}"
    );
    // Each half-width is exactly Student's t(0.975, R − 1) · s / √R, with t from the tables
    // (2.262157 for 9 degrees of freedom, 2.022691 for 39): an interval without the t factor,
    // or with the normal's 1.96, fails here.
    let sample_sd = |values: &[f64]| {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    };
    for (values, t, half) in [(&p99[..10], 2.262157, few), (&p99[..], 2.022691, many)] {
        let expected = t * sample_sd(values) / (values.len() as f64).sqrt();
        assert!(
            (half.unwrap() / expected - 1.0).abs() < 1e-5,
            "R = {}: half-width {half:?}, t·s/√R = {expected}",
            values.len()
        );
    }
    let row = summarize(&scenario, &runs[0]);
    let (lo, hi) = (row.waits_lo.unwrap(), row.waits_hi.unwrap());
    assert!(lo.p99_ns <= row.waits.p99_ns && row.waits.p99_ns <= hi.p99_ns);
}

#[test]
fn one_replication_writes_no_interval_columns_and_more_fill_them() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("t.toml"),
        "shards = [2]\nduration_s = 2\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 1500\n",
    )
    .unwrap();
    // A column the summary does not write reads as `None`.
    let column = |out: &str, name: &str| -> Option<String> {
        let csv = fs::read_to_string(dir.path().join(out).join("summary.csv")).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let at = header.iter().position(|h| *h == name)?;
        Some(lines.next().unwrap().split(',').nth(at).unwrap().to_owned())
    };
    assert!(
        shardsim(dir.path(), &["run", "t.toml", "--out", "one", "-q"])
            .status
            .success()
    );
    assert_eq!(column("one", "wait_p99_ms_hi"), None);
    assert_eq!(column("one", "replications").as_deref(), Some("1"));
    assert!(
        shardsim(
            dir.path(),
            &[
                "run",
                "t.toml",
                "--out",
                "five",
                "-q",
                "--replications",
                "5"
            ]
        )
        .status
        .success()
    );
    let hi: f64 = column("five", "wait_p99_ms_hi").unwrap().parse().unwrap();
    let mean: f64 = column("five", "wait_p99_ms").unwrap().parse().unwrap();
    assert!(hi >= mean, "{hi} {mean}");
}

#[test]
fn a_warm_up_is_left_out_of_the_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let text = |warmup: f64| {
        format!(
            "shards = [2]\nduration_s = 10\nwarmup_s = {warmup}\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 1000\n"
        )
    };
    let full = common::simulate(&common::scenario(dir.path(), &text(0.0)));
    let warm = common::simulate(&common::scenario(dir.path(), &text(4.0)));
    // Same seed, same stream: the warm-up drops the first 4 s (about 4,000 arrivals).
    let dropped = full[0].arrivals - warm[0].arrivals;
    assert!((3_800..4_200).contains(&dropped), "{dropped}");
    let row = summarize(&common::scenario(dir.path(), &text(4.0)), &warm[0..1]);
    assert!(
        (row.offered_per_s() - 1000.0).abs() < 40.0,
        "{}",
        row.offered_per_s()
    );
}

mod check {
    use super::*;

    fn scenario(dir: &Path, hold_ms: f64) {
        let text = format!(
            "name = \"gate\"\nshards = [2, 4]\nduration_s = 20\n[hold]\nms = {hold_ms}\n[arrivals]\nrate_per_s = 2500\n"
        );
        fs::write(dir.join("gate.toml"), text).unwrap();
    }

    fn check(dir: &Path, extra: &[&str]) -> std::process::Output {
        let mut args = vec!["check", "gate.toml", "--baseline", "base.csv"];
        args.extend_from_slice(extra);
        shardsim(dir, &args)
    }

    #[test]
    fn an_unchanged_run_matches_its_baseline_exactly() {
        let dir = tempfile::tempdir().unwrap();
        scenario(dir.path(), 1.0);
        assert!(check(dir.path(), &["--update"]).status.success());
        let output = check(dir.path(), &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(String::from_utf8_lossy(&output.stdout).contains("matches base.csv exactly"));
    }

    #[test]
    fn a_slower_commit_is_a_regression_naming_the_columns_that_moved() {
        let dir = tempfile::tempdir().unwrap();
        scenario(dir.path(), 1.0);
        assert!(check(dir.path(), &["--update"]).status.success());
        scenario(dir.path(), 1.2);
        let output = check(dir.path(), &[]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let table = String::from_utf8_lossy(&output.stdout);
        assert!(
            table.contains("wait_p99_ms") && table.contains("REGRESSION"),
            "{table}"
        );
        for column in ["wait_p99_ms", "ceiling_per_s", "utilization"] {
            assert!(stderr(&output).contains(column), "{}", stderr(&output));
        }
    }

    #[test]
    fn a_baseline_with_empty_columns_of_features_the_run_lacks_still_matches() {
        let dir = tempfile::tempdir().unwrap();
        scenario(dir.path(), 1.0);
        assert!(check(dir.path(), &["--update"]).status.success());
        // A baseline written when every column was written: the likes and pool columns empty.
        let base = fs::read_to_string(dir.path().join("base.csv")).unwrap();
        let old: Vec<String> = base
            .lines()
            .enumerate()
            .map(|(at, line)| match at {
                0 => format!("{line},likes,like_connection_wait_p99_ms"),
                _ => format!("{line},,"),
            })
            .collect();
        fs::write(dir.path().join("base.csv"), old.join("\n") + "\n").unwrap();
        let output = check(dir.path(), &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(String::from_utf8_lossy(&output.stdout).contains("matches base.csv exactly"));
        assert!(
            stderr(&output).contains(
                "base.csv has the columns of features this run does not have (likes, pool), \
                 read as empty; --update drops them"
            ),
            "{}",
            stderr(&output)
        );
        // A value where the run has no such feature is a difference, not something to ignore.
        let filled: Vec<String> = old
            .iter()
            .enumerate()
            .map(|(at, line)| match at {
                0 => line.clone(),
                _ => format!("{line}5"),
            })
            .collect();
        fs::write(dir.path().join("base.csv"), filled.join("\n") + "\n").unwrap();
        assert_eq!(check(dir.path(), &["--strict"]).status.code(), Some(1));
    }

    #[test]
    fn improvements_pass_unless_strict() {
        let dir = tempfile::tempdir().unwrap();
        scenario(dir.path(), 1.0);
        assert!(check(dir.path(), &["--update"]).status.success());
        // Lower waits, but the ceiling moves too (a fixed column): hand-edit the baseline's
        // waits upwards instead, so only improvements remain.
        let base = fs::read_to_string(dir.path().join("base.csv")).unwrap();
        let mut lines: Vec<String> = base.lines().map(str::to_owned).collect();
        let header: Vec<&str> = lines[0].split(',').collect();
        let at = header.iter().position(|h| *h == "wait_max_ms").unwrap();
        let mut fields: Vec<String> = lines[1].split(',').map(str::to_owned).collect();
        fields[at] = "99999999".into();
        lines[1] = fields.join(",");
        fs::write(dir.path().join("base.csv"), lines.join("\n") + "\n").unwrap();
        let output = check(dir.path(), &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(String::from_utf8_lossy(&output.stdout).contains("improvement"));
        assert_eq!(check(dir.path(), &["--strict"]).status.code(), Some(1));
    }

    #[test]
    fn bad_baselines_are_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        scenario(dir.path(), 1.0);
        let output = check(dir.path(), &[]);
        assert_eq!(output.status.code(), Some(2));
        assert!(stderr(&output).contains("base.csv: cannot read the baseline"));
        assert!(check(dir.path(), &["--update"]).status.success());
        let good = fs::read_to_string(dir.path().join("base.csv")).unwrap();
        let without_column = good.replacen("wait_p99_ms,", "wait_p99_ms_gone,", 1);
        fs::write(dir.path().join("base.csv"), without_column).unwrap();
        let output = check(dir.path(), &[]);
        assert_eq!(output.status.code(), Some(2));
        assert!(
            stderr(&output).contains("base.csv: line 1: the header has no wait_p99_ms column"),
            "{}",
            stderr(&output)
        );
        fs::write(dir.path().join("base.csv"), &good).unwrap();
        let output = check(dir.path(), &["--shards", "2,8"]);
        assert_eq!(output.status.code(), Some(2));
        assert!(
            stderr(&output).contains("has shard counts [2, 4] but the run has [2, 8]"),
            "{}",
            stderr(&output)
        );
        let garbled = good.replacen(",earliest-free,2,", ",earliest-free,x,", 1);
        fs::write(dir.path().join("base.csv"), garbled).unwrap();
        assert_eq!(check(dir.path(), &[]).status.code(), Some(2));
    }
}

/// `plan --calibration` with a calibration of `[machine]` CPU 0.1 ms on one core (10,000
/// updates a second at most) and `spread`, at `rate` and a 0.05 ms hold: the plan's JSON.
fn plan_over_spread(dir: &Path, spread: &str, rate: &str) -> (bool, serde_json::Value) {
    let calibration = dir.join("calibration.toml");
    fs::write(
        &calibration,
        format!("[machine]\ncores = 1\n[machine.cpu]\nms = 0.1\n\n[spread]\n{spread}\n"),
    )
    .unwrap();
    let output = shardsim(
        dir,
        &[
            "plan",
            "--rate",
            rate,
            "--hold-ms",
            "0.05",
            "--p99-ms",
            "2",
            "--calibration",
            calibration.to_str().unwrap(),
            "--duration-s",
            "5",
            "--format",
            "json",
            "--out",
            "plan",
        ],
    );
    let json = serde_json::from_slice(&output.stdout).unwrap_or_default();
    (output.status.success(), json)
}

#[test]
fn a_calibrations_spread_is_answered_at_both_ends_and_the_plan_takes_the_most_rows() {
    let dir = tempfile::tempdir().unwrap();
    // Every time of the machine 0.7× to 1.3× as fitted: the slow end's CPU queue is longer, the
    // fast end's shorter, and the answer is the slow end's.
    let (ok, plan) = plan_over_spread(dir.path(), "slower = 1.3\nfaster = 0.7", "7000");
    assert!(ok, "{plan}");
    let spread = &plan["spread"];
    let answer = |end: &str| spread[end].as_u64().unwrap();
    let (fast, fitted, slow) = (
        answer("answer_at_faster"),
        answer("answer_as_fitted"),
        answer("answer_at_slower"),
    );
    // At 7,000/s the slow end's core is 91% busy and needs far more rows than as fitted.
    assert!(fast <= fitted && fitted < slow, "{spread}");
    assert_eq!(plan["answer_shards"].as_u64().unwrap(), slow);
    // At 8,500/s the fitted machine (10,000/s) keeps up and the slow end (7,692/s) cannot: no
    // row count is enough, whatever the fitted one says.
    let (ok, plan) = plan_over_spread(dir.path(), "slower = 1.3\nfaster = 0.7", "8500");
    assert!(!ok, "{plan}");
    assert!(plan["answer_shards"].is_null(), "{plan}");
    assert!(plan["spread"]["answer_at_slower"].is_null(), "{plan}");
    assert!(plan["spread"]["answer_as_fitted"].is_u64(), "{plan}");
}

#[test]
fn run_with_a_calibrations_spread_prints_each_ends_recommendation_and_the_one_to_choose() {
    let dir = tempfile::tempdir().unwrap();
    let calibration = dir.path().join("calibration.toml");
    fs::write(
        &calibration,
        "[machine]\ncores = 1\n[machine.cpu]\nms = 0.1\n\n[spread]\nslower = 1.3\nfaster = 0.7\n",
    )
    .unwrap();
    let scenario = dir.path().join("s.toml");
    fs::write(
        &scenario,
        "name = \"s\"\nshards = [1, 2, 4, 8]\nduration_s = 5\n[hold]\nms = 0.05\n\
         [arrivals]\nrate_per_s = 6000\n[slo]\np99_ms = 2\n",
    )
    .unwrap();
    let output = shardsim(
        dir.path(),
        &[
            "run",
            scenario.to_str().unwrap(),
            "--calibration",
            calibration.to_str().unwrap(),
            "--out",
            "out",
            "--no-fail",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap().replace('\n', " ");
    assert!(
        text.contains(
            "over the calibration's spread (every time of its machine ×0.70 to ×1.30; of the old kind"
        ),
        "{text}"
    );
    assert!(text.contains("choose"), "{text}");
    assert!(
        text.contains("Over the calibration's band")
            && text.contains("not stated (an old calibration)"),
        "{text}"
    );
    // The outputs are the fitted calibration's — the same figures as a run without a spread —
    // with each shard count's band beside them.
    fs::write(
        &calibration,
        "[machine]\ncores = 1\n[machine.cpu]\nms = 0.1\n",
    )
    .unwrap();
    let plain = shardsim(
        dir.path(),
        &[
            "run",
            scenario.to_str().unwrap(),
            "--calibration",
            calibration.to_str().unwrap(),
            "--out",
            "plain",
            "--no-fail",
        ],
    );
    assert!(plain.status.success(), "{}", stderr(&plain));
    let banded = fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    let plain_csv = fs::read_to_string(dir.path().join("plain/summary.csv")).unwrap();
    let band_columns = [
        "throughput_band_lo_per_s",
        "throughput_band_hi_per_s",
        "response_p99_band_lo_ms",
        "response_p99_band_hi_ms",
        "band_coverage",
    ];
    let mut reader = csv::Reader::from_reader(banded.as_bytes());
    let header = reader.headers().unwrap().clone();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let without_band: Vec<String> = std::iter::once(&header)
        .chain(&records)
        .map(|record| {
            record
                .iter()
                .zip(header.iter())
                .filter(|(_, name)| !band_columns.contains(name))
                .map(|(cell, _)| cell)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    assert_eq!(without_band.join("\n") + "\n", plain_csv);
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    for record in &records {
        let number = |name: &str| record[column(name)].parse::<f64>().unwrap();
        let throughput = number("throughput_per_s");
        assert!(
            number("throughput_band_lo_per_s") <= throughput
                && throughput <= number("throughput_band_hi_per_s"),
            "{record:?}"
        );
        let p99 = number("response_p99_ms");
        assert!(
            number("response_p99_band_lo_ms") <= p99 && p99 <= number("response_p99_band_hi_ms"),
            "{record:?}"
        );
        assert!(
            record[column("band_coverage")].is_empty(),
            "an old spread states none"
        );
    }
    assert!(!String::from_utf8(plain.stdout).unwrap().contains("spread"));
}
