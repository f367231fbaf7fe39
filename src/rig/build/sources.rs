//! The rig's camera sources: synthetic cameras rendering the scene, V4L2
//! devices and recordings, each refusal naming the camera and its key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::camera::replay::{Pacing, Recording};
use crate::camera::synthetic::{SceneClock, SyntheticCamera, SyntheticSource};
use crate::camera::{CameraId, PixelFormat, Source};
use crate::geom::Camera;
use crate::rig::config::{CameraConfig, CameraSource, RigConfig};
use crate::rig::{CameraSetupError, RunError};
use crate::scene::BodyScene;

use super::need_file;

/// Opens every camera. Synthetic cameras render `scene` and share one start stamp.
///
/// # Errors
/// [`RunError::Camera`] naming the camera that cannot be opened.
pub fn sources(
    rig: &RigConfig,
    calibrations: &[Camera],
    scene: Arc<BodyScene>,
    real_time: bool,
    clock: SceneClock,
) -> Result<Vec<Box<dyn Source>>, RunError> {
    let synthetic: Vec<SyntheticCamera> = rig
        .cameras
        .iter()
        .enumerate()
        .filter(|(_, c)| c.source.is_synthetic())
        .map(|(i, c)| SyntheticCamera {
            camera: CameraId(i as u32),
            calibration: calibrations[i],
            format: c.format.unwrap_or(PixelFormat::Yuyv),
            fps: c.fps,
            offset_ns: 0,
        })
        .collect();
    let mut synth = SyntheticSource::rig_on(scene, &synthetic, real_time, clock)
        .map_err(|e| RunError::Camera {
            camera: "synthetic".into(),
            source: e.into(),
        })?
        .into_iter();
    let mut out: Vec<Box<dyn Source>> = Vec::new();
    let mut recordings = Recordings::default();
    for (i, c) in rig.cameras.iter().enumerate() {
        let source: Box<dyn Source> = match &c.source {
            CameraSource::Synthetic => match synth.next() {
                Some(s) => Box::new(s),
                None => {
                    return Err(RunError::Camera {
                        camera: c.name.clone(),
                        source: CameraSetupError::NoSyntheticSource,
                    })
                }
            },
            CameraSource::V4l2(path) => v4l2(i, c, path)?,
            CameraSource::Replay(path) => replay(i, c, path, &mut recordings)?,
        };
        out.push(source);
    }
    Ok(out)
}

/// Opens the rig's cameras that film the real world (V4L2 devices and recordings), for a
/// capture of something only they can see: a calibration board.
///
/// # Errors
/// [`RunError::Camera`] naming the camera that cannot be opened, or that is synthetic.
pub fn filming_sources(
    rig: &RigConfig,
    what: &'static str,
) -> Result<Vec<Box<dyn Source>>, RunError> {
    let mut recordings = Recordings::default();
    rig.cameras
        .iter()
        .enumerate()
        .map(|(i, c)| match &c.source {
            CameraSource::Synthetic => Err(RunError::Camera {
                camera: c.name.clone(),
                source: CameraSetupError::SyntheticCannotFilm {
                    key: format!("camera[{i}].source"),
                    what,
                },
            }),
            CameraSource::V4l2(path) => v4l2(i, c, path),
            CameraSource::Replay(path) => replay(i, c, path, &mut recordings),
        })
        .collect()
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn v4l2(i: usize, c: &CameraConfig, path: &Path) -> Result<Box<dyn Source>, RunError> {
    use crate::camera::v4l2::{V4l2Config, V4l2Source};
    let format = c.format.unwrap_or(PixelFormat::Yuyv);
    if !path.exists() {
        return Err(RunError::Camera {
            camera: c.name.clone(),
            source: CameraSetupError::NoDevice {
                key: format!("camera[{i}].source"),
                path: path.to_owned(),
            },
        });
    }
    let source = V4l2Source::open(V4l2Config {
        path: PathBuf::from(path),
        camera: CameraId(i as u32),
        format,
        width: c.width,
        height: c.height,
        fps: c.fps,
        buffers: 4,
        timeout: std::time::Duration::from_secs(2),
        controls: c.controls.clone(),
    })
    .map_err(|source| RunError::Camera {
        camera: c.name.clone(),
        source: CameraSetupError::Open {
            path: path.to_owned(),
            source,
        },
    })?;
    Ok(Box::new(source))
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn v4l2(_i: usize, c: &CameraConfig, _path: &Path) -> Result<Box<dyn Source>, RunError> {
    Err(RunError::Camera {
        camera: c.name.clone(),
        source: CameraSetupError::V4l2Unsupported,
    })
}

/// The recordings the rig's cameras replay, each read once: a recording is held in memory,
/// and the cameras of one recording share it.
type Recordings = std::collections::HashMap<PathBuf, Arc<Recording>>;

fn replay(
    i: usize,
    c: &CameraConfig,
    path: &Path,
    recordings: &mut Recordings,
) -> Result<Box<dyn Source>, RunError> {
    need_file(format!("camera[{i}].source"), path)?;
    let recording = match recordings.get(path) {
        Some(r) => Arc::clone(r),
        None => {
            let r = Recording::open(path).map_err(|e| RunError::Camera {
                camera: c.name.clone(),
                source: e.into(),
            })?;
            recordings.insert(path.to_owned(), Arc::clone(&r));
            r
        }
    };
    let source = recording
        .sources(Pacing::Original)
        .into_iter()
        .find(|s| s.info().camera == CameraId(i as u32))
        .ok_or_else(|| RunError::Camera {
            camera: c.name.clone(),
            source: CameraSetupError::NotRecorded {
                path: path.to_owned(),
                camera: i,
            },
        })?;
    let info = source.info();
    if (info.width, info.height) != (c.width, c.height) {
        return Err(RunError::Camera {
            camera: c.name.clone(),
            source: CameraSetupError::ReplaySize {
                path: path.to_owned(),
                recorded: (info.width, info.height),
                key: format!("camera[{i}].width"),
                configured: (c.width, c.height),
            },
        });
    }
    Ok(Box::new(source))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::camera::record::Recorder;
    use crate::camera::{Frame, SourceInfo, TimestampSource};

    /// A recording of one 4x2 grey camera, replayed into a rig camera of
    /// `width` x `height`.
    fn replay_into(width: u32, height: u32) -> Result<Box<dyn Source>, RunError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("take.mcap");
        let info = SourceInfo {
            camera: CameraId(0),
            name: "take".into(),
            format: PixelFormat::Grey,
            width: 4,
            height: 2,
            fps: 30.0,
            timestamp_source: TimestampSource::Synthetic,
        };
        let mut rec = Recorder::create(&path, &[info.into()]).unwrap();
        rec.write(&Frame {
            capture_ns: 1,
            ..Frame::still(CameraId(0), PixelFormat::Grey, 4, 2, vec![0; 8])
        })
        .unwrap();
        rec.finish().unwrap();
        let camera = CameraConfig {
            name: "cam".into(),
            source: CameraSource::Replay(path.clone()),
            width,
            height,
            fps: 30.0,
            graph: "body".into(),
            format: None,
            fit: Default::default(),
            pad: 0,
            calibration_file: None,
            controls: Default::default(),
            world_origin: false,
        };
        replay(0, &camera, &path, &mut Recordings::default())
    }

    #[test]
    fn a_recording_of_another_size_is_refused_naming_both_sizes() {
        let err = replay_into(640, 480).err().expect("refused").to_string();
        assert!(
            err.contains("4x2") && err.contains("640x480") && err.contains("camera[0].width"),
            "{err}"
        );
        // Negative control: the recorded size replays.
        replay_into(4, 2).expect("the recorded size");
    }
}
