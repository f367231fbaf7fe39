//! Per-camera calibration: intrinsics with OpenCV's distortion model
//! (k1, k2, p1, p2, k3) and extrinsics (world to camera), as the rig file
//! holds them, plus import of OpenCV FileStorage YAML/JSON files.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_yaml::Value;

/// Pinhole intrinsics with OpenCV's radial-tangential distortion.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intrinsics {
    /// Image size the calibration was made at.
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
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
}

impl Intrinsics {
    /// An undistorted camera with a horizontal field of view of `hfov_deg`, centred principal point.
    pub fn ideal(width: u32, height: u32, hfov_deg: f64) -> Self {
        let f = f64::from(width) / 2.0 / (hfov_deg.to_radians() / 2.0).tan();
        Self {
            width,
            height,
            fx: f,
            fy: f,
            cx: f64::from(width) / 2.0,
            cy: f64::from(height) / 2.0,
            k1: 0.0,
            k2: 0.0,
            p1: 0.0,
            p2: 0.0,
            k3: 0.0,
        }
    }

    /// Distortion coefficients in OpenCV order.
    pub fn distortion(&self) -> [f64; 5] {
        [self.k1, self.k2, self.p1, self.p2, self.k3]
    }

    /// A point in camera coordinates (z forward) to pixels, OpenCV's
    /// `projectPoints` convention (pixel centres at integers). `None` behind the camera.
    pub fn project(&self, p: [f64; 3]) -> Option<[f64; 2]> {
        if p[2] <= 1e-9 {
            return None;
        }
        let (x, y) = (p[0] / p[2], p[1] / p[2]);
        let r2 = x * x + y * y;
        let radial = 1.0 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3));
        let xd = x * radial + 2.0 * self.p1 * x * y + self.p2 * (r2 + 2.0 * x * x);
        let yd = y * radial + self.p1 * (r2 + 2.0 * y * y) + 2.0 * self.p2 * x * y;
        Some([self.fx * xd + self.cx, self.fy * yd + self.cy])
    }
}

/// World to camera: `p_cam = rotation * p_world + translation` (metres).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extrinsics {
    /// Row-major 3x3 rotation.
    pub rotation: [[f64; 3]; 3],
    pub translation: [f64; 3],
}

impl Default for Extrinsics {
    fn default() -> Self {
        Self {
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            translation: [0.0; 3],
        }
    }
}

impl Extrinsics {
    /// From an axis-angle vector (OpenCV `rvec`) and a translation.
    pub fn from_rvec(rvec: [f64; 3], translation: [f64; 3]) -> Self {
        Self {
            rotation: rodrigues(rvec),
            translation,
        }
    }

    /// A camera at `eye` looking at `target`, with world +z up.
    pub fn look_at(eye: [f64; 3], target: [f64; 3]) -> Self {
        let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        let cross = |a: [f64; 3], b: [f64; 3]| {
            [
                a[1] * b[2] - a[2] * b[1],
                a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0],
            ]
        };
        let norm = |a: [f64; 3]| {
            let n = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt().max(1e-12);
            [a[0] / n, a[1] / n, a[2] / n]
        };
        let z = norm(sub(target, eye));
        let x = norm(cross(z, [0.0, 0.0, 1.0]));
        let y = cross(z, x);
        let rotation = [x, y, z];
        let t = |r: [f64; 3]| -(r[0] * eye[0] + r[1] * eye[1] + r[2] * eye[2]);
        Self {
            rotation,
            translation: [t(x), t(y), t(z)],
        }
    }

    /// A world point in camera coordinates.
    pub fn to_camera(&self, p: [f64; 3]) -> [f64; 3] {
        let r = &self.rotation;
        std::array::from_fn(|i| {
            r[i][0] * p[0] + r[i][1] * p[1] + r[i][2] * p[2] + self.translation[i]
        })
    }

    /// Whether the rotation is orthonormal with determinant +1 (to 1e-6).
    pub fn is_rotation(&self) -> bool {
        let r = &self.rotation;
        let det = r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1])
            - r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0])
            + r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]);
        let ortho = (0..3).all(|i| {
            (0..3).all(|j| {
                let dot: f64 = (0..3).map(|k| r[i][k] * r[j][k]).sum();
                (dot - if i == j { 1.0 } else { 0.0 }).abs() < 1e-6
            })
        });
        ortho && (det - 1.0).abs() < 1e-6
    }
}

/// Rotation matrix of an axis-angle vector (Rodrigues' formula).
pub fn rodrigues(r: [f64; 3]) -> [[f64; 3]; 3] {
    let theta = (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt();
    if theta < 1e-12 {
        return Extrinsics::default().rotation;
    }
    let k = [r[0] / theta, r[1] / theta, r[2] / theta];
    let (s, c) = theta.sin_cos();
    let v = 1.0 - c;
    [
        [
            c + k[0] * k[0] * v,
            k[0] * k[1] * v - k[2] * s,
            k[0] * k[2] * v + k[1] * s,
        ],
        [
            k[1] * k[0] * v + k[2] * s,
            c + k[1] * k[1] * v,
            k[1] * k[2] * v - k[0] * s,
        ],
        [
            k[2] * k[0] * v - k[1] * s,
            k[2] * k[1] * v + k[0] * s,
            c + k[2] * k[2] * v,
        ],
    ]
}

/// Intrinsics and extrinsics of one camera (a `[cameras.calibration]` table of the rig file).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraCalibration {
    pub intrinsics: Intrinsics,
    #[serde(default)]
    pub extrinsics: Extrinsics,
}

impl CameraCalibration {
    /// A world point to pixels; `None` behind the camera.
    pub fn project(&self, p_world: [f64; 3]) -> Option<[f64; 2]> {
        self.intrinsics.project(self.extrinsics.to_camera(p_world))
    }

    /// Checks the values make sense.
    ///
    /// # Errors
    /// [`CalibError::Invalid`] naming the field.
    pub fn validate(&self, origin: &str) -> Result<(), CalibError> {
        let bad = |field: &str, what: String| CalibError::Invalid {
            origin: origin.to_string(),
            field: field.to_string(),
            what,
        };
        let i = &self.intrinsics;
        if i.width == 0 || i.height == 0 {
            return Err(bad(
                "width/height",
                format!("{}x{} is empty", i.width, i.height),
            ));
        }
        if !(i.fx > 0.0 && i.fy > 0.0) {
            return Err(bad(
                "fx/fy",
                format!("focal lengths {} {} must be positive", i.fx, i.fy),
            ));
        }
        if !self.extrinsics.is_rotation() {
            return Err(bad(
                "rotation",
                "not an orthonormal right-handed rotation".into(),
            ));
        }
        Ok(())
    }

    /// Reads an OpenCV FileStorage calibration (YAML with `%YAML:1.0` and
    /// `!!opencv-matrix`, or JSON): `camera_matrix`, `distortion_coefficients`,
    /// `image_width`/`image_height`, and optionally `R`/`T` or `rvec`/`tvec`
    /// (common aliases accepted). `size` is used when the file has no image size.
    ///
    /// # Errors
    /// [`CalibError`] naming the file and the key that is missing or malformed.
    pub fn from_opencv_file(path: &Path, size: Option<(u32, u32)>) -> Result<Self, CalibError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| CalibError::Io {
            origin: origin.clone(),
            source: e,
        })?;
        Self::from_opencv_str(&text, &origin, size)
    }

    /// As [`CameraCalibration::from_opencv_file`], from text; `origin` names it in errors.
    ///
    /// # Errors
    /// See [`CameraCalibration::from_opencv_file`].
    pub fn from_opencv_str(
        text: &str,
        origin: &str,
        size: Option<(u32, u32)>,
    ) -> Result<Self, CalibError> {
        let parse = |what: String| CalibError::Parse {
            origin: origin.to_string(),
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
        let root = untag(root);
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
        let d = doc
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
        let (width, height) = match (
            doc.int(&["image_width", "width"]),
            doc.int(&["image_height", "height"]),
        ) {
            (Some(w), Some(h)) => (w, h),
            _ => size.ok_or_else(|| CalibError::Missing {
                origin: origin.to_string(),
                keys: "image_width/image_height".into(),
            })?,
        };
        let rotation =
            if let Some(r) = doc.optional_matrix(&["R", "rotation_matrix", "rotation"])? {
                if r.len() == 3 {
                    rodrigues([r[0], r[1], r[2]])
                } else if r.len() == 9 {
                    [[r[0], r[1], r[2]], [r[3], r[4], r[5]], [r[6], r[7], r[8]]]
                } else {
                    return Err(CalibError::Invalid {
                        origin: origin.to_string(),
                        field: "R".into(),
                        what: format!("{} values; expected 3x3 or a 3-vector", r.len()),
                    });
                }
            } else if let Some(r) = doc.optional_matrix(&["rvec", "rvecs"])? {
                if r.len() != 3 {
                    return Err(CalibError::Invalid {
                        origin: origin.to_string(),
                        field: "rvec".into(),
                        what: format!("{} values, expected 3", r.len()),
                    });
                }
                rodrigues([r[0], r[1], r[2]])
            } else {
                Extrinsics::default().rotation
            };
        let translation = match doc.optional_matrix(&[
            "T",
            "t",
            "tvec",
            "tvecs",
            "translation",
            "translation_vector",
        ])? {
            Some(t) if t.len() == 3 => [t[0], t[1], t[2]],
            Some(t) => {
                return Err(CalibError::Invalid {
                    origin: origin.to_string(),
                    field: "T".into(),
                    what: format!("{} values, expected 3", t.len()),
                })
            }
            None => [0.0; 3],
        };
        let calib = Self {
            intrinsics: Intrinsics {
                width,
                height,
                fx: k[0],
                fy: k[4],
                cx: k[2],
                cy: k[5],
                k1: dist(0),
                k2: dist(1),
                p1: dist(2),
                p2: dist(3),
                k3: dist(4),
            },
            extrinsics: Extrinsics {
                rotation,
                translation,
            },
        };
        calib.validate(origin)?;
        Ok(calib)
    }
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
    #[error("{origin}: not OpenCV FileStorage YAML or JSON: {what}")]
    Parse { origin: String, what: String },
    #[error("{origin}: no {keys}")]
    Missing { origin: String, keys: String },
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

    fn int(&self, keys: &[&str]) -> Option<u32> {
        self.find(keys)
            .and_then(|(_, v)| v.as_u64())
            .and_then(|v| u32::try_from(v).ok())
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
                    .ok_or_else(|| bad(format!("non-numeric entry {x:?}")))
            })
            .collect::<Result<Vec<f64>, _>>()?;
        if let (Some(r), Some(c)) = (
            v.get("rows").and_then(Value::as_u64),
            v.get("cols").and_then(Value::as_u64),
        ) {
            if (r * c) as usize != values.len() {
                return Err(bad(format!("{r}x{c} matrix with {} values", values.len())));
            }
        }
        Ok(Some(values))
    }
}

#[cfg(test)]
mod tests;
