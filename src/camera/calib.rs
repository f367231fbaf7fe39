//! Calibration files: OpenCV FileStorage per camera (read and written), the
//! anipose/Pose2Sim calibration TOML and Kalibr's camchain YAML (read and
//! written), the checks a rig's calibrations pass, the reprojection report a
//! calibration carries, and the framing precision a calibration gives.
//!
//! | module | what it holds |
//! |---|---|
//! | [`checks`] | the `unit` and `world_origin` keys, baselines, overlap |
//! | [`opencv_write`] | OpenCV YAML per camera and the rig file's `[[camera]]` entries |
//! | [`anipose`] | anipose / Pose2Sim `Calib.toml` |
//! | [`kalibr`] | Kalibr `camchain.yaml` |
//! | [`report`] | reprojection error per camera and per view |
//! | [`framing`] | millimetres per feature cell at the subject |
//!
//! The in-memory type is [`crate::geom::Camera`] (intrinsics fx, fy, cx, cy,
//! distortion k1, k2, p1, p2, k3, world-to-camera R, t), the camera that
//! rendering, triangulation and the fit project through. Pixel coordinates are continuous (the top-left pixel's centre is
//! at 0.5, 0.5), the convention of the renderer and of the preprocessing
//! transform; OpenCV puts pixel centres on integers, so its principal point
//! is shifted by half a pixel on import.

use std::path::Path;

use nalgebra::{Matrix3, Rotation3, Vector3};
use serde::{Deserialize, Serialize};
use serde_yaml::Value;

use crate::geom::{Camera, Distortion};
use crate::limits::MAX_CAMERA_SIDE;

pub mod anipose;
pub mod checks;
pub mod framing;
pub mod kalibr;
pub mod opencv_write;
pub mod report;

pub use checks::Unit;

/// A rig camera's name and calibration, as multi-camera files hold them.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibratedCamera {
    /// The camera's name (the rig file's `name`, or the file's section).
    pub name: String,
    /// Its calibration, translation in metres.
    pub camera: Camera,
}

/// A calibration as the rig file writes it (flat keys; unknown keys are errors).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationTable {
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
    /// Principal point, continuous pixel coordinates.
    pub cx: f64,
    pub cy: f64,
    #[serde(default)]
    pub k1: f64,
    #[serde(default)]
    pub k2: f64,
    #[serde(default)]
    pub p1: f64,
    #[serde(default)]
    pub p2: f64,
    #[serde(default)]
    pub k3: f64,
    /// World-to-camera rotation, row-major.
    #[serde(rename = "R", default = "identity")]
    pub rotation: [[f64; 3]; 3],
    /// World-to-camera translation, metres.
    #[serde(rename = "t", default)]
    pub translation: [f64; 3],
}

fn identity() -> [[f64; 3]; 3] {
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
}

impl From<CalibrationTable> for Camera {
    fn from(c: CalibrationTable) -> Self {
        Camera {
            width: c.width,
            height: c.height,
            fx: c.fx,
            fy: c.fy,
            cx: c.cx,
            cy: c.cy,
            distortion: Distortion {
                k1: c.k1,
                k2: c.k2,
                p1: c.p1,
                p2: c.p2,
                k3: c.k3,
            },
            rotation: Matrix3::from_fn(|r, k| c.rotation[r][k]),
            translation: Vector3::from(c.translation),
        }
    }
}

impl From<&Camera> for CalibrationTable {
    fn from(c: &Camera) -> Self {
        let d = c.distortion;
        Self {
            width: c.width,
            height: c.height,
            fx: c.fx,
            fy: c.fy,
            cx: c.cx,
            cy: c.cy,
            k1: d.k1,
            k2: d.k2,
            p1: d.p1,
            p2: d.p2,
            k3: d.k3,
            rotation: std::array::from_fn(|r| std::array::from_fn(|k| c.rotation[(r, k)])),
            translation: [c.translation.x, c.translation.y, c.translation.z],
        }
    }
}

/// Rotation matrix of an axis-angle vector (OpenCV `rvec`, Rodrigues' formula).
pub fn rodrigues(r: [f64; 3]) -> Matrix3<f64> {
    Rotation3::new(Vector3::from(r)).into_inner()
}

/// Checks a calibration makes sense: [`Camera::check`] (positive finite
/// focal lengths, sides of 1 to 8192 pixels, finite coefficients, a proper
/// rotation).
///
/// # Errors
/// [`CalibError::Invalid`] naming `origin` and the field.
pub fn validate(c: &Camera, origin: &str) -> Result<(), CalibError> {
    c.check().map_err(|e| match e {
        crate::geom::CameraError::BadField {
            field,
            value,
            expected,
        } => CalibError::Invalid {
            origin: origin.to_string(),
            field: field.to_string(),
            what: format!("{value} must be {expected}"),
        },
    })
}

/// Reads an OpenCV FileStorage calibration (YAML with `%YAML:1.0` and
/// `!!opencv-matrix`, or JSON): `camera_matrix`, `distortion_coefficients`,
/// `image_width`/`image_height`, and optionally `R`/`T` or `rvec`/`tvec`
/// (common aliases accepted). `size` is the camera's: the file's image size
/// must equal it, and it is used when the file has none. A file without
/// extrinsics (what `calibrateCamera` writes) reads with the camera at the
/// world origin and [`OpenCvCalibration::extrinsics`] false: whether that may
/// stand is the rig's to decide ([`checks::place`]).
///
/// # Errors
/// [`CalibError`] naming the file and the key that is missing or malformed;
/// a rotation without a translation, or the reverse, names the missing key.
pub fn from_opencv_file(
    path: &Path,
    size: Option<(u32, u32)>,
) -> Result<OpenCvCalibration, CalibError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| CalibError::Io {
        origin: origin.clone(),
        source: e,
    })?;
    from_opencv_str(&text, &origin, size)
}

/// As [`from_opencv_file`], from text; `origin` names it in errors.
///
/// # Errors
/// See [`from_opencv_file`].
pub fn from_opencv_str(
    text: &str,
    origin: &str,
    size: Option<(u32, u32)>,
) -> Result<OpenCvCalibration, CalibError> {
    let root = parse_file_storage(text, origin)?;
    let doc = Doc {
        root: &root,
        origin,
    };
    let k = doc.matrix(
        &[
            "camera_matrix",
            "cameraMatrix",
            "K",
            "M",
            "intrinsic_matrix",
        ],
        3,
        3,
    )?;
    let distortion = doc.distortion()?;
    let (width, height) = doc.image_size(size)?;
    let pose = doc.extrinsics()?;
    // A file without extrinsics places the camera at the world origin.
    let (rotation, translation) = pose.unwrap_or((Matrix3::identity(), Vector3::zeros()));
    let calib = Camera {
        width,
        height,
        fx: k[0],
        fy: k[4],
        // OpenCV's pixel centres are integers; ours are at +0.5.
        cx: k[2] + 0.5,
        cy: k[5] + 0.5,
        distortion,
        rotation,
        translation,
    };
    validate(&calib, origin)?;
    Ok(OpenCvCalibration {
        camera: calib,
        extrinsics: pose.is_some(),
    })
}

/// A camera's placement: the world-to-camera rotation and translation.
type Placement = (Matrix3<f64>, Vector3<f64>);

/// The tree of an OpenCV FileStorage text, JSON or YAML, its tags dropped.
fn parse_file_storage(text: &str, origin: &str) -> Result<Value, CalibError> {
    let parse = |what: String| CalibError::Parse {
        origin: origin.to_string(),
        format: "OpenCV FileStorage YAML or JSON",
        what,
    };
    let root: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| parse(e.to_string()))?
    } else {
        // serde_yaml reads YAML 1.2; OpenCV writes a `%YAML:1.0` directive it rejects.
        let body: String = text
            .lines()
            .filter(|l| !l.starts_with("%YAML"))
            .collect::<Vec<_>>()
            .join("\n");
        serde_yaml::from_str(&body).map_err(|e| parse(e.to_string()))?
    };
    Ok(untag(root))
}

/// A camera read from an OpenCV file, and whether the file placed it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenCvCalibration {
    /// The camera; at the world origin (R = I, t = 0) when the file has no extrinsics.
    pub camera: Camera,
    /// Whether the file has R (or rvec) and T (or tvec).
    pub extrinsics: bool,
}

/// Why a calibration could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CalibError {
    #[error("{origin}: {source}")]
    Io {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    /// A file that does not parse as the format it was read as.
    #[error("{origin}: not {format}: {what}")]
    Parse {
        origin: String,
        /// The format the file was read as.
        format: &'static str,
        what: String,
    },
    #[error("{origin}: no {keys}")]
    Missing { origin: String, keys: String },
    /// A calibration made for another image size than its camera's.
    #[error("{origin}: calibrated for {}x{} images, but the camera is {}x{}", calibrated.0, calibrated.1, camera.0, camera.1)]
    SizeMismatch {
        origin: String,
        calibrated: (u32, u32),
        camera: (u32, u32),
    },
    /// A file without extrinsics in a rig of several cameras.
    #[error(
        "{origin}: no extrinsics (R or rvec, and T or tvec), as `calibrateCamera` writes: in a \
         rig of {cameras} cameras each needs its pose; calibrate the rig's extrinsics, or set \
         `world_origin = true` on the one camera that defines the world"
    )]
    NoExtrinsics { origin: String, cameras: usize },
    /// A camera declared the world origin whose file places it elsewhere.
    #[error(
        "{origin}: the camera is `world_origin = true`, but the file's R and T place it \
         elsewhere; drop the key, or the file's R and T"
    )]
    NotAtOrigin { origin: String },
    #[error("{origin}: {field}: {what}")]
    Invalid {
        origin: String,
        field: String,
        what: String,
    },
}

/// Drops YAML tags (`!!opencv-matrix`), keeping what they tag.
fn untag(v: Value) -> Value {
    match v {
        Value::Tagged(t) => untag(t.value),
        Value::Mapping(m) => Value::Mapping(m.into_iter().map(|(k, v)| (k, untag(v))).collect()),
        Value::Sequence(s) => Value::Sequence(s.into_iter().map(untag).collect()),
        other => other,
    }
}

struct Doc<'a> {
    root: &'a Value,
    origin: &'a str,
}

impl Doc<'_> {
    fn find<'k>(&self, keys: &[&'k str]) -> Option<(&'k str, &Value)> {
        keys.iter().find_map(|k| self.root.get(*k).map(|v| (*k, v)))
    }

    /// An image side under one of `keys`: absent is `None`; present, it must
    /// be an integer from 1 to [`MAX_CAMERA_SIDE`] (a negative, zero or huge
    /// side is an error, never a fallback).
    fn side(&self, keys: &[&str]) -> Result<Option<u32>, CalibError> {
        let Some((key, v)) = self.find(keys) else {
            return Ok(None);
        };
        v.as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .filter(|v| (1..=MAX_CAMERA_SIDE).contains(v))
            .map(Some)
            .ok_or_else(|| CalibError::Invalid {
                origin: self.origin.to_string(),
                field: key.to_string(),
                what: format!(
                    "{} is not a number of pixels from 1 to {MAX_CAMERA_SIDE}",
                    serde_json::to_string(v).unwrap_or_else(|_| "the value".into())
                ),
            })
    }

    /// The distortion coefficients, none for no distortion. OpenCV writes 4, 5, 8, 12 or 14;
    /// the terms past k3 (rational, thin prism) are ignored, with a warning when not zero.
    fn distortion(&self) -> Result<Distortion, CalibError> {
        let origin = self.origin;
        let d = self
            .optional_matrix(&["distortion_coefficients", "dist_coeffs", "distCoeffs", "D"])?
            .unwrap_or_default();
        if ![0, 4, 5, 8, 12, 14].contains(&d.len()) {
            return Err(CalibError::Invalid {
                origin: origin.to_string(),
                field: "distortion_coefficients".into(),
                what: format!("{} values; expected 4, 5, 8, 12 or 14", d.len()),
            });
        }
        if d.len() > 5 && d[5..].iter().any(|v| *v != 0.0) {
            log::warn!("{origin}: rational/thin-prism distortion terms beyond k3 are ignored");
        }
        let dist = |i: usize| d.get(i).copied().unwrap_or(0.0);
        Ok(Distortion {
            k1: dist(0),
            k2: dist(1),
            p1: dist(2),
            p2: dist(3),
            k3: dist(4),
        })
    }

    /// The image size the file was calibrated for, `size` (the camera's) when it has none;
    /// a file's size must equal the camera's.
    fn image_size(&self, size: Option<(u32, u32)>) -> Result<(u32, u32), CalibError> {
        let origin = self.origin;
        let (width, height) = match (
            self.side(&["image_width", "width"])?,
            self.side(&["image_height", "height"])?,
        ) {
            (Some(w), Some(h)) => (w, h),
            _ => size.ok_or_else(|| CalibError::Missing {
                origin: origin.to_string(),
                keys: "image_width/image_height".into(),
            })?,
        };
        if let Some((w, h)) = size.filter(|&s| s != (width, height)) {
            return Err(CalibError::SizeMismatch {
                origin: origin.to_string(),
                calibrated: (width, height),
                camera: (w, h),
            });
        }
        Ok((width, height))
    }

    /// The world-to-camera rotation and translation, `None` when the file has neither; one
    /// without the other is refused, naming the missing key.
    fn extrinsics(&self) -> Result<Option<Placement>, CalibError> {
        let missing = |keys: &str| CalibError::Missing {
            origin: self.origin.to_string(),
            keys: keys.into(),
        };
        match (self.rotation()?, self.translation()?) {
            (Some(rotation), Some(translation)) => Ok(Some((rotation, translation))),
            (None, None) => Ok(None),
            (Some(_), None) => Err(missing("T (or tvec) beside its R")),
            (None, Some(_)) => Err(missing("R (or rvec) beside its T")),
        }
    }

    /// The rotation under `R` (a 3x3 matrix or a Rodrigues vector) or `rvec`.
    fn rotation(&self) -> Result<Option<Matrix3<f64>>, CalibError> {
        let origin = self.origin;
        let rotation =
            if let Some(r) = self.optional_matrix(&["R", "rotation_matrix", "rotation"])? {
                if r.len() == 3 {
                    Some(rodrigues([r[0], r[1], r[2]]))
                } else if r.len() == 9 {
                    Some(Matrix3::from_row_slice(&r))
                } else {
                    return Err(CalibError::Invalid {
                        origin: origin.to_string(),
                        field: "R".into(),
                        what: format!("{} values; expected 3x3 or a 3-vector", r.len()),
                    });
                }
            } else if let Some(r) = self.optional_matrix(&["rvec", "rvecs"])? {
                if r.len() != 3 {
                    return Err(CalibError::Invalid {
                        origin: origin.to_string(),
                        field: "rvec".into(),
                        what: format!("{} values, expected 3", r.len()),
                    });
                }
                Some(rodrigues([r[0], r[1], r[2]]))
            } else {
                None
            };
        Ok(rotation)
    }

    /// The translation under `T` or one of its aliases.
    fn translation(&self) -> Result<Option<Vector3<f64>>, CalibError> {
        match self.optional_matrix(&[
            "T",
            "t",
            "tvec",
            "tvecs",
            "translation",
            "translation_vector",
        ])? {
            Some(t) if t.len() == 3 => Ok(Some(Vector3::new(t[0], t[1], t[2]))),
            Some(t) => Err(CalibError::Invalid {
                origin: self.origin.to_string(),
                field: "T".into(),
                what: format!("{} values, expected 3", t.len()),
            }),
            None => Ok(None),
        }
    }

    fn matrix(&self, keys: &[&str], rows: usize, cols: usize) -> Result<Vec<f64>, CalibError> {
        let m = self
            .optional_matrix(keys)?
            .ok_or_else(|| CalibError::Missing {
                origin: self.origin.to_string(),
                keys: keys.join(" / "),
            })?;
        if m.len() != rows * cols {
            return Err(CalibError::Invalid {
                origin: self.origin.to_string(),
                field: keys[0].to_string(),
                what: format!("{} values, expected {rows}x{cols}", m.len()),
            });
        }
        Ok(m)
    }

    /// A `{rows, cols, dt, data}` matrix (or a plain list) under one of `keys`.
    fn optional_matrix(&self, keys: &[&str]) -> Result<Option<Vec<f64>>, CalibError> {
        let Some((key, v)) = self.find(keys) else {
            return Ok(None);
        };
        let bad = |what: String| CalibError::Invalid {
            origin: self.origin.to_string(),
            field: key.to_string(),
            what,
        };
        let data = match v.get("data") {
            Some(d) => d,
            None => v,
        };
        let values = data
            .as_sequence()
            .ok_or_else(|| bad("expected a matrix with a data list".into()))?
            .iter()
            .map(|x| {
                x.as_f64()
                    .ok_or_else(|| bad("an entry is not a number".into()))
            })
            .collect::<Result<Vec<f64>, _>>()?;
        if let (Some(r), Some(c)) = (
            v.get("rows").and_then(Value::as_u64),
            v.get("cols").and_then(Value::as_u64),
        ) {
            if r.checked_mul(c) != Some(values.len() as u64) {
                return Err(bad(format!("{r}x{c} matrix with {} values", values.len())));
            }
        }
        Ok(Some(values))
    }
}

/// The error of a result that must fail, checked to hold every one of `words`.
#[cfg(test)]
pub(crate) fn refused<T, E: std::fmt::Display>(r: Result<T, E>, words: &[&str]) -> String {
    let Err(e) = r else {
        panic!("accepted; expected an error with {}", words.join(", "))
    };
    let e = e.to_string();
    for w in words {
        assert!(e.contains(w), "`{w}` not in: {e}");
    }
    e
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_checks;
#[cfg(test)]
mod tests_files;
