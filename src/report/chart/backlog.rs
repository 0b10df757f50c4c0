//! The `backlog` chart: the most updates waiting in each window, over time, beside the offered rate.

use super::*;

pub(super) struct BacklogFigure<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) runs: &'a [ShardRun],
}
figure!(BacklogFigure);

impl BacklogFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let window_s = crate::time::ns_to_s(self.scenario.window());
        let end_s = self.scenario.duration_s();
        // Each window's most increments waiting at once (the summary's backlog max is the
        // largest of these).
        let lines = window_lines(self.runs, |i, w| {
            Some((i as f64 * window_s, w.backlog_peak as f64))
        });
        let y = Axis::fit(
            lines
                .iter()
                .flat_map(|(_, points)| points.iter().map(|p| p.1)),
        );
        // A closed loop offers nothing of its own: its clients send as fast as answers come.
        let closed = matches!(
            self.scenario.arrivals(),
            crate::scenario::ArrivalPlan::Closed(_)
        );
        let offered = if closed {
            Vec::new()
        } else {
            offered_likes(self.scenario, self.runs)
        };
        let rate_top = offered.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
        let grey = RGBColor(120, 120, 120);
        let mut legend = Legend::default();
        if !closed {
            legend.add(
                "likes offered per second (right axis)",
                Mark::Fill(grey.mix(0.3)),
            );
        }
        let range = y.range();
        let plotted: Vec<Vec<f64>> = lines
            .iter()
            .map(|(_, points)| points.iter().map(|p| y.to_plot(p.1)).collect())
            .collect();
        for (index, (shards, points)) in lines.iter().enumerate() {
            let label = match hidden_under(&plotted, index, (range.end - range.start) / 150.0)
                .map(|over| &lines[over].0)
            {
                Some(over) => format!("{} (under {over})", series_label(shards, points)),
                None => series_label(shards, points),
            };
            legend.add(label, Mark::Line(colour(index)));
        }
        let (plot_area, legend_area) = legend.split(root);
        let caption = title(
            self.scenario,
            "backlog over time (most waiting in each window)",
        );
        let mut chart = build(&plot_area, caption, 0.0..end_s, y.range(), true)?
            .set_secondary_coord(0.0..end_s, 0.0..rate_top);
        let y_desc = format!("backlog (increments waiting{})", y.note());
        draw_mesh(&mut chart, "time (s)", &y_desc, &|v| number(*v), &|v| {
            y.label(*v)
        })?;
        if !closed {
            chart
                .configure_secondary_axes()
                .y_desc("likes offered (per second)")
                .y_label_formatter(&|v| number(*v))
                .label_style((FONT, 18))
                .axis_desc_style((FONT, 22))
                .draw()?;
            chart.draw_secondary_series(
                AreaSeries::new(offered, 0.0, grey.mix(0.15)).border_style(grey.mix(0.6)),
            )?;
        }
        for (index, (_, points)) in lines.iter().enumerate() {
            draw_axis_line(&mut chart, y, points, colour(index).stroke_width(3))?;
        }
        legend.draw(&legend_area)
    }
}

/// The likes offered per second over time: the scenario's rate profile (retries are not likes),
/// or, for a trace, its arrivals per window as the run with the most rows saw them.
fn offered_likes(scenario: &Scenario, runs: &[ShardRun]) -> Vec<(f64, f64)> {
    match &scenario.arrivals() {
        crate::scenario::ArrivalPlan::Poisson { segments } => {
            let mut start = 0.0;
            let mut points = Vec::with_capacity(segments.len() * 2);
            for segment in segments {
                let end = crate::time::ns_to_s(segment.end);
                points.push((start, segment.rate_per_s));
                points.push((end, segment.rate_per_s));
                start = end;
            }
            points
        }
        // What the clients sent, as the run with the most rows saw it.
        crate::scenario::ArrivalPlan::Trace(_) | crate::scenario::ArrivalPlan::Closed(_) => {
            let window_s = crate::time::ns_to_s(scenario.window());
            runs.iter()
                .filter(|run| !run.adaptive)
                .max_by_key(|run| run.shards)
                .map_or_else(Vec::new, |run| {
                    thin(
                        run.windows
                            .iter()
                            .enumerate()
                            .map(|(i, w)| (i as f64 * window_s, w.arrivals as f64 / window_s))
                            .collect(),
                    )
                })
        }
    }
}
