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

/// The exact waiting-time distribution of the M/D/c queue (Poisson arrivals at rate `λ`,
/// constant service `D`, `c` servers, first come first served) — `earliest-free` with a
/// constant hold.
///
/// Crommelin's method (Crommelin 1932; Franx 2001): the customers present `D` apart satisfy
/// `N(s) = max(N(s − D) − c, 0) + A(s − D, s]`, since everyone in service at `s − D` has left by
/// `s` and nobody who starts later has. So `X = max(N − c, 0)` at arbitrary times is the
/// stationary state of the Lindley chain `X' = max(X + A − c, 0)` with `A ~ Poisson(λD)`, and a
/// tagged arrival at `t` has started by `t + kD + y` (`0 ≤ y < D`) exactly when at most
/// `(k + 1)c − 1` of the customers ahead of it remain in the system then:
///
/// `P(W ≤ kD + y) = Σₓ πₓ · P(Poisson(λ(D − y)) ≤ (k + 1)c − 1 − x)`.
///
/// `π` is computed exactly (to rounding) by Grassmann–Taksar–Heyman elimination of the chain
/// truncated where its geometric tail is below 10⁻²⁰, in the chain's band (a step goes down by
/// at most `c` and up by at most the largest Poisson count that matters), so the cost is
/// `states × c × band` and does not grow with the closeness of `ρ` to one beyond the number of
/// states the tail needs.
#[derive(Debug, Clone)]
pub struct MdcWait {
    servers: u32,
    arrival_rate: f64,
    service_time: f64,
    /// Stationary distribution of `X`, truncated where its tail is negligible.
    excess: Vec<f64>,
}

/// The most arithmetic [`MdcWait::new`] does (states × band × servers) before declining.
const MDC_MAX_WORK: f64 = 4e8;
/// The most band entries [`MdcWait::new`] stores before declining (8 bytes each).
const MDC_MAX_ENTRIES: f64 = 2e7;

impl MdcWait {
    /// The distribution for `servers` servers, arrivals at `arrival_rate` and service time
    /// `service_time` (any time unit), or `None` when the queue is unstable (`λD ≥ c`) or too
    /// large or too close to saturation to compute in a fraction of a second.
    pub fn new(servers: u32, arrival_rate: f64, service_time: f64) -> Option<MdcWait> {
        let a = arrival_rate * service_time;
        let c = f64::from(servers);
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if servers == 0 || !positive(a) || !positive(service_time) || a >= c {
            return None;
        }
        let pmf = poisson_pmf(a);
        let up = pmf.len() - 1;
        let down = servers as usize;
        // π decays like z^−x where z > 1 solves e^{a(z−1)} = z^c.
        let tail_states = (46.0 / tail_decay_rate(a, c)?.ln()).ceil();
        let states_f = tail_states + c + up as f64 + 1.0;
        let width = (down + up + 1) as f64;
        if states_f * width > MDC_MAX_ENTRIES || states_f * width * c > MDC_MAX_WORK {
            return None;
        }
        let states = states_f as usize;
        let mut band = Band::new(states, down, up);
        for x in 0..states {
            for (arrivals, &p) in pmf.iter().enumerate() {
                let to = (x + arrivals).saturating_sub(down).min(states - 1);
                if to != x {
                    *band.at(x, to) += p;
                }
            }
        }
        Some(MdcWait {
            servers,
            arrival_rate,
            service_time,
            excess: band.stationary(),
        })
    }

    /// `P(W ≤ t)`.
    pub fn cdf(&self, t: f64) -> f64 {
        if t < 0.0 {
            return 0.0;
        }
        let d = self.service_time;
        let k = (t / d).floor();
        let y = (t - k * d).clamp(0.0, d);
        let levels = (k as usize + 1) * self.servers as usize;
        let cdf = poisson_cdf_table(self.arrival_rate * (d - y), levels);
        let total: f64 = self
            .excess
            .iter()
            .take(levels)
            .enumerate()
            .map(|(x, &mass)| mass * cdf[levels - 1 - x])
            .sum();
        total.min(1.0)
    }

    /// The `q`-quantile of the wait (0 when at least `q` of the arrivals do not wait).
    pub fn quantile(&self, q: f64) -> f64 {
        if self.cdf(0.0) >= q {
            return 0.0;
        }
        let mut high = self.service_time;
        while self.cdf(high) < q {
            high *= 2.0;
        }
        let mut low = 0.0;
        for _ in 0..100 {
            let mid = (low + high) / 2.0;
            if self.cdf(mid) < q {
                low = mid;
            } else {
                high = mid;
            }
        }
        high
    }

    /// The mean wait by Little's law: `X` at an arbitrary time is the number waiting, so
    /// `E[W] = E[X] / λ`.
    pub fn mean(&self) -> f64 {
        let waiting: f64 = self
            .excess
            .iter()
            .enumerate()
            .map(|(x, &p)| x as f64 * p)
            .sum();
        waiting / self.arrival_rate
    }
}

/// The root `z > 1` of `a(z − 1) = c·ln z` (`a < c`), the geometric decay of the M/D/c
/// chain's stationary tail, by bisection on the convex function's one positive crossing.
fn tail_decay_rate(a: f64, c: f64) -> Option<f64> {
    let f = |z: f64| a * (z - 1.0) - c * z.ln();
    let mut high = 2.0;
    while f(high) < 0.0 {
        high *= 2.0;
        if high > 1e300 {
            return None;
        }
    }
    let mut low = 1.0;
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if f(mid) < 0.0 {
            low = mid;
        } else {
            high = mid;
        }
    }
    (low > 1.0).then_some(low)
}

/// A transition matrix whose row `x` has entries only in columns `x − down ..= x + up`.
struct Band {
    states: usize,
    down: usize,
    up: usize,
    entries: Vec<f64>,
}

impl Band {
    fn new(states: usize, down: usize, up: usize) -> Band {
        Band {
            states,
            down,
            up,
            entries: vec![0.0; states * (down + up + 1)],
        }
    }

    fn at(&mut self, from: usize, to: usize) -> &mut f64 {
        debug_assert!(to + self.down >= from && to <= from + self.up);
        &mut self.entries[from * (self.down + self.up + 1) + to + self.down - from]
    }

    fn get(&self, from: usize, to: usize) -> f64 {
        self.entries[from * (self.down + self.up + 1) + to + self.down - from]
    }

    /// The stationary distribution by GTH elimination (Grassmann, Taksar and Heyman 1985):
    /// censor the chain on ever fewer states, using only sums of positive numbers, then
    /// rebuild π from state 0 up. The band is closed under the elimination.
    fn stationary(mut self) -> Vec<f64> {
        let mut leave = vec![0.0; self.states];
        for n in (1..self.states).rev() {
            let lower = n.saturating_sub(self.down);
            let out: f64 = (lower..n).map(|j| self.get(n, j)).sum();
            leave[n] = out;
            for i in n.saturating_sub(self.up)..n {
                let into = self.get(i, n);
                if into == 0.0 || out == 0.0 {
                    continue;
                }
                let share = into / out;
                for j in lower..n {
                    if j != i {
                        let add = share * self.get(n, j);
                        *self.at(i, j) += add;
                    }
                }
            }
        }
        let mut pi = vec![0.0; self.states];
        pi[0] = 1.0;
        for n in 1..self.states {
            let inflow: f64 = (n.saturating_sub(self.up)..n)
                .map(|i| pi[i] * self.get(i, n))
                .sum();
            pi[n] = if leave[n] > 0.0 {
                inflow / leave[n]
            } else {
                0.0
            };
        }
        let total: f64 = pi.iter().sum();
        pi.iter_mut().for_each(|p| *p /= total);
        while pi.len() > 1 && *pi.last().expect("non-empty") < 1e-22 {
            pi.pop();
        }
        pi
    }
}

/// The Poisson(`mean`) probabilities of 0, 1, … up to where the tail is below 10⁻²⁰.
fn poisson_pmf(mean: f64) -> Vec<f64> {
    let top = (mean + 12.0 * mean.sqrt() + 25.0).ceil() as usize;
    (0..=top)
        .map(|k| (k as f64 * mean.ln() - mean - ln_factorial(k)).exp())
        .collect()
}

/// `P(Poisson(mean) ≤ k)` for `k` in `0..len`.
fn poisson_cdf_table(mean: f64, len: usize) -> Vec<f64> {
    let mut total = 0.0;
    (0..len)
        .map(|k| {
            if mean > 0.0 {
                total += (k as f64 * mean.ln() - mean - ln_factorial(k)).exp();
            } else if k == 0 {
                total = 1.0;
            }
            total.min(1.0)
        })
        .collect()
}

fn ln_factorial(k: usize) -> f64 {
    statrs::function::gamma::ln_gamma(k as f64 + 1.0)
}

/// Crommelin's series for the M/D/c mean wait (an independent check of [`MdcWait::mean`]):
/// `E[W]/D = Σₖ₌₁^∞ e^{−kλD} (Σ_{j ≥ kc} (kλD)ʲ/j! − (c/λD) Σ_{j ≥ kc+1} (kλD)ʲ/j!)`.
pub fn mdc_wait_mean_series(servers: u32, arrival_rate: f64, service_time: f64) -> f64 {
    let a = arrival_rate * service_time;
    let c = f64::from(servers);
    let mut total = 0.0;
    for k in 1..100_000u64 {
        let mean = k as f64 * a;
        let kc = k * u64::from(servers);
        // e^{−ka} Σ_{j ≥ kc} (ka)^j/j! = P(Poisson(ka) ≥ kc).
        let at_least = |n: u64| {
            if n == 0 {
                1.0
            } else {
                statrs::function::gamma::gamma_lr(n as f64, mean)
            }
        };
        let term = at_least(kc) - c / a * at_least(kc + 1);
        total += term;
        if term.abs() < 1e-16 {
            break;
        }
    }
    total * service_time
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

    #[test]
    fn mdc_with_one_server_is_md1() {
        for rho in [0.3, 0.7, 0.95, 0.99] {
            let exact = MdcWait::new(1, rho, 1.0).expect("stable");
            let mean = md1_wait_mean(rho, 1.0);
            assert!(
                (exact.mean() / mean - 1.0).abs() < 1e-9,
                "ρ {rho}: {} {mean}",
                exact.mean()
            );
            // Erlang's exact sum where it is accurate (λt ≤ 20) ...
            for t in [0.0, 0.5, 1.0, 2.5, 7.0] {
                let (ours, erlang) = (exact.cdf(t), md1_cdf_erlang(rho, 1.0, t));
                assert!(
                    (ours - erlang).abs() < 1e-10,
                    "ρ {rho} t {t}: {ours} {erlang}"
                );
            }
            // ... and the quantiles, which past λt = 20 use the asymptotic tail.
            for q in [0.5, 0.99, 0.999] {
                let (ours, md1) = (exact.quantile(q), md1_wait_quantile(rho, 1.0, q));
                assert!(
                    (ours - md1).abs() < 1e-4 * md1.max(1.0),
                    "ρ {rho} q {q}: {ours} {md1}"
                );
            }
        }
    }

    #[test]
    fn mdc_is_more_accurate_than_erlangs_alternating_sum() {
        // Erlang's sum for ρ = 0.7, t = 19 D in 60-digit arithmetic (mpmath): f64 loses the
        // eighth digit to cancellation there; Crommelin's sum of positive terms does not.
        let exact = 0.999_997_867_809_297_8;
        let ours = MdcWait::new(1, 0.7, 1.0).unwrap().cdf(19.0);
        assert!((ours - exact).abs() < 1e-14, "{ours}");
        assert!((md1_cdf_erlang(0.7, 1.0, 19.0) - exact).abs() > 1e-9);
    }

    #[test]
    fn mdc_mean_matches_crommelins_series() {
        for (c, rho) in [(2, 0.5), (4, 0.8), (8, 0.62), (16, 0.9), (64, 0.95)] {
            let lambda = rho * f64::from(c);
            let exact = MdcWait::new(c, lambda, 1.0).expect("stable").mean();
            let series = mdc_wait_mean_series(c, lambda, 1.0);
            assert!(
                (exact / series - 1.0).abs() < 1e-6,
                "c {c} ρ {rho}: {exact} {series}"
            );
        }
    }

    #[test]
    fn mdc_waits_less_than_mmc_and_refuses_an_unstable_queue() {
        let (c, lambda) = (8, 6.4);
        let mdc = MdcWait::new(c, lambda, 1.0).unwrap();
        // No wait with probability P(N < c), below M/M/c's waiting probability's complement.
        assert!(mdc.cdf(0.0) > 1.0 - erlang_c(c, lambda));
        assert!(mdc.mean() < mmc_wait_mean(c, lambda, 1.0));
        assert!(mdc.quantile(0.99) < mmc_wait_quantile(c, lambda, 1.0, 0.99));
        assert!(MdcWait::new(4, 4.0, 1.0).is_none());
        assert!(MdcWait::new(4, 0.0, 1.0).is_none());
    }
}
