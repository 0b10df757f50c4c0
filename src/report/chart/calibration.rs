//! The calibration chart: every calibration run measured against the fitted model.

use super::*;

/// The calibration chart: measured and fitted throughput against client count, per row count.
pub fn calibration_chart(calibration: &crate::calibrate::Calibration) -> Result<Chart, String> {
    register_bundled_font();
    render("calibration", &CalibrationFigure { calibration })
}

struct CalibrationFigure<'a> {
    calibration: &'a crate::calibrate::Calibration,
}
figure!(CalibrationFigure);

impl CalibrationFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        // The closed loops: the open stream has no client count.
        let runs: Vec<&crate::calibrate::CalibrationRun> = self
            .calibration
            .runs
            .iter()
            .filter(|r| r.load.rate_per_s.is_none())
            .collect();
        let mut row_counts: Vec<u32> = runs.iter().map(|r| r.load.rows).collect();
        row_counts.sort_unstable();
        row_counts.dedup();
        let y = Axis::fit(
            runs.iter()
                .copied()
                .chain(&self.calibration.repeats)
                .flat_map(|r| [r.measured.tps, r.fitted.tps])
                .chain(std::iter::once(0.0)),
        );
        let mut legend = Legend::default();
        let series: Vec<(u32, RGBColor)> = row_counts
            .iter()
            .enumerate()
            .map(|(i, &rows)| (rows, PALETTE[i % PALETTE.len()]))
            .collect();
        for &(rows, colour) in &series {
            let noun = if rows == 1 { "row" } else { "rows" };
            legend.add(format!("{rows} {noun}: measured"), Mark::Line(colour));
            legend.add(format!("{rows} {noun}: fitted"), Mark::Dashed(colour));
        }
        // Each loop's second measurement, after the open streams: a ring in its series'
        // colour, its distance from the first how far the database moved by itself.
        let repeats: Vec<(&crate::calibrate::CalibrationRun, RGBColor)> = self
            .calibration
            .repeats
            .iter()
            .map(|run| {
                let colour = series
                    .iter()
                    .find(|&&(rows, _)| rows == run.load.rows)
                    .map_or(PALETTE[0], |&(_, colour)| colour);
                (run, colour)
            })
            .collect();
        if let Some(&(_, colour)) = repeats.first() {
            legend.add(
                "each loop measured again, minutes later".to_owned(),
                Mark::Ring(colour),
            );
        }
        let (plot_area, legend_area) = legend.split(root);
        let clients: Vec<u32> = runs.iter().map(|r| r.load.clients).collect();
        let caption = format!(
            "calibration ({}): throughput against clients",
            self.calibration.durability
        );
        let mut chart = log2_plot(
            &plot_area,
            caption,
            (shard_range(&clients), "clients (closed loop, log scale)"),
            (y, "updates per second"),
        )?;
        for &(rows, colour) in &series {
            let of = |value: &dyn Fn(&crate::calibrate::CalibrationRun) -> f64| -> Vec<(f64, f64)> {
                runs.iter()
                    .filter(|r| r.load.rows == rows)
                    .map(|r| (f64::from(r.load.clients).log2(), y.to_plot(value(r))))
                    .collect()
            };
            draw_marked(&mut chart, of(&|r| r.measured.tps), Mark::Line(colour))?;
            draw_marked(&mut chart, of(&|r| r.fitted.tps), Mark::Dashed(colour))?;
        }
        for (run, colour) in repeats {
            let at = (
                f64::from(run.load.clients).log2(),
                y.to_plot(run.measured.tps),
            );
            chart.draw_series(std::iter::once(Circle::new(at, 7, colour.stroke_width(2))))?;
        }
        legend.draw(&legend_area)
    }
}
