//! The `at_risk` chart (with `[batching]`): likes held in app-server memory over time.

use super::*;

/// Likes held in batching servers' memory over time (the same for every shard count).
pub(super) struct AtRiskFigure<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) runs: &'a [ShardRun],
}
figure!(AtRiskFigure);

impl AtRiskFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let window_s = crate::time::ns_to_s(self.scenario.window());
        let end_s = self.scenario.duration_s();
        let lines = window_lines(&self.runs[..self.runs.len().min(1)], |i, w| {
            Some(((i + 1) as f64 * window_s, w.at_risk as f64))
        });
        let y = Axis::fit(
            lines
                .iter()
                .flat_map(|(_, points)| points.iter().map(|p| p.1)),
        );
        let crashes: Vec<f64> = self
            .scenario
            .features()
            .batching
            .iter()
            .flat_map(|b| b.crashes.iter().map(|c| crate::time::ns_to_s(c.at)))
            .collect();
        let mut legend = Legend::default();
        legend.add(
            "likes held in memory, unflushed (window end)",
            Mark::Line(PALETTE[0]),
        );
        if !crashes.is_empty() {
            legend.add("server crash", Mark::Dashed(PALETTE[3]));
        }
        let (plot_area, legend_area) = legend.split(root);
        let caption = title(self.scenario, "likes at risk in app-server memory");
        let mut chart = build(&plot_area, caption, 0.0..end_s, y.range(), false)?;
        let y_desc = format!("likes at risk{}", y.note());
        draw_mesh(&mut chart, "time (s)", &y_desc, &|v| number(*v), &|v| {
            y.label(*v)
        })?;
        draw_instants(&mut chart, &crashes, end_s, y.range(), (10, 6, 2))?;
        for (_, points) in &lines {
            let plotted = points.iter().map(|&(t, v)| (t, y.to_plot(v)));
            draw_time_line(&mut chart, plotted.collect(), PALETTE[0].stroke_width(2))?;
        }
        legend.draw(&legend_area)
    }
}

/// The most vertical lines a chart marks instants with: about one per two pixels of its plot.
const MOST_INSTANTS: f64 = 500.0;

/// `instants` (s, ascending) on a time axis `end_s` long, those closer than the chart can tell
/// apart merged into one: a hundred thousand crashes draw a few hundred lines, not a file of
/// a gigabyte.
fn distinct_instants(instants: &[f64], end_s: f64) -> Vec<f64> {
    let apart = end_s.max(f64::MIN_POSITIVE) / MOST_INSTANTS;
    let mut kept: Vec<f64> = Vec::new();
    for &at in instants {
        if kept.last().is_none_or(|&last| at - last >= apart) {
            kept.push(at);
        }
    }
    kept
}

/// Marks each of `instants` (s, ascending) on a time axis `end_s` long with a dashed vertical
/// line across `y` — (dash, gap, width); instants closer than the chart can tell apart share
/// one.
pub(super) fn draw_instants<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    instants: &[f64],
    end_s: f64,
    y: std::ops::Range<f64>,
    (dash, gap, width): (u32, u32, u32),
) -> DrawResult<DB> {
    for at in distinct_instants(instants, end_s) {
        chart.draw_series(DashedLineSeries::new(
            vec![(at, y.start), (at, y.end)],
            dash,
            gap,
            PALETTE[3].stroke_width(width),
        ))?;
    }
    Ok(())
}
