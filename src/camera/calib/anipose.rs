//! The anipose / Pose2Sim calibration TOML (aniposelib's `CameraGroup.dump` and `load`,
//! Pose2Sim's `Calib.toml`): one `[cam_N]` table per camera with
//!
//! | key | holds |
//! |---|---|
//! | `name` | the camera's name |
//! | `size` | `[width, height]` in pixels (integers, or floats in Pose2Sim) |
//! | `matrix` | the 3x3 camera matrix, OpenCV pixel centres (integers) |
//! | `distortions` | `[k1, k2, p1, p2, k3]` |
//! | `rotation` | world-to-camera rotation as a Rodrigues vector (OpenCV's `rvec`) |
//! | `translation` | world-to-camera translation (`tvec`) in the board's unit |
//!
//! and an optional `[metadata]` table (`adjusted`, `error`), which is skipped. Both tools
//! project with `cv2.projectPoints(X, rvec, tvec, K, dist)`, so the pose is the OpenCV
//! world-to-camera pose this crate's [`Camera`] holds. The translation is in whatever unit
//! the board was measured in, commonly millimetres, so reading and writing take a [`Unit`].

use nalgebra::{Matrix3, Rotation3, Vector3};
use serde::{Deserialize, Serialize};

use super::{rodrigues, validate, CalibError, CalibratedCamera, Unit};
use crate::geom::{Camera, Distortion};

/// The format named when a file does not parse as one.
const FORMAT: &str = "an anipose / Pose2Sim calibration (TOML)";

/// One `[cam_N]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    size: [f64; 2],
    matrix: [[f64; 3]; 3],
    distortions: Vec<f64>,
    rotation: [f64; 3],
    translation: [f64; 3],
    /// Pose2Sim's flag for its fisheye model, which this crate's camera does not have.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    fisheye: bool,
}

/// Reads an anipose / Pose2Sim calibration whose translations are in `unit`; cameras come
/// in the order of their table's number (`cam_0`, `cam_1`, ..., `cam_10`).
///
/// # Errors
/// [`CalibError`] naming `origin`, the table and the key that is missing or malformed.
pub fn from_anipose_str(
    text: &str,
    origin: &str,
    unit: Unit,
) -> Result<Vec<CalibratedCamera>, CalibError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| CalibError::Parse {
        origin: origin.to_string(),
        format: FORMAT,
        what: e.message().to_string(),
    })?;
    let mut sections: Vec<(&String, &toml::Value)> =
        table.iter().filter(|(k, _)| *k != "metadata").collect();
    sections.sort_by_key(|(k, _)| (section_number(k), k.to_string()));
    if sections.is_empty() {
        return Err(CalibError::Missing {
            origin: origin.to_string(),
            keys: "[cam_0] table".into(),
        });
    }
    sections
        .into_iter()
        .map(|(section, value)| {
            let at = format!("{origin} [{section}]");
            let entry: Entry =
                value
                    .clone()
                    .try_into()
                    .map_err(|e: toml::de::Error| CalibError::Parse {
                        origin: at.clone(),
                        format: FORMAT,
                        what: e.message().trim_end().to_string(),
                    })?;
            entry.camera(&at, unit)
        })
        .collect()
}

/// The number of a `cam_N` table, sorting the others after.
fn section_number(key: &str) -> u64 {
    key.rsplit('_')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

impl Entry {
    fn camera(&self, at: &str, unit: Unit) -> Result<CalibratedCamera, CalibError> {
        let invalid = |field: &str, what: String| CalibError::Invalid {
            origin: at.to_string(),
            field: field.into(),
            what,
        };
        if self.fisheye {
            return Err(invalid(
                "fisheye",
                "true; the camera model here is pinhole with k1, k2, p1, p2, k3".into(),
            ));
        }
        let side = |v: f64| {
            (v.fract() == 0.0 && (1.0..=f64::from(crate::limits::MAX_CAMERA_SIDE)).contains(&v))
                .then_some(v as u32)
        };
        let (Some(width), Some(height)) = (side(self.size[0]), side(self.size[1])) else {
            return Err(invalid(
                "size",
                format!(
                    "[{}, {}] is not [width, height] in whole pixels from 1 to {}",
                    self.size[0],
                    self.size[1],
                    crate::limits::MAX_CAMERA_SIDE
                ),
            ));
        };
        let d = &self.distortions;
        if d.is_empty() || d.len() > 5 {
            return Err(invalid(
                "distortions",
                format!("{} values; expected 1 to 5 (k1, k2, p1, p2, k3)", d.len()),
            ));
        }
        let k = |i: usize| d.get(i).copied().unwrap_or(0.0);
        let m = self.matrix;
        let camera = Camera {
            width,
            height,
            fx: m[0][0],
            fy: m[1][1],
            cx: m[0][2] + 0.5,
            cy: m[1][2] + 0.5,
            distortion: Distortion {
                k1: k(0),
                k2: k(1),
                p1: k(2),
                p2: k(3),
                k3: k(4),
            },
            rotation: rodrigues(self.rotation),
            translation: Vector3::from(self.translation),
        };
        validate(&camera, at)?;
        Ok(CalibratedCamera {
            name: self.name.clone(),
            camera: unit.to_metres(camera),
        })
    }

    fn of(c: &CalibratedCamera, unit: Unit) -> Entry {
        let cam = unit.from_metres(c.camera);
        let d = cam.distortion;
        Entry {
            name: c.name.clone(),
            size: [f64::from(cam.width), f64::from(cam.height)],
            matrix: [
                [cam.fx, 0.0, cam.cx - 0.5],
                [0.0, cam.fy, cam.cy - 0.5],
                [0.0, 0.0, 1.0],
            ],
            distortions: vec![d.k1, d.k2, d.p1, d.p2, d.k3],
            rotation: rotation_vector(&cam.rotation),
            translation: [cam.translation.x, cam.translation.y, cam.translation.z],
            fisheye: false,
        }
    }
}

/// The anipose / Pose2Sim TOML of `cameras` (translations in metres), translations
/// written in `unit`; the tables are `cam_0`, `cam_1`, ... in order, with
/// `[metadata] adjusted = false`.
///
/// # Errors
/// [`CalibError::Invalid`] for a camera whose table cannot be written (a non-finite value).
pub fn to_anipose_string(cameras: &[CalibratedCamera], unit: Unit) -> Result<String, CalibError> {
    let mut out = String::new();
    for (i, c) in cameras.iter().enumerate() {
        let mut table = toml::Table::new();
        let entry = toml::Value::try_from(Entry::of(c, unit)).map_err(|e| CalibError::Invalid {
            origin: c.name.clone(),
            field: format!("cam_{i}"),
            what: e.to_string(),
        })?;
        table.insert(format!("cam_{i}"), entry);
        out.push_str(&table.to_string());
        out.push('\n');
    }
    out.push_str("[metadata]\nadjusted = false\n");
    Ok(out)
}

/// The Rodrigues vector of a rotation matrix (OpenCV's `rvec`), the inverse of
/// [`rodrigues`].
pub fn rotation_vector(r: &Matrix3<f64>) -> [f64; 3] {
    let v = Rotation3::from_matrix_unchecked(*r).scaled_axis();
    [v.x, v.y, v.z]
}
