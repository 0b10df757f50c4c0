//! The validation chart: throughput and p99 predicted against measured.

use super::*;

/// The ring around a validation point whose stability (stable or collapsed) the model got wrong.
const WRONG: RGBColor = RGBColor(214, 39, 40);

/// The validation chart: predicted against measured throughput for every point, and the p99
/// response of the points the tolerance judges inside a band of ±`p99_rel`.
pub fn validation_chart(
    validation: &crate::calibrate::validate::Validation,
    p99_rel: f64,
) -> Result<Chart, String> {
    register_bundled_font();
    render(
        "validation",
        &ValidationFigure {
            validation,
            p99_rel,
        },
    )
}

/// The band of the p99 tolerance on the validation chart.
const TOLERANCE_BAND: RGBColor = RGBColor(222, 235, 247);

/// Labels across one of the validation chart's two panels (durations such as `1.25 ms` take
/// about 70 pixels each).
const HALF_PANEL_LABELS: usize = 5;

struct ValidationFigure<'a> {
    validation: &'a crate::calibrate::validate::Validation,
    /// The p99 tolerance, relative (`--p99-rel`).
    p99_rel: f64,
}
figure!(ValidationFigure);

impl ValidationFigure<'_> {
    /// Two panels under one title: throughput predicted against measured (every point), and
    /// the p99 response predicted against measured where the tolerance judges it (points the
    /// database and the model both keep up with), inside the tolerance's band.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let mut legend = Legend::default();
        legend.add("closed loops of 32 clients", Mark::Line(PALETTE[0]));
        legend.add(
            "open streams (60% and 90% of one row)",
            Mark::Line(PALETTE[1]),
        );
        legend.add("model = measurement", Mark::Dashed(PALETTE[7]));
        legend.add(
            "kept up (measured: median of the repeats)",
            Mark::Dot(PALETTE[7]),
        );
        legend.add("the repeats' range", Mark::Line(PALETTE[7]));
        legend.add(
            "p99: repeats' range × the model's over 5 runs",
            Mark::Box(PALETTE[7]),
        );
        legend.add("fell behind (measured)", Mark::Cross(PALETTE[7]));
        legend.add("the model's stability differs", Mark::Ring(WRONG));
        legend.add(
            format!(
                "p99 within ±{:.0}% (a box touching it passes)",
                100.0 * self.p99_rel
            ),
            Mark::Fill(TOLERANCE_BAND.to_rgba()),
        );
        let (plot_area, legend_area) = legend.split(root);
        let body = plot_area.margin(12, 0, 0, 0).titled(
            &format!(
                "validation ({}): predicted against measured",
                self.validation.durability
            ),
            (FONT, 30),
        )?;
        let half = body.dim_in_pixel().0 / 2;
        let (left, right) = body.split_horizontally(half);
        self.draw_throughput(&left)?;
        self.draw_p99(&right)?;
        legend.draw(&legend_area)
    }

    fn colour(point: &crate::calibrate::validate::Point) -> RGBColor {
        if point.load().rate_per_s.is_none() {
            PALETTE[0]
        } else {
            PALETTE[1]
        }
    }

    /// Throughput, linear axes: a dot where the database kept up, a cross where it fell
    /// behind, a ring where the model's stability differs.
    fn draw_throughput<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let points = &self.validation.points;
        let top = points
            .iter()
            .flat_map(|p| [p.measured_tps(), p.predicted_tps(), p.tps_range().1])
            .fold(1.0_f64, f64::max)
            * 1.1;
        let mut chart = build(area, "throughput".into(), 0.0..top, 0.0..top, false)?;
        let label = |v: &f64| number(*v);
        draw_mesh_with(
            &mut chart,
            "measured updates per second",
            "predicted updates per second",
            &label,
            &label,
            HALF_PANEL_LABELS,
        )?;
        draw_diagonal(&mut chart, 0.0..top)?;
        for point in points {
            let colour = Self::colour(point);
            let at = (point.measured_tps(), point.predicted_tps());
            let (low, high) = point.tps_range();
            draw_range(&mut chart, (low, high), at.1, colour)?;
            if point.measured_stable() {
                chart.draw_series(std::iter::once(Circle::new(at, 7, colour.filled())))?;
            } else {
                chart.draw_series(std::iter::once(Cross::new(at, 9, colour.stroke_width(3))))?;
            }
            if point.measured_stable() != point.predicted_stable() {
                chart.draw_series(std::iter::once(Circle::new(at, 13, WRONG.stroke_width(3))))?;
            }
        }
        Ok(())
    }

    /// The p99 response of the points the tolerance judges, on one duration axis for both
    /// (log when they span decades), with the tolerance's band around the diagonal.
    fn draw_p99<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let judged: Vec<_> = self
            .validation
            .points
            .iter()
            .filter(|p| p.measured_stable() && p.predicted_stable())
            .collect();
        let ms = crate::time::ns_to_ms;
        let axis = Axis::fit_waits(judged.iter().flat_map(|p| {
            let (low, high) = p.stable_p99_range();
            let (bottom, top) = p.predicted_p99_range();
            [
                ms(low),
                ms(high),
                ms(bottom),
                ms(top),
                ms(p.predicted().p99_ns),
            ]
        }));
        let range = axis.range();
        let mut chart = build(
            area,
            "p99 response (points that kept up)".into(),
            range.clone(),
            range.clone(),
            false,
        )?;
        draw_mesh_with(
            &mut chart,
            &format!("measured p99{}", axis.note()),
            &format!("predicted p99{}", axis.note()),
            &|v| axis.label(*v),
            &|v| axis.label(*v),
            HALF_PANEL_LABELS,
        )?;
        // The band between predicted = measured × (1 ± rel), cut at the top of the plot (a
        // polygon reaching past it would not be drawn above the diagonal at all).
        let (low, high) = (axis.floor.max(1e-9), axis.top);
        let (below, above) = (1.0 - self.p99_rel, 1.0 + self.p99_rel);
        let corners = [
            (low, low * below),
            (high, high * below),
            (high, high),
            (high / above, high),
            (low, low * above),
        ];
        chart.draw_series(std::iter::once(Polygon::new(
            corners
                .iter()
                .map(|&(x, y)| (axis.to_plot(x), axis.to_plot(y)))
                .collect::<Vec<_>>(),
            TOLERANCE_BAND.filled(),
        )))?;
        draw_diagonal(&mut chart, range)?;
        for point in judged {
            let colour = Self::colour(point);
            let at = (
                axis.to_plot(ms(point.measured().p99_ns)),
                axis.to_plot(ms(point.predicted().p99_ns)),
            );
            // The box of the measured repeats' p99 range (across) by the predicted
            // replications' (up): the point passes where it touches the band.
            let (left, right) = point.stable_p99_range();
            let (bottom, top) = point.predicted_p99_range();
            let corner = |x: u64, y: u64| (axis.to_plot(ms(x)), axis.to_plot(ms(y)));
            chart.draw_series(std::iter::once(Rectangle::new(
                [corner(left, bottom), corner(right, top)],
                colour.stroke_width(2),
            )))?;
            chart.draw_series(std::iter::once(Circle::new(at, 7, colour.filled())))?;
        }
        Ok(())
    }
}

/// The dashed line where the model equals the measurement, over `range` (plot coordinates,
/// the same on both axes).
fn draw_diagonal<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    range: Range<f64>,
) -> DrawResult<DB> {
    chart.draw_series(DashedLineSeries::new(
        vec![(range.start, range.start), (range.end, range.end)],
        12,
        8,
        PALETTE[7].stroke_width(2),
    ))?;
    Ok(())
}

/// A horizontal bar from `low` to `high` at height `y` (plot coordinates): the repeats' range.
fn draw_range<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    (low, high): (f64, f64),
    y: f64,
    colour: RGBColor,
) -> DrawResult<DB> {
    if high > low {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(low, y), (high, y)],
            colour.stroke_width(2),
        )))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::load::Load;
    use crate::calibrate::validate::fixtures::*;

    #[test]
    fn the_chart_shows_every_points_throughput_and_the_p99_the_tolerance_judges() {
        let closed = Load {
            rate_per_s: None,
            clients: 32,
            ..open_load()
        };
        let one_row = Load {
            rows: 1,
            ..open_load()
        };
        let points = vec![
            measured_point(
                closed,
                vec![measured_repeat(3_000.0, 40, true)],
                predicted_at(3_100.0, 45, true),
            ),
            measured_point(
                open_load(),
                vec![
                    measured_repeat(1_000.0, 2, true),
                    measured_repeat(990.0, 3, true),
                ],
                predicted_at(1_000.0, 3, true),
            ),
            // Kept up where the model says it falls behind: on the throughput panel only,
            // ringed.
            measured_point(
                one_row,
                vec![measured_repeat(995.0, 5, true)],
                predicted_at(700.0, 900, false),
            ),
            // Fell behind, as predicted: a cross on the throughput panel only.
            measured_point(
                one_row,
                vec![measured_repeat(600.0, 900, false)],
                predicted_at(620.0, 950, false),
            ),
        ];
        let chart = validation_chart(&validation_of(points), 0.25).unwrap();
        for text in [
            "throughput",
            "p99 response (points that kept up)",
            "measured p99",
            "p99 within ±25% (a box touching it passes)",
        ] {
            assert!(chart.svg.contains(text), "{text}");
        }
        let count = |radius: &str| chart.svg.matches(&format!("r=\"{radius}\"")).count();
        // Dots: three that kept up on the throughput panel, the two the tolerance judges on
        // the p99 panel, and the legend's; rings: the stability that differs and the legend's.
        assert_eq!(count("7"), 3 + 2 + 1);
        assert_eq!(count("13"), 1 + 1);
        let boxes = chart.svg.matches("<rect").count();
        let none_kept_up = vec![measured_point(
            one_row,
            vec![measured_repeat(600.0, 900, false)],
            predicted_at(620.0, 950, false),
        )];
        // None kept up: the throughput panel's cross, and on the p99 panel only the legend's dot.
        let chart = validation_chart(&validation_of(none_kept_up), 0.25).unwrap();
        let count = |radius: &str| chart.svg.matches(&format!("r=\"{radius}\"")).count();
        assert_eq!((count("7"), count("13")), (1, 1), "{}", chart.svg.len());
        assert!(chart.svg.contains("p99 response (points that kept up)"));
        // A box on the p99 panel for each point judged there: two more than without any.
        assert_eq!(boxes - chart.svg.matches("<rect").count(), 2);
    }
}
