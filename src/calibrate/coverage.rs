//! What a camera's board views cover: which regions of the image the corners have fallen in,
//! and which ways the board has been tilted. It drives the status line while capturing.
//!
//! Intrinsics are only as good as this coverage. Where no corner falls, the distortion
//! polynomial is extrapolated, and the frame's corners are where it bends most. Without
//! tilt, the focal length trades against the board's distance. So the capture goes on until
//! every region holds corners and the board has been tilted each way, and, for a narrow lens
//! whose principal point rests on the board's perspective alone, until the views pin the
//! principal point (its standard deviation, solved from the views as they come).

use std::fmt;

use nalgebra::{Matrix3, Point2, Vector3};

use super::board::AprilGrid;
use super::homography::{homography, pose_from_homography};
use super::BoardView;

/// Regions across and down the image: five, so that the corner regions reach into the
/// frame's corners, where the lens bends most.
pub const GRID: usize = 5;

/// Corners a region needs before it counts as covered.
pub const CORNERS_PER_REGION: usize = 100;

/// Views a way of tilting needs before it counts as covered.
pub const VIEWS_PER_TILT: usize = 2;

/// A way the board is tilted from square to the camera, seen from the camera.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tilt {
    /// The board's face turned towards the image's left.
    Left,
    /// Towards the right.
    Right,
    /// Towards the top.
    Up,
    /// Towards the bottom.
    Down,
}

impl Tilt {
    /// Every way, in the order the status line names them.
    pub const ALL: [Tilt; 4] = [Tilt::Left, Tilt::Right, Tilt::Up, Tilt::Down];

    /// The way's name.
    pub fn name(self) -> &'static str {
        match self {
            Tilt::Left => "left",
            Tilt::Right => "right",
            Tilt::Up => "up",
            Tilt::Down => "down",
        }
    }

    /// The board normal's direction in camera coordinates (x right, y down) this way turns
    /// the face towards.
    pub fn direction(self) -> (f64, f64) {
        match self {
            Tilt::Left => (-1.0, 0.0),
            Tilt::Right => (1.0, 0.0),
            Tilt::Up => (0.0, -1.0),
            Tilt::Down => (0.0, 1.0),
        }
    }
}

/// An image region: `col`, `row` in `0..GRID`, from the top left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Column, from the left.
    pub col: usize,
    /// Row, from the top.
    pub row: usize,
}

impl Region {
    /// The region's centre as a fraction of the image's width and height.
    pub fn centre(self) -> (f64, f64) {
        let f = |i: usize| (i as f64 + 0.5) / GRID as f64;
        (f(self.col), f(self.row))
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const ROWS: [&str; GRID] = ["top", "upper", "middle", "lower", "bottom"];
        const COLS: [&str; GRID] = ["left", "left-centre", "centre", "right-centre", "right"];
        let (row, col) = (ROWS[self.row.min(GRID - 1)], COLS[self.col.min(GRID - 1)]);
        match (row, col) {
            ("middle", "centre") => f.write_str("centre"),
            (r, c) => write!(f, "{r} {c}"),
        }
    }
}

/// One camera's coverage so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    size: (u32, u32),
    min_tilt_deg: f64,
    corners: [[usize; GRID]; GRID],
    tilts: [usize; 4],
    views: usize,
    /// The principal point's standard deviation last solved from the views, and its limit
    /// (pixels).
    principal: Option<(f64, f64)>,
}

impl Coverage {
    /// No views yet, for an image of `size` (pixels); a view counts as tilted one way when
    /// its board leans `min_tilt_deg` or more that way.
    pub fn new(size: (u32, u32), min_tilt_deg: f64) -> Self {
        Self {
            size,
            min_tilt_deg,
            corners: [[0; GRID]; GRID],
            tilts: [0; 4],
            views: 0,
            principal: None,
        }
    }

    /// Records how far the views solved so far pin the principal point (its standard
    /// deviation, pixels) against the calibration's limit.
    pub fn set_principal_std(&mut self, std_px: f64, limit_px: f64) {
        self.principal = Some((std_px, limit_px));
    }

    /// The principal point's standard deviation last recorded, pixels.
    pub fn principal_std_px(&self) -> Option<f64> {
        self.principal.map(|(std_px, _)| std_px)
    }

    /// Adds a view. Its tilt comes from the view's homography with a nominal focal length of
    /// the image's width: the way the board leans does not depend on the focal length, only
    /// how far. A view whose corners fix no homography adds its corners only.
    pub fn add(&mut self, board: &AprilGrid, view: &BoardView) {
        let (w, h) = (f64::from(self.size.0), f64::from(self.size.1));
        for c in &view.corners {
            let col = ((c.pixel.x / w) * GRID as f64).floor();
            let row = ((c.pixel.y / h) * GRID as f64).floor();
            if (0.0..GRID as f64).contains(&col) && (0.0..GRID as f64).contains(&row) {
                self.corners[row as usize][col as usize] += 1;
            }
        }
        self.views += 1;
        let (from, to): (Vec<_>, Vec<_>) = view
            .corners
            .iter()
            .filter_map(|c| board.corner(c.id).map(|p| (Point2::new(p.x, p.y), c.pixel)))
            .unzip();
        let k = Matrix3::new(w, 0.0, w / 2.0, 0.0, w, h / 2.0, 0.0, 0.0, 1.0);
        let Some(pose) = homography(&from, &to).and_then(|hm| pose_from_homography(&hm, &k)) else {
            return;
        };
        // The face's normal, turned to point at the camera.
        let mut n = pose.rotation * Vector3::z();
        if n.z > 0.0 {
            n = -n;
        }
        let lean = self.min_tilt_deg.to_radians().sin();
        for (i, t) in Tilt::ALL.iter().enumerate() {
            let (dx, dy) = t.direction();
            if n.x * dx + n.y * dy >= lean {
                self.tilts[i] += 1;
            }
        }
    }

    /// Views added.
    pub fn views(&self) -> usize {
        self.views
    }

    /// The regions still short of [`CORNERS_PER_REGION`] corners, fewest first.
    pub fn missing_regions(&self) -> Vec<Region> {
        let mut out: Vec<(usize, Region)> = (0..GRID)
            .flat_map(|row| (0..GRID).map(move |col| Region { col, row }))
            .map(|r| (self.corners[r.row][r.col], r))
            .filter(|(n, _)| *n < CORNERS_PER_REGION)
            .collect();
        out.sort_by_key(|(n, r)| (*n, r.row, r.col));
        out.into_iter().map(|(_, r)| r).collect()
    }

    /// The ways of tilting still short of [`VIEWS_PER_TILT`] views.
    pub fn missing_tilts(&self) -> Vec<Tilt> {
        Tilt::ALL
            .iter()
            .zip(self.tilts)
            .filter(|(_, n)| *n < VIEWS_PER_TILT)
            .map(|(t, _)| *t)
            .collect()
    }

    /// Whether every region and every way of tilting is covered, and the principal point,
    /// where recorded, is pinned within its limit.
    pub fn complete(&self) -> bool {
        self.missing_regions().is_empty()
            && self.missing_tilts().is_empty()
            && self.principal.is_none_or(|(std_px, limit)| std_px <= limit)
    }
}

/// Missing regions a status line names before it says how many more.
const SHOWN_REGIONS: usize = 3;

impl fmt::Display for Coverage {
    /// The status line's part for one camera: views, regions covered and what is missing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let regions = self.missing_regions();
        let tilts = self.missing_tilts();
        write!(
            f,
            "{} views, {}/{} regions",
            self.views,
            GRID * GRID - regions.len(),
            GRID * GRID
        )?;
        if regions.is_empty() && tilts.is_empty() {
            f.write_str(", covered")?;
        }
        if !regions.is_empty() {
            // A status line stays on one row: the first few regions, and how many more.
            let names: Vec<String> = regions
                .iter()
                .take(SHOWN_REGIONS)
                .map(Region::to_string)
                .collect();
            write!(f, "; corners needed at the {}", names.join(", "))?;
            if regions.len() > SHOWN_REGIONS {
                write!(f, " and {} more", regions.len() - SHOWN_REGIONS)?;
            }
        }
        if !tilts.is_empty() {
            let names: Vec<&str> = tilts.iter().map(|t| t.name()).collect();
            write!(
                f,
                "; tilt the board {} by {:.0} degrees or more",
                names.join(", "),
                self.min_tilt_deg
            )?;
        }
        match self.principal {
            Some((std_px, limit)) if std_px > limit => write!(
                f,
                "; principal point to {std_px:.2} px, {limit:.2} needed: more views filling the frame, tilted 30 to 50 degrees"
            ),
            Some((std_px, _)) => write!(f, ", principal point to {std_px:.2} px"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};
    use rand::SeedableRng;
    use rand_distr::Normal;

    use super::*;
    use crate::calibrate::synthetic::observe;
    use crate::geom::Camera;

    fn board() -> AprilGrid {
        "aprilgrid:6x6:0.088:0.3".parse().unwrap()
    }

    /// A camera at the origin looking down +z, and the board `at` metres in front turned by
    /// `turn` (a rotation vector).
    fn view_of(at: Vector3<f64>, turn: Vector3<f64>) -> BoardView {
        let cam = Camera::new(
            [240.0, 240.0, 144.0, 144.0],
            (288, 288),
            Default::default(),
            nalgebra::Rotation3::identity(),
            Vector3::zeros(),
        )
        .unwrap();
        let b = board();
        // Face towards the camera (-z), centred at `at`.
        let rot = UnitQuaternion::from_scaled_axis(turn)
            * UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::PI);
        let t = at - rot * b.centre().coords;
        let pose = Isometry3::from_parts(Translation3::from(t), rot);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let still = Normal::new(0.0, 0.0).unwrap();
        BoardView {
            camera: 0,
            pose: 0,
            corners: observe(&b, &cam, &pose, &still, &mut rng),
        }
    }

    #[test]
    fn centred_square_views_leave_the_rest_missing() {
        let mut c = Coverage::new((288, 288), 15.0);
        for _ in 0..20 {
            c.add(
                &board(),
                &view_of(Vector3::new(0.0, 0.0, 1.5), Vector3::zeros()),
            );
        }
        assert_eq!(c.views(), 20);
        let missing = c.missing_regions();
        assert!(missing.contains(&Region { col: 0, row: 0 }));
        assert!(!missing.contains(&Region { col: 2, row: 2 }), "{c}");
        assert_eq!(c.missing_tilts(), Tilt::ALL.to_vec());
        assert!(!c.complete());
        let line = c.to_string();
        assert!(line.contains("corners needed at the top left"), "{line}");
        // Three regions named, the rest counted: the line stays on one row.
        let more = format!(" and {} more;", missing.len() - 3);
        assert!(missing.len() > 3 && line.contains(&more), "{line}");
        assert!(
            line.contains("tilt the board left, right, up, down by 15 degrees"),
            "{line}"
        );
    }

    #[test]
    fn tilts_are_told_apart() {
        let mut c = Coverage::new((288, 288), 15.0);
        // Turned about the vertical axis: the face looks to one side only.
        for _ in 0..VIEWS_PER_TILT {
            c.add(
                &board(),
                &view_of(Vector3::new(0.0, 0.0, 1.5), Vector3::new(0.0, 0.5, 0.0)),
            );
        }
        let missing = c.missing_tilts();
        assert_eq!(missing.len(), 3, "{missing:?}");
        assert!(missing.contains(&Tilt::Up) && missing.contains(&Tilt::Down));
        for _ in 0..VIEWS_PER_TILT {
            c.add(
                &board(),
                &view_of(Vector3::new(0.0, 0.0, 1.5), Vector3::new(0.0, -0.5, 0.0)),
            );
        }
        assert_eq!(c.missing_tilts(), vec![Tilt::Up, Tilt::Down]);
    }

    #[test]
    fn a_loose_principal_point_keeps_the_coverage_open() {
        let mut c = Coverage::new((288, 288), 15.0);
        for (at, turn) in [
            (Vector3::new(0.0, 0.0, 1.5), Vector3::new(0.0, 0.5, 0.0)),
            (Vector3::new(0.0, 0.0, 1.5), Vector3::new(0.0, -0.5, 0.0)),
            (Vector3::new(0.0, 0.0, 1.5), Vector3::new(0.5, 0.0, 0.0)),
            (Vector3::new(0.0, 0.0, 1.5), Vector3::new(-0.5, 0.0, 0.0)),
        ] {
            for _ in 0..VIEWS_PER_TILT {
                c.add(&board(), &view_of(at, turn));
            }
        }
        for x in [-0.6, -0.3, 0.0, 0.3, 0.6] {
            for y in [-0.6, -0.3, 0.0, 0.3, 0.6] {
                for _ in 0..4 {
                    c.add(
                        &board(),
                        &view_of(Vector3::new(x, y, 1.2), Vector3::zeros()),
                    );
                }
            }
        }
        assert!(c.missing_regions().is_empty() && c.missing_tilts().is_empty());
        // No estimate yet: the regions and tilts decide.
        assert!(c.complete(), "{c}");
        c.set_principal_std(0.9, 0.5);
        assert!(!c.complete());
        let line = c.to_string();
        assert!(
            line.contains("principal point to 0.90 px, 0.50 needed"),
            "{line}"
        );
        // Control: pinned within the limit, complete again.
        c.set_principal_std(0.3, 0.5);
        assert!(c.complete(), "{c}");
        assert_eq!(c.principal_std_px(), Some(0.3));
        assert!(
            c.to_string()
                .ends_with("covered, principal point to 0.30 px"),
            "{c}"
        );
    }
}
