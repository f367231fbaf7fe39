//! The built-in demo rig, run by `hailo-edge run` without a rig file.

use std::path::{Path, PathBuf};

use super::schema::{default_nice, default_priority};
use super::{
    BackendChoice, BodyConfig, CameraConfig, CameraSource, DecoderConfig, DeviceConfig, FitMode,
    GraphConfig, KeypointsFrom, OutputConfig, RigConfig, SwitchingConfig,
};
use crate::decode::Engine;

impl RigConfig {
    /// The built-in demo rig: three synthetic body cameras at 288x288 and one
    /// face camera at 432x432, all at 120 fps, on the simulated Hailo-10H with
    /// its real-time clock, the fixture HEFs in `fixtures_dir`, the generated
    /// real-width decoders (design split, keypoints for the top slot) and the
    /// embedded body model; the fit takes the scene's ground-truth 2D keypoints
    /// with 2 px noise (the decoders' weights are random).
    pub fn demo(fixtures_dir: &Path) -> RigConfig {
        let graph = |name: &str, side: u32| GraphConfig {
            name: name.into(),
            hef: fixtures_dir.join(format!("backbone_{side}.hef")),
            reference_onnx: None,
            decoder_onnx: None,
            inputs: Default::default(),
            batch: None,
            priority: default_priority(),
            threshold: None,
            timeout_ms: None,
        };
        let camera = |name: &str, side: u32, graph: &str| CameraConfig {
            name: name.into(),
            source: CameraSource::Synthetic,
            width: side,
            height: side,
            fps: 120.0,
            graph: graph.into(),
            format: None,
            fit: FitMode::Letterbox,
            pad: 0,
            calibration_file: None,
        };
        RigConfig {
            device: DeviceConfig {
                backend: BackendChoice::Sim,
                ..DeviceConfig::default()
            },
            switching: SwitchingConfig::Scheduler,
            graphs: vec![graph("body", 288), graph("face", 432)],
            cameras: vec![
                camera("body0", 288, "body"),
                camera("body1", 288, "body"),
                camera("body2", 288, "body"),
                camera("face", 432, "face"),
            ],
            decoder: DecoderConfig {
                engine: Engine::Tract,
                threads: 2,
                in_flight: None,
                nice: default_nice(),
                retain_memory: true,
                keypoint_slots: None,
            },
            body: BodyConfig {
                keypoints: KeypointsFrom::GroundTruth,
                ..BodyConfig::default()
            },
            output: OutputConfig::default(),
        }
    }

    /// Where the demo finds its fixtures: `$HAILO_EDGE_FIXTURES`, else this
    /// crate's `fixtures/` folder.
    pub fn demo_fixtures_dir() -> PathBuf {
        std::env::var_os("HAILO_EDGE_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"))
    }
}
