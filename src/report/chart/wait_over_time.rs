//! The `wait_over_time` chart: each window's p99 wait over time, one line per shard count.

use super::*;

pub(super) struct WaitOverTimeFigure<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) runs: &'a [ShardRun],
}
figure!(WaitOverTimeFigure);

impl WaitOverTimeFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let window_s = crate::time::ns_to_s(self.scenario.window());
        let lines = window_lines(self.runs, |i, w| {
            w.wait_p99_ns()
                .map(|ns| (i as f64 * window_s, crate::time::ns_to_ms(ns)))
        });
        let target_ms = self.scenario.slo().p99_ns.map(crate::time::ns_to_ms);
        let y = Axis::fit_waits(
            lines
                .iter()
                .flat_map(|(_, points)| points.iter().map(|p| p.1))
                .chain(target_ms),
        );
        let mut legend = Legend::default();
        for (index, (shards, points)) in lines.iter().enumerate() {
            legend.add(series_label(shards, points), Mark::Line(colour(index)));
        }
        if let Some(target) = target_ms {
            legend.add(
                format!("target p99 {}", units::duration((target * 1e6) as u64)),
                Mark::Dashed(BLACK),
            );
        }
        let (plot_area, legend_area) = legend.split(root);
        let end_s = self.scenario.duration_s();
        let caption = title(self.scenario, "p99 wait per window over time");
        let mut chart = build(&plot_area, caption, 0.0..end_s, y.range(), false)?;
        let x_desc = format!("time (s); windows of {} s", number(window_s));
        let y_desc = format!("p99 wait of the window's likes{}", y.note());
        draw_mesh(&mut chart, &x_desc, &y_desc, &|v| number(*v), &|v| {
            y.label(*v)
        })?;
        if let Some(target) = target_ms {
            draw_target(&mut chart, 0.0..end_s, y.to_plot(target))?;
        }
        for (index, (_, points)) in lines.iter().enumerate() {
            draw_axis_line(&mut chart, y, points, colour(index).stroke_width(3))?;
        }
        legend.draw(&legend_area)
    }
}
