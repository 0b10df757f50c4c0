//! Exact queueing results the simulator is checked against, and that planners can compare
//! with: M/M/c (earliest-free with exponential holds) through Erlang C, and M/D/1 (one row
//! under random slot choice with constant holds). Rates and times share one unit.

/// Erlang's C formula: the probability that an arrival waits in an M/M/c queue with `servers`
/// servers and offered load `load = λ/μ` (< servers). Computed through the Erlang B recursion,
/// which is numerically stable for any number of servers (Iversen, *Teletraffic Engineering
/// and Network Planning*, 2015, §4.3 and §9.2).
pub fn erlang_c(servers: u32, load: f64) -> f64 {
    assert!(
        load >= 0.0 && load < f64::from(servers),
        "a stable queue needs load < servers"
    );
    let mut blocking = 1.0;
    for k in 1..=servers {
        blocking = load * blocking / (f64::from(k) + load * blocking);
    }
    let c = f64::from(servers);
    c * blocking / (c - load * (1.0 - blocking))
}

/// M/M/c: mean wait before service, `C / (cμ − λ)`.
pub fn mmc_wait_mean(servers: u32, arrival_rate: f64, service_rate: f64) -> f64 {
    let c = erlang_c(servers, arrival_rate / service_rate);
    c / (f64::from(servers) * service_rate - arrival_rate)
}

/// M/M/c: the `q`-quantile of the wait. `P(W > t) = C·exp(−(cμ − λ)t)`, so the quantile is
/// 0 when `C ≤ 1 − q` and `ln(C / (1 − q)) / (cμ − λ)` otherwise.
pub fn mmc_wait_quantile(servers: u32, arrival_rate: f64, service_rate: f64, q: f64) -> f64 {
    let c = erlang_c(servers, arrival_rate / service_rate);
    if c <= 1.0 - q {
        return 0.0;
    }
    (c / (1.0 - q)).ln() / (f64::from(servers) * service_rate - arrival_rate)
}

/// M/D/1: mean wait, `ρD / (2(1 − ρ))` with `ρ = λD` (Pollaczek–Khinchine).
pub fn md1_wait_mean(arrival_rate: f64, service_time: f64) -> f64 {
    let rho = arrival_rate * service_time;
    assert!((0.0..1.0).contains(&rho), "a stable queue needs ρ < 1");
    rho * service_time / (2.0 * (1.0 - rho))
}

/// Largest `λt` at which Erlang's alternating sum is used; past it the tail is exponential.
const MD1_EXACT_LIMIT: f64 = 20.0;

/// M/D/1: `P(W ≤ t)`. Up to `λt = 20` by Erlang's exact formula
/// `(1 − ρ) Σ_{k=0}^{⌊t/D⌋} (λ(kD − t))^k / k! · e^{−λ(kD − t)}`
/// (Iversen, *Teletraffic Engineering and Network Planning*, 2015, §13.5.1), whose terms
/// alternate in sign and lose precision beyond that; past it by the exact asymptotic tail
/// `P(W > t) ∝ e^{−θt}`, where θ > 0 solves `λ(e^{θD} − 1) = θ` (the Cramér–Lundberg root of
/// M/G/1), joined continuously at `λt = 20`, where `P(W > t)` is already below 1e-3 for ρ ≤ 0.8.
pub fn md1_wait_cdf(arrival_rate: f64, service_time: f64, t: f64) -> f64 {
    let rho = arrival_rate * service_time;
    assert!((0.0..1.0).contains(&rho), "a stable queue needs ρ < 1");
    if t < 0.0 {
        return 0.0;
    }
    let switch = MD1_EXACT_LIMIT / arrival_rate;
    if t <= switch {
        return md1_cdf_erlang(arrival_rate, service_time, t);
    }
    let tail_at_switch = 1.0 - md1_cdf_erlang(arrival_rate, service_time, switch);
    let theta = md1_decay_rate(arrival_rate, service_time);
    1.0 - tail_at_switch * (-theta * (t - switch)).exp()
}

fn md1_cdf_erlang(arrival_rate: f64, service_time: f64, t: f64) -> f64 {
    let rho = arrival_rate * service_time;
    let mut sum = 0.0;
    let mut log_factorial = 0.0;
    let mut k = 0u32;
    while f64::from(k) * service_time <= t {
        if k > 0 {
            log_factorial += f64::from(k).ln();
        }
        let x = arrival_rate * (f64::from(k) * service_time - t);
        let term = if x == 0.0 {
            if k == 0 { 1.0 } else { 0.0 }
        } else {
            let magnitude = (f64::from(k) * x.abs().ln() - log_factorial - x).exp();
            if k % 2 == 1 { -magnitude } else { magnitude }
        };
        sum += term;
        k += 1;
    }
    ((1.0 - rho) * sum).clamp(0.0, 1.0)
}

/// The positive root θ of `λ(e^{θD} − 1) = θ`, by bisection.
fn md1_decay_rate(arrival_rate: f64, service_time: f64) -> f64 {
    let f = |theta: f64| arrival_rate * ((theta * service_time).exp() - 1.0) - theta;
    let mut high = 1.0 / service_time;
    while f(high) <= 0.0 {
        high *= 2.0;
    }
    // f < 0 just above 0 (slope λD − 1 < 0) and f(high) > 0.
    let mut low = high * 1e-9;
    for _ in 0..200 {
        let mid = (low + high) / 2.0;
        if f(mid) < 0.0 {
            low = mid;
        } else {
            high = mid;
        }
    }
    high
}

/// M/D/1: the `q`-quantile of the wait, by bisection on [`md1_wait_cdf`].
pub fn md1_wait_quantile(arrival_rate: f64, service_time: f64, q: f64) -> f64 {
    if md1_wait_cdf(arrival_rate, service_time, 0.0) >= q {
        return 0.0;
    }
    let mut high = service_time;
    while md1_wait_cdf(arrival_rate, service_time, high) < q {
        high *= 2.0;
    }
    let mut low = 0.0;
    for _ in 0..100 {
        let mid = (low + high) / 2.0;
        if md1_wait_cdf(arrival_rate, service_time, mid) < q {
            low = mid;
        } else {
            high = mid;
        }
    }
    high
}

/// M/M/c+D: the probability that an arrival abandons — would wait longer than its
/// deterministic patience `patience` — in an M/M/c queue whose impatient customers leave
/// without being served (a lock or statement timeout that cancels the update). Any load is
/// allowed: abandonment keeps the queue stable.
///
/// Derivation (level crossing on the virtual waiting time V, as for M/M/c with impatience in
/// Baccelli & Hébuterne, 1981): with `a = λ/μ`, `θ = cμ − λ` and `p = P(c − 1 busy, V = 0)`,
/// states with fewer than c busy servers follow `p_n = p_0 aⁿ/n!`; V has density
/// `λ p e^{−θx}` below the patience and `λ p e^{λτ} e^{−cμx}` above it; PASTA gives
/// `P(abandon) = P(V > τ) = (λ / cμ) p e^{−θτ}`, and the probabilities sum to one.
pub fn mmc_deterministic_patience_abandonment(
    servers: u32,
    arrival_rate: f64,
    service_rate: f64,
    patience: f64,
) -> f64 {
    let c = f64::from(servers);
    let load = arrival_rate / service_rate;
    let theta = c * service_rate - arrival_rate;
    // Unnormalised: p_0 = 1.
    let mut term = 1.0;
    let mut idle_states = 1.0;
    for n in 1..servers {
        term *= load / f64::from(n);
        idle_states += term;
    }
    let p = term; // a^(c−1)/(c−1)!
    let below = if theta.abs() < 1e-12 {
        arrival_rate * p * patience
    } else {
        arrival_rate * p * (1.0 - (-theta * patience).exp()) / theta
    };
    let above = arrival_rate / (c * service_rate) * p * (-theta * patience).exp();
    above / (idle_states + below + above)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_c_matches_closed_forms() {
        // M/M/1: C = ρ. M/M/2: C = 2ρ² / (1 + ρ).
        assert!((erlang_c(1, 0.7) - 0.7).abs() < 1e-12);
        let rho: f64 = 0.5;
        assert!((erlang_c(2, 2.0 * rho) - 2.0 * rho * rho / (1.0 + rho)).abs() < 1e-12);
        // Textbook value: c = 10, A = 8 → C ≈ 0.4092 (Iversen, Table 9.x style check).
        assert!((erlang_c(10, 8.0) - 0.409_2).abs() < 1e-3);
    }

    #[test]
    fn md1_cdf_starts_at_one_minus_rho_and_integrates_to_the_mean() {
        let (lambda, d) = (0.8, 1.0);
        assert!((md1_wait_cdf(lambda, d, 0.0) - 0.2).abs() < 1e-12);
        // E[W] = ∫ (1 − F(t)) dt, by the midpoint rule over [0, 80] (the tail past 80 is < 1e-9).
        let step = 1e-3;
        let mean: f64 = (0..80_000)
            .map(|i| 1.0 - md1_wait_cdf(lambda, d, (f64::from(i) + 0.5) * step))
            .sum::<f64>()
            * step;
        assert!((mean - md1_wait_mean(lambda, d)).abs() < 1e-3, "{mean}");
        // Continuous where the exact sum hands over to the exponential tail (t = 25).
        let (before, after) = (
            md1_wait_cdf(lambda, d, 25.0 - 1e-9),
            md1_wait_cdf(lambda, d, 25.0 + 1e-9),
        );
        assert!((after - before).abs() < 1e-9);
    }

    #[test]
    fn patience_limits_are_erlang_b_and_no_abandonment() {
        // Zero patience: whoever finds every server busy leaves — the Erlang B loss system.
        let (c, lambda, mu) = (4, 3.2, 1.0);
        let a: f64 = lambda / mu;
        let terms: Vec<f64> = (0..=4)
            .map(|n| a.powi(n) / (1..=n).map(f64::from).product::<f64>())
            .collect();
        let erlang_b = terms[4] / terms.iter().sum::<f64>();
        let at_zero = mmc_deterministic_patience_abandonment(c, lambda, mu, 0.0);
        assert!((at_zero - erlang_b).abs() < 1e-12, "{at_zero} {erlang_b}");
        // Patience far beyond any wait: nobody leaves.
        assert!(mmc_deterministic_patience_abandonment(c, lambda, mu, 100.0) < 1e-12);
        // Overloaded: abandonment absorbs the excess, so at long patience it tends to 1 − cμ/λ.
        let over = mmc_deterministic_patience_abandonment(2, 3.0, 1.0, 50.0);
        assert!((over - (1.0 - 2.0 / 3.0)).abs() < 1e-6, "{over}");
    }

    #[test]
    fn md1_is_below_mm1_for_the_same_load() {
        // Deterministic service waits less than exponential at the same load.
        let md1 = md1_wait_quantile(0.8, 1.0, 0.99);
        let mm1 = mmc_wait_quantile(1, 0.8, 1.0, 0.99);
        assert!(md1 > 0.0 && md1 < mm1, "{md1} {mm1}");
    }
}
