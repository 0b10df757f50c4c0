//! Streaming statistics: memory stays fixed however many increments are recorded.
//!
//! - [`waits`]: a wait-time histogram with exact count, mean and maximum, mergeable;
//! - [`series`]: per-window counters and wait percentiles over simulated time;
//! - [`keys`]: per-key counts and the hottest keys' waits;
//! - [`replications`]: means over replications with 95% intervals.

pub mod keys;
pub mod replications;
pub mod series;
pub mod waits;

pub use keys::{KeyFigures, KeyTracker};
pub use series::{WindowRow, WindowSeries};
pub use waits::{WaitStats, WaitSummary};
