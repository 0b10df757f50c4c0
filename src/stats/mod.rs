//! Streaming statistics: memory stays fixed however many increments are recorded.
//!
//! - [`waits`]: a wait-time histogram with exact count, mean and maximum, mergeable;
//! - [`series`]: per-window counters and wait percentiles over simulated time.

pub mod series;
pub mod waits;

pub use series::{WindowRow, WindowSeries};
pub use waits::{WaitStats, WaitSummary};
