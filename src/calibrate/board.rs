//! The AprilGrid calibration board (Kalibr's target): a grid of AprilTags whose corners are the
//! calibration points.
//!
//! Board frame: origin at the outer corner of tag 0 (bottom left), x along a row, y up the
//! columns, z out of the printed face towards whoever looks at it. Tag `i` sits at column
//! `i % cols`, row `i / cols`; its corners carry ids `4 i + k`, `k` counting bottom-left,
//! bottom-right, top-right, top-left, as Kalibr numbers them.

use std::fmt;
use std::str::FromStr;

use nalgebra::Point3;

/// Why a board description is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BoardError {
    /// The text is not `aprilgrid:ROWSxCOLS:TAG_SIZE_M:SPACING`.
    #[error("board `{text}`: expected `aprilgrid:ROWSxCOLS:TAG_SIZE_M:SPACING` (for example aprilgrid:6x6:0.088:0.3), {why}")]
    Syntax {
        /// The text given.
        text: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A dimension out of range.
    #[error("board `{field}` = {value}: expected {expected}")]
    BadField {
        /// The field.
        field: &'static str,
        /// The value given.
        value: f64,
        /// What was expected.
        expected: &'static str,
    },
}

/// Most tags along a side: Kalibr's boards are 6x6 to 10x10; more than 64 is not a board.
pub const MAX_TAGS_PER_SIDE: u32 = 64;

/// An AprilGrid: `rows x cols` tags of side `tag_size` metres, `spacing` times the tag side
/// between neighbouring tags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AprilGrid {
    rows: u32,
    cols: u32,
    tag_size: f64,
    spacing: f64,
}

impl AprilGrid {
    /// A board of `rows x cols` tags, `tag_size` metres a side, gaps of `spacing` tag sides.
    ///
    /// # Errors
    /// [`BoardError::BadField`] for a side outside 1..=[`MAX_TAGS_PER_SIDE`] tags, a tag size
    /// that is not positive (or over 2 m), or a spacing outside [0, 10].
    pub fn new(rows: u32, cols: u32, tag_size: f64, spacing: f64) -> Result<Self, BoardError> {
        for (field, v) in [("rows", rows), ("cols", cols)] {
            if !(1..=MAX_TAGS_PER_SIDE).contains(&v) {
                return Err(BoardError::BadField {
                    field,
                    value: f64::from(v),
                    expected: "from 1 to 64 tags",
                });
            }
        }
        if !(tag_size.is_finite() && tag_size > 0.0 && tag_size <= 2.0) {
            return Err(BoardError::BadField {
                field: "tag_size",
                value: tag_size,
                expected: "a side in metres, above 0 and at most 2",
            });
        }
        if !(spacing.is_finite() && (0.0..=10.0).contains(&spacing)) {
            return Err(BoardError::BadField {
                field: "spacing",
                value: spacing,
                expected: "a ratio of the tag side from 0 to 10",
            });
        }
        Ok(Self {
            rows,
            cols,
            tag_size,
            spacing,
        })
    }

    /// Tag rows.
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// Tag columns.
    pub fn cols(&self) -> u32 {
        self.cols
    }

    /// Tag side in metres.
    pub fn tag_size(&self) -> f64 {
        self.tag_size
    }

    /// Gap between tags as a ratio of the tag side.
    pub fn spacing(&self) -> f64 {
        self.spacing
    }

    /// Number of tags.
    pub fn tags(&self) -> u32 {
        self.rows * self.cols
    }

    /// Number of corners (four per tag); corner ids run from 0 to this, exclusive.
    pub fn corners(&self) -> u32 {
        4 * self.tags()
    }

    /// The board's extent along x and y in metres.
    pub fn extent(&self) -> (f64, f64) {
        let pitch = self.tag_size * (1.0 + self.spacing);
        let side = |n: u32| f64::from(n) * pitch - self.tag_size * self.spacing;
        (side(self.cols), side(self.rows))
    }

    /// The board-frame position of corner `id`, `None` past the last corner.
    pub fn corner(&self, id: u32) -> Option<Point3<f64>> {
        if id >= self.corners() {
            return None;
        }
        let (tag, k) = (id / 4, id % 4);
        let pitch = self.tag_size * (1.0 + self.spacing);
        let x0 = f64::from(tag % self.cols) * pitch;
        let y0 = f64::from(tag / self.cols) * pitch;
        let (dx, dy) = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)][k as usize];
        Some(Point3::new(
            x0 + dx * self.tag_size,
            y0 + dy * self.tag_size,
            0.0,
        ))
    }

    /// The board's centre in its own frame.
    pub fn centre(&self) -> Point3<f64> {
        let (w, h) = self.extent();
        Point3::new(w / 2.0, h / 2.0, 0.0)
    }
}

impl fmt::Display for AprilGrid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "aprilgrid:{}x{}:{}:{}",
            self.rows, self.cols, self.tag_size, self.spacing
        )
    }
}

impl FromStr for AprilGrid {
    type Err = BoardError;

    /// Parses `aprilgrid:ROWSxCOLS:TAG_SIZE_M:SPACING`, the form `--board` takes.
    fn from_str(text: &str) -> Result<Self, BoardError> {
        let syntax = |why| BoardError::Syntax {
            text: text.to_owned(),
            why,
        };
        let parts: Vec<&str> = text.trim().split(':').collect();
        let [kind, grid, size, spacing] = parts[..] else {
            return Err(syntax("four fields separated by `:`"));
        };
        if !kind.eq_ignore_ascii_case("aprilgrid") {
            return Err(syntax("the only board kind is `aprilgrid`"));
        }
        let (rows, cols) = grid
            .split_once(['x', 'X'])
            .ok_or_else(|| syntax("the grid as ROWSxCOLS"))?;
        let count = |s: &str| s.parse::<u32>().map_err(|_| syntax("whole tag counts"));
        let metres = |s: &str| s.parse::<f64>().map_err(|_| syntax("decimal numbers"));
        Self::new(count(rows)?, count(cols)?, metres(size)?, metres(spacing)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kalibr_board_geometry() {
        let b: AprilGrid = "aprilgrid:6x6:0.088:0.3".parse().unwrap();
        assert_eq!((b.tags(), b.corners()), (36, 144));
        // Tag 0's corners run counter-clockwise from the origin.
        assert_eq!(b.corner(0).unwrap(), Point3::origin());
        assert!((b.corner(2).unwrap() - Point3::new(0.088, 0.088, 0.0)).norm() < 1e-12);
        // Tag 7 is row 1, column 1: one pitch (0.088 * 1.3) along both axes.
        let p = b.corner(28).unwrap();
        assert!((p - Point3::new(0.1144, 0.1144, 0.0)).norm() < 1e-12, "{p}");
        let (w, h) = b.extent();
        assert!((w - (6.0 * 0.1144 - 0.0264)).abs() < 1e-12 && (w - h).abs() < 1e-12);
        assert!(b.corner(144).is_none());
        assert_eq!(b.to_string().parse::<AprilGrid>().unwrap(), b);
    }

    #[test]
    fn bad_boards_are_named() {
        for (text, word) in [
            ("aprilgrid:6x6:0.088", "four fields"),
            ("chessboard:6x6:0.088:0.3", "aprilgrid"),
            ("aprilgrid:6by6:0.088:0.3", "ROWSxCOLS"),
            ("aprilgrid:6x6:big:0.3", "decimal"),
            ("aprilgrid:0x6:0.088:0.3", "rows"),
            ("aprilgrid:6x6:-0.088:0.3", "tag_size"),
            ("aprilgrid:6x6:0.088:NaN", "spacing"),
        ] {
            let err = text.parse::<AprilGrid>().unwrap_err().to_string();
            assert!(err.contains(word), "{text}: {err}");
        }
    }
}
