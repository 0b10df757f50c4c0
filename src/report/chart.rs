//! The charts, each rendered as SVG text and as a 1200×800 PNG from the same in-memory
//! results the CSV files come from.
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

use super::summary::SummaryRow;
use super::units;

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (1200, 800);
/// The font family every chart uses (registered from the bundled font).
const FONT: &str = "sans-serif";
/// DejaVu Sans (Bitstream Vera licence, see `assets/fonts/LICENSE-DejaVu.txt`).
const FONT_BYTES: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
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
    pub name: String,
    /// One line telling a reader what the chart shows and how to read it.
    pub caption: &'static str,
    /// The CSV files holding the chart's data.
    pub data: &'static [&'static str],
    /// The chart as an SVG document.
    pub svg: String,
    /// The chart as a PNG image.
    pub png: Vec<u8>,
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
        let mut one = scenario.clone();
        one.name = format!("{} ({policy})", scenario.name);
        one.policies = vec![policy];
        let name = policy.to_string();
        let rows: Vec<SummaryRow> = rows.iter().filter(|r| r.policy == name).cloned().collect();
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
    let adaptive = rows.iter().find(|r| r.adaptive);
    let static_rows: Vec<SummaryRow> = rows.iter().filter(|r| !r.adaptive).cloned().collect();
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
    if scenario.features.batching.is_some() {
        figures.push(("at_risk", &at_risk));
    }
    let drift = DriftFigure { scenario, runs };
    if scenario.likes.as_ref().is_some_and(|l| !l.same_transaction) {
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
    format!("{}: {what}", scenario.name)
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

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
enum Mark {
    /// A solid line.
    Line(RGBColor),
    /// A dashed line.
    Dashed(RGBColor),
    /// A filled box (bands and areas).
    Fill(RGBAColor),
    /// A filled dot (a point).
    Dot(RGBColor),
    /// A cross (a point).
    Cross(RGBColor),
    /// A ring around a point.
    Ring(RGBColor),
}

/// Legend entries, drawn in a strip below the plot so they never cover data.
#[derive(Debug, Default)]
struct Legend(Vec<(String, Mark)>);

/// Height of one legend row, in pixels.
const LEGEND_ROW: u32 = 30;
/// Width of the legend strip, in pixels.
const LEGEND_WIDTH: u32 = SIZE.0 - 60;

impl Legend {
    fn add(&mut self, label: impl Into<String>, mark: Mark) {
        self.0.push((label.into(), mark));
    }

    /// Column width (fits the longest label at about 11 px a character) and columns per row.
    fn columns(&self) -> (u32, u32) {
        let longest = self
            .0
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0) as u32;
        let width = (60 + 11 * longest).min(LEGEND_WIDTH);
        (width, (LEGEND_WIDTH / width).max(1))
    }

    /// Splits `root` into the plot area and the legend strip below it.
    fn split<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
        let (_, per_row) = self.columns();
        let rows = (self.0.len() as u32).div_ceil(per_row);
        root.split_vertically(SIZE.1 - rows * LEGEND_ROW - 16)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let (width, per_row) = self.columns();
        for (i, (label, mark)) in self.0.iter().enumerate() {
            let (column, row) = (i as u32 % per_row, i as u32 / per_row);
            let x = 40 + (column * width) as i32;
            let y = (8 + row * LEGEND_ROW + LEGEND_ROW / 2) as i32;
            match *mark {
                Mark::Line(colour) => area.draw(&PathElement::new(
                    vec![(x, y), (x + 32, y)],
                    colour.stroke_width(4),
                ))?,
                Mark::Dashed(colour) => {
                    for start in [x, x + 13, x + 26] {
                        area.draw(&PathElement::new(
                            vec![(start, y), (start + 7, y)],
                            colour.stroke_width(3),
                        ))?;
                    }
                }
                Mark::Fill(colour) => area.draw(&Rectangle::new(
                    [(x, y - 9), (x + 32, y + 9)],
                    colour.filled(),
                ))?,
                Mark::Dot(colour) => area.draw(&Circle::new((x + 16, y), 7, colour.filled()))?,
                Mark::Cross(colour) => {
                    area.draw(&Cross::new((x + 16, y), 9, colour.stroke_width(3)))?
                }
                Mark::Ring(colour) => {
                    area.draw(&Circle::new((x + 16, y), 13, colour.stroke_width(3)))?
                }
            }
            area.draw(&Text::new(
                label.clone(),
                (x + 42, y - 10),
                (FONT, 19).into_font().color(&BLACK),
            ))?;
        }
        Ok(())
    }
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

/// Builds the plot area with its caption.
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
        Mark::Fill(_) | Mark::Dot(_) | Mark::Cross(_) | Mark::Ring(_) => {
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
        Mark::Line(c) | Mark::Dashed(c) | Mark::Dot(c) | Mark::Cross(c) | Mark::Ring(c) => c,
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
        .map(|r| (f64::from(r.shards).log2(), y.to_plot(value(r))))
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
    if run.adaptive {
        "adaptive".into()
    } else {
        format!("N = {}", run.shards)
    }
}

struct WaitsFigure<'a> {
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
    /// The adaptive run, drawn as a level across the chart.
    adaptive: Option<&'a SummaryRow>,
    /// The recommended shard count, marked by a vertical line.
    recommended: Option<u32>,
}
figure!(WaitsFigure);

impl WaitsFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let ms = |ns: u64| ns as f64 / 1e6;
        // Drawn in this order, so the p99 and p50 lines stay visible where an overloaded shard
        // count's p99.9 equals its p99.
        let series: [Series<u64>; 3] = [
            ("wait p99.9", |r| r.waits.p999_ns, Mark::Dashed(PALETTE[3])),
            ("wait p99", |r| r.waits.p99_ns, Mark::Line(PALETTE[1])),
            ("wait p50", |r| r.waits.p50_ns, Mark::Line(PALETTE[0])),
        ];
        let target_ms = self.scenario.slo.p99_ns.map(ms);
        let adaptive_p99 = self.adaptive.map(|r| ms(r.waits.p99_ns));
        let y = Axis::fit_waits(
            self.rows
                .iter()
                .flat_map(|r| series.iter().map(move |s| ms((s.1)(r))))
                .chain(target_ms)
                .chain(adaptive_p99),
        );
        let overloaded: Vec<f64> = self
            .rows
            .iter()
            .filter(|r| !r.verdict().can_serve())
            .map(|r| f64::from(r.shards).log2())
            .collect();
        let band = RGBColor(214, 39, 40).mix(0.12);
        let green = RGBColor(26, 127, 55);
        let mut legend = Legend::default();
        for (name, _, mark) in series.iter().rev() {
            legend.add(*name, *mark);
        }
        if !overloaded.is_empty() {
            legend.add("overloaded or saturated", Mark::Fill(band));
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
                Mark::Line(green),
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
        let (plot_area, legend_area) = legend.split(root);
        let shards: Vec<u32> = self.rows.iter().map(|r| r.shards).collect();
        let x = shard_range(&shards);
        let caption = title(self.scenario, "wait against shard count");
        let mut chart = log2_plot(
            &plot_area,
            caption,
            (x.clone(), SHARDS_AXIS),
            (y, "wait for the row"),
        )?;
        let y_range = y.range();
        chart.draw_series(overloaded.iter().map(|&at| {
            Rectangle::new(
                [(at - 0.3, y_range.start), (at + 0.3, y_range.end)],
                band.filled(),
            )
        }))?;
        if let Some(n) = self.recommended {
            let at = f64::from(n).log2();
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(at, y_range.start), (at, y_range.end)],
                green.stroke_width(3),
            )))?;
        }
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
        for (_, value, mark) in series {
            let points = shard_points(self.rows, |r| ms(value(r)), y);
            if self.rows.len() <= ANNOTATE_UP_TO {
                annotate(&mut chart, &points, mark, &|v| y.label_value(v))?;
            }
            draw_marked(&mut chart, points, mark)?;
        }
        legend.draw(&legend_area)
    }
}

/// Every policy's p99 and p99.9 waits against shard count, one colour per policy.
struct PoliciesFigure<'a> {
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
    /// Each policy, in the scenario's order, with its recommended shard count.
    recommended: &'a [(Policy, Option<u32>)],
}
figure!(PoliciesFigure);

impl PoliciesFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let ms = |ns: u64| ns as f64 / 1e6;
        let rows: Vec<&SummaryRow> = self.rows.iter().filter(|r| !r.adaptive).collect();
        let target_ms = self.scenario.slo.p99_ns.map(ms);
        let y = Axis::fit_waits(
            rows.iter()
                .flat_map(|r| [ms(r.waits.p99_ns), ms(r.waits.p999_ns)])
                .chain(target_ms),
        );
        let mut legend = Legend::default();
        for (index, (policy, shards)) in self.recommended.iter().enumerate() {
            let advice = shards.map_or_else(
                || "none recommended".to_owned(),
                |n| format!("recommended {}", units::plural(u64::from(n), "shard")),
            );
            legend.add(
                format!("{policy}: p99 ({advice})"),
                Mark::Line(colour(index)),
            );
            legend.add(format!("{policy}: p99.9"), Mark::Dashed(colour(index)));
        }
        if let Some(target) = target_ms {
            legend.add(
                format!("target p99 {}", units::duration((target * 1e6) as u64)),
                Mark::Dashed(BLACK),
            );
        }
        let (plot_area, legend_area) = legend.split(root);
        let shards: Vec<u32> = rows.iter().map(|r| r.shards).collect();
        let x = shard_range(&shards);
        let caption = title(self.scenario, "wait against shard count, per policy");
        let mut chart = log2_plot(
            &plot_area,
            caption,
            (x.clone(), SHARDS_AXIS),
            (y, "wait for the row"),
        )?;
        if let Some(target) = target_ms {
            draw_target(&mut chart, x.clone(), y.to_plot(target))?;
        }
        for (index, (policy, _)) in self.recommended.iter().enumerate() {
            let name = policy.to_string();
            let of: Vec<SummaryRow> = rows
                .iter()
                .filter(|r| r.policy == name)
                .map(|r| (*r).clone())
                .collect();
            let p999 = shard_points(&of, |r| ms(r.waits.p999_ns), y);
            draw_marked(&mut chart, p999, Mark::Dashed(colour(index)))?;
            let p99 = shard_points(&of, |r| ms(r.waits.p99_ns), y);
            draw_marked(&mut chart, p99, Mark::Line(colour(index)))?;
        }
        legend.draw(&legend_area)
    }
}

struct BacklogFigure<'a> {
    scenario: &'a Scenario,
    runs: &'a [ShardRun],
}
figure!(BacklogFigure);

impl BacklogFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let window_s = self.scenario.window as f64 / 1e9;
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
            self.scenario.arrivals,
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
    match &scenario.arrivals {
        crate::scenario::ArrivalPlan::Poisson { segments } => {
            let mut start = 0.0;
            let mut points = Vec::with_capacity(segments.len() * 2);
            for segment in segments {
                let end = segment.end as f64 / 1e9;
                points.push((start, segment.rate_per_s));
                points.push((end, segment.rate_per_s));
                start = end;
            }
            points
        }
        // What the clients sent, as the run with the most rows saw it.
        crate::scenario::ArrivalPlan::Trace(_) | crate::scenario::ArrivalPlan::Closed(_) => {
            let window_s = scenario.window as f64 / 1e9;
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

/// Offered rate, achieved throughput and ceiling against shard count.
/// With many keys every line is the busiest key's (its rows' ceiling against its load), so no
/// all-keys rate sits on the same axis as one key's.
fn throughput_figure<'a>(scenario: &'a Scenario, rows: &'a [SummaryRow]) -> ShardLinesFigure<'a> {
    let of = |value: &dyn Fn(&SummaryRow) -> f64| rows.iter().map(value).collect();
    let ceiling = (
        "ceiling of one key's rows (shards ÷ mean hold)".to_owned(),
        of(&|r| r.ceiling_per_s),
        Mark::Line(PALETTE[7]),
    );
    if scenario.key_count() > 1 {
        return ShardLinesFigure {
            scenario,
            rows,
            what: "the busiest key's load against shard count",
            y_desc: "increments per second to the busiest key",
            waits: false,
            series: vec![
                ceiling,
                (
                    "busiest key: peak offered".into(),
                    of(&|r| r.peak_offered_per_s),
                    Mark::Line(PALETTE[3]),
                ),
                (
                    "busiest key: mean offered".into(),
                    of(&|r| r.offered_per_s * r.hot_key_share),
                    Mark::Dashed(PALETTE[1]),
                ),
            ],
        };
    }
    ShardLinesFigure {
        scenario,
        rows,
        what: "throughput against shard count",
        y_desc: "increments per second",
        waits: false,
        series: vec![
            ceiling,
            (
                "peak offered".into(),
                of(&|r| r.peak_offered_per_s),
                Mark::Line(PALETTE[3]),
            ),
            (
                "achieved throughput".into(),
                of(&|r| r.throughput_per_s),
                Mark::Line(PALETTE[0]),
            ),
            (
                "mean offered".into(),
                of(&|r| r.offered_per_s),
                Mark::Dashed(PALETTE[1]),
            ),
        ],
    }
}

struct WaitOverTimeFigure<'a> {
    scenario: &'a Scenario,
    runs: &'a [ShardRun],
}
figure!(WaitOverTimeFigure);

impl WaitOverTimeFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let window_s = self.scenario.window as f64 / 1e9;
        let lines = window_lines(self.runs, |i, w| {
            w.wait_p99_ns()
                .map(|ns| (i as f64 * window_s, ns as f64 / 1e6))
        });
        let target_ms = self.scenario.slo.p99_ns.map(|ns| ns as f64 / 1e6);
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

/// Lines over shard counts from values computed per summary row.
struct ShardLinesFigure<'a> {
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
    what: &'static str,
    y_desc: &'static str,
    series: Vec<(String, Vec<f64>, Mark)>,
    /// Whether the values are waits in ms (labelled as durations).
    waits: bool,
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
        let shards: Vec<u32> = self.rows.iter().map(|r| r.shards).collect();
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
                .map(|(r, &v)| (f64::from(r.shards).log2(), y.to_plot(v)))
                .collect();
            if self.rows.len() <= ANNOTATE_UP_TO {
                annotate(&mut chart, &points, *mark, &|v| y.label_value(v))?;
            }
            draw_marked(&mut chart, points, *mark)?;
        }
        legend.draw(&legend_area)
    }
}

/// Attempts and user failures per original like, when the scenario has `[client]`.
fn clients_figure<'a>(
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
) -> Option<ShardLinesFigure<'a>> {
    let clients: Vec<_> = rows
        .iter()
        .map(|r| r.extended.as_ref().and_then(|e| e.client))
        .collect::<Option<_>>()?;
    let per_like = |value: f64, likes: f64| if likes > 0.0 { value / likes } else { 0.0 };
    Some(ShardLinesFigure {
        scenario,
        rows,
        what: "retries and failures against shard count",
        y_desc: "per original like",
        waits: false,
        series: vec![
            (
                "attempts per like (amplification)".into(),
                clients.iter().map(|c| c.amplification).collect(),
                Mark::Line(PALETTE[1]),
            ),
            (
                "user-visible failures per like".into(),
                clients
                    .iter()
                    .map(|c| per_like(c.failed, c.likes))
                    .collect(),
                Mark::Line(PALETTE[3]),
            ),
            (
                "duplicate runs per like".into(),
                clients
                    .iter()
                    .map(|c| per_like(c.duplicates, c.likes))
                    .collect(),
                Mark::Dashed(PALETTE[4]),
            ),
        ],
    })
}

/// Response times beside the p99 wait for the row, when the scenario models the machine.
fn responses_figure<'a>(
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
) -> Option<ShardLinesFigure<'a>> {
    if scenario.machine.is_empty() {
        return None;
    }
    let responses: Vec<WaitSummary> = rows
        .iter()
        .map(|r| {
            r.closed
                .map(|c| c.responses)
                .or_else(|| r.machine.and_then(|m| m.responses))
        })
        .collect::<Option<_>>()?;
    let ms = |ns: u64| ns as f64 / 1e6;
    Some(ShardLinesFigure {
        scenario,
        rows,
        what: "response time beside the wait for the row",
        y_desc: "time",
        series: vec![
            (
                "response p50".into(),
                responses.iter().map(|r| ms(r.p50_ns)).collect(),
                Mark::Line(PALETTE[0]),
            ),
            (
                "response p99".into(),
                responses.iter().map(|r| ms(r.p99_ns)).collect(),
                Mark::Line(PALETTE[3]),
            ),
            (
                "wait for the row p99".into(),
                rows.iter().map(|r| ms(r.waits.p99_ns)).collect(),
                Mark::Dashed(PALETTE[3]),
            ),
        ],
        waits: true,
    })
}

/// Each neighbour endpoint's p99 wait for a connection, when the scenario has neighbours.
fn neighbours_figure<'a>(
    scenario: &'a Scenario,
    rows: &'a [SummaryRow],
) -> Option<ShardLinesFigure<'a>> {
    let pools: Vec<_> = rows
        .iter()
        .map(|r| r.extended.as_ref().and_then(|e| e.pool.as_ref()))
        .collect::<Option<_>>()?;
    let names: Vec<String> = pools
        .first()?
        .neighbours
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    if names.is_empty() {
        return None;
    }
    // Every endpoint waits in the same pool queue, so their lines often coincide: one line
    // then carries every name, instead of one line hiding another.
    let mut series: Vec<(String, Vec<f64>, Mark)> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let of = |get: fn(&crate::stats::WaitSummary) -> u64| -> Vec<f64> {
            pools
                .iter()
                .map(|p| get(&p.neighbours[i].1) as f64 / 1e6)
                .collect()
        };
        for (statistic, values, mark) in [
            (": mean wait", of(|w| w.mean_ns), Mark::Line(colour(i))),
            (": p99 wait", of(|w| w.p99_ns), Mark::Dashed(colour(i))),
        ] {
            match series
                .iter_mut()
                .find(|(label, v, _)| label.ends_with(statistic) && coincide(v, &values))
            {
                Some((label, _, _)) => {
                    let names = label.trim_end_matches(statistic).to_owned();
                    *label = format!("{names}, {name}{statistic}");
                }
                None => series.push((format!("{name}{statistic}"), values, mark)),
            }
        }
    }
    let likes: Vec<f64> = pools
        .iter()
        .map(|p| p.like_wait.p99_ns as f64 / 1e6)
        .collect();
    match series
        .iter_mut()
        .find(|(label, v, _)| label.ends_with(": p99 wait") && coincide(v, &likes))
    {
        Some((label, _, _)) => {
            *label = format!("{}, likes: p99 wait", label.trim_end_matches(": p99 wait"));
        }
        None => series.push((
            "likes: p99 wait for a connection".into(),
            likes,
            Mark::Line(PALETTE[7]),
        )),
    }
    Some(ShardLinesFigure {
        scenario,
        rows,
        what: "neighbour endpoints' wait for a connection",
        y_desc: "wait for a connection",
        series,
        waits: true,
    })
}

/// The adaptive run's rows over time: the busiest key's row count, and with many keys the
/// rows over all keys on the right axis (`growth.csv` has every key's growths).
struct RowsFigure<'a> {
    scenario: &'a Scenario,
    run: &'a ShardRun,
}
figure!(RowsFigure);

impl RowsFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let window_s = self.scenario.window as f64 / 1e9;
        let end_s = self.scenario.duration_s();
        let steps = |value: fn(&WindowRow) -> f64| -> Vec<(f64, f64)> {
            thin(
                self.run
                    .windows
                    .iter()
                    .enumerate()
                    .flat_map(|(i, w)| {
                        let (start, end) = (i as f64 * window_s, (i + 1) as f64 * window_s);
                        [(start, value(w)), (end, value(w))]
                    })
                    .collect(),
            )
        };
        let hot = steps(|w| f64::from(w.hot_key_rows));
        let many_keys = self.scenario.key_count() > 1;
        let total = if many_keys {
            steps(|w| f64::from(w.rows))
        } else {
            Vec::new()
        };
        let hot_top = hot.iter().map(|p| p.1).fold(1.0, f64::max) * 1.15;
        let total_top = total.iter().map(|p| p.1).fold(1.0, f64::max) * 1.15;
        let mut legend = Legend::default();
        legend.add("busiest key's rows (window end)", Mark::Line(PALETTE[4]));
        if many_keys {
            legend.add("rows over all keys (right axis)", Mark::Dashed(PALETTE[7]));
        }
        let (plot_area, legend_area) = legend.split(root);
        let caption = title(self.scenario, "adaptive rows over time");
        let mut chart = build(&plot_area, caption, 0.0..end_s, 0.0..hot_top, many_keys)?
            .set_secondary_coord(0.0..end_s, 0.0..total_top);
        draw_mesh(
            &mut chart,
            "time (s)",
            "rows of the busiest key",
            &|v| number(*v),
            &|v| number(*v),
        )?;
        if many_keys {
            chart
                .configure_secondary_axes()
                .y_desc("rows over all keys")
                .y_label_formatter(&|v| number(*v))
                .label_style((FONT, 18))
                .axis_desc_style((FONT, 22))
                .draw()?;
            chart.draw_secondary_series(DashedLineSeries::new(
                total,
                12,
                8,
                PALETTE[7].stroke_width(2),
            ))?;
        }
        draw_time_line(&mut chart, hot, PALETTE[4].stroke_width(3))?;
        legend.draw(&legend_area)
    }
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

/// Likes held in batching servers' memory over time (the same for every shard count).
struct AtRiskFigure<'a> {
    scenario: &'a Scenario,
    runs: &'a [ShardRun],
}
figure!(AtRiskFigure);

impl AtRiskFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let window_s = self.scenario.window as f64 / 1e9;
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
            .features
            .batching
            .iter()
            .flat_map(|b| b.crashes.iter().map(|c| c.at as f64 / 1e9))
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
        draw_instants(&mut chart, &crashes, y.range(), (10, 6, 2))?;
        for (_, points) in &lines {
            let plotted = points.iter().map(|&(t, v)| (t, y.to_plot(v)));
            draw_time_line(&mut chart, plotted.collect(), PALETTE[0].stroke_width(2))?;
        }
        legend.draw(&legend_area)
    }
}

/// Marks each of `instants` (s) with a dashed vertical line across `y` — (dash, gap, width).
fn draw_instants<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    instants: &[f64],
    y: std::ops::Range<f64>,
    (dash, gap, width): (u32, u32, u32),
) -> DrawResult<DB> {
    for &at in instants {
        chart.draw_series(DashedLineSeries::new(
            vec![(at, y.start), (at, y.end)],
            dash,
            gap,
            PALETTE[3].stroke_width(width),
        ))?;
    }
    Ok(())
}

/// A line's (time, value) points.
type Points = Vec<(f64, f64)>;

/// Stored likes the count misses over time, per shard count (shard counts whose lines
/// coincide share one), with the reconciliation's pass times.
struct DriftFigure<'a> {
    scenario: &'a Scenario,
    runs: &'a [ShardRun],
}
figure!(DriftFigure);

impl DriftFigure<'_> {
    /// One line per distinct drift series, labelled with every shard count that has it.
    fn lines(&self) -> Vec<(String, Vec<(f64, f64)>)> {
        let window_s = self.scenario.window as f64 / 1e9;
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
            .likes
            .as_ref()
            .and_then(|l| l.reconcile)
            .map(|r| {
                let every = r.every as f64 / 1e9;
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
        draw_instants(&mut chart, &passes, y.range(), (3, 5, 1))?;
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

/// The calibration chart: measured and fitted throughput against client count, per row count.
pub fn calibration_chart(calibration: &crate::calibrate::Calibration) -> Result<Chart, String> {
    register_bundled_font();
    render("calibration", &CalibrationFigure { calibration })
}

struct CalibrationFigure<'a> {
    calibration: &'a crate::calibrate::Calibration,
}
figure!(CalibrationFigure);

impl CalibrationFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        // The closed loops: the open stream has no client count.
        let runs: Vec<&crate::calibrate::CalibrationRun> = self
            .calibration
            .runs
            .iter()
            .filter(|r| r.load.rate_per_s.is_none())
            .collect();
        let mut row_counts: Vec<u32> = runs.iter().map(|r| r.load.rows).collect();
        row_counts.sort_unstable();
        row_counts.dedup();
        let y = Axis::fit(
            runs.iter()
                .copied()
                .chain(&self.calibration.again)
                .flat_map(|r| [r.measured.tps, r.fitted.tps])
                .chain(std::iter::once(0.0)),
        );
        let mut legend = Legend::default();
        let series: Vec<(u32, RGBColor)> = row_counts
            .iter()
            .enumerate()
            .map(|(i, &rows)| (rows, PALETTE[i % PALETTE.len()]))
            .collect();
        for &(rows, colour) in &series {
            let noun = if rows == 1 { "row" } else { "rows" };
            legend.add(format!("{rows} {noun}: measured"), Mark::Line(colour));
            legend.add(format!("{rows} {noun}: fitted"), Mark::Dashed(colour));
        }
        // The busiest loop measured again at the end: a ring in its series' colour, its
        // distance from the first measurement how far the database moved by itself.
        let again = self.calibration.again.as_ref().map(|run| {
            let colour = series
                .iter()
                .find(|&&(rows, _)| rows == run.load.rows)
                .map_or(PALETTE[0], |&(_, colour)| colour);
            legend.add(
                format!(
                    "{} rows, {} clients: measured again at the end",
                    run.load.rows, run.load.clients
                ),
                Mark::Ring(colour),
            );
            (run, colour)
        });
        let (plot_area, legend_area) = legend.split(root);
        let clients: Vec<u32> = runs.iter().map(|r| r.load.clients).collect();
        let caption = format!(
            "calibration (synchronous_commit = {}): throughput against clients",
            self.calibration.synchronous_commit
        );
        let mut chart = log2_plot(
            &plot_area,
            caption,
            (shard_range(&clients), "clients (closed loop, log scale)"),
            (y, "updates per second"),
        )?;
        for &(rows, colour) in &series {
            let of = |value: &dyn Fn(&crate::calibrate::CalibrationRun) -> f64| -> Vec<(f64, f64)> {
                runs.iter()
                    .filter(|r| r.load.rows == rows)
                    .map(|r| (f64::from(r.load.clients).log2(), y.to_plot(value(r))))
                    .collect()
            };
            draw_marked(&mut chart, of(&|r| r.measured.tps), Mark::Line(colour))?;
            draw_marked(&mut chart, of(&|r| r.fitted.tps), Mark::Dashed(colour))?;
        }
        if let Some((run, colour)) = again {
            let at = (
                f64::from(run.load.clients).log2(),
                y.to_plot(run.measured.tps),
            );
            chart.draw_series(std::iter::once(Circle::new(at, 11, colour.stroke_width(3))))?;
        }
        legend.draw(&legend_area)
    }
}

/// The ring around a validation point whose verdict the model got wrong.
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
        legend.add("fell behind (measured)", Mark::Cross(PALETTE[7]));
        legend.add("the model's verdict differs", Mark::Ring(WRONG));
        legend.add(
            format!("p99 within ±{:.0}% (the tolerance)", 100.0 * self.p99_rel),
            Mark::Fill(TOLERANCE_BAND.to_rgba()),
        );
        let (plot_area, legend_area) = legend.split(root);
        let body = plot_area.margin(12, 0, 0, 0).titled(
            &format!(
                "validation (synchronous_commit = {}): predicted against measured",
                self.validation.synchronous_commit
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
        if point.load.rate_per_s.is_none() {
            PALETTE[0]
        } else {
            PALETTE[1]
        }
    }

    /// Throughput, linear axes: a dot where the database kept up, a cross where it fell
    /// behind, a ring where the model's verdict differs.
    fn draw_throughput<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let points = &self.validation.points;
        let top = points
            .iter()
            .flat_map(|p| [p.measured_tps, p.predicted_tps, p.tps_range().1])
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
            let at = (point.measured_tps, point.predicted_tps);
            let (low, high) = point.tps_range();
            draw_range(&mut chart, (low, high), at.1, colour)?;
            if point.measured_stable {
                chart.draw_series(std::iter::once(Circle::new(at, 7, colour.filled())))?;
            } else {
                chart.draw_series(std::iter::once(Cross::new(at, 9, colour.stroke_width(3))))?;
            }
            if point.measured_stable != point.predicted_stable {
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
            .filter(|p| p.measured_stable && p.predicted_stable)
            .collect();
        let ms = |ns: u64| ns as f64 / 1e6;
        let axis = Axis::fit_waits(judged.iter().flat_map(|p| {
            let (low, high) = p.p99_range();
            [ms(low), ms(high), ms(p.predicted.p99_ns)]
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
                axis.to_plot(ms(point.measured.p99_ns)),
                axis.to_plot(ms(point.predicted.p99_ns)),
            );
            let (low, high) = point.p99_range();
            let bar = (axis.to_plot(ms(low)), axis.to_plot(ms(high)));
            draw_range(&mut chart, bar, at.1, colour)?;
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

    #[test]
    fn axes_turn_logarithmic_when_values_span_decades() {
        let linear = Axis::fit([0.0, 1.0, 20.0].into_iter());
        assert!(!linear.log);
        let log = Axis::fit([0.0, 0.3, 1200.0].into_iter());
        assert!(log.log && log.clamped);
        assert!(!Axis::fit([0.3, 1200.0].into_iter()).clamped);
        assert_eq!((log.floor, log.top), (0.1, 10_000.0));
        assert_eq!(log.to_plot(0.0), -1.0);
        assert_eq!(log.label(3.0), "1k");
        assert_eq!(
            log.label(-1.0),
            "0",
            "only zeros lie below a count axis' floor"
        );
        let ones = Axis::fit([0.0, 1.0, 100.0].into_iter());
        assert_eq!(ones.floor, 0.1, "a 1 stays above the zeros");
        assert_eq!(log.label(0.5), "");
    }

    #[test]
    fn ticks_use_one_notation_and_waits_read_as_durations() {
        assert_eq!(number(100_000.0), "100k");
        assert_eq!(number(1e6), "1M");
        assert_eq!(number(2500.0), "2.5k");
        assert_eq!(number(0.25), "0.25");
        let waits = Axis::fit_waits([0.0, 0.0001, 0.3, 1.4e6].into_iter());
        assert!(waits.log);
        assert!(
            waits.floor >= 1e-3,
            "sub-microsecond waits sit on the floor"
        );
        assert_eq!(waits.label(3.0), "1 s");
        assert_eq!(waits.label(0.0), "1 ms");
        assert_eq!(waits.label(5.0), "100 s", "not 1.67 min");
        assert_eq!(waits.label(7.0), "10,000 s", "not 2.78 h");
    }

    #[test]
    fn a_line_covered_by_a_later_one_is_named_under_it() {
        let lines = vec![vec![63.0, 63.0], vec![63.0, 63.05], vec![50.0, 51.0]];
        assert_eq!(hidden_under(&lines, 0, 0.1), Some(1));
        assert_eq!(hidden_under(&lines, 1, 0.1), None);
        assert_eq!(hidden_under(&lines, 2, 0.1), None);
    }

    fn sweep_row(values: &[&str], recommended: Option<u32>) -> super::super::grid::SweepRow {
        super::super::grid::SweepRow {
            values: values.iter().map(|v| (*v).to_owned()).collect(),
            policy: "random".into(),
            recommended,
            p99_ms: recommended.map(|_| 1.0),
        }
    }

    #[test]
    fn sweep_charts_name_their_fields_key_their_colours_and_place_none() {
        let fields = vec!["hold.ms".to_owned(), "arrivals.scale".to_owned()];
        let rows = [
            sweep_row(&["1", "1"], Some(8)),
            sweep_row(&["1", "2"], Some(16)),
            sweep_row(&["2", "1"], Some(16)),
            sweep_row(&["2", "2"], None),
        ];
        let heat = &sweep_charts(&fields, &rows).unwrap()[0].svg;
        for text in [
            "mean hold of a row, ms (hold.ms)",
            "(arrivals.scale)",
            "8 shards",
            "16 shards",
            "none meets the target",
        ] {
            assert!(heat.contains(text), "{text}");
        }
        let one = [
            sweep_row(&["post"], None),
            sweep_row(&["post_user"], Some(8)),
        ];
        let fields = ["likes_table.partition_by".to_owned()];
        let line = &sweep_charts(&fields, &one).unwrap()[0].svg;
        for text in [
            "\nnone\n",
            "\n4\n",
            "\n8\n",
            "\n16\n",
            "likes table partitioned by",
        ] {
            assert!(line.contains(text), "{text}");
        }
    }

    #[test]
    fn coinciding_lines_are_found() {
        assert!(coincide(&[1.0, 100.0], &[1.01, 100.5]));
        assert!(!coincide(&[1.0, 100.0], &[1.0, 90.0]));
    }

    #[test]
    fn shard_axes_label_whole_counts_only() {
        assert_eq!(shard_label(4.0), "16");
        assert_eq!(shard_label(0.5), "");
    }

    #[test]
    fn long_series_are_thinned_to_bucket_maxima() {
        let points: Vec<(f64, f64)> = (0..3000).map(|i| (i as f64, (i % 7) as f64)).collect();
        let thinned = thin(points);
        assert_eq!(thinned.len(), 1500);
        assert!(thinned.iter().all(|p| p.1 >= 1.0));
    }
}

/// The sweep's charts (see [`super::grid`]): per policy, a heat map of the recommended shard
/// count over two swept fields (`sweep`, or `sweep-<policy>` with several policies); over one
/// swept field, one chart with a line per policy. None for three or more fields (the terminal's
/// list and `sweep.csv` hold them).
pub fn sweep_charts(
    fields: &[String],
    rows: &[super::grid::SweepRow],
) -> Result<Vec<Chart>, String> {
    register_bundled_font();
    let policies = super::grid::policies(rows);
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
    rows: &'a [super::grid::SweepRow],
    policy: &'a str,
}
figure!(HeatFigure);

impl HeatFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let of: Vec<&super::grid::SweepRow> = self
            .rows
            .iter()
            .filter(|r| r.policy == self.policy)
            .collect();
        let across = super::grid::distinct(of.iter().map(|r| r.values[1].as_str()));
        let down = super::grid::distinct(of.iter().map(|r| r.values[0].as_str()));
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
        // The colour key: every recommended count's colour, and the grey of none.
        let mut legend = Legend::default();
        let mut shown: Vec<u32> = counts.clone();
        shown.sort_unstable();
        shown.dedup();
        for &n in &shown {
            legend.add(
                format!("{n} {}", if n == 1 { "shard" } else { "shards" }),
                Mark::Fill(heat_colour(share(n)).mix(1.0)),
            );
        }
        if of.iter().any(|r| r.recommended.is_none()) {
            legend.add(
                "none meets the target",
                Mark::Fill(RGBColor(220, 220, 220).mix(1.0)),
            );
        }
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
                let (x, y) = (x as i32, y as i32);
                let (fill, text) = match row.recommended {
                    Some(n) => (heat_colour(share(n)), n.to_string()),
                    None => (RGBColor(220, 220, 220), "none".to_owned()),
                };
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
            }
        }
        legend.draw(&legend_area)
    }
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
    rows: &'a [super::grid::SweepRow],
}
figure!(SweepLineFigure);

impl SweepLineFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let values = super::grid::distinct(self.rows.iter().map(|r| r.values[0].as_str()));
        let policies = super::grid::policies(self.rows);
        let mut legend = Legend::default();
        for (i, policy) in policies.iter().enumerate() {
            legend.add(
                format!("policy {policy}"),
                Mark::Line(PALETTE[i % PALETTE.len()]),
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
            let wider = (policies.len() - 1 - i) as u32;
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
            // "none" row, labelled, in the policy's colour (stacked when several policies miss).
            let top = none_row - 0.12 * i as f64;
            for (x, value) in values.iter().enumerate() {
                let unmet = self.rows.iter().any(|r| {
                    r.policy == *policy && r.values[0] == *value && r.recommended.is_none()
                });
                if unmet {
                    let at = (SegmentValue::CenterOf(x as i32), top);
                    chart.draw_series(std::iter::once(
                        EmptyElement::at(at)
                            + Cross::new((0, 0), 9, colour.stroke_width(3))
                            + Text::new(
                                "no simulated count meets the target",
                                (16, -9),
                                (FONT, 18).into_font().color(&colour),
                            ),
                    ))?;
                }
            }
        }
        legend.draw(&legend_area)
    }
}
