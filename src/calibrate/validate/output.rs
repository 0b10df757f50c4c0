//! `validation.csv` and `planner.csv`.

use super::{Tolerance, Validation, stability};

impl Validation {
    /// `planner.csv`: the planner's question, one row count a line, measured (the median of
    /// the repeats, and their p99's range: a stall in one repeat shows there) and predicted.
    pub fn planner_csv(&self) -> Vec<u8> {
        let mut out = csv::Writer::from_writer(Vec::new());
        out.write_record([
            "rows",
            "offered_per_s",
            "measured_tps",
            "measured_p99_ms",
            "measured_p99_min_ms",
            "measured_p99_max_ms",
            "predicted_p99_ms",
            "measured",
            "predicted",
        ])
        .expect("writing to memory");
        let ms = |ns: u64| format!("{:.4}", crate::time::ns_to_ms(ns));
        for point in &self.planner {
            let (low, high) = point.p99_range();
            out.write_record([
                point.load.rows.to_string(),
                format!("{:.1}", point.load.rate_per_s.unwrap_or_default()),
                format!("{:.1}", point.measured_tps),
                ms(point.measured.p99_ns),
                ms(low),
                ms(high),
                ms(point.predicted.p99_ns),
                stability(point.measured_stable).to_owned(),
                point.predicted_stability().to_owned(),
            ])
            .expect("writing to memory");
        }
        out.into_inner().expect("flushing to memory")
    }

    /// `validation.csv`: every point measured and predicted, with the errors.
    pub fn csv(&self, tolerance: &Tolerance) -> Vec<u8> {
        let mut out = csv::Writer::from_writer(Vec::new());
        out.write_record([
            "point",
            "rows",
            "clients_or_connections",
            "offered_per_s",
            "measured_tps",
            "predicted_tps",
            "tps_error",
            "measured_p50_ms",
            "predicted_p50_ms",
            "measured_p99_ms",
            "predicted_p99_ms",
            "p99_error",
            "measured",
            "predicted",
            "within_tolerance",
            "repeats",
            "measured_tps_min",
            "measured_tps_max",
            "measured_p99_min_ms",
            "measured_p99_max_ms",
            "collapsed_repeats",
            "calibrate_measured_tps",
            "drift_since_calibrate",
            "measured_steady_p99_ms",
            "steady_p99_error",
            "stability_call",
            "predicted_p99_min_ms",
            "predicted_p99_max_ms",
        ])
        .expect("writing to memory");
        let ms = |ns: u64| format!("{:.4}", crate::time::ns_to_ms(ns));
        for point in &self.points {
            out.write_record([
                point.name(self.one_row_peak),
                point.load.rows.to_string(),
                point.load.clients.to_string(),
                point
                    .load
                    .rate_per_s
                    .map_or(String::new(), |r| format!("{r:.1}")),
                format!("{:.1}", point.measured_tps),
                format!("{:.1}", point.predicted_tps),
                format!("{:.4}", point.tps_error()),
                ms(point.measured.p50_ns),
                ms(point.predicted.p50_ns),
                ms(point.measured.p99_ns),
                ms(point.predicted.p99_ns),
                point
                    .p99_error()
                    .map_or(String::new(), |e| format!("{e:.4}")),
                stability(point.measured_stable).into(),
                point.predicted_stability().into(),
                point.miss(tolerance).is_none().to_string(),
                point.repeats.len().to_string(),
                format!("{:.1}", point.tps_range().0),
                format!("{:.1}", point.tps_range().1),
                ms(point.p99_range().0),
                ms(point.p99_range().1),
                point.collapsed_repeats().to_string(),
                point
                    .calibrated_tps
                    .map_or(String::new(), |tps| format!("{tps:.1}")),
                point
                    .drift()
                    .map_or(String::new(), |drift| format!("{drift:.4}")),
                point.measured_steady_p99_ns().map_or(String::new(), ms),
                point
                    .steady_p99_error()
                    .map_or(String::new(), |e| format!("{e:.4}")),
                point.stability_call().name().into(),
                ms(point.predicted_p99_range.0),
                ms(point.predicted_p99_range.1),
            ])
            .expect("writing to memory");
        }
        out.into_inner().expect("writing to memory")
    }
}
