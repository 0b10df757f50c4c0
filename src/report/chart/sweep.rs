//! The sweep charts: a heat map of the recommended shard count over two swept fields, or a line per policy over one.

use super::*;
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::RangedCoordi32;

/// The sweep's charts (see [`report::grid`](crate::report::grid)): per policy, a heat map of the recommended shard
/// count over two swept fields (`sweep`, or `sweep-<policy>` with several policies); over one
/// swept field, one chart with a line per policy. None for three or more fields (the terminal's
/// list and `sweep.csv` hold them).
pub fn sweep_charts(
    fields: &[String],
    rows: &[crate::report::grid::SweepRow],
) -> Result<Vec<Chart>, String> {
    register_bundled_font();
    let policies = crate::report::grid::policies(rows);
    match fields.len() {
        1 => Ok(vec![render("sweep", &SweepLineFigure { fields, rows })?]),
        2 => policies
            .iter()
            .map(|policy| {
                let mut chart = render(
                    "sweep",
                    &HeatFigure {
                        fields,
                        rows,
                        policy,
                    },
                )?;
                if policies.len() > 1 {
                    chart.name = format!("sweep-{policy}");
                }
                Ok(chart)
            })
            .collect(),
        _ => Ok(Vec::new()),
    }
}

/// A heat map of one policy's recommended shard count over two swept fields.
struct HeatFigure<'a> {
    fields: &'a [String],
    rows: &'a [crate::report::grid::SweepRow],
    policy: &'a str,
}
figure!(HeatFigure);

impl HeatFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let of: Vec<&crate::report::grid::SweepRow> = self
            .rows
            .iter()
            .filter(|r| r.policy == self.policy)
            .collect();
        let across = crate::report::grid::distinct(of.iter().map(|r| r.values[1].as_str()));
        let down = crate::report::grid::distinct(of.iter().map(|r| r.values[0].as_str()));
        let counts: Vec<u32> = of.iter().filter_map(|r| r.recommended).collect();
        let low = counts.iter().copied().min().unwrap_or(1).max(1);
        let high = counts.iter().copied().max().unwrap_or(1).max(low);
        let share = |n: u32| {
            if high > low {
                (f64::from(n).log2() - f64::from(low).log2())
                    / (f64::from(high).log2() - f64::from(low).log2())
            } else {
                0.5
            }
        };
        let legend = heat_key(&counts, of.iter().any(|r| r.recommended.is_none()), &share);
        let (plot_area, legend_area) = legend.split(root);
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(
                format!("shards recommended (policy {})", self.policy),
                (FONT, 30),
            )
            .margin(20)
            .x_label_area_size(64)
            .y_label_area_size(100)
            // A segmented range `0..n` has n + 1 segments, one per integer of `0..=n`.
            .build_cartesian_2d(
                (0..across.len() as i32 - 1).into_segmented(),
                (0..down.len() as i32 - 1).into_segmented(),
            )?;
        let label = |values: &[String], v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) => values.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(field_title(&self.fields[1]))
            .y_desc(field_title(&self.fields[0]))
            .x_label_formatter(&|v| label(&across, v))
            .y_label_formatter(&|v| label(&down, v))
            .x_labels(across.len() + 1)
            .y_labels(down.len() + 1)
            .label_style((FONT, 18))
            .axis_desc_style((FONT, 22))
            .draw()?;
        for (x, across_value) in across.iter().enumerate() {
            for (y, down_value) in down.iter().enumerate() {
                let Some(row) = of
                    .iter()
                    .find(|r| r.values[0] == *down_value && r.values[1] == *across_value)
                else {
                    continue;
                };
                let (fill, text) = match row.recommended {
                    Some(n) => (heat_colour(share(n)), n.to_string()),
                    None => (NONE_GREY, "none".to_owned()),
                };
                draw_cell(&mut chart, (x as i32, y as i32), fill, text)?;
            }
        }
        legend.draw(&legend_area)
    }
}

/// The grey of a configuration where no simulated shard count meets the target.
const NONE_GREY: RGBColor = RGBColor(220, 220, 220);

/// The heat map's colour key: every recommended count's colour (at its `share` of the scale),
/// and the grey of none when `unmet`.
fn heat_key(counts: &[u32], unmet: bool, share: &dyn Fn(u32) -> f64) -> Legend {
    let mut legend = Legend::default();
    let mut shown: Vec<u32> = counts.to_vec();
    shown.sort_unstable();
    shown.dedup();
    for &n in &shown {
        legend.add(
            format!("{n} {}", if n == 1 { "shard" } else { "shards" }),
            Mark::Fill(heat_colour(share(n)).mix(1.0)),
        );
    }
    if unmet {
        legend.add("none meets the target", Mark::Fill(NONE_GREY.mix(1.0)));
    }
    legend
}

/// The heat map's segmented plot.
type HeatPlot<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<SegmentedCoord<RangedCoordi32>, SegmentedCoord<RangedCoordi32>>,
>;

/// One cell of the heat map: its colour and, centred in ink that reads on it, its text.
fn draw_cell<DB: DrawingBackend>(
    chart: &mut HeatPlot<'_, DB>,
    (x, y): (i32, i32),
    fill: RGBColor,
    text: String,
) -> DrawResult<DB> {
    chart.draw_series(std::iter::once(Rectangle::new(
        [
            (SegmentValue::Exact(x), SegmentValue::Exact(y)),
            (SegmentValue::Exact(x + 1), SegmentValue::Exact(y + 1)),
        ],
        fill.filled(),
    )))?;
    let ink = if luminance(fill) < 0.5 { WHITE } else { BLACK };
    let style = TextStyle::from((FONT, 22).into_font()).color(&ink).pos(
        plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Center,
        ),
    );
    chart.draw_series(std::iter::once(Text::new(
        text,
        (SegmentValue::CenterOf(x), SegmentValue::CenterOf(y)),
        style,
    )))?;
    Ok(())
}

/// A swept field's axis title in words, with its path: `commit hold, ms (hold.ms)`.
fn field_title(field: &str) -> String {
    let words = match field {
        "hold.ms" | "hold.mean_ms" => "mean hold of a row, ms",
        "hold.median_ms" => "median hold of a row, ms",
        "arrivals.scale" => "traffic, × the scenario's",
        "arrivals.rate_per_s" => "likes per second",
        "machine.cores" => "server cores",
        "machine.cpu.ms" => "CPU per update, ms",
        "wal.flush_ms" => "log flush, ms",
        "client.timeout_ms" => "client timeout, ms",
        "client.retries" => "retries per like",
        "pool.size" => "connections in the pool",
        "likes_table.partition_by" => "likes table partitioned by",
        "likes_table.partitions" => "likes table partitions",
        "policy" => "row choice",
        _ => return field.to_owned(),
    };
    format!("{words} ({field})")
}

/// A sequential colour from pale yellow (`share` 0: the fewest shards) to dark blue (1: the
/// most), through green (viridis-like, readable in grey).
fn heat_colour(share: f64) -> RGBColor {
    const STOPS: [(f64, (f64, f64, f64)); 4] = [
        (0.0, (253.0, 231.0, 37.0)),
        (0.35, (94.0, 201.0, 98.0)),
        (0.7, (33.0, 145.0, 140.0)),
        (1.0, (59.0, 82.0, 139.0)),
    ];
    let share = share.clamp(0.0, 1.0);
    let upper = STOPS
        .iter()
        .position(|&(at, _)| at >= share)
        .unwrap_or(3)
        .max(1);
    let (a_at, a) = STOPS[upper - 1];
    let (b_at, b) = STOPS[upper];
    let t = (share - a_at) / (b_at - a_at);
    let mix = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn luminance(colour: RGBColor) -> f64 {
    (0.299 * f64::from(colour.0) + 0.587 * f64::from(colour.1) + 0.114 * f64::from(colour.2))
        / 255.0
}

/// The recommended shard count against one swept field, one line per policy.
struct SweepLineFigure<'a> {
    fields: &'a [String],
    rows: &'a [crate::report::grid::SweepRow],
}
figure!(SweepLineFigure);

impl SweepLineFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let values = crate::report::grid::distinct(self.rows.iter().map(|r| r.values[0].as_str()));
        let policies = crate::report::grid::policies(self.rows);
        let mut legend = Legend::default();
        for (i, policy) in policies.iter().enumerate() {
            legend.add(
                format!("policy {policy}"),
                Mark::Line(PALETTE[i % PALETTE.len()]),
            );
        }
        if self.rows.iter().any(|r| r.recommended.is_none()) {
            legend.add(
                "no simulated shard count meets the target (in the policy's colour)".to_owned(),
                Mark::Cross(BLACK),
            );
        }
        let (plot_area, legend_area) = legend.split(root);
        let counts: Vec<u32> = self.rows.iter().filter_map(|r| r.recommended).collect();
        // Powers of two one step around the recommendations, and a row named "none" above
        // them for configurations where no simulated count meets the target.
        let lowest = counts.iter().copied().min().unwrap_or(1).max(1);
        let highest = counts.iter().copied().max().unwrap_or(1).max(lowest);
        let bottom = (f64::from(lowest).log2().floor() - 1.0).max(0.0);
        let top = f64::from(highest).log2().ceil() + 1.0;
        let unmet_any = self.rows.iter().any(|r| r.recommended.is_none());
        let none_row = top + 1.0;
        let y = (bottom - 0.35)..(if unmet_any { none_row } else { top } + 0.35);
        let y_label = |v: f64| {
            if (v - v.round()).abs() > 1e-6 {
                String::new()
            } else if unmet_any && (v - none_row).abs() < 1e-6 {
                "none".to_owned()
            } else {
                shard_label(v)
            }
        };
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(
                format!("shards recommended against {}", self.fields[0]),
                (FONT, 30),
            )
            .margin(20)
            .x_label_area_size(64)
            .y_label_area_size(100)
            .build_cartesian_2d((0..values.len() as i32 - 1).into_segmented(), y)?;
        chart
            .configure_mesh()
            .x_desc(field_title(&self.fields[0]))
            .y_desc("shards recommended (log scale)")
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => values.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .y_label_formatter(&|v| y_label(*v))
            .y_labels(((none_row - bottom) as usize + 2) * 2)
            .x_labels(values.len() + 1)
            .label_style((FONT, 18))
            .axis_desc_style((FONT, 22))
            .bold_line_style(RGBColor(210, 210, 210))
            .light_line_style(WHITE)
            .draw()?;
        for (i, policy) in policies.iter().enumerate() {
            self.draw_policy(&mut chart, &values, (i, policies.len()), policy, none_row)?;
        }
        legend.draw(&legend_area)
    }

    /// Policy number `i` of `count`: its recommended counts over the swept `values`, and a
    /// cross on the `none_row` where none of its counts meets the target.
    fn draw_policy<DB: DrawingBackend>(
        &self,
        chart: &mut SweepPlot<'_, DB>,
        values: &[String],
        (i, count): (usize, usize),
        policy: &str,
        none_row: f64,
    ) -> DrawResult<DB> {
        {
            let colour = PALETTE[i % PALETTE.len()];
            let points: Vec<(SegmentValue<i32>, f64)> = values
                .iter()
                .enumerate()
                .filter_map(|(x, value)| {
                    self.rows
                        .iter()
                        .find(|r| r.policy == *policy && r.values[0] == *value)
                        .and_then(|r| r.recommended)
                        .map(|n| (SegmentValue::CenterOf(x as i32), f64::from(n).log2()))
                })
                .collect();
            // Earlier policies are drawn wider, so a line that another covers still shows.
            let wider = (count - 1 - i) as u32;
            chart.draw_series(LineSeries::new(
                points.clone(),
                colour.stroke_width(3 + 4 * wider),
            ))?;
            chart.draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 6 + 4 * wider, colour.filled())),
            )?;
            // A configuration where no simulated shard count meets the target: a cross on the
            // "none" row in the policy's colour (stacked when several policies miss), told once
            // in the legend: a label at every cross runs into its neighbours'.
            let top = none_row - 0.12 * i as f64;
            for (x, value) in values.iter().enumerate() {
                let unmet = self.rows.iter().any(|r| {
                    r.policy == *policy && r.values[0] == *value && r.recommended.is_none()
                });
                if unmet {
                    let at = (SegmentValue::CenterOf(x as i32), top);
                    chart.draw_series(std::iter::once(
                        EmptyElement::at(at) + Cross::new((0, 0), 9, colour.stroke_width(3)),
                    ))?;
                }
            }
        }
        Ok(())
    }
}

/// The sweep line chart's plot: swept values across (segmented), log2 of shards up.
type SweepPlot<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<SegmentedCoord<RangedCoordi32>, RangedCoordf64>>;
