//! Kalibr's `camchain.yaml`: one `camN` map per camera with
//!
//! | key | holds |
//! |---|---|
//! | `camera_model` | `pinhole` (the only model read) |
//! | `intrinsics` | `[fu, fv, pu, pv]`, pixel centres on integers as in OpenCV |
//! | `distortion_model` | `radtan` (or `none`) |
//! | `distortion_coeffs` | `[k1, k2, r1, r2]`: OpenCV's k1, k2, p1, p2; radtan has no k3 |
//! | `resolution` | `[width, height]` |
//! | `T_cn_cnm1` | 4x4, camera n-1 coordinates to camera n coordinates (`cam1`: `T_c1_c0`), metres |
//! | `rostopic` | the image topic; written as `/NAME/image_raw`, read back as the camera's name |
//!
//! Other keys (`T_cam_imu`, `timeshift_cam_imu`, `cam_overlaps`) are skipped. A camchain has
//! no world frame: reading puts the world at `cam0` (its pose is R = I, t = 0) and each
//! next camera at `T_cn_cnm1` times the one before; writing keeps the cameras' relative
//! poses and drops `cam0`'s pose in the world ([`world_at_first_camera`] says whether
//! anything is lost).

use std::collections::BTreeMap;

use nalgebra::{Matrix3, Matrix4, Vector3};
use serde::{Deserialize, Serialize};

use super::{validate, CalibError, CalibratedCamera};
use crate::geom::{Camera, Distortion};

/// The format named when a file does not parse as one.
const FORMAT: &str = "a Kalibr camchain (YAML)";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Entry {
    camera_model: String,
    intrinsics: Vec<f64>,
    distortion_model: String,
    distortion_coeffs: Vec<f64>,
    resolution: [u32; 2],
    #[serde(rename = "T_cn_cnm1", default, skip_serializing_if = "Option::is_none")]
    t_cn_cnm1: Option<[[f64; 4]; 4]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rostopic: Option<String>,
}

/// Reads a Kalibr camchain; cameras are `cam0`, `cam1`, ... with no gap.
///
/// # Errors
/// [`CalibError`] naming `origin`, the camera and the key that is missing, malformed or of
/// a model this crate's camera does not have.
pub fn from_kalibr_str(text: &str, origin: &str) -> Result<Vec<CalibratedCamera>, CalibError> {
    let map: BTreeMap<String, serde_yaml::Value> =
        serde_yaml::from_str(text).map_err(|e| CalibError::Parse {
            origin: origin.to_string(),
            format: FORMAT,
            what: e.to_string(),
        })?;
    if map.is_empty() {
        return Err(CalibError::Missing {
            origin: origin.to_string(),
            keys: "cam0".into(),
        });
    }
    let mut world_to_prev = Matrix4::identity();
    let mut out = Vec::with_capacity(map.len());
    for n in 0..map.len() {
        let key = format!("cam{n}");
        let at = format!("{origin} {key}");
        let value = map.get(&key).ok_or_else(|| CalibError::Missing {
            origin: origin.to_string(),
            keys: format!(
                "{key} (the cameras are cam0 to cam{} with no gap)",
                map.len() - 1
            ),
        })?;
        let entry: Entry =
            serde_yaml::from_value(value.clone()).map_err(|e| CalibError::Parse {
                origin: at.clone(),
                format: FORMAT,
                what: e.to_string(),
            })?;
        let to_this = match (n, entry.t_cn_cnm1) {
            (0, _) => Matrix4::identity(),
            (_, Some(t)) => Matrix4::from_fn(|r, c| t[r][c]),
            (_, None) => {
                return Err(CalibError::Missing {
                    origin: at,
                    keys: "T_cn_cnm1".into(),
                })
            }
        };
        let world_to_this = to_this * world_to_prev;
        world_to_prev = world_to_this;
        let camera = entry.camera(&at, &world_to_this)?;
        let name = entry
            .rostopic
            .as_deref()
            .and_then(|t| t.strip_prefix('/')?.strip_suffix("/image_raw"))
            .filter(|s| !s.is_empty() && !s.contains('/'))
            .map_or(key, str::to_owned);
        out.push(CalibratedCamera { name, camera });
    }
    Ok(out)
}

impl Entry {
    fn camera(&self, at: &str, pose: &Matrix4<f64>) -> Result<Camera, CalibError> {
        let invalid = |field: &str, what: String| CalibError::Invalid {
            origin: at.to_string(),
            field: field.into(),
            what,
        };
        if self.camera_model != "pinhole" {
            return Err(invalid(
                "camera_model",
                format!("`{}`; only `pinhole` is read", self.camera_model),
            ));
        }
        let d = &self.distortion_coeffs;
        let coeffs = match self.distortion_model.as_str() {
            "radtan" if d.len() == 4 => [d[0], d[1], d[2], d[3]],
            "radtan" => {
                return Err(invalid(
                    "distortion_coeffs",
                    format!("{} values; radtan has 4 (k1, k2, r1, r2)", d.len()),
                ))
            }
            "none" => [0.0; 4],
            other => {
                return Err(invalid(
                    "distortion_model",
                    format!("`{other}`; only `radtan` (or `none`) is read"),
                ))
            }
        };
        let [fu, fv, pu, pv] = <[f64; 4]>::try_from(self.intrinsics.as_slice()).map_err(|_| {
            invalid(
                "intrinsics",
                format!(
                    "{} values; pinhole has 4 (fu, fv, pu, pv)",
                    self.intrinsics.len()
                ),
            )
        })?;
        let last_row = pose.fixed_view::<1, 4>(3, 0);
        if (last_row - nalgebra::RowVector4::new(0.0, 0.0, 0.0, 1.0)).amax() > 1e-9 {
            return Err(invalid("T_cn_cnm1", "the last row is not 0 0 0 1".into()));
        }
        let camera = Camera {
            width: self.resolution[0],
            height: self.resolution[1],
            fx: fu,
            fy: fv,
            cx: pu + 0.5,
            cy: pv + 0.5,
            distortion: Distortion {
                k1: coeffs[0],
                k2: coeffs[1],
                p1: coeffs[2],
                p2: coeffs[3],
                k3: 0.0,
            },
            rotation: pose.fixed_view::<3, 3>(0, 0).into_owned(),
            translation: pose.fixed_view::<3, 1>(0, 3).into_owned(),
        };
        validate(&camera, at)?;
        Ok(camera)
    }
}

/// The world-to-camera transform of a camera as a 4x4 matrix.
fn pose(c: &Camera) -> Matrix4<f64> {
    let mut m = Matrix4::identity();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&c.rotation);
    m.fixed_view_mut::<3, 1>(0, 3).copy_from(&c.translation);
    m
}

/// Whether the first camera is the world's origin, so a camchain, which has no world
/// frame, keeps every pose.
pub fn world_at_first_camera(cameras: &[CalibratedCamera]) -> bool {
    cameras.first().is_none_or(|c| {
        (c.camera.rotation - Matrix3::identity()).amax() < 1e-12
            && c.camera.translation == Vector3::zeros()
    })
}

/// The cameras with the world moved to the first camera (its pose becomes R = I, t = 0),
/// every relative pose kept: what a camchain holds of a rig.
pub fn relative_to_first(cameras: &[CalibratedCamera]) -> Vec<CalibratedCamera> {
    let Some(first) = cameras.first() else {
        return Vec::new();
    };
    let (r0, t0) = (first.camera.rotation, first.camera.translation);
    cameras
        .iter()
        .map(|c| {
            let mut camera = c.camera;
            // A point x0 in the first camera's frame is R0^T (x0 - t0) in the world.
            camera.translation -= camera.rotation * r0.transpose() * t0;
            camera.rotation *= r0.transpose();
            CalibratedCamera {
                name: c.name.clone(),
                camera,
            }
        })
        .collect()
}

/// The Kalibr camchain of `cameras` (translations in metres), with `T_cn_cnm1` from each
/// camera to the next.
///
/// # Errors
/// [`CalibError::Invalid`] naming the camera and `k3` when its k3 is not zero (radtan has
/// no k3: writing it would change the lens), or a value YAML cannot hold.
pub fn to_kalibr_string(cameras: &[CalibratedCamera]) -> Result<String, CalibError> {
    let mut map = BTreeMap::new();
    let mut prev: Option<Matrix4<f64>> = None;
    for (n, c) in cameras.iter().enumerate() {
        let cam = &c.camera;
        let d = cam.distortion;
        if d.k3 != 0.0 {
            return Err(CalibError::Invalid {
                origin: c.name.clone(),
                field: "k3".into(),
                what: format!(
                    "{}: Kalibr's radtan model has k1, k2, r1, r2 only, so the file would \
                     describe another lens; recalibrate without k3 or write OpenCV or anipose",
                    d.k3
                ),
            });
        }
        let this = pose(cam);
        let t_cn_cnm1 = prev.map(|p| {
            // World-to-previous is rigid; its inverse is [R^T, -R^T t].
            let r = p.fixed_view::<3, 3>(0, 0).transpose();
            let t = -(r * p.fixed_view::<3, 1>(0, 3));
            let mut inv = Matrix4::identity();
            inv.fixed_view_mut::<3, 3>(0, 0).copy_from(&r);
            inv.fixed_view_mut::<3, 1>(0, 3).copy_from(&t);
            let rel = this * inv;
            std::array::from_fn(|r| std::array::from_fn(|k| rel[(r, k)]))
        });
        prev = Some(this);
        map.insert(
            format!("cam{n}"),
            Entry {
                camera_model: "pinhole".into(),
                intrinsics: vec![cam.fx, cam.fy, cam.cx - 0.5, cam.cy - 0.5],
                distortion_model: "radtan".into(),
                distortion_coeffs: vec![d.k1, d.k2, d.p1, d.p2],
                resolution: [cam.width, cam.height],
                t_cn_cnm1,
                rostopic: Some(format!("/{}/image_raw", c.name)),
            },
        );
    }
    serde_yaml::to_string(&map).map_err(|e| CalibError::Invalid {
        origin: "camchain".into(),
        field: "yaml".into(),
        what: e.to_string(),
    })
}
