//! Lines over shard counts from values computed per summary row: the skeleton of several charts.

use super::*;

/// Lines over shard counts from values computed per summary row.
pub(super) struct ShardLinesFigure<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) rows: &'a [SummaryRow],
    pub(super) what: &'static str,
    pub(super) y_desc: &'static str,
    pub(super) series: Vec<(String, Vec<f64>, Mark)>,
    /// Whether the values are waits in ms (labelled as durations).
    pub(super) waits: bool,
}
figure!(ShardLinesFigure);

impl ShardLinesFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let values = self
            .series
            .iter()
            .flat_map(|(_, values, _)| values.iter().copied());
        let y = if self.waits {
            Axis::fit_waits(values)
        } else {
            Axis::fit(values)
        };
        let mut legend = Legend::default();
        for (name, _, mark) in &self.series {
            legend.add(name.clone(), *mark);
        }
        let (plot_area, legend_area) = legend.split(root);
        let shards: Vec<u32> = self.rows.iter().map(|r| r.shards()).collect();
        let caption = title(self.scenario, self.what);
        let mut chart = build(&plot_area, caption, shard_range(&shards), y.range(), false)?;
        let y_desc = format!("{}{}", self.y_desc, y.note());
        draw_mesh(
            &mut chart,
            "shards (rows per key, log scale)",
            &y_desc,
            &|v| shard_label(*v),
            &|v| y.label(*v),
        )?;
        for (_, values, mark) in &self.series {
            let points: Vec<(f64, f64)> = self
                .rows
                .iter()
                .zip(values)
                .filter(|(_, v)| v.is_finite())
                .map(|(r, &v)| (f64::from(r.shards()).log2(), y.to_plot(v)))
                .collect();
            if self.rows.len() <= ANNOTATE_UP_TO {
                annotate(&mut chart, &points, *mark, &|v| y.label_value(v))?;
            }
            draw_marked(&mut chart, points, *mark)?;
        }
        legend.draw(&legend_area)
    }
}
