//! A rendered capture: the cameras' frames of the board rendered
//! ([`crate::calibrate::render`]) and searched for it by the detector, as a rig's frames are,
//! and the board aimed the way a user aims it at a region by the frame's edge.

use nalgebra::{Isometry3, Point2, Point3, Translation3, Vector2, Vector3};
use rand::Rng;
use rand_distr::Normal;

use super::{observe, MIN_CORNERS_PER_VIEW};
use crate::calibrate::board::AprilGrid;
use crate::calibrate::detect::{BoardDetector, Luma};
use crate::calibrate::render::{Look, Pattern, Renderer};
use crate::calibrate::{Corner, CornerMeans};
use crate::geom::Camera;

/// The cameras' frames of the board, rendered and searched for its corners.
pub(super) struct Film {
    board: AprilGrid,
    pattern: Option<Pattern>,
    renderers: Vec<Renderer>,
    detector: BoardDetector,
    look: Look,
}

impl Film {
    pub(super) fn new(board: &AprilGrid, cameras: &[Camera], look: Look) -> Self {
        Self {
            board: *board,
            pattern: Pattern::new(board).ok(),
            renderers: cameras.iter().map(|c| Renderer::new(c, 3)).collect(),
            detector: BoardDetector::new(board),
            look,
        }
    }

    /// The corners camera `c` finds of the board at `pose`, averaged over `frames` frames of
    /// it lying still (each with its own sensor noise; a corner missed in any frame is left
    /// out). No frame is rendered of a board the camera cannot see.
    pub(super) fn shoot<R: Rng>(
        &mut self,
        c: usize,
        pose: &Isometry3<f64>,
        frames: usize,
        rng: &mut R,
    ) -> Vec<Corner> {
        let (Some(pattern), Some(renderer)) = (&self.pattern, self.renderers.get(c)) else {
            return Vec::new();
        };
        let camera = renderer.camera();
        let still = Normal::new(0.0, 0.0).unwrap_or_else(|_| unreachable!());
        if observe(&self.board, camera, pose, &still, rng).len() < MIN_CORNERS_PER_VIEW {
            return Vec::new();
        }
        let name = format!("camera {c}");
        let mut means = CornerMeans::default();
        let frames = frames.max(1);
        for _ in 0..frames {
            let pixels = renderer.render(pattern, pose, &self.look, rng);
            let luma = Luma {
                width: camera.width,
                height: camera.height,
                pixels,
            };
            for corner in self.detector.detect(&name, luma).unwrap_or_default() {
                means.add(corner.id, corner.pixel);
            }
        }
        means.means(frames)
    }
}

/// `pose` moved in the board's plane so that the tag whose image lies farthest from the
/// frame's centre towards `aim` has its centre at `at` (the point `aim` looks at).
pub(super) fn edge_tag_at(
    board: &AprilGrid,
    camera: &Camera,
    pose: &Isometry3<f64>,
    at: &Point3<f64>,
    aim: &Point2<f64>,
) -> Isometry3<f64> {
    let middle = Vector2::new(f64::from(camera.width), f64::from(camera.height)) / 2.0;
    let out = aim.coords - middle;
    let tag_centre = |t: u32| -> Option<Point3<f64>> {
        let corners: Option<Vec<_>> = (0..4).map(|k| board.corner(4 * t + k)).collect();
        corners.map(|c| Point3::from(c.iter().map(|p| p.coords).sum::<Vector3<f64>>() / 4.0))
    };
    let outermost = (0..board.tags())
        .filter_map(|t| {
            let world = pose * tag_centre(t)?;
            let px = camera.project(&world)?;
            Some((out.dot(&(px.coords - middle)), world))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match outermost {
        Some((_, world)) if out.norm() > 1.0 => Isometry3::from_parts(
            Translation3::from(pose.translation.vector + (at - world)),
            pose.rotation,
        ),
        _ => *pose,
    }
}
