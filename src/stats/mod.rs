//! Streaming statistics: memory stays fixed however many increments are recorded.
//!
//! - [`waits`]: a wait-time histogram with exact count, mean and maximum, mergeable;
//! - [`series`]: per-window counters and wait percentiles over simulated time;
//! - [`keys`]: per-key counts and the hottest keys' waits;
//! - [`replications`]: means over replications with 95% intervals;
//! - [`median`]: the one median of the crate.

pub mod keys;
pub mod replications;
pub mod series;
pub mod waits;

pub use keys::{KeyFigures, KeyTracker};
pub use series::{WindowRow, WindowSeries};
pub use waits::{WaitStats, WaitSummary};

/// The median of `values`: the middle one of an odd count, the mean of the middle two of an
/// even one; `None` for none.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut sorted: Vec<f64> = values.into_iter().collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_median_is_the_middle_one_or_the_mean_of_the_middle_two() {
        assert_eq!(super::median([3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(super::median([4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(super::median([]), None);
    }
}
