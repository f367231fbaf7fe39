//! The built-in demo rig, run by `hailo-edge run` without a rig file.

use std::path::{Path, PathBuf};

use super::schema::{default_nice, default_priority};
use super::{
    BackendChoice, BodyConfig, CameraConfig, CameraSource, DecoderConfig, DeviceConfig, FitMode,
    GraphConfig, KeypointsFrom, OutputConfig, RigConfig, SwitchingConfig,
};
use crate::decode::Engine;
use crate::scene::DEMO_CAMERA_NAMES;

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
            controls: Default::default(),
            world_origin: false,
        };
        RigConfig {
            unit: crate::camera::calib::Unit::Metre,
            device: DeviceConfig {
                backend: BackendChoice::Sim,
                ..DeviceConfig::default()
            },
            switching: SwitchingConfig::Scheduler,
            graphs: vec![graph("body", 288), graph("face", 432)],
            cameras: vec![
                camera(DEMO_CAMERA_NAMES[0], 288, "body"),
                camera(DEMO_CAMERA_NAMES[1], 288, "body"),
                camera(DEMO_CAMERA_NAMES[2], 288, "body"),
                camera(DEMO_CAMERA_NAMES[3], 432, "face"),
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

    /// The demo rig fed by a recording instead of its synthetic cameras: one
    /// camera per recorded camera (its name, size, rate and format, in camera
    /// order), each on the graph the demo's camera of that index uses, its
    /// calibration read from the recording. A recording holds no ground truth, so
    /// the fit takes the decoder's keypoints.
    pub fn replaying(
        mut self,
        recording: &Path,
        cameras: &[crate::camera::SourceInfo],
    ) -> RigConfig {
        let graph_of = |i: usize| {
            self.cameras
                .get(i)
                .map_or_else(|| self.graphs[0].name.clone(), |c| c.graph.clone())
        };
        self.cameras = cameras
            .iter()
            .enumerate()
            .map(|(i, info)| CameraConfig {
                name: info.name.clone(),
                source: CameraSource::Replay(recording.to_path_buf()),
                width: info.width,
                height: info.height,
                fps: info.fps,
                graph: graph_of(i),
                format: Some(info.format),
                fit: FitMode::Letterbox,
                pad: 0,
                calibration_file: None,
                controls: Default::default(),
                world_origin: false,
            })
            .collect();
        self.body.keypoints = KeypointsFrom::Decoder;
        self
    }

    /// Where the demo finds its HEFs; see [`demo_fixtures_dir`].
    ///
    /// # Errors
    /// As [`demo_fixtures_dir`].
    pub fn demo_fixtures_dir() -> Result<PathBuf, DemoDataError> {
        demo_fixtures_dir()
    }
}

/// The demo's HEFs, compiled into the binary so that the demo runs from any directory and
/// after `cargo install` (4 KiB each).
const DEMO_HEFS: [(&str, &[u8]); 2] = [
    (
        "backbone_288.hef",
        include_bytes!("../../../fixtures/backbone_288.hef"),
    ),
    (
        "backbone_432.hef",
        include_bytes!("../../../fixtures/backbone_432.hef"),
    ),
];

/// Why the demo's HEFs cannot be found or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoDataError {
    /// `$HAILO_EDGE_FIXTURES` names a folder without one of the demo's HEFs.
    #[error("HAILO_EDGE_FIXTURES={dir}: no {file} there (unset it to use the built-in demo HEFs)")]
    Missing { dir: PathBuf, file: &'static str },
    /// None of the cache variables is set.
    #[error("no folder for the demo's HEFs: set HAILO_EDGE_CACHE, XDG_CACHE_HOME or HOME")]
    NoCacheDir,
    /// Writing a demo HEF into the cache failed.
    #[error("writing the demo HEF {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the demo finds its HEFs, in this order: `$HAILO_EDGE_FIXTURES` when set (it must
/// hold `backbone_288.hef` and `backbone_432.hef`), else the copies built into the binary,
/// written to `demo/` in the cache folder (see [`crate::decode::graph::cache_root`]) when absent
/// or different.
///
/// # Errors
/// [`DemoDataError`] naming the folder or file.
pub fn demo_fixtures_dir() -> Result<PathBuf, DemoDataError> {
    if let Some(dir) = std::env::var_os("HAILO_EDGE_FIXTURES").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return match DEMO_HEFS.iter().find(|(f, _)| !dir.join(f).is_file()) {
            Some(&(file, _)) => Err(DemoDataError::Missing { dir, file }),
            None => Ok(dir),
        };
    }
    let root = crate::decode::graph::cache_root().ok_or(DemoDataError::NoCacheDir)?;
    materialise(&root.join("demo"))
}

/// Writes the built-in demo HEFs into `dir` where a file is absent or differs.
fn materialise(dir: &Path) -> Result<PathBuf, DemoDataError> {
    let write = |(path, source)| DemoDataError::Write { path, source };
    std::fs::create_dir_all(dir).map_err(|e| write((dir.to_owned(), e)))?;
    for (file, bytes) in DEMO_HEFS {
        let path = dir.join(file);
        if std::fs::read(&path).ok().as_deref() != Some(bytes) {
            crate::decode::graph::replace_file(&path, bytes).map_err(write)?;
        }
    }
    Ok(dir.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_hefs_are_written_once_and_repaired_when_changed() {
        let dir = tempfile::tempdir().unwrap();
        let demo = dir.path().join("demo");
        assert_eq!(materialise(&demo).unwrap(), demo);
        let hef = demo.join("backbone_288.hef");
        let parsed = hef::Hef::from_bytes(&std::fs::read(&hef).unwrap()).unwrap();
        assert_eq!(parsed.network_groups[0].name, "backbone_288");
        // A corrupted copy is replaced; an intact one is left alone.
        std::fs::write(&hef, b"truncated").unwrap();
        let before = std::fs::metadata(demo.join("backbone_432.hef"))
            .unwrap()
            .modified()
            .unwrap();
        materialise(&demo).unwrap();
        assert_eq!(std::fs::read(&hef).unwrap(), DEMO_HEFS[0].1);
        let after = std::fs::metadata(demo.join("backbone_432.hef"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after);
    }
}
