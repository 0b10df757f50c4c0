//! What a run writes and prints. Each artefact has its own pure renderer (results in, bytes
//! out); [`output::Staging`] alone decides file names and does the file I/O, writing into a
//! temporary folder that replaces the output folder only when everything is written.
//!
//! - [`summary`]: the per-shard-count figures every artefact reports;
//! - [`csv`]: `summary.csv` and `timeseries.csv`;
//! - [`events`]: `events.csv`, streamed while the engines run;
//! - [`terminal`]: the table printed after a run;
//! - [`output`]: the output folder.

pub mod chart;
pub mod csv;
pub mod events;
pub mod html;
pub mod json;
pub mod output;
pub mod summary;
pub mod terminal;

pub use summary::{Recommendation, SummaryRow, Verdict, recommend, summarize};
