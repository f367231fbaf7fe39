//! The capture as it is shot: where the board is held before each camera, through the rig's
//! middle and on the floor, and what each camera finds of it. One random stream draws the
//! poses and the corners' noise in that order; a second, quiet one draws what the holder
//! judges the poses on, so that following the status line leaves the noise as it would be.

use std::collections::HashMap;

use nalgebra::{Isometry3, Point2, Point3, Vector3};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::Normal;

use super::super::board::AprilGrid;
use super::super::coverage::{Coverage, Region, GRID};
use super::super::extrinsics::Anchor;
use super::super::{BoardView, Corner};
use super::film::{edge_tag_at, Film};
use super::{
    capture_volume, centre, facing, observe, tilt, CaptureSpec, COVERAGE_TILT_DEG, FLOOR_Z,
    MIN_CORNERS_PER_VIEW,
};
use crate::geom::Camera;

/// Farthest from a camera the board is held (metres): across the demo rig, whose body
/// cameras stand 2.6 m from its middle.
const REACH_M: f64 = 5.0;

/// Places tried for each shared pose before the last is kept.
const SHARED_TRIES: usize = 20;

/// A capture being shot.
pub(super) struct Shoot<'a> {
    board: &'a AprilGrid,
    cameras: &'a [Camera],
    spec: &'a CaptureSpec,
    /// Draws the poses and the corners' noise.
    rng: StdRng,
    /// Draws the noiseless corners the coverage and the shared poses are judged on.
    quiet: StdRng,
    /// The corners' noise in one frame.
    noise: Normal<f64>,
    /// The same averaged over a still pose's `spec.anchor_frames` frames.
    averaged: Normal<f64>,
    /// No noise.
    still: Normal<f64>,
    /// Rendered, the status line follows what the detector finds, and those views are kept.
    film: Option<Film>,
    /// Rendered views already shot, by instant and camera.
    shot: HashMap<(usize, usize), Vec<Corner>>,
    centres: Vec<Point3<f64>>,
    /// The middle of the capture volume ([`capture_volume`]).
    middle: Vector3<f64>,
    /// The board's poses, one per instant, in the order they are held.
    pub(super) poses: Vec<Isometry3<f64>>,
}

impl<'a> Shoot<'a> {
    pub(super) fn new(board: &'a AprilGrid, cameras: &'a [Camera], spec: &'a CaptureSpec) -> Self {
        let sigma = if spec.noise_px.is_finite() {
            spec.noise_px.max(0.0)
        } else {
            0.0
        };
        let frames = spec.anchor_frames.max(1) as f64;
        Self {
            board,
            cameras,
            spec,
            rng: StdRng::seed_from_u64(spec.seed),
            quiet: StdRng::seed_from_u64(spec.seed ^ 0x5eed),
            noise: gaussian(sigma),
            averaged: gaussian(sigma / frames.sqrt()),
            still: gaussian(0.0),
            film: spec.render.map(|look| Film::new(board, cameras, look)),
            shot: HashMap::new(),
            centres: cameras.iter().map(centre).collect(),
            middle: capture_volume(cameras),
            poses: Vec::new(),
        }
    }

    /// `spec.poses_per_camera` poses before camera `c`, held as a user follows its status
    /// line: aimed at a region still missing corners and tilted the way still missing.
    pub(super) fn before_camera(&mut self, c: usize) {
        let cameras = self.cameras;
        let cam = &cameras[c];
        let mut coverage = Coverage::new((cam.width, cam.height), COVERAGE_TILT_DEG);
        for _ in 0..self.spec.poses_per_camera {
            let distance = self.distance(cam);
            // Rendered, a region the detector cannot reach at this pose would hold the aim
            // for good: any missing region is aimed at instead of the first.
            let missing = coverage.missing_regions();
            let pick = if self.film.is_some() {
                self.rng.gen_range(0..missing.len().max(1))
            } else {
                0
            };
            let region = missing.get(pick).copied();
            let aim = self.aim(cam, region);
            let ray = cam.rotation.transpose() * cam.normalize(&aim).push(1.0).normalize();
            let at = centre(cam) + ray * distance;
            let normal = self.normal(cam, &coverage);
            let roll = self.rng.gen_range(-0.5..0.5);
            let pose = facing(self.board, at, normal, roll);
            // Rendered, a region by the frame's edge is shown the board's outermost tag that
            // way, as a user reaches a corner with the board's edge: its middle tag there
            // would hang off the frame, for a board larger than the region.
            let pose = match (&self.film, region) {
                (Some(_), Some(_)) => edge_tag_at(self.board, cam, &pose, &at, &aim),
                _ => pose,
            };
            let corners = self.first_look(c, &pose);
            if corners.len() >= MIN_CORNERS_PER_VIEW {
                coverage.add(
                    self.board,
                    &BoardView {
                        camera: c,
                        pose: self.poses.len(),
                        corners,
                    },
                );
            }
            self.poses.push(pose);
        }
    }

    /// How far from `cam` the board is held: where it fills its share of the width; where
    /// it fills that much of a narrow lens only from farther than the room, within reach,
    /// filling the frame or overfilling it by half (rendered, no more than filling it, for
    /// tags small enough to sit in the frame's corners).
    fn distance(&mut self, cam: &Camera) -> f64 {
        let (w, _) = self.board.extent();
        // A rendered board is found only where its tags are some 15 pixels or more: held nearer.
        let (fills, overfills) = if self.film.is_some() {
            (0.3..0.8, 0.75..1.0)
        } else {
            (0.25..0.75, 0.75..1.5)
        };
        let filling = |fill: f64| cam.fx * w / (fill * f64::from(cam.width));
        let distance = filling(self.rng.gen_range(fills));
        if distance > REACH_M {
            filling(self.rng.gen_range(overfills)).min(REACH_M)
        } else {
            distance
        }
    }

    /// The pixel the board's centre is aimed at: somewhere in `region`, or anywhere.
    fn aim(&mut self, cam: &Camera, region: Option<Region>) -> Point2<f64> {
        let (ax, ay) = match region {
            Some(r) => {
                let (x, y) = r.centre();
                let half = 0.5 / GRID as f64;
                (
                    x + self.rng.gen_range(-half..half),
                    y + self.rng.gen_range(-half..half),
                )
            }
            None => (self.rng.gen_range(0.0..1.0), self.rng.gen_range(0.0..1.0)),
        };
        Point2::new(ax * f64::from(cam.width), ay * f64::from(cam.height))
    }

    /// The board's face, tilted from square to `cam`'s optical axis (so that a zero tilt is
    /// fronto-parallel), the way `coverage` asks for first.
    fn normal(&mut self, cam: &Camera, coverage: &Coverage) -> Vector3<f64> {
        let axis = cam.rotation.transpose() * Vector3::z();
        let directed = self.spec.max_tilt_deg > COVERAGE_TILT_DEG + 5.0;
        match coverage.missing_tilts().first().filter(|_| directed) {
            Some(t) => {
                let (dx, dy) = t.direction();
                let lean = self
                    .rng
                    .gen_range(COVERAGE_TILT_DEG + 5.0..self.spec.max_tilt_deg)
                    .to_radians();
                let side = cam.rotation.transpose() * Vector3::new(dx, dy, 0.0);
                -axis * lean.cos() + side * lean.sin()
            }
            None => tilt(&mut self.rng, -axis, self.spec.max_tilt_deg),
        }
    }

    /// What camera `c`'s status line is shown of the board at `pose` (the next instant):
    /// rendered, the view itself, kept for the capture; else the noiseless corners.
    fn first_look(&mut self, c: usize, pose: &Isometry3<f64>) -> Vec<Corner> {
        match &mut self.film {
            Some(film) => {
                let corners = film.shoot(c, pose, 1, &mut self.quiet);
                self.shot.insert((self.poses.len(), c), corners.clone());
                corners
            }
            None => observe(
                self.board,
                &self.cameras[c],
                pose,
                &self.still,
                &mut self.quiet,
            ),
        }
    }

    /// `spec.shared_poses` poses in the rig's middle. A user holds the board where the pair
    /// it is turned to both find it, trying again where one of them does not (a camera
    /// framed tight on the subject sees a piece of a board in the rig's middle from most
    /// places).
    pub(super) fn through_the_middle(&mut self) {
        let n = self.centres.len();
        for _ in 0..self.spec.shared_poses {
            let mut pose = Isometry3::identity();
            for _ in 0..SHARED_TRIES {
                let at = Point3::new(
                    self.middle.x + self.rng.gen_range(-0.5..0.5),
                    self.middle.y + self.rng.gen_range(-0.5..0.5),
                    self.rng.gen_range(0.0..0.9),
                );
                let a = self.rng.gen_range(0..n.max(1));
                let b = (a + self.rng.gen_range(1..n.max(2))) % n.max(1);
                let towards = |c: &Point3<f64>| (c - at).normalize();
                let normal = towards(&self.centres[a]) + towards(&self.centres[b]);
                let normal = if normal.norm() < 1e-6 {
                    towards(&self.centres[a])
                } else {
                    normal
                };
                let normal = tilt(&mut self.rng, normal, 15.0);
                pose = facing(self.board, at, normal, self.rng.gen_range(-0.5..0.5));
                if self.finds(a, &pose) && self.finds(b, &pose) {
                    break;
                }
            }
            self.poses.push(pose);
        }
    }

    /// Whether camera `c` finds a quarter of the board at `pose` (rendered, in tags whose
    /// sides are some 15 pixels or more).
    fn finds(&mut self, c: usize, pose: &Isometry3<f64>) -> bool {
        let min_side_px = if self.film.is_some() { 15.0 } else { 0.0 };
        let corners = observe(
            self.board,
            &self.cameras[c],
            pose,
            &self.still,
            &mut self.quiet,
        );
        let found = corners
            .chunks_exact(4)
            .filter(|t| (0..4).all(|k| (t[k].pixel - t[(k + 1) % 4].pixel).norm() >= min_side_px))
            .count();
        4 * found >= self.board.corners() as usize / 4
    }

    /// The board lying face up on the floor in the rig's middle, still; its instant.
    pub(super) fn on_the_floor(&mut self) -> usize {
        let floor = self.poses.len();
        self.poses.push(facing(
            self.board,
            Point3::new(self.middle.x, self.middle.y, FLOOR_Z),
            Vector3::z(),
            0.0,
        ));
        floor
    }

    /// Instant `p`'s views in every camera that finds the board; a `still` pose (of
    /// `spec.anchor_frames` frames) averages its corners over the frames.
    pub(super) fn views_of(&mut self, p: usize, still: bool, views: &mut Vec<BoardView>) {
        let cameras = self.cameras;
        let pose = self.poses[p];
        for (c, cam) in cameras.iter().enumerate() {
            let corners = match &mut self.film {
                Some(film) => match self.shot.remove(&(p, c)) {
                    Some(corners) => corners,
                    None => {
                        let frames = if still { self.spec.anchor_frames } else { 1 };
                        film.shoot(c, &pose, frames, &mut self.rng)
                    }
                },
                None => {
                    let noise = if still { &self.averaged } else { &self.noise };
                    observe(self.board, cam, &pose, noise, &mut self.rng)
                }
            };
            if corners.len() >= MIN_CORNERS_PER_VIEW {
                views.push(BoardView {
                    camera: c,
                    pose: p,
                    corners,
                });
            }
        }
    }

    /// The instant that fixes the world: the board on the `floor`, or where no two cameras
    /// find it there (its tags too small, or too slanted, for them), the board standing
    /// still in the rig's middle facing the nearest camera, shot now; else the first instant
    /// two cameras saw.
    pub(super) fn anchor(&mut self, floor: usize, views: &mut Vec<BoardView>) -> Option<Anchor> {
        let seen_by = |views: &[BoardView], p: usize| views.iter().filter(|v| v.pose == p).count();
        let mut anchors = vec![floor];
        if seen_by(views, floor) < 2 {
            let at = Point3::from(self.middle);
            let nearest = self
                .centres
                .iter()
                .min_by(|a, b| (*a - at).norm().total_cmp(&(*b - at).norm()))
                .copied();
            if let Some(nearest) = nearest {
                let standing = facing(self.board, at, nearest - at, 0.0);
                anchors.push(self.poses.len());
                self.poses.push(standing);
                self.views_of(self.poses.len() - 1, true, views);
            }
        }
        anchors
            .into_iter()
            .chain(0..self.poses.len())
            .find(|&p| seen_by(views, p) >= 2)
            .map(|pose| Anchor {
                pose,
                world_from_board: self.poses[pose],
            })
    }
}

/// Zero-mean Gaussian noise of standard deviation `sigma` (finite and non-negative).
fn gaussian(sigma: f64) -> Normal<f64> {
    Normal::new(0.0, sigma).unwrap_or_else(|_| unreachable!())
}
