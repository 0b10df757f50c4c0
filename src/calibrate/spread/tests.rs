use super::*;
use crate::model::cores::Scheduler;
use crate::model::machine::GrantOrder;
use rand_distr::{Distribution, Normal};

/// A database with durable commits on one core (the shape `calibrate` fits here).
fn truth() -> Machine {
    Machine {
        hold_ms: 0.05,
        grant_order: GrantOrder::Fifo,
        wake_ms: 0.05,
        wake_cpu_ms: 0.01,
        herd_cpu_ms: 0.0,
        page_scan_cpu_ms: 0.0,
        per_waiter_ms: 0.0,
        cpu_ms: 0.04,
        cores: 1,
        scheduler: Scheduler::Fifo,
        request_cpu_ms: 0.0,
        flush_ms: Some(0.06),
        flush_cpu_ms: 0.0,
        overhead_ms: 0.08,
        overhead_p99_ms: 0.4,
        idle: None,
    }
}

/// The closed loops of calibrate's design.
const LOOPS: [(u32, u32); 14] = [
    (1, 1),
    (1, 2),
    (1, 4),
    (1, 8),
    (1, 16),
    (1, 32),
    (64, 1),
    (64, 2),
    (64, 4),
    (64, 8),
    (64, 16),
    (64, 32),
    (4, 32),
    (16, 32),
];

/// `truth`'s loops measured with other draws than the fit's, each run on a database whose
/// speed moved by itself: every time of the run `speeds[i]` times the truth's.
fn measured(speeds: &[f64]) -> Vec<Observation> {
    LOOPS
        .iter()
        .zip(speeds)
        .map(|(&(rows, clients), &speed)| {
            let seconds = simulated_seconds(truth().simulate(rows, clients, 0.5).tps);
            truth()
                .scaled(speed)
                .simulate_seeded(rows, clients, seconds, 29)
        })
        .collect()
}

/// Per-run speeds log-normal around 1 with `sigma`, from `seed`.
fn speeds(sigma: f64, seed: u64) -> Vec<f64> {
    let mut rng = SimRng::seed_from_u64(seed);
    let normal = Normal::new(0.0, sigma).unwrap();
    (0..LOOPS.len())
        .map(|_| normal.sample(&mut rng).exp())
        .collect()
}

#[test]
fn the_bootstrap_is_as_wide_as_the_runs_known_noise_makes_it() {
    // Each run on its own speed, 6% apart from run to run: the runs' mean speed is known
    // within 6%/√14 (its standard error), so a 90% interval is about 2 × 1.645 × 1.6% = 5.3%
    // wide, and holds the speeds' own geometric mean.
    let sigma = 0.06;
    let speeds = speeds(sigma, 3);
    let runs = measured(&speeds);
    let spread = Spread::fit(&truth(), &runs, None).unwrap();
    let (low, high) = spread.bootstrap;
    let mean = (speeds.iter().map(|s| s.ln()).sum::<f64>() / speeds.len() as f64).exp();
    let expected_width = 2.0 * 1.645 * sigma / (LOOPS.len() as f64).sqrt();
    let width = (high / low).ln();
    eprintln!("{spread:?}: width {width:.4} (expected {expected_width:.4}), mean speed {mean:.4}");
    assert!(
        low <= mean * 1.01 && mean <= high * 1.01,
        "{low}–{high} misses the runs' mean speed {mean}"
    );
    assert!(
        width > 0.5 * expected_width && width < 2.0 * expected_width,
        "width {width} against {expected_width}"
    );
    assert_eq!(
        (spread.faster, spread.slower),
        (low.min(1.0), high.max(1.0))
    );
}

#[test]
fn without_noise_the_spread_is_narrow_and_a_slower_repeat_widens_it() {
    // Runs at the truth's own speed: the bootstrap stays within 3% of it (the draws differ
    // from the fit's). The loop measured again at its end 12% slower refits to its speed,
    // and the spread's slower end is that.
    let mut speeds = vec![1.0; LOOPS.len()];
    let quiet = Spread::fit(&truth(), &measured(&speeds), None).unwrap();
    assert!(
        quiet.bootstrap.0 > 0.97 && quiet.bootstrap.1 < 1.03,
        "{quiet:?}"
    );
    speeds.push(1.12);
    let mut runs = measured(&speeds);
    let again = truth()
        .scaled(1.12)
        .simulate_seeded(64, 32, simulated_seconds(runs[11].tps), 29);
    runs.push(again);
    let spread = Spread::fit(&truth(), &runs, Some((11, 14))).unwrap();
    let (first, again) = spread.repeated.unwrap();
    eprintln!("{spread:?}");
    assert!((first - 1.0).abs() < 0.03, "{first}");
    assert!((again / 1.12 - 1.0).abs() < 0.03, "{again}");
    assert!(spread.slower >= again && spread.faster <= 1.0);
    assert!(
        spread.describe().contains("slower"),
        "{}",
        spread.describe()
    );
}
