//! The Nelder–Mead simplex search the fits use: a pass with a budget that ends early when it
//! stops gaining, and restarts from the best point while they still improve it.

/// Searches a fit may restart from its best point while they still improve it.
const MAX_RESTARTS: usize = 6;
/// The share of its misfit a pass must gain over its stall window to go on, and a restart to
/// be followed by another.
pub const STALL_GAIN: f64 = 1e-3;

/// Nelder–Mead restarted from the best point so far — a new, smaller simplex escapes a
/// collapsed one — with first-simplex steps taken in turn from `steps`, at most
/// [`MAX_RESTARTS`] times and while a restart lowers the misfit by more than [`STALL_GAIN`]
/// of itself; the best point and its misfit (a restart's lower point is kept even when it
/// gained less).
pub fn restart_while_improving(
    cost: &dyn Fn(&[f64]) -> f64,
    (mut best, mut best_cost): (Vec<f64>, f64),
    steps: &[f64],
    budget: Budget,
) -> (Vec<f64>, f64) {
    for step in steps.iter().cycle().take(MAX_RESTARTS) {
        let (next, next_cost) = nelder_mead(cost, &best, *step, budget);
        let improved = next_cost < best_cost * (1.0 - STALL_GAIN);
        if next_cost < best_cost {
            (best, best_cost) = (next, next_cost);
        }
        if !improved {
            break;
        }
    }
    (best, best_cost)
}

/// What one pass of a search may spend.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Evaluations of the misfit at the most.
    pub(crate) evaluations: usize,
    /// Evaluations over which the best misfit must fall by [`STALL_GAIN`] of itself for the
    /// pass to go on; `None`: it goes on to its end.
    pub(crate) stall_window: Option<usize>,
}

/// Minimises `cost` from `start` with the Nelder–Mead simplex (standard coefficients), the
/// first simplex `step` away along each axis; stops when `budget` is spent or stalls, or when
/// the simplex's costs agree to 1e-9. The best point and its cost.
pub fn nelder_mead(
    cost: &dyn Fn(&[f64]) -> f64,
    start: &[f64],
    step: f64,
    budget: Budget,
) -> (Vec<f64>, f64) {
    let n = start.len();
    let mut simplex: Vec<(Vec<f64>, f64)> = (0..=n)
        .map(|i| {
            let mut point = start.to_vec();
            if i > 0 {
                point[i - 1] += step;
            }
            let value = cost(&point);
            (point, value)
        })
        .collect();
    let mut evaluations = n + 1;
    // The evaluations and the best cost when the current stall window began.
    let mut window = (
        evaluations,
        simplex.iter().map(|v| v.1).fold(f64::INFINITY, f64::min),
    );
    while evaluations < budget.evaluations {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        if simplex[n].1 - simplex[0].1 < 1e-9 {
            break;
        }
        if let Some(stall_window) = budget.stall_window
            && evaluations - window.0 >= stall_window
        {
            if simplex[0].1 > window.1 * (1.0 - STALL_GAIN) {
                break;
            }
            window = (evaluations, simplex[0].1);
        }
        evaluations += simplex_step(cost, &mut simplex);
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex.swap_remove(0)
}

/// One Nelder–Mead step on a simplex sorted by cost (best first): reflect the worst vertex
/// through the others' centroid, then expand, accept, contract or shrink. Returns the
/// evaluations of `cost` it made.
fn simplex_step(cost: &dyn Fn(&[f64]) -> f64, simplex: &mut [(Vec<f64>, f64)]) -> usize {
    let n = simplex.len() - 1;
    let centroid: Vec<f64> = (0..n)
        .map(|d| simplex[..n].iter().map(|(p, _)| p[d]).sum::<f64>() / n as f64)
        .collect();
    let worst = simplex[n].0.clone();
    let along = |t: f64| -> Vec<f64> {
        centroid
            .iter()
            .zip(&worst)
            .map(|(c, w)| c + t * (c - w))
            .collect()
    };
    let reflected = along(1.0);
    let reflected_cost = cost(&reflected);
    if reflected_cost < simplex[0].1 {
        let expanded = along(2.0);
        let expanded_cost = cost(&expanded);
        simplex[n] = if expanded_cost < reflected_cost {
            (expanded, expanded_cost)
        } else {
            (reflected, reflected_cost)
        };
        return 2;
    }
    if reflected_cost < simplex[n - 1].1 {
        simplex[n] = (reflected, reflected_cost);
        return 1;
    }
    let contracted = along(if reflected_cost < simplex[n].1 {
        0.5
    } else {
        -0.5
    });
    let contracted_cost = cost(&contracted);
    if contracted_cost < simplex[n].1.min(reflected_cost) {
        simplex[n] = (contracted, contracted_cost);
        return 2;
    }
    let best = simplex[0].0.clone();
    for vertex in simplex.iter_mut().skip(1) {
        vertex.0 = best
            .iter()
            .zip(&vertex.0)
            .map(|(b, v)| b + 0.5 * (v - b))
            .collect();
        vertex.1 = cost(&vertex.0);
    }
    2 + n
}

#[cfg(test)]
mod tests {
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
}
