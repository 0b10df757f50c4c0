//! Simulated waits against queueing theory where it is exact:
//! - `earliest-free` with exponential holds is M/M/c (Erlang C);
//! - `earliest-free` with constant holds is M/D/c (Crommelin's exact distribution);
//! - `random` with constant holds and Poisson arrivals is N independent M/D/1 queues.
//!
//! Each case runs about 2.5 million increments with a fixed seed. The tolerances come from the
//! spread over 10 seeds (measured when the tests were written; see each constant), set at
//! about four standard deviations of the estimate: a correct engine passes with any seed,
//! while a modelling error of a few percent (a hold 2% too long, a hold counted twice, an
//! off-by-one row) fails. Which free row earliest-free takes on a tie does not change these
//! waits, so the tie-break is the property test's to check (`model.rs`), not these.

use shardsim::theory;

use crate::common;

/// Rows in every case.
const ROWS: u32 = 4;
/// Mean or constant hold, in ms.
const HOLD_MS: f64 = 1.0;
/// Increments simulated per case (expected).
const INCREMENTS: f64 = 2_500_000.0;

struct Measured {
    mean_ms: f64,
    p99_ms: f64,
}

fn simulate(policy: &str, hold: &str, rho: f64, seed: u64) -> Measured {
    let rate = rho * f64::from(ROWS) / (HOLD_MS / 1e3);
    let duration = INCREMENTS / rate;
    let text = format!(
        "seed = {seed}\nshards = [{ROWS}]\npolicy = \"{policy}\"\nduration_s = {duration}\n\
         [hold]\n{hold}\n[arrivals]\nrate_per_s = {rate}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), &text);
    let run = &common::simulate(&scenario)[0];
    let summary = run.waits.summary();
    Measured {
        mean_ms: summary.mean_ns as f64 / 1e6,
        p99_ms: summary.p99_ns as f64 / 1e6,
    }
}

fn assert_close(what: &str, measured: f64, expected: f64, tolerance: f64) {
    let error = (measured / expected - 1.0).abs();
    assert!(
        error <= tolerance,
        "{what}: simulated {measured:.5} ms, theory {expected:.5} ms, off by {:.2}% (allowed {:.1}%)",
        error * 100.0,
        tolerance * 100.0
    );
}

fn check_mmc(rho: f64, mean_tolerance: f64, p99_tolerance: f64) {
    let measured = simulate(
        "earliest-free",
        "dist = \"exponential\"\nmean_ms = 1",
        rho,
        11,
    );
    let lambda = rho * f64::from(ROWS) / HOLD_MS; // per ms
    let mu = 1.0 / HOLD_MS;
    let mean = theory::mmc_wait_mean(ROWS, lambda, mu);
    let p99 = theory::mmc_wait_quantile(ROWS, lambda, mu, 0.99);
    assert_close(
        &format!("M/M/{ROWS} mean at ρ={rho}"),
        measured.mean_ms,
        mean,
        mean_tolerance,
    );
    assert_close(
        &format!("M/M/{ROWS} p99 at ρ={rho}"),
        measured.p99_ms,
        p99,
        p99_tolerance,
    );
}

fn check_md1(rho: f64, mean_tolerance: f64, p99_tolerance: f64) {
    let measured = simulate("random", "dist = \"constant\"\nms = 1", rho, 12);
    let lambda_per_row = rho / HOLD_MS; // per ms
    let mean = theory::md1_wait_mean(lambda_per_row, HOLD_MS);
    let p99 = theory::md1_wait_quantile(lambda_per_row, HOLD_MS, 0.99);
    assert_close(
        &format!("M/D/1 mean at ρ={rho}"),
        measured.mean_ms,
        mean,
        mean_tolerance,
    );
    assert_close(
        &format!("M/D/1 p99 at ρ={rho}"),
        measured.p99_ms,
        p99,
        p99_tolerance,
    );
}

fn check_mdc(rho: f64, seed: u64, mean_tolerance: f64, p99_tolerance: f64) {
    let measured = simulate("earliest-free", "dist = \"constant\"\nms = 1", rho, seed);
    let lambda = rho * f64::from(ROWS) / HOLD_MS; // per ms
    let exact = theory::MdcWait::new(ROWS, lambda, HOLD_MS).expect("stable");
    assert_close(
        &format!("M/D/{ROWS} mean at ρ={rho}"),
        measured.mean_ms,
        exact.mean(),
        mean_tolerance,
    );
    assert_close(
        &format!("M/D/{ROWS} p99 at ρ={rho}"),
        measured.p99_ms,
        exact.quantile(0.99),
        p99_tolerance,
    );
}

// Relative standard deviations over seeds 1–10 (2.5 M increments each), measured when these
// tests were written: M/M/4 mean 0.6% (ρ=0.5) and 1.1% (ρ=0.8), p99 0.4% and 1.1%;
// M/D/1 mean 0.4% and 0.5%, p99 0.3% and 0.7%; M/D/4 mean 0.5% and 0.8%, p99 0.3% and 1.2%.
// Tolerances are about 4σ, never below 1.5%.

#[test]
fn earliest_free_with_exponential_holds_is_erlang_c_at_half_load() {
    check_mmc(0.5, 0.025, 0.02);
}

#[test]
fn earliest_free_with_exponential_holds_is_erlang_c_at_high_load() {
    check_mmc(0.8, 0.045, 0.045);
}

#[test]
fn random_rows_with_constant_holds_are_md1_queues_at_half_load() {
    check_md1(0.5, 0.015, 0.015);
}

#[test]
fn random_rows_with_constant_holds_are_md1_queues_at_high_load() {
    check_md1(0.8, 0.02, 0.03);
}

#[test]
fn earliest_free_with_constant_holds_is_mdc_at_half_load() {
    check_mdc(0.5, 13, 0.02, 0.015);
}

#[test]
fn earliest_free_with_constant_holds_is_mdc_at_high_load() {
    check_mdc(0.8, 13, 0.035, 0.045);
}
