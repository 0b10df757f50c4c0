//! The `rows` chart (with `[adaptive]`): the adaptive run's rows over time.

use super::*;

/// The adaptive run's rows over time: the busiest key's row count, and with many keys the
/// rows over all keys on the right axis (`growth.csv` has every key's growths).
pub(super) struct RowsFigure<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) run: &'a ShardRun,
}
figure!(RowsFigure);

impl RowsFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let window_s = crate::time::ns_to_s(self.scenario.window());
        let end_s = self.scenario.duration_s();
        let steps = |value: fn(&WindowRow) -> f64| -> Vec<(f64, f64)> {
            thin(
                self.run
                    .windows
                    .iter()
                    .enumerate()
                    .flat_map(|(i, w)| {
                        let (start, end) = (i as f64 * window_s, (i + 1) as f64 * window_s);
                        [(start, value(w)), (end, value(w))]
                    })
                    .collect(),
            )
        };
        let hot = steps(|w| f64::from(w.hot_key_rows));
        let many_keys = self.scenario.key_count() > 1;
        let total = if many_keys {
            steps(|w| f64::from(w.rows))
        } else {
            Vec::new()
        };
        let hot_top = hot.iter().map(|p| p.1).fold(1.0, f64::max) * 1.15;
        let total_top = total.iter().map(|p| p.1).fold(1.0, f64::max) * 1.15;
        let mut legend = Legend::default();
        legend.add("busiest key's rows (window end)", Mark::Line(PALETTE[4]));
        if many_keys {
            legend.add("rows over all keys (right axis)", Mark::Dashed(PALETTE[7]));
        }
        let (plot_area, legend_area) = legend.split(root);
        let caption = title(self.scenario, "adaptive rows over time");
        let mut chart = build(&plot_area, caption, 0.0..end_s, 0.0..hot_top, many_keys)?
            .set_secondary_coord(0.0..end_s, 0.0..total_top);
        draw_mesh(
            &mut chart,
            "time (s)",
            "rows of the busiest key",
            &|v| number(*v),
            &|v| number(*v),
        )?;
        if many_keys {
            chart
                .configure_secondary_axes()
                .y_desc("rows over all keys")
                .y_label_formatter(&|v| number(*v))
                .label_style((FONT, 18))
                .axis_desc_style((FONT, 22))
                .draw()?;
            chart.draw_secondary_series(DashedLineSeries::new(
                total,
                12,
                8,
                PALETTE[7].stroke_width(2),
            ))?;
        }
        draw_time_line(&mut chart, hot, PALETTE[4].stroke_width(3))?;
        legend.draw(&legend_area)
    }
}
