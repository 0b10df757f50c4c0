//! The legend strip below a chart's plot.

use super::*;

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mark {
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
    /// An open box (a range across by a range up).
    Box(RGBColor),
}

/// Legend entries, drawn in a strip below the plot so they never cover data.
#[derive(Debug, Default)]
pub(super) struct Legend(Vec<(String, Mark)>);

/// Height of one legend row, in pixels.
const LEGEND_ROW: u32 = 30;
/// Width of the legend strip, in pixels.
const LEGEND_WIDTH: u32 = SIZE.0 - 60;

impl Legend {
    pub(super) fn add(&mut self, label: impl Into<String>, mark: Mark) {
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
    pub(super) fn split<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
        let (_, per_row) = self.columns();
        let rows = (self.0.len() as u32).div_ceil(per_row);
        root.split_vertically(SIZE.1 - rows * LEGEND_ROW - 16)
    }

    pub(super) fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
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
                Mark::Box(colour) => area.draw(&Rectangle::new(
                    [(x + 2, y - 9), (x + 30, y + 9)],
                    colour.stroke_width(2),
                ))?,
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
