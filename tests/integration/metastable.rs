//! Metastable points on a database whose sustaining effect is known exactly: one row whose
//! update holds it 1 ms plus 0.05 ms for every update still waiting when it takes it
//! (`[hold] per_waiter_ms`). With `n` updates in the database — one holding, the next taking
//! the row while `n − 2` wait — the row commits `μ(n) = 1 / (1 + 0.05 (n − 2))` updates a
//! millisecond: 1,000/s with one or two, 400/s with a pool of 32 full. The fluid model's drain
//! rate at `n` is `μ(n) − λ`, so a stream at λ keeps up from empty while its queue stays
//! below `n* = 2 + (1/λ − 1 ms) / 0.05 ms`, and never drains once a trigger pushes it past:
//! between μ(32) = 400/s and about 1,000/s a stream through a pool of 32 is metastable, and
//! its hidden capacity is μ(32).

use shardsim::model::Policy;
use shardsim::scenario::Scenario;
use shardsim::stability::{
    self, Outcome, Point, Stability, StabilityFigures, StabilitySettings, StallKind, Trigger,
};

use crate::common::scenario;

/// The hold with nobody waiting and the extra hold per waiter, ms.
const HOLD_MS: f64 = 1.0;
const PER_WAITER_MS: f64 = 0.05;

/// One row of the known machine at `rate` through `pool` connections (none: no pool), with
/// `extra` sections.
fn known(pool: Option<u32>, rate: f64, extra: &str) -> (tempfile::TempDir, Scenario) {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool.map_or(String::new(), |size| format!("[pool]\nsize = {size}\n"));
    let text = format!(
        "shards = [1]\nduration_s = 10\nseed = 9\n[hold]\nms = {HOLD_MS}\nper_waiter_ms = {PER_WAITER_MS}\n\
         [arrivals]\nrate_per_s = {rate}\n{pool}{extra}"
    );
    let scenario = scenario(dir.path(), &text);
    (dir, scenario)
}

/// What the fluid model says one row commits with `n` updates in the database, per second.
fn mu(n: u32) -> f64 {
    1e3 / (HOLD_MS + PER_WAITER_MS * f64::from(n.saturating_sub(2)))
}

fn assess(scenario: &Scenario, rate: f64) -> StabilityFigures {
    stability::assess(
        scenario,
        Policy::EarliestFree,
        1,
        rate,
        false,
        &StabilitySettings::default(),
    )
    .expect("the probes run")
    .expect("an open stream on a machine with a trigger is probed")
}

#[test]
fn below_the_full_pools_rate_a_burst_drains_and_inside_the_band_it_never_does() {
    // μ(32) = 400/s. At 300/s a burst of 32 drains at 100/s or faster: stable. At 500/s
    // n* = 22: from empty the queue stays far below it (M/D/1 at ρ = 0.5), so it keeps up,
    // but the burst leaves 32 and the queue grows from there: metastable, the burst tips it.
    // At 1,200/s one row cannot keep up even from empty: collapsed.
    let (_dir, below) = known(Some(32), 300.0, "");
    let figures = assess(&below, 300.0);
    assert_eq!(figures.stability(), Stability::Stable, "{figures:?}");
    let (trigger, after) = figures.slowest().expect("a stable point recovered");
    assert_eq!(trigger, Trigger::Burst { requests: 32 });
    assert!(after > 0, "{figures:?}");
    let (_dir, inside) = known(Some(32), 500.0, "");
    let figures = assess(&inside, 500.0);
    assert_eq!(figures.stability(), Stability::Metastable, "{figures:?}");
    assert_eq!(figures.tipped_by(), Some(Trigger::Burst { requests: 32 }));
    let (_dir, above) = known(Some(32), 1_200.0, "");
    assert_eq!(
        assess(&above, 1_200.0).stability(),
        Stability::Collapsed,
        "past one row's 1,000/s nothing keeps up"
    );
}

#[test]
fn the_hidden_capacity_is_the_full_pools_rate_and_the_advertised_one_above_it() {
    // The hidden capacity is found by probing: it must land on the fluid model's μ(32) =
    // 400/s (within the search's 1% of the advertised capacity, and the few percent a
    // recovery window of 10 s allows when the drain is slow). The advertised capacity, kept
    // up from empty, lies between it and one row's 1,000/s.
    let (_dir, scenario) = known(Some(32), 500.0, "");
    let figures = assess(&scenario, 500.0);
    let hidden = figures.hidden_per_s();
    assert!(
        (0.93 * mu(32)..=1.02 * mu(32)).contains(&hidden),
        "hidden {hidden:.0}/s against μ(32) = {:.0}/s",
        mu(32)
    );
    let advertised = figures.advertised_per_s();
    assert!(
        advertised > 1.3 * hidden && advertised <= mu(1) * 1.01,
        "advertised {advertised:.0}/s, hidden {hidden:.0}/s"
    );
    // With every connection busy the row commits μ(32), as the curve measured it.
    let full = figures.full_pool_per_s();
    assert!(
        (full / mu(32) - 1.0).abs() < 0.03,
        "full pool {full:.0}/s against {:.0}/s",
        mu(32)
    );
}

#[test]
fn a_smaller_pool_bounds_the_waiters_and_the_same_stream_recovers() {
    // At 500/s through 8 connections a full pool commits μ(8) = 769/s: the burst drains.
    // Through 32, μ(32) = 400/s: it never does. The hidden capacity follows the pool.
    let (_dir, small) = known(Some(8), 500.0, "");
    let small = assess(&small, 500.0);
    assert_eq!(small.stability(), Stability::Stable, "{small:?}");
    let (_dir, large) = known(Some(32), 500.0, "");
    let large = assess(&large, 500.0);
    assert_eq!(large.stability(), Stability::Metastable, "{large:?}");
    assert!(
        small.hidden_per_s() > 1.6 * large.hidden_per_s(),
        "pool of 8: {:.0}/s, of 32: {:.0}/s",
        small.hidden_per_s(),
        large.hidden_per_s()
    );
}

#[test]
fn a_stall_tips_the_stream_when_its_queue_passes_the_crossing() {
    // No pool, 400/s: n* = 32. Stalls every 10,000 s (none falls in a probe by itself) whose
    // p99 is the trigger. A 20 ms stall leaves 8 waiting: it drains. A 150 ms stall leaves
    // 60: past n*, the queue grows for good. (Nearer the crossing the queue's own
    // fluctuations decide: at 500/s, n* = 22, a 20 ms stall tips one probe in two.)
    let stalls = |ms: u32| format!("[stalls]\nevery_s = 10000\nduration_ms = {ms}\n");
    let (_dir, short) = known(None, 400.0, &stalls(20));
    let short = assess(&short, 400.0);
    assert_eq!(short.stability(), Stability::Stable, "{short:?}");
    let (_dir, long) = known(None, 400.0, &stalls(150));
    let long = assess(&long, 400.0);
    assert_eq!(long.stability(), Stability::Metastable, "{long:?}");
    assert_eq!(
        long.tipped_by(),
        Some(Trigger::Stall {
            length_ns: 150_000_000,
            kind: StallKind::P99
        })
    );
}

#[test]
fn without_its_trigger_the_same_stream_keeps_up() {
    // The verdict rests on the trigger: the metastable stream at 500/s, probed without one,
    // keeps up from empty to the end; with the burst it does not recover.
    let (_dir, scenario) = known(Some(32), 500.0, "");
    let point = Point {
        scenario: &scenario,
        policy: Policy::EarliestFree,
        rows: 1,
        rate_per_s: 500.0,
    };
    let settings = StabilitySettings::default();
    let calm = stability::probe::probe(&point, None, 0, &settings).unwrap();
    assert_eq!(calm, Outcome::Recovered(0));
    let burst = Trigger::Burst { requests: 32 };
    let tipped = stability::probe::probe(&point, Some(burst), 0, &settings).unwrap();
    assert!(
        matches!(tipped, Outcome::NotRecovered(queue) if queue > 32),
        "{tipped:?}"
    );
}

#[test]
fn the_seed_model_commits_alike_whatever_waits_and_is_never_probed() {
    // Without a machine the rows commit at 1/hold whatever the queue: no metastable band, and
    // nothing to probe.
    let dir = tempfile::tempdir().unwrap();
    let plain = scenario(
        dir.path(),
        "shards = [1]\nduration_s = 10\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 500\n[pool]\nsize = 32\n",
    );
    assert!(!stability::applies(&plain));
}

#[test]
fn a_closed_loops_knee_is_where_the_known_machine_commits_the_most() {
    // The same row under a closed loop of 32 clients without think time: the 32 keep 30
    // waiting, so it commits μ(32) = 400/s, where one or two clients commit 1,000/s.
    let dir = tempfile::tempdir().unwrap();
    let closed = scenario(
        dir.path(),
        &format!(
            "shards = [1]\nduration_s = 2\n[hold]\nms = {HOLD_MS}\nper_waiter_ms = {PER_WAITER_MS}\n\
             [arrivals]\nclients = 32\n"
        ),
    );
    let knee =
        stability::knee(&closed, Policy::EarliestFree, 1).expect("a closed loop on a machine");
    assert!(knee.best_clients() <= 2, "{knee:?}");
    assert!((knee.best_per_s() / mu(1) - 1.0).abs() < 0.03, "{knee:?}");
    let (clients, at_clients) = knee.at_clients();
    assert_eq!(clients, 32);
    assert!((at_clients / mu(32) - 1.0).abs() < 0.03, "{knee:?}");
}
