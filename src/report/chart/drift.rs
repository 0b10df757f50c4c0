//! The `drift` chart (with `[likes_table]` in separate transactions): stored likes the count misses.

use super::*;

/// A line's (time, value) points.
type Points = Vec<(f64, f64)>;

/// Stored likes the count misses over time, per shard count (shard counts whose lines
/// coincide share one), with the reconciliation's pass times.
pub(super) struct DriftFigure<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) runs: &'a [ShardRun],
}
figure!(DriftFigure);

impl DriftFigure<'_> {
    /// One line per distinct drift series, labelled with every shard count that has it.
    fn lines(&self) -> Vec<(String, Vec<(f64, f64)>)> {
        let window_s = crate::time::ns_to_s(self.scenario.window());
        // Each distinct line, with the names of the runs that draw it.
        let mut lines: Vec<(Vec<String>, Points)> = Vec::new();
        for (name, points) in window_lines(self.runs, |i, w| {
            Some(((i + 1) as f64 * window_s, f64::from(w.drift)))
        }) {
            let values: Vec<f64> = points.iter().map(|p| p.1).collect();
            match lines.iter_mut().find(|(_, other)| {
                coincide(&other.iter().map(|p| p.1).collect::<Vec<_>>(), &values)
            }) {
                Some((names, _)) => names.push(name),
                None => lines.push((vec![name], points)),
            }
        }
        lines
            .into_iter()
            .map(|(names, points)| (names.join(", "), points))
            .collect()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let end_s = self.scenario.duration_s();
        let lines = self.lines();
        let y = Axis::fit(
            lines
                .iter()
                .flat_map(|(_, points)| points.iter().map(|p| p.1)),
        );
        let passes: Vec<f64> = self
            .scenario
            .likes()
            .as_ref()
            .and_then(|l| l.reconcile)
            .map(|r| {
                let every = crate::time::ns_to_s(r.every);
                (1..)
                    .map(|k| k as f64 * every)
                    .take_while(|&t| t < end_s)
                    .take(200)
                    .collect()
            })
            .unwrap_or_default();
        let mut legend = Legend::default();
        for (i, (name, points)) in lines.iter().enumerate() {
            legend.add(
                series_label(name, points),
                Mark::Line(PALETTE[i % PALETTE.len()]),
            );
        }
        if !passes.is_empty() {
            legend.add("reconciliation pass due", Mark::Dashed(PALETTE[3]));
        }
        let (plot_area, legend_area) = legend.split(root);
        let caption = title(self.scenario, "count drift: stored likes not counted");
        let mut chart = build(&plot_area, caption, 0.0..end_s, y.range(), false)?;
        let y_desc = format!("likes missing from the count{}", y.note());
        draw_mesh(&mut chart, "time (s)", &y_desc, &|v| number(*v), &|v| {
            y.label(*v)
        })?;
        draw_instants(&mut chart, &passes, end_s, y.range(), (3, 5, 1))?;
        for (i, (_, points)) in lines.iter().enumerate() {
            let plotted = points.iter().map(|&(t, v)| (t, y.to_plot(v)));
            draw_time_line(
                &mut chart,
                plotted.collect(),
                PALETTE[i % PALETTE.len()].stroke_width(2),
            )?;
        }
        legend.draw(&legend_area)
    }
}
