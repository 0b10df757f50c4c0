use super::*;

#[test]
fn nelder_mead_stops_when_it_stops_gaining() {
    // Every evaluation a little lower than the last, by `gain` of the misfit: the simplex
    // never agrees with itself, and only the budget or the stall ends the pass.
    let evaluations_until_it_ends = |gain: f64, stall_window| {
        let evaluations = std::cell::Cell::new(0);
        let cost = |_: &[f64]| {
            evaluations.set(evaluations.get() + 1);
            1.0 - gain * evaluations.get() as f64
        };
        let budget = Budget {
            evaluations: 2_000,
            stall_window,
        };
        nelder_mead(&cost, &[0.0, 0.0], 0.5, budget);
        evaluations.get()
    };
    // 0.001% of the misfit per 100 evaluations: stalled.
    assert!(evaluations_until_it_ends(1e-7, Some(100)) <= 110);
    // Without a stall window, or gaining 1% per 100, the pass spends its budget.
    assert!(evaluations_until_it_ends(1e-7, None) >= 2_000);
    assert!(evaluations_until_it_ends(1e-4, Some(100)) >= 2_000);
}

#[test]
fn nelder_mead_finds_a_quadratic_bowls_bottom() {
    let cost = |p: &[f64]| (p[0] - 1.5).powi(2) + 3.0 * (p[1] + 0.5).powi(2);
    let budget = Budget {
        evaluations: 400,
        stall_window: None,
    };
    let (best, _) = nelder_mead(&cost, &[0.0, 0.0], 0.5, budget);
    assert!(
        (best[0] - 1.5).abs() < 1e-3 && (best[1] + 0.5).abs() < 1e-3,
        "{best:?}"
    );
}

#[test]
fn a_tiny_lognormal_is_written_with_its_p99_above_its_median() {
    // A fitted overhead whose p99 is within 0.1% of its median, both below a microsecond's
    // resolution: written as equal numbers, the scenario would be refused.
    for (median, p99) in [(0.0000567, 0.0000567), (0.0000004, 0.0000004), (0.25, 0.1)] {
        let text = format!("dist = \"lognormal\"\n{}", lognormal_text(median, p99));
        let table: toml::Table = toml::from_str(&text).unwrap();
        let written = |key: &str| table[key].as_float().unwrap();
        assert!(written("median_ms") > 0.0, "{text}");
        assert!(written("p99_ms") > written("median_ms"), "{text}");
    }
    assert_eq!(
        lognormal_text(0.1, 0.5),
        "median_ms = 0.100000\np99_ms = 0.500000\n"
    );
}
