//! Lines over shard counts from values computed per summary row: the skeleton of several charts.

use super::*;

/// Lines over shard counts from values computed per summary row.
pub(super) struct ShardLinesFigure<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) rows: &'a [SummaryRow],
    pub(super) what: &'static str,
    pub(super) y_desc: &'static str,
    pub(super) series: Vec<(String, Vec<f64>, Mark)>,
    /// A shaded range behind the lines: its name and each row's low and high value (the
    /// calibration's band), when every row has one.
    pub(super) band: Option<(String, Vec<(f64, f64)>)>,
    /// Whether the values are waits in ms (labelled as durations).
    pub(super) waits: bool,
}

/// The shade of a calibration's band.
const BAND_SHADE: RGBAColor = RGBAColor(31, 119, 180, 0.18);
figure!(ShardLinesFigure);

impl ShardLinesFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let band_values = self
            .band
            .iter()
            .flat_map(|(_, ends)| ends.iter().flat_map(|&(low, high)| [low, high]));
        let values = self
            .series
            .iter()
            .flat_map(|(_, values, _)| values.iter().copied())
            .chain(band_values);
        let y = if self.waits {
            Axis::fit_waits(values)
        } else {
            Axis::fit(values)
        };
        let mut legend = Legend::default();
        if let Some((name, _)) = &self.band {
            legend.add(name.clone(), Mark::Fill(BAND_SHADE));
        }
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
        if let Some((_, ends)) = &self.band {
            let at = |r: &SummaryRow| f64::from(r.shards()).log2();
            let upper = self
                .rows
                .iter()
                .zip(ends)
                .map(|(r, e)| (at(r), y.to_plot(e.1)));
            let lower = self
                .rows
                .iter()
                .zip(ends)
                .map(|(r, e)| (at(r), y.to_plot(e.0)));
            let outline: Vec<(f64, f64)> = upper.chain(lower.rev()).collect();
            chart.draw_series(std::iter::once(Polygon::new(outline, BAND_SHADE.filled())))?;
        }
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

/// The shaded range of `what` over the calibration's band, each row's `(low, high)` read from
/// its band by `ends`; `None` unless every row has a band.
pub(super) fn calibration_band(
    rows: &[SummaryRow],
    what: &str,
    ends: impl Fn(&crate::figures::band::Band) -> (f64, f64),
) -> Option<(String, Vec<(f64, f64)>)> {
    let bands: Vec<&crate::figures::band::Band> = rows
        .iter()
        .map(|r| r.band.as_ref())
        .collect::<Option<_>>()?;
    let name = match bands.first()?.coverage {
        Some(coverage) => format!(
            "{what} over the calibration's band ({:.0}%)",
            100.0 * coverage
        ),
        None => format!("{what} over the calibration's spread"),
    };
    Some((name, bands.into_iter().map(ends).collect()))
}
