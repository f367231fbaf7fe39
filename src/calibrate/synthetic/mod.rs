//! A synthetic calibration capture: the board waved in front of each camera, then carried
//! through the middle of the rig where several cameras see it at once, its corners projected
//! through the real [`Camera`] with distortion, 0.2 px Gaussian noise and partial views; or,
//! with [`CaptureSpec::render`], each view rendered as the camera's frame (blur, sensor
//! noise, the frame's edges) and its corners found there by the detector.
//!
//! This is what the solver's tests measure against: the true cameras and board poses are kept
//! beside the observations.

use nalgebra::{Isometry3, Point2, Point3, Translation3, UnitQuaternion, Vector2, Vector3};
use rand::Rng;
use rand_distr::{Distribution, Normal};

use super::board::AprilGrid;
use super::extrinsics::Anchor;
use super::render::Look;
use super::{BoardView, Corner};
use crate::body::model::rest::special_procrustes;
use crate::geom::Camera;

mod film;
mod shoot;

use shoot::Shoot;

/// Steepest view of the board face a corner is still detected at (degrees from its normal).
const MAX_VIEW_ANGLE_DEG: f64 = 75.0;

/// The tilt the capture's coverage asks for each way (degrees).
const COVERAGE_TILT_DEG: f64 = 15.0;

/// The floor under the demo's subject, whose root stands about 0.9 m above it (metres).
pub const FLOOR_Z: f64 = -0.9;

/// Fewest corners (two tags) that make a view.
pub const MIN_CORNERS_PER_VIEW: usize = 8;

/// How the synthetic capture is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaptureSpec {
    /// Board poses in front of each camera alone (for its intrinsics).
    pub poses_per_camera: usize,
    /// Board poses in the middle of the rig (for the extrinsics).
    pub shared_poses: usize,
    /// Largest tilt of the board from fronto-parallel before each camera (degrees).
    pub max_tilt_deg: f64,
    /// Corner noise, standard deviation in pixels.
    pub noise_px: f64,
    /// Frames the board lies still on the floor for, fixing the world: its corners are
    /// averaged over them (noise divided by the square root of the count). Three seconds at
    /// 30 frames a second by default: the world's turn, carried 2.6 m out to the body
    /// cameras, is what the anchor's views leave of it.
    pub anchor_frames: usize,
    /// The random seed.
    pub seed: u64,
    /// Render each view as a frame and detect its corners ([`super::render`],
    /// [`super::detect`]) instead of projecting them with `noise_px`.
    pub render: Option<Look>,
}

impl Default for CaptureSpec {
    fn default() -> Self {
        Self {
            poses_per_camera: 120,
            shared_poses: 240,
            max_tilt_deg: 50.0,
            noise_px: 0.2,
            anchor_frames: 90,
            seed: 17,
            render: None,
        }
    }
}

/// The synthetic capture and its ground truth.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    /// The board.
    pub board: AprilGrid,
    /// The true cameras.
    pub cameras: Vec<Camera>,
    /// The true board-to-world poses, one per instant.
    pub poses: Vec<Isometry3<f64>>,
    /// What the cameras saw.
    pub views: Vec<BoardView>,
    /// The instant whose true board pose fixes the world: the board lying on the floor in
    /// the rig's middle, or where no two cameras see that, the first instant two cameras saw.
    pub anchor: Option<Anchor>,
}

/// The camera's centre in the world.
pub fn centre(c: &Camera) -> Point3<f64> {
    Point3::from(-(c.rotation.transpose() * c.translation))
}

/// A unit vector square to the unit vector `n` (level, unless `n` is near vertical).
fn across(n: &Vector3<f64>) -> Vector3<f64> {
    let helper = if n.z.abs() < 0.9 {
        Vector3::z()
    } else {
        Vector3::x()
    };
    helper.cross(n).normalize()
}

/// A board pose whose face (+z) points along `normal`, its centre at `at`, turned by `roll`
/// about the normal.
fn facing(board: &AprilGrid, at: Point3<f64>, normal: Vector3<f64>, roll: f64) -> Isometry3<f64> {
    let z = normal.normalize();
    let x = across(&z);
    let y = z.cross(&x);
    let r = nalgebra::Rotation3::from_basis_unchecked(&[x, y, z])
        * nalgebra::Rotation3::from_axis_angle(&Vector3::z_axis(), roll);
    let rot = UnitQuaternion::from_rotation_matrix(&r);
    let t = at.coords - rot * board.centre().coords;
    Isometry3::from_parts(Translation3::from(t), rot)
}

/// `normal` tilted by an angle up to `max_deg` about a random axis across it.
fn tilt<R: Rng>(rng: &mut R, normal: Vector3<f64>, max_deg: f64) -> Vector3<f64> {
    let n = normal.normalize();
    let a = across(&n);
    let b = n.cross(&a);
    let phi = rng.gen_range(0.0..std::f64::consts::TAU);
    let axis = a * phi.cos() + b * phi.sin();
    let angle = rng.gen_range(0.0..max_deg).to_radians();
    UnitQuaternion::from_scaled_axis(axis * angle) * n
}

/// What `camera` sees of the board at `pose`: the tags whose four corners are in front, on the
/// board's face side within `MAX_VIEW_ANGLE_DEG` and inside the image after noise.
pub fn observe<R: Rng>(
    board: &AprilGrid,
    camera: &Camera,
    pose: &Isometry3<f64>,
    noise: &Normal<f64>,
    rng: &mut R,
) -> Vec<Corner> {
    let eye = centre(camera);
    let normal = pose.rotation * Vector3::z();
    let cos_max = MAX_VIEW_ANGLE_DEG.to_radians().cos();
    let mut out = Vec::new();
    for tag in 0..board.tags() {
        let mut corners = Vec::with_capacity(4);
        for k in 0..4 {
            let id = 4 * tag + k;
            let Some(p) = board.corner(id).map(|c| pose * c) else {
                break;
            };
            let ray = eye - p;
            if normal.dot(&ray) < cos_max * ray.norm() {
                break;
            }
            let Some(px) = camera.project(&p) else { break };
            let noisy = Point2::new(px.x + noise.sample(rng), px.y + noise.sample(rng));
            if !camera.contains(&noisy) {
                break;
            }
            corners.push(Corner { id, pixel: noisy });
        }
        if corners.len() == 4 {
            out.extend(corners);
        }
    }
    out
}

/// The capture: `spec.poses_per_camera` poses before each camera at distances where the board
/// fills a quarter to three quarters of the image width (a narrow lens's, within 5 m), held as
/// a user follows the status line ([`Coverage`](super::coverage::Coverage)): aimed at the
/// image region with the fewest corners and tilted the way still missing, then anywhere (so
/// some views are partial); then `spec.shared_poses` poses in the rig's middle facing a random
/// pair of cameras, held again until both find a quarter of the board; last the board lying
/// still on the floor ([`FLOOR_Z`]) for `spec.anchor_frames` frames, which fixes the world.
/// Where no two cameras find the board on the floor, it then stands still in the rig's middle
/// for as many frames, facing the camera nearest it, and fixes the world instead. Every pose
/// is seen by every camera that can.
///
/// # Panics
/// Never: the noise's standard deviation is clamped to a finite non-negative value.
pub fn capture(board: &AprilGrid, cameras: &[Camera], spec: &CaptureSpec) -> Capture {
    let mut shoot = Shoot::new(board, cameras, spec);
    for c in 0..cameras.len() {
        shoot.before_camera(c);
    }
    shoot.through_the_middle();
    let floor = shoot.on_the_floor();
    let mut views = Vec::new();
    for p in 0..shoot.poses.len() {
        shoot.views_of(p, p == floor, &mut views);
    }
    let anchor = shoot.anchor(floor, &mut views);
    Capture {
        board: *board,
        cameras: cameras.to_vec(),
        poses: shoot.poses,
        views,
        anchor,
    }
}

/// The middle of the capture volume: the point nearest every camera's optical axis (least
/// squares), where a person walks the board to show it to several cameras at once; the mean
/// of the cameras' centres where the axes are parallel.
pub fn capture_volume(cameras: &[Camera]) -> Vector3<f64> {
    let mut a = nalgebra::Matrix3::zeros();
    let mut b = Vector3::zeros();
    for c in cameras {
        let axis = c.rotation.transpose() * Vector3::z();
        let off = nalgebra::Matrix3::identity() - axis * axis.transpose();
        a += off;
        b += off * centre(c).coords;
    }
    a.try_inverse()
        .filter(|_| a.determinant().abs() > 1e-6)
        .map(|inv| inv * b)
        .unwrap_or_else(|| {
            cameras
                .iter()
                .fold(Vector3::zeros(), |s, c| s + centre(c).coords)
                / cameras.len().max(1) as f64
        })
}

/// How far a solved camera is from the truth, in the terms of the calibration's targets.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CameraErrors {
    /// Largest relative error of `fx`, `fy` (percent).
    pub focal_pct: f64,
    /// Principal point error (pixels).
    pub principal_px: f64,
    /// Largest image-space error of the lens over a 17 x 17 grid to the frame's corners
    /// (pixels): the true lens undone, the solved lens applied, at the true focal length.
    pub distortion_px: f64,
    /// Camera centre error (millimetres).
    pub position_mm: f64,
    /// Camera rotation error (degrees).
    pub rotation_deg: f64,
}

/// `solved` against `truth`.
pub fn errors(truth: &Camera, solved: &Camera) -> CameraErrors {
    let focal = (solved.fx / truth.fx - 1.0)
        .abs()
        .max((solved.fy / truth.fy - 1.0).abs());
    let mut worst: f64 = 0.0;
    for i in 0..=16 {
        for j in 0..=16 {
            let u = f64::from(truth.width) * f64::from(i) / 16.0;
            let v = f64::from(truth.height) * f64::from(j) / 16.0;
            let xd = Vector2::new((u - truth.cx) / truth.fx, (v - truth.cy) / truth.fy);
            let e = solved.distortion.apply(truth.distortion.remove(xd)) - xd;
            worst = worst.max(Vector2::new(e.x * truth.fx, e.y * truth.fy).norm());
        }
    }
    let rotation = angle_between(&truth.rotation, &solved.rotation);
    CameraErrors {
        focal_pct: 100.0 * focal,
        principal_px: Vector2::new(solved.cx - truth.cx, solved.cy - truth.cy).norm(),
        distortion_px: worst,
        position_mm: 1000.0 * (centre(truth) - centre(solved)).norm(),
        rotation_deg: rotation.to_degrees(),
    }
}

/// The angle of the rotation from `a` to `b` (radians), clamped into `acos`'s domain: a
/// rotation a rounding error from the identity has a trace a hair over 3, where
/// `Rotation3::angle` gives NaN.
fn angle_between(a: &nalgebra::Matrix3<f64>, b: &nalgebra::Matrix3<f64>) -> f64 {
    let cos = ((a.transpose() * b).trace() - 1.0) / 2.0;
    cos.clamp(-1.0, 1.0).acos()
}

/// How far a pose is from another: a distance and an angle.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PoseError {
    /// Millimetres.
    pub position_mm: f64,
    /// Degrees.
    pub rotation_deg: f64,
}

/// A solved rig against the true one, its world's placement apart from its own shape.
///
/// The world is fixed by one board pose (the anchor), so an error in that pose turns and
/// shifts every camera together: 0.05 degrees about the rig's middle moves a camera 2.6 m out
/// by over 2 mm. Triangulation and the body fit see only the rig's shape, which is what
/// [`RigErrors::shape`] measures; [`RigErrors::world`] is the anchor's share.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RigErrors {
    /// The rigid motion that best lays the solved rig on the true one: how far the world the
    /// anchor fixed is turned and shifted (at the rig's middle) from the true world.
    pub world: PoseError,
    /// Each camera's pose against the truth once that motion is applied, in camera order.
    pub shape: Vec<PoseError>,
}

/// `solved` against `truth`, camera by camera in the same order, with the world's placement
/// taken out ([`RigErrors`]). Each camera stands for three points, its centre and the points
/// a metre along its optical axis and along its image's rows, so that one camera is enough to
/// fix the motion and its orientation weighs as much as its position. `None` for no cameras or
/// lists of different lengths.
pub fn rig_errors(truth: &[Camera], solved: &[Camera]) -> Option<RigErrors> {
    if truth.is_empty() || truth.len() != solved.len() {
        return None;
    }
    let points = |cams: &[Camera]| -> Vec<Vector3<f64>> {
        cams.iter()
            .flat_map(|c| {
                let o = centre(c).coords;
                let r = c.rotation.transpose();
                [o, o + r * Vector3::z(), o + r * Vector3::x()]
            })
            .collect()
    };
    let (t, s) = (points(truth), points(solved));
    let mean = |p: &[Vector3<f64>]| p.iter().sum::<Vector3<f64>>() / p.len() as f64;
    let (mt, ms) = (mean(&t), mean(&s));
    // Kabsch: the rotation that best turns the solved points onto the true ones is the
    // nearest rotation to their cross-covariance.
    let covariance = s
        .iter()
        .zip(&t)
        .map(|(s, t)| (t - mt) * (s - ms).transpose())
        .sum::<nalgebra::Matrix3<f64>>();
    let turn = special_procrustes(&covariance);
    let shape = truth
        .iter()
        .zip(solved)
        .map(|(t, s)| {
            let moved = turn * (centre(s).coords - ms) + mt;
            // The solved camera's world-to-camera rotation, in the true world.
            let rotation = s.rotation * turn.transpose();
            PoseError {
                position_mm: 1000.0 * (moved - centre(t).coords).norm(),
                rotation_deg: angle_between(&t.rotation, &rotation).to_degrees(),
            }
        })
        .collect();
    Some(RigErrors {
        world: PoseError {
            position_mm: 1000.0 * (mt - ms).norm(),
            rotation_deg: angle_between(&nalgebra::Matrix3::identity(), &turn).to_degrees(),
        },
        shape,
    })
}
