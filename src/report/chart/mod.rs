//! The charts, each rendered as SVG text and as a 1200×800 PNG from the same in-memory
//! results the CSV files come from. This module is the shared skeleton — axes, legend,
//! lines, the rendering to SVG and PNG, and the list of charts a run draws — and each chart
//! is its own file beside it:
//!
//! - `waits`: wait p50, p99 and p99.9 against shard count, overloaded shard counts shaded,
//!   the `[slo]` p99 target as a dashed line;
//! - `backlog`: backlog over time, one line per shard count, the offered rate on a second axis;
//! - `throughput`: offered rate, achieved throughput and ceiling against shard count;
//! - `wait_over_time`: p99 wait per window, one line per shard count;
//! - `clients` (with `[client]`): attempts and failures per like against shard count;
//! - `responses` (with a machine): response time at p50 and p99 beside the p99 wait;
//! - `at_risk` (with `[batching]`): likes held in app-server memory over time;
//! - `drift` (with `[likes_table]` in separate transactions): stored likes the count misses,
//!   over time, with the reconciliation's passes;
//! - `neighbours` (with `[[neighbours]]`): neighbour endpoints' connection waits against
//!   shard count;
//! - `rows` (with `[adaptive]`): the adaptive run's rows over time.
//!
//! Axes that span decades are drawn on a log scale by plotting `log10(value)` on a linear
//! axis and labelling ticks with the value; shard counts always use a log₂ axis. Zero, which a
//! log axis cannot show, is drawn at the axis floor (the axis title says so). PNG text is
//! rasterised from the bundled DejaVu Sans (pure Rust, no system font libraries).

use std::ops::Range;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use crate::model::{Policy, ShardRun};
use crate::scenario::Scenario;
use crate::stats::{WaitSummary, WindowRow};

use super::units;
use crate::figures::SummaryRow;

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (1200, 800);
/// The font family every chart uses (registered from the bundled font).
const FONT: &str = "sans-serif";
/// DejaVu Sans (Bitstream Vera licence, see `assets/fonts/LICENSE-DejaVu.txt`).
const FONT_BYTES: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
/// Most points drawn per line; longer series are reduced to the maximum of each bucket.
const MAX_POINTS: usize = 1500;
/// A ratio of largest to smallest positive value from which an axis becomes logarithmic.
const LOG_SPAN: f64 = 30.0;
/// The shortest wait a wait axis resolves, ms (1 µs); shorter waits sit on its floor.
const WAIT_FLOOR_MS: f64 = 1e-3;
/// The most decades a wait axis spans (1 µs to 100 s, or 10 µs to 17 min).
const WAIT_DECADES: i32 = 8;

/// Tableau 10: distinguishable colours for series.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// One rendered chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// File stem: `waits`, `backlog`, `throughput`, `wait_over_time`, …; with several
    /// policies `policies`, then each policy's charts as `waits-random`, ….
    pub(crate) name: String,
    /// One line telling a reader what the chart shows and how to read it.
    pub(crate) caption: &'static str,
    /// The CSV files holding the chart's data.
    pub(crate) data: &'static [&'static str],
    /// The chart as an SVG document.
    pub(crate) svg: String,
    /// The chart as a PNG image.
    pub(crate) png: Vec<u8>,
}

/// Registers the font compiled into the binary, once.
fn register_bundled_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The bytes are a valid font compiled into the binary; a failure is a build defect.
        register_font(FONT, FontStyle::Normal, FONT_BYTES)
            .unwrap_or_else(|_| panic!("the bundled font is valid"));
    });
}

/// Renders every chart of a sweep.
pub fn render_all(
    scenario: &Scenario,
    rows: &[SummaryRow],
    runs: &[ShardRun],
    recommended: &[(Policy, Option<u32>)],
) -> Result<Vec<Chart>, String> {
    register_bundled_font();
    if !scenario.compares_policies() {
        return render_policy(scenario, rows, runs, recommended.first().and_then(|r| r.1));
    }
    let comparison = PoliciesFigure {
        scenario,
        rows,
        recommended,
    };
    let mut charts = vec![render("policies", &comparison)?];
    for &(policy, shards) in recommended {
        let one = scenario.with_policy(policy, format!("{} ({policy})", scenario.name()));
        let rows: Vec<SummaryRow> = rows
            .iter()
            .filter(|r| r.policy == policy)
            .cloned()
            .collect();
        let runs: Vec<ShardRun> = runs
            .iter()
            .filter(|r| r.policy == policy)
            .cloned()
            .collect();
        for mut chart in render_policy(&one, &rows, &runs, shards)? {
            chart.name = format!("{}-{policy}", chart.name);
            charts.push(chart);
        }
    }
    Ok(charts)
}

/// The charts of one policy's rows and runs.
fn render_policy(
    scenario: &Scenario,
    rows: &[SummaryRow],
    runs: &[ShardRun],
    recommended: Option<u32>,
) -> Result<Vec<Chart>, String> {
    // Shard-count axes show the static shard counts; the adaptive run appears over time, and
    // on the waits chart as a level.
    let adaptive = rows.iter().find(|r| r.adaptive());
    let static_rows: Vec<SummaryRow> = rows.iter().filter(|r| !r.adaptive()).cloned().collect();
    let rows = &static_rows[..];
    let waits = WaitsFigure {
        scenario,
        rows,
        adaptive,
        recommended,
    };
    let backlog = BacklogFigure { scenario, runs };
    let throughput = throughput_figure(scenario, rows);
    let over_time = WaitOverTimeFigure { scenario, runs };
    let mut figures: Vec<(&'static str, &dyn Figure)> = vec![
        ("waits", &waits),
        ("backlog", &backlog),
        ("throughput", &throughput),
        ("wait_over_time", &over_time),
    ];
    let clients = clients_figure(scenario, rows);
    if let Some(figure) = &clients {
        figures.push(("clients", figure));
    }
    let responses = responses_figure(scenario, rows);
    if let Some(figure) = &responses {
        figures.push(("responses", figure));
    }
    let at_risk = AtRiskFigure { scenario, runs };
    if scenario.features().batching.is_some() {
        figures.push(("at_risk", &at_risk));
    }
    let drift = DriftFigure { scenario, runs };
    if scenario.likes().is_some_and(|l| !l.same_transaction) {
        figures.push(("drift", &drift));
    }
    let neighbours = neighbours_figure(scenario, rows);
    if let Some(figure) = &neighbours {
        figures.push(("neighbours", figure));
    }
    let growing = runs
        .iter()
        .find(|run| run.adaptive)
        .map(|run| RowsFigure { scenario, run });
    if let Some(figure) = &growing {
        figures.push(("rows", figure));
    }
    figures
        .iter()
        .map(|(name, figure)| render(name, *figure))
        .collect()
}

/// What each chart shows and how to read it, and the files with its data.
fn described(name: &'static str) -> (&'static str, &'static [&'static str]) {
    match name {
        "sweep" => (
            "The sweep at a glance: the shard count each configuration needs (the smallest meeting the target, \
             or the smallest stable one without a target), darker for more; \"none\" where no simulated count does.",
            &["sweep.csv"],
        ),
        "validation" => (
            "Each validation point's predicted throughput against the measured one: on the dashed diagonal the model is exact; open streams that fell behind are crosses, and a red ring marks a point whose verdict the model got wrong.",
            &["validation.csv"],
        ),
        "calibration" => (
            "Measured throughput (solid, dots) against the fitted model's (dashed, crosses) per client count, one colour per row count.",
            &["calibration.csv"],
        ),
        "policies" => (
            "The policies side by side: the p99 wait (solid) and p99.9 wait (dashed) per shard count, one colour \
             per policy, over the same arrivals. The lower line is the better policy at that shard count; each \
             policy's own charts follow.",
            &["summary.csv"],
        ),
        "waits" => (
            "The decision chart: the wait for the row at p50, p99 and p99.9 per shard count. The first shard count \
             below the dashed target with no red band is the answer; the green line marks the recommendation.",
            &["summary.csv"],
        ),
        "backlog" => (
            "The queue as it happens: the most likes waiting in each window, per shard count, over the likes offered \
             (grey, right axis). A line that keeps climbing is a queue that never drains.",
            &["timeseries.csv"],
        ),
        "throughput" => (
            "Capacity against load per shard count: where the ceiling line passes the peak offered rate is the \
             least shard count that can keep up.",
            &["summary.csv"],
        ),
        "wait_over_time" => (
            "The p99 wait of each window's likes over time, per shard count: when the target was first broken and \
             how long it stayed broken.",
            &["timeseries.csv"],
        ),
        "clients" => (
            "What timeouts and retries cost per like: attempts, user-visible failures and duplicate runs per \
             shard count.",
            &["summary.csv"],
        ),
        "responses" => (
            "What users wait in all, beside the wait for the row: the response time (send → commit acknowledged, \
             the CPU, the flush and the time outside the database included) at p50 and p99 per shard count. Where \
             the lines flatten, more rows stop paying.",
            &["summary.csv"],
        ),
        "at_risk" => (
            "Likes held unflushed in app-server memory over time; a dashed line marks each crash, which loses \
             what its servers held.",
            &["timeseries.csv"],
        ),
        "drift" => (
            "Likes stored in the likes table but missing from the count, over time: each failure between the \
             insert and the increment adds one; each reconciliation pass (dotted) adds back what its recount \
             found missing when it began.",
            &["timeseries.csv"],
        ),
        "neighbours" => (
            "How a hot row starves the other endpoints that share the connection pool: their waits for a \
             connection per shard count.",
            &["neighbours.csv", "summary.csv"],
        ),
        "rows" => (
            "The adaptive run's rows over time: each step is a growth taking effect once writers' cached \
             row counts expire.",
            &["growth.csv", "timeseries.csv"],
        ),
        _ => ("", &[]),
    }
}

/// Something drawn on a drawing area of either backend.
trait Figure {
    fn draw_svg(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String>;
    fn draw_png(&self, area: &DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), String>;
}

/// Implements [`Figure`] for a type with a generic `draw` method.
macro_rules! figure {
    ($type:ident) => {
        impl Figure for $type<'_> {
            fn draw_svg(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> {
                self.draw(area).map_err(|err| err.to_string())
            }
            fn draw_png(&self, area: &DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), String> {
                self.draw(area).map_err(|err| err.to_string())
            }
        }
    };
}

fn render(name: &'static str, figure: &dyn Figure) -> Result<Chart, String> {
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        figure.draw_svg(&area)?;
        area.present().map_err(|err| err.to_string())?;
    }
    let mut pixels = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let area = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
        figure.draw_png(&area)?;
        area.present().map_err(|err| err.to_string())?;
    }
    let (caption, data) = described(name);
    Ok(Chart {
        name: name.to_owned(),
        caption,
        data,
        svg,
        png: encode_png(&pixels)?,
    })
}

fn encode_png(rgb: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, SIZE.0, SIZE.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|err| err.to_string())?;
    writer
        .write_image_data(rgb)
        .map_err(|err| err.to_string())?;
    writer.finish().map_err(|err| err.to_string())?;
    Ok(out)
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A value axis, linear or logarithmic, mapping values to plot coordinates.
#[derive(Debug, Clone, Copy)]
struct Axis {
    log: bool,
    /// Log axes: the smallest value shown; zero and smaller values are drawn here.
    floor: f64,
    /// Upper end of the axis, in values.
    top: f64,
    /// Log axes: whether some values (zeros) lie below the floor and are drawn on it.
    clamped: bool,
    /// Whether values are milliseconds, labelled as durations (`250 µs`, `1 ms`, `26.7 s`).
    time: bool,
}

impl Axis {
    /// An axis for `values` (all ≥ 0): logarithmic when the positive ones span `LOG_SPAN`.
    fn fit(values: impl Iterator<Item = f64>) -> Axis {
        let (mut min_positive, mut max, mut has_zero) = (f64::INFINITY, 0.0f64, false);
        for value in values.filter(|v| v.is_finite()) {
            max = max.max(value);
            if value > 0.0 {
                min_positive = min_positive.min(value);
            } else {
                has_zero = true;
            }
        }
        let linear = |top| Axis {
            log: false,
            floor: 0.0,
            top,
            clamped: false,
            time: false,
        };
        if max <= 0.0 {
            return linear(1.0);
        }
        if max / min_positive < LOG_SPAN {
            return linear(max * 1.1);
        }
        let mut floor = 10f64.powf(min_positive.log10().floor());
        // Zeros sit on the floor: keep the smallest positive value visibly above them.
        if has_zero && min_positive / floor < 2.0 {
            floor /= 10.0;
        }
        let top = 10f64.powf(max.log10().ceil()).max(floor * 10.0);
        Axis {
            log: true,
            floor,
            top,
            clamped: has_zero,
            time: false,
        }
    }

    /// An axis for waits in ms, labelled as durations. Waits below 1 µs (or more than
    /// [`WAIT_DECADES`] decades under the largest) are drawn on the floor, so rare
    /// sub-microsecond waits do not stretch the axis over ten decades.
    fn fit_waits(values: impl Iterator<Item = f64>) -> Axis {
        let values: Vec<f64> = values.filter(|v| v.is_finite()).collect();
        let max = values.iter().copied().fold(0.0, f64::max);
        let floor = WAIT_FLOOR_MS.max(max / 10f64.powi(WAIT_DECADES));
        let mut axis = Axis::fit(
            values
                .iter()
                .map(|&v| if v > 0.0 && v < floor { 0.0 } else { v }),
        );
        if axis.log && axis.floor < floor {
            axis.floor = 10f64.powf(floor.log10().floor());
        }
        axis.time = true;
        axis
    }

    /// Plot coordinate of a value.
    fn to_plot(self, value: f64) -> f64 {
        if self.log {
            value.max(self.floor).log10()
        } else {
            value
        }
    }

    /// The plotted range.
    fn range(self) -> Range<f64> {
        self.to_plot(self.floor)..self.to_plot(self.top)
    }

    /// Tick label for a plot coordinate.
    fn label(self, plot: f64) -> String {
        let text = |value: f64| {
            if self.time {
                units::duration((value * 1e6).round() as u64)
            } else {
                number(value)
            }
        };
        if self.log {
            let value = 10f64.powf(plot);
            if (plot - plot.round()).abs() > 1e-6 {
                return String::new();
            }
            // Decades past a second stay in seconds (`100 s`, `10,000 s`): in minutes and
            // hours they would read 1.67 min and 2.78 h, not round.
            if self.time
                && value >= 1e3
                && !(self.clamped && plot.round() <= self.floor.log10().round())
            {
                return format!("{} s", units::count((value / 1e3).round() as u64));
            }
            if self.clamped && plot.round() <= self.floor.log10().round() {
                // Only zeros sit below a count axis' floor; a wait axis also puts waits
                // under 1 µs there.
                return if self.time {
                    format!("≤{}", text(value))
                } else {
                    "0".into()
                };
            }
            text(value)
        } else {
            text(plot)
        }
    }

    /// A plotted value as text, in the axis's notation (`5.16k`, `2.07 ms`).
    fn label_value(self, plot: f64) -> String {
        let value = if self.log { 10f64.powf(plot) } else { plot };
        if self.time {
            units::duration((value * 1e6).round() as u64)
        } else {
            number(value)
        }
    }

    /// Axis-title suffix saying how the axis is scaled.
    fn note(self) -> &'static str {
        match (self.log, self.clamped) {
            (true, true) => ", log scale; 0 at the bottom",
            (true, false) => ", log scale",
            (false, _) => "",
        }
    }
}

/// A shard-count axis: log₂, labelled at whole shard counts.
fn shard_range(rows: &[u32]) -> Range<f64> {
    let min = f64::from(rows.iter().copied().min().unwrap_or(1));
    let max = f64::from(rows.iter().copied().max().unwrap_or(1));
    (min.log2() - 0.35)..(max.log2() + 0.35)
}

fn shard_label(plot: f64) -> String {
    let value = 2f64.powf(plot);
    if (value - value.round()).abs() < 1e-6 && value >= 1.0 {
        format!("{}", value.round())
    } else {
        String::new()
    }
}

/// A number for a tick label, one notation on every axis: `0.001`, `2.5`, `500`, `1k`,
/// `2.5k`, `100k`, `1M`, `1G`.
fn number(value: f64) -> String {
    let abs = value.abs();
    let trimmed = units::trim_zeros;
    match abs {
        0.0 => "0".into(),
        a if a >= 1e9 => format!("{}G", trimmed(format!("{:.2}", value / 1e9))),
        a if a >= 1e6 => format!("{}M", trimmed(format!("{:.2}", value / 1e6))),
        a if a >= 1e3 => format!("{}k", trimmed(format!("{:.2}", value / 1e3))),
        a if a >= 100.0 => format!("{value:.0}"),
        a if a >= 1e-3 => trimmed(format!("{value:.3}")),
        _ => format!("{value:.0e}"),
    }
}

fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

fn title(scenario: &Scenario, what: &str) -> String {
    format!("{}: {what}", scenario.name())
}

/// Reduces a long series to at most `MAX_POINTS`, keeping each bucket's maximum.
fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points;
    }
    let bucket = points.len().div_ceil(MAX_POINTS);
    points
        .chunks(bucket)
        .map(|chunk| {
            let y = chunk.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
            (chunk[0].0, y)
        })
        .collect()
}

type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws the axes, grid and labels shared by every chart.
fn draw_mesh<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    x_desc: &str,
    y_desc: &str,
    x_label: &dyn Fn(&f64) -> String,
    y_label: &dyn Fn(&f64) -> String,
) -> DrawResult<DB> {
    draw_mesh_with(chart, x_desc, y_desc, x_label, y_label, 12)
}

/// [`draw_mesh`] with at most `x_labels` labels across: a half-width panel has room for about
/// half as many.
fn draw_mesh_with<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    x_desc: &str,
    y_desc: &str,
    x_label: &dyn Fn(&f64) -> String,
    y_label: &dyn Fn(&f64) -> String,
    x_labels: usize,
) -> DrawResult<DB> {
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(x_label)
        .y_label_formatter(y_label)
        .x_labels(x_labels)
        .y_labels(12)
        .label_style((FONT, 18))
        .axis_desc_style((FONT, 22))
        .bold_line_style(RGBColor(210, 210, 210))
        .light_line_style(WHITE)
        .draw()
}

/// A plot of `y_what` (axis `y`) against a log₂ count axis `x` described by `x_desc`, with its
/// axes drawn.
fn log2_plot<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: String,
    (x, x_desc): (Range<f64>, &str),
    (y, y_what): (Axis, &str),
) -> Result<Plot<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = build(area, caption, x, y.range(), false)?;
    let y_desc = format!("{y_what}{}", y.note());
    draw_mesh(&mut chart, x_desc, &y_desc, &|v| shard_label(*v), &|v| {
        y.label(*v)
    })?;
    Ok(chart)
}

/// The shard-count axis' description.
const SHARDS_AXIS: &str = "shards (rows per key, log scale)";

/// Builds the plot area with its caption.
fn build<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: String,
    x: Range<f64>,
    y: Range<f64>,
    right_axis: bool,
) -> Result<Plot<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(caption, (FONT, 30))
        .margin(20)
        .x_label_area_size(64)
        .y_label_area_size(100);
    if right_axis {
        builder.right_y_label_area_size(100);
    }
    builder.build_cartesian_2d(x, y)
}

/// A dashed horizontal line across the plot at `level` (plot coordinates).
fn draw_target<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    x: Range<f64>,
    level: f64,
) -> DrawResult<DB> {
    chart.draw_series(DashedLineSeries::new(
        vec![(x.start, level), (x.end, level)],
        12,
        8,
        BLACK.stroke_width(2),
    ))?;
    Ok(())
}

/// A line over shard counts: its legend label, the value it plots, and how it is drawn.
type Series<T> = (&'static str, fn(&SummaryRow) -> T, Mark);

/// A per-shard-count line with its points: solid with dots, or dashed with crosses.
fn draw_marked<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    points: Vec<(f64, f64)>,
    mark: Mark,
) -> DrawResult<DB> {
    match mark {
        Mark::Line(colour) => {
            chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(3)))?;
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 6, colour.filled())))?;
        }
        Mark::Dashed(colour) => {
            chart.draw_series(DashedLineSeries::new(
                points.clone(),
                14,
                8,
                colour.stroke_width(3),
            ))?;
            chart.draw_series(
                points
                    .iter()
                    .map(|&p| Cross::new(p, 7, colour.stroke_width(3))),
            )?;
        }
        Mark::Fill(_) | Mark::Dot(_) | Mark::Cross(_) | Mark::Ring(_) | Mark::Box(_) => {
            unreachable!("only lines are drawn with their points")
        }
    }
    Ok(())
}

/// A wide line over time, drawn as one path per monotone stretch: the bitmap backend joins a
/// path's segments with unbounded miters, so a spike inside one path would shoot far past the
/// plot (and into the legend).
fn draw_time_line<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    points: Vec<(f64, f64)>,
    style: ShapeStyle,
) -> DrawResult<DB> {
    let mut pieces: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut piece: Vec<(f64, f64)> = Vec::new();
    let mut rising: Option<bool> = None;
    for point in points {
        if let Some(&last) = piece.last() {
            let dy: f64 = point.1 - last.1;
            if dy != 0.0 {
                let up = dy > 0.0;
                if rising.is_some_and(|was| was != up) {
                    pieces.push(std::mem::replace(&mut piece, vec![last]));
                }
                rising = Some(up);
            }
        }
        piece.push(point);
    }
    pieces.push(piece);
    chart.draw_series(
        pieces
            .into_iter()
            .filter(|piece| !piece.is_empty())
            .map(|piece| PathElement::new(piece, style)),
    )?;
    Ok(())
}

/// A line over time of values on axis `y`. On a log axis a zero sits on the floor, decades
/// below every other value: a line that steps between zero and a value there would draw a
/// wall of verticals, so it is broken at each such step — stretches at zero run along the
/// floor, the others above it, and a lone value is a dot.
fn draw_axis_line<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    y: Axis,
    points: &[(f64, f64)],
    style: ShapeStyle,
) -> DrawResult<DB> {
    let plotted: Vec<(f64, f64)> = points.iter().map(|&(t, v)| (t, y.to_plot(v))).collect();
    if !y.log {
        return draw_time_line(chart, plotted, style);
    }
    let on_floor = |value: f64| value <= y.floor;
    let mut start = 0;
    for end in 1..=points.len() {
        let breaks = end == points.len() || on_floor(points[end].1) != on_floor(points[start].1);
        if !breaks {
            continue;
        }
        let piece = plotted[start..end].to_vec();
        if piece.len() == 1 {
            chart.draw_series(piece.iter().map(|&p| Circle::new(p, 2, style.filled())))?;
        } else {
            draw_time_line(chart, piece, style)?;
        }
        start = end;
    }
    Ok(())
}

/// With this few shard counts a chart shows each point's value beside it (a lone point on an
/// axis is hard to read).
const ANNOTATE_UP_TO: usize = 2;

/// Writes each point's value beside it, in the series' colour.
fn annotate<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    points: &[(f64, f64)],
    mark: Mark,
    label: &dyn Fn(f64) -> String,
) -> DrawResult<DB> {
    let colour = match mark {
        Mark::Line(c)
        | Mark::Dashed(c)
        | Mark::Dot(c)
        | Mark::Cross(c)
        | Mark::Ring(c)
        | Mark::Box(c) => c,
        Mark::Fill(c) => RGBColor(c.0, c.1, c.2),
    };
    chart.draw_series(points.iter().map(|&(x, y)| {
        EmptyElement::at((x, y))
            + Text::new(label(y), (14, -10), (FONT, 19).into_font().color(&colour))
    }))?;
    Ok(())
}

/// One point per shard count, at (log₂ shards, plotted value); unbounded values are skipped.
fn shard_points(
    rows: &[SummaryRow],
    value: impl Fn(&SummaryRow) -> f64,
    y: Axis,
) -> Vec<(f64, f64)> {
    rows.iter()
        .filter(|r| value(r).is_finite())
        .map(|r| (f64::from(r.shards()).log2(), y.to_plot(value(r))))
        .collect()
}

/// One thinned line per shard count over its time-series windows; `point` maps a window (and
/// its index) to a point, or skips it.
fn window_lines(
    runs: &[ShardRun],
    point: impl Fn(usize, &WindowRow) -> Option<(f64, f64)>,
) -> Vec<(String, Vec<(f64, f64)>)> {
    runs.iter()
        .map(|run| {
            let points = run
                .windows
                .iter()
                .enumerate()
                .filter_map(|(i, w)| point(i, w))
                .collect();
            (run_name(run), thin(points))
        })
        .collect()
}

/// The label of a time-series line, saying so when all of it sits at zero (hidden under
/// the others at the bottom of a log axis).
fn series_label(name: &str, values: &[(f64, f64)]) -> String {
    if values.iter().all(|p| p.1 <= 0.0) {
        format!("{name} (0 throughout)")
    } else {
        name.to_owned()
    }
}

/// A run's name in legends: `N = 16`, or `adaptive`.
fn run_name(run: &ShardRun) -> String {
    run.rows().legend()
}

/// The first later-drawn line of `plotted` (plot coordinates, one value per window) that
/// covers line `index` entirely — every value within `tolerance`, about a line's width — so
/// the legend can say where the hidden line is.
fn hidden_under(plotted: &[Vec<f64>], index: usize, tolerance: f64) -> Option<usize> {
    let mine = &plotted[index];
    (index + 1..plotted.len()).find(|&other| {
        !mine.is_empty()
            && plotted[other].len() == mine.len()
            && mine
                .iter()
                .zip(&plotted[other])
                .all(|(a, b)| (a - b).abs() <= tolerance)
    })
}

/// Whether two lines would be drawn on top of each other: every value within 2% (or 1 µs).
fn coincide(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= (0.02 * x.abs().max(y.abs())).max(1e-3))
}

mod at_risk;
mod backlog;
mod calibration;
mod clients;
mod drift;
mod legend;
mod neighbours;
mod policies;
mod responses;
mod rows;
mod shard_lines;
mod sweep;
mod throughput;
mod validation;
mod wait_over_time;
mod waits;

use legend::{Legend, Mark};

use at_risk::{AtRiskFigure, draw_instants};
use backlog::BacklogFigure;
pub use calibration::calibration_chart;
use clients::clients_figure;
use drift::DriftFigure;
use neighbours::neighbours_figure;
use policies::PoliciesFigure;
use responses::responses_figure;
use rows::RowsFigure;
use shard_lines::ShardLinesFigure;
pub use sweep::sweep_charts;
use throughput::throughput_figure;
pub use validation::validation_chart;
use wait_over_time::WaitOverTimeFigure;
use waits::WaitsFigure;

#[cfg(test)]
mod tests;
