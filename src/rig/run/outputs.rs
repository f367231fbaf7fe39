//! The run's outputs, checked and opened before the first frame: the report's file, the JSON
//! lines, the MCAP recorder, the Zenoh publisher and the live Foxglove server.

use std::io::Write;
use std::sync::Arc;

use crate::camera::record::{RecordedCamera, Recorder};
use crate::camera::SourceInfo;
use crate::geom::Camera;
use crate::output::{self, AtomicFile, Output, OutputSet};
use crate::publish::foxglove_ws::{FoxgloveCamera, FoxgloveServer, DEFAULT_IMAGE_FPS};
use crate::publish::zenoh::{self, ZenohPublisher};

use super::super::config::{PublishTarget, RigConfig};
use super::super::RunError;
use super::RunOptions;

/// Checks every output path before anything runs (links, existing files,
/// a path named twice, directories) and opens the report's temporary file,
/// so an output that cannot be written is found before the first frame.
pub(super) fn prepare_outputs(
    rig: &RigConfig,
    options: &RunOptions,
) -> Result<Option<AtomicFile>, RunError> {
    let o = &rig.output;
    let named = [
        ("report", &o.report, false),
        ("jsonl", &o.jsonl, true),
        ("record", &o.record, false),
    ];
    let set = OutputSet {
        outputs: named
            .iter()
            .filter_map(|&(what, path, stdout_ok)| {
                path.as_deref().map(|path| Output {
                    what,
                    path,
                    stdout_ok,
                })
            })
            .collect(),
        overwrite: options.overwrite,
    };
    set.check()?;
    Ok(o.report
        .as_deref()
        .map(|p| AtomicFile::prepare("report", p, options.overwrite))
        .transpose()?)
}

/// The Zenoh publisher, when the rig asks for one.
pub(super) fn open_zenoh(
    rig: &RigConfig,
    calibrations: &[Camera],
    skeleton: &crate::body::SkeletonNaming,
    skew_ns: i64,
) -> Result<Option<Arc<ZenohPublisher>>, RunError> {
    let Some(PublishTarget::Zenoh { endpoint }) = &rig.output.publish else {
        return Ok(None);
    };
    let name = rig
        .output
        .publish_as
        .as_deref()
        .map_or_else(zenoh::default_rig_name, zenoh::key_chunk);
    let publisher = ZenohPublisher::start(endpoint.as_deref(), &name, calibrations, skeleton)
        .map_err(|source| RunError::Zenoh { source })?
        .with_clock_skew(skew_ns);
    log::info!(
        "publishing bodies on Zenoh under {}/{name}{}",
        zenoh::PREFIX,
        endpoint
            .as_deref()
            .map(|e| format!(", listening on {e}"))
            .unwrap_or_default()
    );
    Ok(Some(Arc::new(publisher)))
}

/// The live Foxglove server, when the rig asks for one.
pub(super) fn open_foxglove(
    rig: &RigConfig,
    infos: &[SourceInfo],
    calibrations: &[Camera],
    body_keypoints: &[String],
) -> Result<Option<Arc<FoxgloveServer>>, RunError> {
    let Some(addr) = rig.output.foxglove else {
        return Ok(None);
    };
    let cameras = infos
        .iter()
        .zip(calibrations)
        .map(|(i, c)| FoxgloveCamera {
            frame_id: i.camera.to_string(),
            format: i.format,
            calibration: Some(*c),
        })
        .collect();
    let server = FoxgloveServer::start(addr, cameras, body_keypoints, DEFAULT_IMAGE_FPS)
        .map_err(|source| RunError::Foxglove { source })?;
    log::info!(
        "Foxglove WebSocket server on ws://{}:{} (open it in Foxglove: Open connection, Foxglove WebSocket)",
        addr.ip(),
        server.port()
    );
    Ok(Some(Arc::new(server)))
}

/// The JSON lines file (or standard output, for `-`), when the rig asks for one.
pub(super) fn open_jsonl(
    rig: &RigConfig,
    overwrite: bool,
) -> Result<Option<Box<dyn Write + Send>>, RunError> {
    let Some(path) = &rig.output.jsonl else {
        return Ok(None);
    };
    Ok(Some(output::lines("jsonl", path, overwrite)?))
}

/// The MCAP recorder, when the rig asks for one.
pub(super) fn open_recorder(
    rig: &RigConfig,
    infos: &[SourceInfo],
    calibrations: &[Camera],
    overwrite: bool,
) -> Result<Option<Recorder>, RunError> {
    let Some(path) = &rig.output.record else {
        return Ok(None);
    };
    let cams: Vec<RecordedCamera> = infos
        .iter()
        .zip(calibrations)
        .map(|(info, c)| RecordedCamera {
            info: info.clone(),
            calibration: Some(*c),
        })
        .collect();
    Ok(Some(Recorder::create_with(path, &cams, overwrite)?))
}
