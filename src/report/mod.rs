//! What a run writes and prints, rendered from [`crate::figures`]. Each artefact has its own pure renderer (results in, bytes
//! out), listed once in [`artefacts::RUN_ARTEFACTS`]; [`crate::output::Staging`] does the
//! file I/O, writing into a temporary folder that replaces the output folder only when
//! everything is written.
//!
//! - [`artefacts`]: the files of `shardsim run`, each saying when it applies;
//! - [`reading`]: a sweep's reading in plain sentences;
//! - [`extended`]: the tables of timeouts, retries, batching, the pool, the machine and likes;
//! - [`csv`]: `summary.csv` and `timeseries.csv`;
//! - [`chart`]: the PNG and SVG charts;
//! - [`html`]: the report page, `report.html`;
//! - [`json`]: the summary for scripts, `--format json`;
//! - [`table`]: the summary table's cells for people, shared by the terminal and the page;
//! - [`units`] (the ground floor's, re-exported): human units, thousands separators and plurals;
//! - [`terminal`]: the table printed after a run;
//! - [`validation`]: the tables and CSV files of `calibrate` and `validate`;
//! - [`plan`]: `plan.csv`, `plan.json` and the plan's text;
//! - [`check`]: the diff table of a check.

pub mod artefacts;
pub mod chart;
pub mod check;
pub mod csv;
pub mod extended;
pub mod grid;
pub mod headline;
pub mod html;
pub mod json;
pub mod plan;
pub mod reading;
pub mod regions;
pub mod table;
pub mod terminal;
pub mod validation;
pub use crate::units;

/// A calibration's band in words: "the calibration's band at 90% coverage (every time of its
/// machine ×0.95 to ×1.13)", or, from a calibration of the old kind that states no coverage,
/// its spread said to be that.
pub fn band_name(faster: f64, slower: f64, coverage: Option<f64>) -> String {
    match coverage {
        Some(coverage) => format!(
            "the calibration's band at {:.0}% coverage (every time of its machine ×{faster:.2} \
             to ×{slower:.2})",
            100.0 * coverage
        ),
        None => format!(
            "the calibration's spread (every time of its machine ×{faster:.2} to ×{slower:.2}; \
             of the old kind, the drift between two of its runs with no stated coverage: \
             calibrate again for a band)"
        ),
    }
}
