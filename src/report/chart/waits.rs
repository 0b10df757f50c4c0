//! The `waits` chart: wait p50, p99 and p99.9 against shard count, overloaded counts shaded, the target dashed.

use super::*;

pub(super) struct WaitsFigure<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) rows: &'a [SummaryRow],
    /// The adaptive run, drawn as a level across the chart.
    pub(super) adaptive: Option<&'a SummaryRow>,
    /// The recommended shard count, marked by a vertical line.
    pub(super) recommended: Option<u32>,
}
figure!(WaitsFigure);

/// The red shading of an overloaded shard count.
const OVERLOADED_BAND: RGBAColor = RGBAColor(214, 39, 40, 0.12);

/// The recommended shard count's line.
const RECOMMENDED: RGBColor = RGBColor(26, 127, 55);

/// Drawn in this order, so the p99 and p50 lines stay visible where an overloaded shard
/// count's p99.9 equals its p99.
const SERIES: [Series<u64>; 3] = [
    ("wait p99.9", |r| r.waits.p999_ns, Mark::Dashed(PALETTE[3])),
    ("wait p99", |r| r.waits.p99_ns, Mark::Line(PALETTE[1])),
    ("wait p50", |r| r.waits.p50_ns, Mark::Line(PALETTE[0])),
];

fn ms(ns: u64) -> f64 {
    crate::time::ns_to_ms(ns)
}

impl WaitsFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let target_ms = self.scenario.slo().p99_ns.map(ms);
        let adaptive_p99 = self.adaptive.map(|r| ms(r.waits.p99_ns));
        let y = Axis::fit_waits(
            self.rows
                .iter()
                .flat_map(|r| SERIES.iter().map(move |s| ms((s.1)(r))))
                .chain(target_ms)
                .chain(adaptive_p99),
        );
        let overloaded: Vec<f64> = self
            .rows
            .iter()
            .filter(|r| !r.verdict().can_serve())
            .map(|r| f64::from(r.shards()).log2())
            .collect();
        let legend = self.legend(!overloaded.is_empty(), target_ms, adaptive_p99);
        let (plot_area, legend_area) = legend.split(root);
        let shards: Vec<u32> = self.rows.iter().map(|r| r.shards()).collect();
        let x = shard_range(&shards);
        let caption = title(self.scenario, "wait against shard count");
        let mut chart = log2_plot(
            &plot_area,
            caption,
            (x.clone(), SHARDS_AXIS),
            (y, "wait for the row"),
        )?;
        self.draw_guides(&mut chart, &overloaded, y)?;
        if let Some(target) = target_ms {
            draw_target(&mut chart, x.clone(), y.to_plot(target))?;
        }
        if let Some(p99) = adaptive_p99 {
            let level = y.to_plot(p99);
            chart.draw_series(DashedLineSeries::new(
                vec![(x.start, level), (x.end, level)],
                12,
                8,
                PALETTE[4].stroke_width(3),
            ))?;
        }
        for (_, value, mark) in SERIES {
            let points = shard_points(self.rows, |r| ms(value(r)), y);
            if self.rows.len() <= ANNOTATE_UP_TO {
                annotate(&mut chart, &points, mark, &|v| y.label_value(v))?;
            }
            draw_marked(&mut chart, points, mark)?;
        }
        legend.draw(&legend_area)
    }

    /// The key: the three percentiles, then whichever of the shading, the target, the
    /// recommendation and the adaptive level the chart shows.
    fn legend(
        &self,
        overloaded: bool,
        target_ms: Option<f64>,
        adaptive_p99: Option<f64>,
    ) -> Legend {
        let mut legend = Legend::default();
        for (name, _, mark) in SERIES.iter().rev() {
            legend.add(*name, *mark);
        }
        if overloaded {
            legend.add("overloaded or saturated", Mark::Fill(OVERLOADED_BAND));
        }
        if let Some(target) = target_ms {
            legend.add(
                format!("target p99 {}", units::duration((target * 1e6) as u64)),
                Mark::Dashed(BLACK),
            );
        }
        if let Some(n) = self.recommended {
            legend.add(
                format!("recommended: {}", units::plural(u64::from(n), "shard")),
                Mark::Line(RECOMMENDED),
            );
        }
        if let (Some(p99), Some(row)) = (adaptive_p99, self.adaptive) {
            legend.add(
                format!(
                    "adaptive rows: p99 {}, up to {} rows",
                    units::duration((p99 * 1e6) as u64),
                    row.max_key_rows
                ),
                Mark::Dashed(PALETTE[4]),
            );
        }
        legend
    }

    /// The shading of the overloaded shard counts (at `overloaded`, log2 of each) and the
    /// recommended count's vertical line, behind the percentiles.
    fn draw_guides<DB: DrawingBackend>(
        &self,
        chart: &mut Plot<'_, DB>,
        overloaded: &[f64],
        y: Axis,
    ) -> DrawResult<DB> {
        let y_range = y.range();
        chart.draw_series(overloaded.iter().map(|&at| {
            Rectangle::new(
                [(at - 0.3, y_range.start), (at + 0.3, y_range.end)],
                OVERLOADED_BAND.filled(),
            )
        }))?;
        if let Some(n) = self.recommended {
            let at = f64::from(n).log2();
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(at, y_range.start), (at, y_range.end)],
                RECOMMENDED.stroke_width(3),
            )))?;
        }
        Ok(())
    }
}
