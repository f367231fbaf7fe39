//! The detected-corners file `calibrate --corners` reads and `--save-corners` writes: the
//! board, the cameras with their image sizes, and per camera and instant the corners seen,
//! as any AprilGrid detector can write them (Kalibr's `aprilgrid` detector or the `apriltag`
//! Python bindings, with the tag id times four plus the corner number as the id).
//!
//! ```json
//! {
//!   "board": "aprilgrid:6x6:0.088:0.3",
//!   "cameras": [{ "name": "front", "width": 288, "height": 288 }],
//!   "anchor": { "instant": 3, "translation": [0, 0, 0], "rotation": [0, 0, 0] },
//!   "views": [{ "camera": "front", "instant": 3, "corners": [[0, 101.5, 200.25]] }]
//! }
//! ```
//!
//! Views of one camera at one instant are one view: the frames of a board lying still, each
//! corner averaged over the frames that saw it.
//!
//! `anchor` is optional: the instant whose board pose fixes the world, with that pose (board
//! to world; translation in metres, rotation as a rotation vector in radians). Without it
//! the command's `--anchor` says which instant the board lay on the floor at the origin.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use nalgebra::{Isometry3, Point2, Translation3, UnitQuaternion, Vector3};
use serde::{Deserialize, Serialize};

use super::board::AprilGrid;
use super::extrinsics::Anchor;
use super::{BoardView, CornerMeans};
use crate::limits::{MAX_CALIBRATION_VIEWS as MAX_VIEWS, MAX_CAMERAS, MAX_CAMERA_SIDE};

/// Why a corners file is refused; each names the file and where in it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CornersFileError {
    /// The file cannot be read.
    #[error("{path}: cannot read the corners file: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not the format.
    #[error("{path}: not a corners file: {source}")]
    Parse {
        /// The file.
        path: String,
        /// Where and why (serde_json names the line, column and field).
        source: serde_json::Error,
    },
    /// A field holds what the format does not allow.
    #[error("{path}: {field}: {why}")]
    Invalid {
        /// The file.
        path: String,
        /// The field, as `views[3].camera`.
        field: String,
        /// What was expected.
        why: String,
    },
}

/// A camera in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraEntry {
    /// Its name, as the rig file names it.
    pub name: String,
    /// Image width (pixels).
    pub width: u32,
    /// Image height (pixels).
    pub height: u32,
}

/// The instant and board pose that fix the world.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnchorEntry {
    /// The instant.
    pub instant: usize,
    /// The board's origin in the world (metres).
    pub translation: [f64; 3],
    /// The board-to-world rotation as a rotation vector (radians).
    pub rotation: [f64; 3],
}

impl AnchorEntry {
    /// The anchor of [`calibrate_extrinsics`](super::calibrate_extrinsics).
    pub fn anchor(&self) -> Anchor {
        let [x, y, z] = self.translation;
        let [a, b, c] = self.rotation;
        Anchor {
            pose: self.instant,
            world_from_board: Isometry3::from_parts(
                Translation3::new(x, y, z),
                UnitQuaternion::from_scaled_axis(Vector3::new(a, b, c)),
            ),
        }
    }

    /// The entry of `anchor`.
    pub fn of(anchor: &Anchor) -> Self {
        let t = anchor.world_from_board.translation.vector;
        let r = anchor.world_from_board.rotation.scaled_axis();
        Self {
            instant: anchor.pose,
            translation: [t.x, t.y, t.z],
            rotation: [r.x, r.y, r.z],
        }
    }
}

/// One camera's corners at one instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewEntry {
    /// The camera's name.
    pub camera: String,
    /// The instant: views of one instant saw the board in one pose.
    pub instant: usize,
    /// Corner id, x, y (pixels, origin at the top left pixel's top left corner).
    pub corners: Vec<(u32, f64, f64)>,
}

/// A detected-corners file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CornersFile {
    /// The board, in `--board` syntax.
    pub board: String,
    /// The cameras.
    pub cameras: Vec<CameraEntry>,
    /// What fixes the world, when the file says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<AnchorEntry>,
    /// The views.
    pub views: Vec<ViewEntry>,
}

/// A corners file checked and turned into the solver's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Corners {
    /// The board.
    pub board: AprilGrid,
    /// The cameras, in the file's order.
    pub cameras: Vec<CameraEntry>,
    /// The anchor, when the file gives one.
    pub anchor: Option<Anchor>,
    /// The views, camera by index into `cameras`.
    pub views: Vec<BoardView>,
}

impl CornersFile {
    /// The file of a capture.
    pub fn of(
        board: &AprilGrid,
        cameras: &[CameraEntry],
        anchor: Option<&Anchor>,
        views: &[BoardView],
    ) -> Self {
        Self {
            board: board.to_string(),
            cameras: cameras.to_vec(),
            anchor: anchor.map(AnchorEntry::of),
            views: views
                .iter()
                .map(|v| ViewEntry {
                    camera: cameras
                        .get(v.camera)
                        .map_or_else(|| format!("#{}", v.camera), |c| c.name.clone()),
                    instant: v.pose,
                    corners: v
                        .corners
                        .iter()
                        .map(|c| (c.id, c.pixel.x, c.pixel.y))
                        .collect(),
                })
                .collect(),
        }
    }

    /// Reads and checks the file at `path`.
    ///
    /// # Errors
    /// [`CornersFileError`] naming the file and the field.
    pub fn read(path: &Path) -> Result<Corners, CornersFileError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| CornersFileError::Read {
            path: name.clone(),
            source,
        })?;
        let file: CornersFile =
            serde_json::from_str(&text).map_err(|source| CornersFileError::Parse {
                path: name.clone(),
                source,
            })?;
        file.check(&name)
    }

    /// Checks the file's fields (`origin` names it in errors).
    ///
    /// # Errors
    /// [`CornersFileError::Invalid`] naming the field: an unknown board, no cameras or too
    /// many, a camera named twice or with a size out of bounds, a view of a camera the file
    /// does not list, a corner id the board does not have or named twice in a view, and a
    /// pixel outside its image or not finite.
    pub fn check(self, origin: &str) -> Result<Corners, CornersFileError> {
        let invalid = |field: String, why: String| CornersFileError::Invalid {
            path: origin.to_owned(),
            field,
            why,
        };
        let board: AprilGrid = self
            .board
            .parse()
            .map_err(|e: super::BoardError| invalid("board".into(), e.to_string()))?;
        if self.cameras.is_empty() || self.cameras.len() > MAX_CAMERAS {
            return Err(invalid(
                "cameras".into(),
                format!(
                    "{} cameras, 1 to {MAX_CAMERAS} expected",
                    self.cameras.len()
                ),
            ));
        }
        if self.views.len() > MAX_VIEWS {
            return Err(invalid(
                "views".into(),
                format!("{} views, at most {MAX_VIEWS} expected", self.views.len()),
            ));
        }
        let mut names = BTreeSet::new();
        for (i, c) in self.cameras.iter().enumerate() {
            if !names.insert(c.name.as_str()) {
                return Err(invalid(
                    format!("cameras[{i}].name"),
                    format!("`{}` is named twice", c.name),
                ));
            }
            let side = 1..=MAX_CAMERA_SIDE;
            if !(side.contains(&c.width) && side.contains(&c.height)) {
                return Err(invalid(
                    format!("cameras[{i}]"),
                    format!(
                        "`{}` is {} x {}; sides of 1 to {MAX_CAMERA_SIDE} pixels expected",
                        c.name, c.width, c.height
                    ),
                ));
            }
        }
        // A camera's frames of one instant (a board lying still) are one view, each corner
        // averaged over the frames that saw it.
        let mut merged: BTreeMap<(usize, usize), CornerMeans> = BTreeMap::new();
        for (i, v) in self.views.iter().enumerate() {
            let Some(camera) = self.cameras.iter().position(|c| c.name == v.camera) else {
                return Err(invalid(
                    format!("views[{i}].camera"),
                    format!("`{}` is not among the file's cameras", v.camera),
                ));
            };
            let (w, h) = (
                f64::from(self.cameras[camera].width),
                f64::from(self.cameras[camera].height),
            );
            let mut ids = BTreeSet::new();
            let view = merged.entry((v.instant, camera)).or_default();
            for (k, &(id, x, y)) in v.corners.iter().enumerate() {
                let field = || format!("views[{i}].corners[{k}]");
                if id >= board.corners() {
                    return Err(invalid(
                        field(),
                        format!(
                            "corner id {id}: the board has ids 0 to {}",
                            board.corners() - 1
                        ),
                    ));
                }
                if !ids.insert(id) {
                    return Err(invalid(field(), format!("corner id {id} is named twice")));
                }
                if !(x.is_finite()
                    && y.is_finite()
                    && (0.0..=w).contains(&x)
                    && (0.0..=h).contains(&y))
                {
                    return Err(invalid(
                        field(),
                        format!("pixel ({x}, {y}) is outside the {w} x {h} image"),
                    ));
                }
                view.add(id, Point2::new(x, y));
            }
        }
        let views = merged
            .into_iter()
            .map(|((instant, camera), corners)| BoardView {
                camera,
                pose: instant,
                corners: corners.means(1),
            })
            .collect();
        Ok(Corners {
            board,
            cameras: self.cameras,
            anchor: self.anchor.map(|a| a.anchor()),
            views,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::Corner;

    fn file(views: Vec<ViewEntry>) -> CornersFile {
        CornersFile {
            board: "aprilgrid:6x6:0.088:0.3".into(),
            cameras: vec![CameraEntry {
                name: "a".into(),
                width: 288,
                height: 288,
            }],
            anchor: None,
            views,
        }
    }

    #[test]
    fn frames_of_one_instant_are_one_view_averaged() {
        let frame = |x: f64| ViewEntry {
            camera: "a".into(),
            instant: 3,
            corners: vec![(0, x, 10.0), (1, 20.0, 10.0)],
        };
        let other = ViewEntry {
            camera: "a".into(),
            instant: 4,
            corners: vec![(0, 50.0, 50.0)],
        };
        let got = file(vec![frame(10.0), frame(11.0), other])
            .check("t")
            .unwrap();
        assert_eq!(got.views.len(), 2);
        let v = &got.views[0];
        assert_eq!((v.pose, v.corners.len()), (3, 2));
        assert_eq!(v.corners[0].pixel, Point2::new(10.5, 10.0));
        assert_eq!(v.corners[1].pixel, Point2::new(20.0, 10.0));
        // Negative control: another instant is not averaged in.
        assert_eq!(got.views[1].corners[0].pixel, Point2::new(50.0, 50.0));
    }

    #[test]
    fn a_capture_round_trips_through_the_file() {
        let board: AprilGrid = "aprilgrid:6x6:0.088:0.3".parse().unwrap();
        let anchor = Anchor {
            pose: 1,
            world_from_board: Isometry3::from_parts(
                Translation3::new(0.5, -0.25, -0.9),
                UnitQuaternion::from_scaled_axis(Vector3::new(0.1, 0.2, -0.3)),
            ),
        };
        let views = vec![BoardView {
            camera: 0,
            pose: 1,
            corners: vec![Corner {
                id: 5,
                pixel: Point2::new(1.25, 2.5),
            }],
        }];
        let cameras = file(Vec::new()).cameras;
        let written =
            serde_json::to_string(&CornersFile::of(&board, &cameras, Some(&anchor), &views))
                .unwrap();
        let read: CornersFile = serde_json::from_str(&written).unwrap();
        let got = read.check("t").unwrap();
        assert_eq!(got.views, views);
        let a = got.anchor.unwrap();
        assert_eq!(a.pose, 1);
        assert!(
            (a.world_from_board.translation.vector - anchor.world_from_board.translation.vector)
                .norm()
                < 1e-12
        );
        assert!(
            a.world_from_board
                .rotation
                .angle_to(&anchor.world_from_board.rotation)
                < 1e-12
        );
    }

    #[test]
    fn cameras_are_checked() {
        let mut f = file(Vec::new());
        f.cameras.push(f.cameras[0].clone());
        let err = f.check("c.json").unwrap_err().to_string();
        assert!(
            err.contains("c.json: cameras[1].name: `a` is named twice"),
            "{err}"
        );
        let mut f = file(Vec::new());
        f.cameras[0].width = 0;
        let err = f.check("c.json").unwrap_err().to_string();
        assert!(err.contains("cameras[0]: `a` is 0 x 288"), "{err}");
        let mut f = file(Vec::new());
        f.board = "aprilgrid:0x6:0.088:0.3".into();
        let err = f.check("c.json").unwrap_err().to_string();
        assert!(err.starts_with("c.json: board: "), "{err}");
    }
}
