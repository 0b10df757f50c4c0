//! The calibration's band judged by what the database does: a closed loop passes when the
//! range of its repeats meets the band around its prediction, and the band as a whole by
//! coverage (how many loops it met, against the share it states) and sharpness (how wide it
//! is against the database's own repeat spread). A loop measured entirely below its band is an
//! optimistic miss — the one a planner cannot forgive — and one entirely above it pessimistic.

use std::path::Path;

use super::{Point, Validation};
use crate::units::{plural, quantity};

/// The standard errors by which a band's coverage may fall short of the share it states
/// before validate fails it: a binomial tolerance, so that a band that holds what it says
/// fails about 2.5% of validations by chance.
pub const COVERAGE_TOLERANCE_SE: f64 = 2.0;

/// A calibration's `[spread]`, as validate judges it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CalibrationBand {
    /// The slow end's factor on every time.
    pub(crate) slower: f64,
    /// The fast end's factor.
    pub(crate) faster: f64,
    /// The share of measurements it is meant to hold (`None`: an old calibration's spread,
    /// which states none and is not judged as a band).
    pub(crate) coverage: Option<f64>,
}

impl CalibrationBand {
    /// The `[spread]` of the calibration file, when it has one (a file that does not parse
    /// has none: validate refuses it before it gets here).
    pub fn read(calibration: &Path) -> Option<CalibrationBand> {
        crate::scenario::include::spread_of(calibration).map(|spread| CalibrationBand {
            slower: spread.slower,
            faster: spread.faster,
            coverage: spread.coverage,
        })
    }

    /// The band around a predicted throughput: every time `slower` times as long divides it
    /// by `slower`, and `faster` by `faster`.
    pub fn around(&self, predicted_tps: f64) -> (f64, f64) {
        (predicted_tps / self.slower, predicted_tps / self.faster)
    }
}

/// Where a closed loop's measured range lies against its band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BandCall {
    /// The range meets the band.
    Covered,
    /// Measured entirely below the band: the model was faster than the database.
    Optimistic,
    /// Measured entirely above it: the model was slower.
    Pessimistic,
}

impl BandCall {
    /// Its name in `validation.csv`.
    pub fn name(self) -> &'static str {
        match self {
            BandCall::Covered => "covered",
            BandCall::Optimistic => "optimistic",
            BandCall::Pessimistic => "pessimistic",
        }
    }
}

impl Point {
    /// A closed loop's predicted throughput band (`None` for an open stream, whose
    /// throughput is its rate).
    pub fn tps_band(&self, band: &CalibrationBand) -> Option<(f64, f64)> {
        self.load
            .rate_per_s
            .is_none()
            .then(|| band.around(self.predicted_tps))
    }

    /// Where the closed loop's measured range lies against its band.
    pub fn band_call(&self, band: &CalibrationBand) -> Option<BandCall> {
        let (low, high) = self.tps_band(band)?;
        let (measured_low, measured_high) = self.tps_range();
        Some(if measured_high < low {
            BandCall::Optimistic
        } else if measured_low > high {
            BandCall::Pessimistic
        } else {
            BandCall::Covered
        })
    }

    /// Why the closed loop misses its band optimistically (measured entirely below it);
    /// `None` when it does not.
    pub fn band_miss(&self, band: &CalibrationBand) -> Option<String> {
        if self.band_call(band)? != BandCall::Optimistic {
            return None;
        }
        let (low, high) = self.tps_band(band)?;
        let (measured_low, measured_high) = self.tps_range();
        Some(format!(
            "measured {}–{}/s, entirely below the band {}–{}/s (optimistic)",
            quantity(measured_low),
            quantity(measured_high),
            quantity(low),
            quantity(high)
        ))
    }
}

/// The band judged over a validation's closed loops.
#[derive(Debug, Clone, PartialEq)]
pub struct BandVerdict {
    /// The share of measurements the band states.
    pub(crate) nominal: f64,
    /// Closed loops whose measured range met the band.
    pub(crate) covered: usize,
    /// Closed loops judged.
    pub(crate) loops: usize,
    /// The loops measured entirely below their band, named.
    pub(crate) optimistic: Vec<String>,
    /// The loops measured entirely above it, named.
    pub(crate) pessimistic: Vec<String>,
    /// The median band's width, as its high end over its low end less 1.
    pub(crate) median_width: f64,
    /// The median spread of the loops' repeats, as their fastest over their slowest less 1
    /// (`None` with one repeat).
    pub(crate) median_repeat_spread: Option<f64>,
}

impl BandVerdict {
    /// The covered share.
    pub fn coverage(&self) -> f64 {
        self.covered as f64 / self.loops.max(1) as f64
    }

    /// How far below the stated share the covered share may fall: [`COVERAGE_TOLERANCE_SE`]
    /// binomial standard errors over the loops judged.
    pub fn tolerance(&self) -> f64 {
        COVERAGE_TOLERANCE_SE
            * (self.nominal * (1.0 - self.nominal) / self.loops.max(1) as f64).sqrt()
    }

    /// Whether the band fails: its coverage short of the stated share by more than the
    /// tolerance, or any optimistic miss.
    pub fn fails(&self) -> bool {
        self.coverage() < self.nominal - self.tolerance() || !self.optimistic.is_empty()
    }

    /// The verdict in one paragraph.
    pub fn describe(&self) -> String {
        let named = |loops: &[String]| {
            if loops.is_empty() {
                "none".to_owned()
            } else {
                loops.join("; ")
            }
        };
        let sharpness = match self.median_repeat_spread {
            Some(spread) if spread > 0.0 => format!(
                "its median width {:.0}% against the repeats' median spread of {:.0}% ({:.1}× it)",
                100.0 * self.median_width,
                100.0 * spread,
                self.median_width / spread
            ),
            _ => format!("its median width {:.0}%", 100.0 * self.median_width),
        };
        format!(
            "band at {:.0}% coverage: the measured range met it at {} of {} ({:.0}%; \
             it fails below {:.0}%), {sharpness}; optimistic misses: {}; pessimistic: {}",
            100.0 * self.nominal,
            self.covered,
            plural(self.loops as u64, "closed loop"),
            100.0 * self.coverage(),
            100.0 * (self.nominal - self.tolerance()),
            named(&self.optimistic),
            named(&self.pessimistic),
        )
    }
}

impl Validation {
    /// The band a point is judged by: the calibration's, when it states a coverage and the
    /// point is a closed loop.
    pub fn judged_by_band(&self, point: &Point) -> Option<&CalibrationBand> {
        self.band
            .as_ref()
            .filter(|band| band.coverage.is_some() && point.load.rate_per_s.is_none())
    }

    /// The band judged over the closed loops (`None` without a band that states its
    /// coverage).
    pub fn band_verdict(&self) -> Option<BandVerdict> {
        let band = self.band.filter(|band| band.coverage.is_some())?;
        let closed: Vec<&Point> = self
            .points
            .iter()
            .filter(|p| p.load.rate_per_s.is_none())
            .collect();
        let calls: Vec<(&Point, BandCall)> = closed
            .iter()
            .filter_map(|p| p.band_call(&band).map(|call| (*p, call)))
            .collect();
        let named = |wanted: BandCall| -> Vec<String> {
            calls
                .iter()
                .filter(|(_, call)| *call == wanted)
                .map(|(p, _)| p.name(self.one_row_peak))
                .collect()
        };
        let widths = closed
            .iter()
            .filter_map(|p| p.tps_band(&band))
            .map(|(l, h)| h / l.max(1e-9) - 1.0);
        Some(BandVerdict {
            nominal: band.coverage?,
            covered: calls
                .iter()
                .filter(|(_, c)| *c == BandCall::Covered)
                .count(),
            loops: calls.len(),
            optimistic: named(BandCall::Optimistic),
            pessimistic: named(BandCall::Pessimistic),
            median_width: crate::stats::median(widths).unwrap_or(0.0),
            median_repeat_spread: crate::stats::median(
                closed.iter().filter_map(|p| p.tps_spread()),
            ),
        })
    }
}
