//! A rig's cameras and the bytes of the graphs they feed.

use std::path::Path;

use serde::Serialize;

use crate::decode::{Split, PATCH};

use crate::doctor::DoctorError;
use crate::metrics::plan::CameraMode;

/// A `--camera` value for the budget: [`CameraMode`] text whose side the backbone takes
/// (divisible by [`PATCH`]), e.g. `288@120` or `432@120:face`.
///
/// # Errors
/// [`DoctorError::BadCamera`] naming `spec` and what is wrong with it.
pub fn backbone_camera(spec: &str) -> Result<CameraMode, DoctorError> {
    Ok(CameraMode::parse_with_stride(spec, PATCH)?)
}

/// Bytes in and out of one inference of a graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphIo {
    pub name: String,
    /// Side of its square input.
    pub input_side: u32,
    pub in_bytes: u64,
    pub out_bytes: u64,
}

impl GraphIo {
    /// The device half of the RF-DETR keypoint model at `side`, at the design split:
    /// input side*side*3 UINT8, outputs two (g, g, 256) UINT8 with g = side/12.
    pub fn backbone(side: u32) -> Self {
        Self::backbone_at(side, Split::Design)
    }

    /// The device half at `side` for either split: two (g, g, 256) maps (design)
    /// or four (g, g, 384) taps, UINT8.
    pub fn backbone_at(side: u32, split: Split) -> Self {
        let s = u64::from(side);
        let g = u64::from(side / PATCH);
        let maps = split.input_names().len() as u64;
        Self {
            name: format!("rf-detr device half {side} ({} split)", split.key()),
            input_side: side,
            in_bytes: s * s * 3,
            out_bytes: maps * g * g * split.channels() as u64,
        }
    }

    /// The bytes of a HEF network group: its one square image input, the sum
    /// of its outputs. `None` when the group has not exactly one square input.
    pub fn from_network_group(group: &hef::NetworkGroup) -> Option<Self> {
        let [input] = group.inputs.as_slice() else {
            return None;
        };
        let hef::StreamShape::Image { height, width, .. } = input.shape else {
            return None;
        };
        (height == width).then(|| Self {
            name: group.name.clone(),
            input_side: height,
            in_bytes: input.frame_size(),
            out_bytes: group.outputs.iter().map(hef::StreamInfo::frame_size).sum(),
        })
    }
}

/// The graphs of HEF files: one per network group.
///
/// # Errors
/// [`DoctorError::Hef`] for a file that does not read (it names the file),
/// [`DoctorError::UnsupportedGraph`] for a group without one square input.
pub fn graphs_from_hefs(paths: &[impl AsRef<Path>]) -> Result<Vec<GraphIo>, DoctorError> {
    let mut graphs = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let model = hef::Hef::open(path)?;
        for group in &model.network_groups {
            graphs.push(GraphIo::from_network_group(group).ok_or_else(|| {
                DoctorError::UnsupportedGraph {
                    path: path.display().to_string(),
                    group: group.name.clone(),
                }
            })?);
        }
    }
    Ok(graphs)
}

/// Where the graphs' shapes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeSource {
    /// The backbone's formula.
    BackboneFormula,
    /// Streams read from HEF files.
    Hef,
}

/// Cameras and the graphs they feed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rig {
    pub cameras: Vec<CameraMode>,
    pub graphs: Vec<GraphIo>,
    pub shapes: ShapeSource,
}

impl Rig {
    /// The demo rig: three body cameras at 288 and a face camera at 432, all
    /// at 120 fps, into the backbone.
    pub fn demo() -> Self {
        Self {
            graphs: vec![GraphIo::backbone(288), GraphIo::backbone(432)],
            cameras: Self::demo_cameras(),
            shapes: ShapeSource::BackboneFormula,
        }
    }

    /// The demo rig's cameras: 3x288@120 + 1x432@120.
    pub fn demo_cameras() -> Vec<CameraMode> {
        [288, 288, 288, 432]
            .map(|side| CameraMode::new(side, 120.0))
            .to_vec()
    }

    /// Cameras into the backbone, one graph per distinct side.
    ///
    /// # Errors
    /// [`DoctorError::EmptyRig`] without cameras.
    pub fn with_backbone(cameras: Vec<CameraMode>) -> Result<Self, DoctorError> {
        let mut sides: Vec<u32> = cameras.iter().map(|c| c.side).collect();
        sides.sort_unstable();
        sides.dedup();
        Self::with_graphs(
            cameras,
            sides.into_iter().map(GraphIo::backbone).collect(),
            ShapeSource::BackboneFormula,
        )
    }

    /// Cameras into the given graphs; each camera feeds the graph whose input
    /// side equals its own.
    ///
    /// # Errors
    /// [`DoctorError::EmptyRig`], or [`DoctorError::NoGraphForCamera`] naming
    /// a camera no graph takes.
    pub fn with_graphs(
        cameras: Vec<CameraMode>,
        graphs: Vec<GraphIo>,
        shapes: ShapeSource,
    ) -> Result<Self, DoctorError> {
        if cameras.is_empty() {
            return Err(DoctorError::EmptyRig);
        }
        if let Some(c) = cameras
            .iter()
            .find(|c| !graphs.iter().any(|g| g.input_side == c.side))
        {
            return Err(DoctorError::NoGraphForCamera { side: c.side });
        }
        Ok(Self {
            cameras,
            graphs,
            shapes,
        })
    }

    /// (bytes/s in, bytes/s out) of a camera, through the graph of its side;
    /// `None` when no graph of the rig takes it.
    pub fn camera_load(&self, c: &CameraMode) -> Option<(f64, f64)> {
        let g = self.graphs.iter().find(|g| g.input_side == c.side)?;
        Some((g.in_bytes as f64 * c.fps, g.out_bytes as f64 * c.fps))
    }

    /// (bytes/s in, bytes/s out) of the whole rig.
    pub fn load(&self) -> (f64, f64) {
        self.cameras
            .iter()
            .filter_map(|c| self.camera_load(c))
            .fold((0.0, 0.0), |(i, o), (ci, co)| (i + ci, o + co))
    }

    /// `3x288@120 + 1x432@120`: cameras counted by side and fps, whatever graph they name.
    pub fn summary(&self) -> String {
        let mut groups: Vec<((u32, f64), usize)> = Vec::new();
        for c in &self.cameras {
            let key = (c.side, c.fps);
            match groups.iter_mut().find(|(g, _)| *g == key) {
                Some((_, n)) => *n += 1,
                None => groups.push((key, 1)),
            }
        }
        groups
            .iter()
            .map(|((side, fps), n)| format!("{n}x{side}@{fps}"))
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cameras_parse_and_reject() {
        assert_eq!(
            backbone_camera("288@120").unwrap(),
            CameraMode::new(288, 120.0)
        );
        for bad in ["288", "x@120", "288@", "0@120", "290@30"] {
            let e = backbone_camera(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn cameras_take_the_graph_suffix_planning_takes() {
        let face = backbone_camera("432@120:face").unwrap();
        assert_eq!((face.side, face.fps), (432, 120.0));
        assert_eq!(face.graph.as_deref(), Some("face"));
        assert_eq!(face, "432@120:face".parse::<CameraMode>().unwrap());
        // The stride check is the budget's own: planning parses any side.
        assert!("290@30".parse::<CameraMode>().is_ok());
        let e = backbone_camera("290@30:face").unwrap_err().to_string();
        assert!(e.contains("divisible by 12"), "{e}");
    }

    #[test]
    fn summary_counts_modes_whatever_graph_they_name() {
        let cams = ["288@120:body", "288@120", "432@120:face"]
            .map(|s| backbone_camera(s).unwrap())
            .to_vec();
        assert_eq!(
            Rig::with_backbone(cams).unwrap().summary(),
            "2x288@120 + 1x432@120"
        );
    }

    #[test]
    fn demo_rig_load_by_hand() {
        let rig = Rig::demo();
        let (i, o) = rig.load();
        // in: 3 * 288*288*3 * 120 + 432*432*3 * 120
        assert_eq!(i, (3.0 * 248_832.0 + 559_872.0) * 120.0);
        // out: 2 maps of (g, g, 256), g = 24 and 36
        assert_eq!(o, (3.0 * 294_912.0 + 663_552.0) * 120.0);
        assert_eq!(rig.summary(), "3x288@120 + 1x432@120");
        // The taps split sends four (g, g, 384) maps: three times the bytes.
        let taps = Rig::with_graphs(
            rig.cameras.clone(),
            vec![
                GraphIo::backbone_at(288, Split::Taps),
                GraphIo::backbone_at(432, Split::Taps),
            ],
            ShapeSource::BackboneFormula,
        )
        .unwrap();
        assert_eq!(taps.load().1, (3.0 * 884_736.0 + 1_990_656.0) * 120.0);
    }

    #[test]
    fn graphs_must_cover_cameras() {
        let err = Rig::with_graphs(
            vec![CameraMode::new(432, 30.0)],
            vec![GraphIo::backbone(288)],
            ShapeSource::BackboneFormula,
        )
        .unwrap_err();
        assert!(err.to_string().contains("432x432"));
        assert!(matches!(
            Rig::with_backbone(vec![]),
            Err(DoctorError::EmptyRig)
        ));
    }

    /// The sample backbone's one network group at `side`.
    fn backbone_group(side: u32) -> hef::NetworkGroup {
        hef::samples::backbone(side).network_groups.remove(0)
    }

    #[test]
    fn hef_streams_give_the_same_bytes_as_the_formula() {
        for side in [288, 432] {
            let io = GraphIo::from_network_group(&backbone_group(side)).unwrap();
            let formula = GraphIo::backbone(side);
            assert_eq!(
                (io.input_side, io.in_bytes, io.out_bytes),
                (side, formula.in_bytes, formula.out_bytes)
            );
        }
        let taps = hef::samples::backbone_taps(288).network_groups.remove(0);
        let io = GraphIo::from_network_group(&taps).unwrap();
        assert_eq!(
            io.out_bytes,
            GraphIo::backbone_at(288, Split::Taps).out_bytes
        );
        assert_ne!(io.out_bytes, GraphIo::backbone(288).out_bytes);
        // Not one square input: no graph.
        let mut wide = backbone_group(288);
        wide.inputs[0].shape = hef::StreamShape::Image {
            height: 288,
            width: 432,
            features: 3,
        };
        assert!(GraphIo::from_network_group(&wide).is_none());
        let mut none = backbone_group(288);
        none.inputs.clear();
        assert!(GraphIo::from_network_group(&none).is_none());
    }
}
