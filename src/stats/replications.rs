//! Estimates over independent replications: a statistic's mean and the half-width of its
//! 95% confidence interval (Student's t), and every wait percentile estimated so.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::WaitSummary;
use crate::time::SimTime;

/// The mean of `value` over `items` (the replications' runs, say): the one mean over
/// replications every figure uses.
pub fn mean_by<T>(items: &[T], value: impl Fn(&T) -> f64) -> f64 {
    items.iter().map(value).sum::<f64>() / items.len() as f64
}

/// A sample's mean and the half-width of its 95% confidence interval (`None` for one value).
pub fn mean_and_half_width(values: &[f64]) -> (f64, Option<f64>) {
    mean_and_half_width_at(values, 0.95)
}

/// A sample's mean and the half-width of its two-sided confidence interval at `confidence`
/// (Student's t; `None` for one value).
pub fn mean_and_half_width_at(values: &[f64], confidence: f64) -> (f64, Option<f64>) {
    let n = values.len() as f64;
    let mean = mean_by(values, |&v| v);
    if values.len() < 2 {
        return (mean, None);
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let t = StudentsT::new(0.0, 1.0, n - 1.0)
        .expect("at least one degree of freedom")
        .inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    (mean, Some(t * (variance / n).sqrt()))
}

/// Means of each wait statistic over replications, with 95% interval bounds (lower bounds
/// clamped at 0) when there are two or more.
pub fn wait_estimates(
    summaries: &[WaitSummary],
) -> (WaitSummary, Option<WaitSummary>, Option<WaitSummary>) {
    type Field = fn(&mut WaitSummary) -> &mut SimTime;
    let fields: [Field; 7] = [
        |w| &mut w.count,
        |w| &mut w.mean_ns,
        |w| &mut w.p50_ns,
        |w| &mut w.p90_ns,
        |w| &mut w.p99_ns,
        |w| &mut w.p999_ns,
        |w| &mut w.max_ns,
    ];
    let (mut mean, mut lo, mut hi) = (
        WaitSummary::default(),
        WaitSummary::default(),
        WaitSummary::default(),
    );
    let mut has_interval = false;
    for field in fields {
        let values: Vec<f64> = summaries
            .iter()
            .map(|summary| *field(&mut summary.clone()) as f64)
            .collect();
        let (centre, half_width) = mean_and_half_width(&values);
        *field(&mut mean) = centre.round() as SimTime;
        if let Some(half_width) = half_width {
            has_interval = true;
            *field(&mut lo) = (centre - half_width).max(0.0).round() as SimTime;
            *field(&mut hi) = (centre + half_width).round() as SimTime;
        }
    }
    if has_interval {
        (mean, Some(lo), Some(hi))
    } else {
        (mean, None, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_use_student_t() {
        // Four values with mean 10 and sample sd 2: half-width t(0.975, 3) × 2 / √4 = 3.182.
        let (mean, half) = mean_and_half_width(&[7.0, 9.0, 11.0, 13.0].map(|v| v * 1.0));
        let sd = (20.0f64 / 3.0).sqrt();
        assert_eq!(mean, 10.0);
        assert!(
            (half.unwrap() - 3.182_446 * sd / 2.0).abs() < 1e-4,
            "{half:?}"
        );
        assert_eq!(mean_and_half_width(&[5.0]), (5.0, None));
    }
}
