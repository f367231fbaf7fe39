//! The checks a rig's calibrations pass before the fit uses them: every camera placed (or
//! the one declared the world origin), translations in the unit the rig file states, a
//! plausible baseline between every two cameras, and no camera that shares its view with
//! no other.
//!
//! # Overlap
//!
//! Two cameras *overlap* when some point in front of both, within [`NEAR_M`] to
//! [`MAX_BASELINE_M`] of the first, falls inside both images. The points tried are the
//! rays through a [`GRID`] x [`GRID`] grid of pixels spanning the first camera's image, at
//! [`DEPTHS`] distances spaced evenly in log depth over that range, and the test runs both
//! ways. A rig passes when the overlap graph is connected: every camera overlaps at least
//! one other, and no group of cameras films a scene the others never see. This is the
//! region the subject must stand in to be seen by two cameras, without assuming where it
//! is; a dedicated face camera passes as long as a body camera sees the face.

use nalgebra::{Point2, Point3, Vector3};
use serde::{Deserialize, Serialize};

use super::{CalibError, CalibratedCamera, OpenCvCalibration};
use crate::geom::Camera;

/// Longest plausible baseline between two cameras of one rig, metres.
pub const MAX_BASELINE_M: f64 = 20.0;
/// Shortest: closer cameras are one camera, or millimetres read as metres the other way.
pub const MIN_BASELINE_M: f64 = 0.005;
/// Nearest depth the overlap test tries, metres.
pub const NEAR_M: f64 = 0.1;
/// Pixels a side of the grid of rays the overlap test casts.
pub const GRID: usize = 9;
/// Depths per ray the overlap test tries.
pub const DEPTHS: usize = 48;

/// The unit of the translations in a rig's calibration files (`unit` in the rig file);
/// they are converted to metres when read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Unit {
    /// Metres (the default).
    #[default]
    #[serde(rename = "m")]
    Metre,
    /// Millimetres, the habit of OpenCV board calibrations with squares given in mm.
    #[serde(rename = "mm")]
    Millimetre,
}

impl Unit {
    /// Metres per unit.
    pub fn metres(self) -> f64 {
        match self {
            Unit::Metre => 1.0,
            Unit::Millimetre => 1e-3,
        }
    }

    /// The spelling in the rig file.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Metre => "m",
            Unit::Millimetre => "mm",
        }
    }

    /// A camera whose translation is in this unit, with its translation in metres.
    pub fn to_metres(self, mut camera: Camera) -> Camera {
        camera.translation *= self.metres();
        camera
    }

    /// A camera with its translation in metres, with its translation in this unit.
    pub fn from_metres(self, mut camera: Camera) -> Camera {
        camera.translation /= self.metres();
        camera
    }
}

/// Where a camera read from a file stands in its rig.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Cameras in the rig.
    pub cameras: usize,
    /// The camera is the world's origin (`origin = true` in the rig file): its file need
    /// not, and must not, place it anywhere else.
    pub origin: bool,
    /// The unit of the file's translation.
    pub unit: Unit,
}

/// A camera read from an OpenCV file, placed in its rig, its translation in metres.
///
/// # Errors
/// [`CalibError::NoExtrinsics`] when the file has no extrinsics in a rig of several cameras
/// and the camera is not declared the origin; [`CalibError::NotAtOrigin`] when a camera
/// declared the origin is placed elsewhere by its file.
pub fn place(read: OpenCvCalibration, file: &str, at: Placement) -> Result<Camera, CalibError> {
    let c = read.camera;
    if at.origin {
        let off = (c.rotation - nalgebra::Matrix3::identity()).amax();
        if read.extrinsics && (off > 1e-9 || c.translation.norm() > 0.0) {
            return Err(CalibError::NotAtOrigin {
                origin: file.to_string(),
            });
        }
    } else if !read.extrinsics && at.cameras > 1 {
        return Err(CalibError::NoExtrinsics {
            origin: file.to_string(),
            cameras: at.cameras,
        });
    }
    Ok(at.unit.to_metres(c))
}

/// Why a rig's cameras cannot stand together.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RigCheckError {
    /// Two cameras further apart than any rig: a translation in millimetres read as metres.
    #[error(
        "cameras `{a}` and `{b}` are {distance_m:.1} m apart, more than the {MAX_BASELINE_M} m a \
         rig spans{hint}"
    )]
    TooFar {
        a: String,
        b: String,
        distance_m: f64,
        /// The unit to try, when another would make the rig plausible.
        hint: UnitHint,
    },
    /// Two cameras at one place: a duplicated calibration, or metres read as millimetres.
    #[error(
        "cameras `{a}` and `{b}` are {:.2} mm apart, under the {} mm two cameras need{hint}",
        distance_m * 1e3,
        MIN_BASELINE_M * 1e3
    )]
    Coincident {
        a: String,
        b: String,
        distance_m: f64,
        hint: UnitHint,
    },
    /// A camera, or a group of cameras, that shares no view with the rest.
    #[error(
        "camera `{a}` shares no view with camera `{b}` (the nearest of the cameras it does not \
         overlap): no point {NEAR_M} to {MAX_BASELINE_M} m in front of one is inside the other's \
         image, so nothing it sees can be triangulated with them"
    )]
    NoOverlap { a: String, b: String },
}

/// The `unit` the rig file may have meant, said after a baseline error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitHint(pub Option<Unit>);

impl std::fmt::Display for UnitHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(u) => write!(f, "; did you mean unit = \"{}\"?", u.name()),
            None => Ok(()),
        }
    }
}

/// The optical centre of a camera in world coordinates.
pub fn centre(c: &Camera) -> Point3<f64> {
    Point3::from(-(c.rotation.transpose() * c.translation))
}

/// Checks the baseline of every two cameras (translations in metres, read as `unit`) and
/// that their views overlap (see the module's documentation).
///
/// # Errors
/// [`RigCheckError`] naming the first pair that fails.
pub fn check_rig(cameras: &[CalibratedCamera], unit: Unit) -> Result<(), RigCheckError> {
    for (i, a) in cameras.iter().enumerate() {
        for b in &cameras[i + 1..] {
            let d = (centre(&a.camera) - centre(&b.camera)).norm();
            let names = || (a.name.clone(), b.name.clone());
            if d > MAX_BASELINE_M {
                let hint = UnitHint((unit == Unit::Metre).then_some(Unit::Millimetre));
                let (a, b) = names();
                return Err(RigCheckError::TooFar {
                    a,
                    b,
                    distance_m: d,
                    hint,
                });
            }
            if d < MIN_BASELINE_M {
                let hint = UnitHint((unit == Unit::Millimetre).then_some(Unit::Metre));
                let (a, b) = names();
                return Err(RigCheckError::Coincident {
                    a,
                    b,
                    distance_m: d,
                    hint,
                });
            }
        }
    }
    check_overlap(cameras)
}

/// Whether some point in front of `a` (see the module's documentation) lies inside `b`'s
/// image.
pub fn sees_into(a: &Camera, b: &Camera) -> bool {
    let origin = centre(a);
    let to_world = a.rotation.transpose();
    let step = (MAX_BASELINE_M / NEAR_M).ln() / (DEPTHS - 1) as f64;
    (0..GRID * GRID).any(|k| {
        let (i, j) = (k % GRID, k / GRID);
        let at = |n: usize, side: u32| f64::from(side) * (0.5 + n as f64) / GRID as f64;
        let n = a.normalize(&Point2::new(at(i, a.width), at(j, a.height)));
        let ray: Vector3<f64> = to_world * Vector3::new(n.x, n.y, 1.0);
        (0..DEPTHS).any(|s| {
            let depth = NEAR_M * (step * s as f64).exp();
            b.project(&(origin + ray * depth))
                .is_some_and(|px| b.contains(&px))
        })
    })
}

/// Refuses a rig whose overlap graph is not connected, naming a camera outside the first
/// camera's group and the nearest camera inside it.
fn check_overlap(cameras: &[CalibratedCamera]) -> Result<(), RigCheckError> {
    let n = cameras.len();
    if n < 2 {
        return Ok(());
    }
    let overlap = |i: usize, j: usize| {
        let (a, b) = (&cameras[i].camera, &cameras[j].camera);
        sees_into(a, b) || sees_into(b, a)
    };
    let mut reached = vec![false; n];
    reached[0] = true;
    let mut stack = vec![0];
    while let Some(i) = stack.pop() {
        let linked: Vec<usize> = (0..n).filter(|&j| !reached[j] && overlap(i, j)).collect();
        for j in linked {
            reached[j] = true;
            stack.push(j);
        }
    }
    let distance =
        |i: usize, j: usize| (centre(&cameras[i].camera) - centre(&cameras[j].camera)).norm();
    let pair = (0..n)
        .filter(|&o| !reached[o])
        .flat_map(|o| (0..n).filter(|&r| reached[r]).map(move |r| (o, r)))
        .min_by(|x, y| distance(x.0, x.1).total_cmp(&distance(y.0, y.1)));
    match pair {
        Some((o, r)) => Err(RigCheckError::NoOverlap {
            a: cameras[o].name.clone(),
            b: cameras[r].name.clone(),
        }),
        None => Ok(()),
    }
}
