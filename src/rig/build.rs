//! Turning a rig file into running parts: the device and its graphs, the
//! camera sources, preprocessors, decoders and the fitter. Every failure names
//! the key, file or device it comes from.

use std::path::Path;
use std::sync::Arc;

use crate::body::fit::{FitConfig, PoseFitter};
use crate::body::Model;
use crate::geom::{Camera, Distortion};
use crate::npu::sim::{DeviceProfile, FaultPlan, ReferenceModel, SimProfile};
use crate::npu::{Backend, ConfiguredModel, Device, DeviceOptions, Scheduling};
use crate::preprocess::{InputSpec, PreprocessConfig, Preprocessor};

use super::config::{BackendChoice, CameraSource, KeypointsFrom, RigConfig, SwitchingConfig};
use super::decoders::DecoderChoice;
use super::stage::decode::{FeatureStream, GraphDecode};
use super::stage::npu::{ModelSetup, SchedulerSettings};
use super::{CameraSetupError, GraphError, GraphStep, RunError};
use crate::camera::calib;
use crate::scene::{demo_rig, BodyRig};

mod sources;

pub use sources::{filming_sources, sources};

/// One configured graph with what the other stages need from its HEF.
pub struct BuiltGraph {
    pub cm: ConfiguredModel,
    /// What configures the graph again after a fault breaks `cm`.
    pub setup: ModelSetup,
    pub input: String,
    pub input_spec: InputSpec,
    pub decode: GraphDecode,
}

pub(super) fn need_file(key: String, path: &Path) -> Result<(), RunError> {
    if path.is_file() {
        Ok(())
    } else {
        Err(RunError::MissingFile {
            key,
            path: path.to_owned(),
        })
    }
}

/// Opens the device the rig asks for.
///
/// # Errors
/// [`RunError::MissingFile`] / [`RunError::Graph`] for a reference ONNX,
/// [`RunError::OpenDevice`] when the device cannot be opened. `faults` reach the simulator
/// only.
pub fn open_device(
    rig: &RigConfig,
    profile: Option<DeviceProfile>,
    faults: &FaultPlan,
) -> Result<Device, RunError> {
    let scheduling = match rig.switching {
        SwitchingConfig::Scheduler => Scheduling::RoundRobin,
        SwitchingConfig::Manual { .. } => Scheduling::None,
    };
    let sim = || -> Result<SimProfile, RunError> {
        let device = match &profile {
            Some(p) => p.clone(),
            None => {
                let utilisation = &rig.device.utilisation;
                let curve =
                    utilisation
                        .simulator_curve()
                        .map_err(|source| RunError::Utilisation {
                            value: utilisation.to_string(),
                            source,
                        })?;
                rig.device.profile.device_profile().with_utilisation(curve)
            }
        };
        let mut sim = SimProfile::new(device)
            .with_clock(rig.device.clock.clone())
            .with_faults(faults.clone());
        for (i, g) in rig.graphs.iter().enumerate() {
            if let Some(path) = &g.reference_onnx {
                need_file(format!("graph[{i}].reference_onnx"), path)?;
                let group = read_hef(i, &g.hef)?
                    .network_groups
                    .first()
                    .map(|n| n.name.clone());
                let model = ReferenceModel::from_onnx_file(path).map_err(|e| RunError::Graph {
                    key: format!("graph[{i}].reference_onnx"),
                    path: path.clone(),
                    source: Box::new(GraphError::Reference(e)),
                })?;
                if let Some(group) = group {
                    sim = sim.with_reference(&group, model);
                }
            }
        }
        Ok(sim)
    };
    let backend = match rig.device.backend {
        BackendChoice::Sim => Backend::Sim(sim()?),
        BackendChoice::HailoRt => Backend::HailoRt {
            device_id: rig.device.device_id.clone(),
        },
        BackendChoice::Auto => Backend::Auto,
    };
    Device::open_with(
        backend,
        DeviceOptions {
            scheduling,
            group_id: rig.device.group_id.clone(),
            dma_map: rig.device.dma_map,
        },
    )
    .map_err(|source| RunError::OpenDevice {
        backend: rig.device.backend,
        source,
    })
}

pub(super) fn read_hef(i: usize, path: &Path) -> Result<hef::Hef, RunError> {
    need_file(format!("graph[{i}].hef"), path)?;
    let bad = |source: GraphError| RunError::Graph {
        key: format!("graph[{i}].hef"),
        path: path.to_owned(),
        source: Box::new(source),
    };
    let bytes = std::fs::read(path).map_err(|e| bad(GraphError::Read(e)))?;
    hef::Hef::from_bytes(&bytes).map_err(|e| bad(e.into()))
}

/// Loads and configures every graph on `device`, with its batch and scheduler settings.
///
/// # Errors
/// [`RunError::MissingFile`] / [`RunError::Graph`] naming the HEF,
/// [`RunError::GraphSetup`] naming the graph and the step.
pub fn graphs(
    rig: &RigConfig,
    device: &Device,
    choices: &[DecoderChoice],
) -> Result<Vec<BuiltGraph>, RunError> {
    let mut out = Vec::new();
    for (i, g) in rig.graphs.iter().enumerate() {
        let hef = read_hef(i, &g.hef)?;
        let bad = |source: GraphError| RunError::Graph {
            key: format!("graph[{i}].hef"),
            path: g.hef.clone(),
            source: Box::new(source),
        };
        let group = hef
            .network_groups
            .first()
            .ok_or_else(|| bad(GraphError::NoNetworkGroup))?;
        let input = group
            .inputs
            .first()
            .ok_or_else(|| bad(GraphError::NoInput))?;
        let input_spec = InputSpec::from_stream(input).map_err(|e| bad(e.into()))?;
        let pairing = super::decoders::pair(i, g, group, rig, &choices[i])?;
        let streams = pairing
            .pairs()
            .iter()
            .map(|p| {
                let s = &group.outputs[p.output];
                FeatureStream {
                    stream: s.name.clone(),
                    data_type: s.data_type,
                    quant: s.quant.clone(),
                }
            })
            .collect();
        let npu = |step: GraphStep, source| RunError::GraphSetup {
            graph: g.name.clone(),
            path: g.hef.clone(),
            step,
            source,
        };
        let mut model = device
            .load_model_file(&g.hef)
            .map_err(|e| npu(GraphStep::LoadHef, e))?;
        // Under the scheduler HailoRT wants one batch size for all models; there
        // the threshold does the device-side batching and `batch` stays a
        // host-side batch of submissions.
        if rig.switching != SwitchingConfig::Scheduler {
            model
                .set_batch_size(rig.batch(g))
                .map_err(|e| npu(GraphStep::SetBatchSize, e))?;
        }
        let scheduler = (rig.switching == SwitchingConfig::Scheduler).then(|| SchedulerSettings {
            priority: g.priority,
            threshold: rig.threshold(g),
            timeout: std::time::Duration::from_secs_f64(rig.timeout_ms(g) / 1e3),
        });
        let setup = ModelSetup::new(model, scheduler);
        let cm = setup.configure().map_err(|(step, e)| npu(step, e))?;
        out.push(BuiltGraph {
            cm,
            setup,
            input: input.name.clone(),
            input_spec: input_spec.clone(),
            decode: GraphDecode {
                streams,
                pairing,
                input_size: (input_spec.width, input_spec.height),
            },
        });
    }
    Ok(out)
}

/// The calibration of every camera, translations in metres: its file (placed by
/// [`calib::checks::place`], in the rig's `unit`), else (synthetic cameras) a demo camera
/// of the same size, else a camera on a ring around the subject; then the rig's checks
/// ([`calib::checks::check_rig`]: baselines and overlap).
///
/// # Errors
/// [`RunError::Camera`] naming the camera whose calibration is missing or bad,
/// [`RunError::Calibrations`] naming the pair of cameras that cannot stand together.
pub fn calibrations(rig: &RigConfig) -> Result<Vec<Camera>, RunError> {
    let cameras = placed(rig)?;
    calib::checks::check_rig(&named(rig, &cameras), rig.unit)
        .map_err(|source| RunError::Calibrations { source })?;
    Ok(cameras)
}

/// The framing precision of every camera ([`calib::framing`]): camera `i` feeds a graph
/// whose square input is `sides[i]` pixels, fitted by its `fit`; the subject stands at
/// `[body] subject` (in the rig's `unit`) or the scene centre. `None` when there is no
/// subject point (one camera and no `subject`).
pub fn framing(
    rig: &RigConfig,
    calibrations: &[Camera],
    sides: &[u32],
    stature_m: Option<f64>,
) -> Option<Vec<calib::framing::Framing>> {
    let scales: Vec<f64> = rig
        .cameras
        .iter()
        .zip(sides)
        .map(|(c, &side)| {
            let crop = matches!(c.fit, super::config::FitMode::Crop);
            calib::framing::input_scale(side, (c.width, c.height), crop)
        })
        .collect();
    let subject = rig
        .body
        .subject
        .map(|p| nalgebra::Point3::from(p) * rig.unit.metres());
    calib::framing::framing(&named(rig, calibrations), &scales, subject, stature_m)
}

/// Each camera's calibration under its rig name.
fn named(rig: &RigConfig, cameras: &[Camera]) -> Vec<calib::CalibratedCamera> {
    rig.cameras
        .iter()
        .zip(cameras)
        .map(|(c, camera)| calib::CalibratedCamera {
            name: c.name.clone(),
            camera: *camera,
        })
        .collect()
}

/// Every camera's calibration, before the checks across cameras.
fn placed(rig: &RigConfig) -> Result<Vec<Camera>, RunError> {
    let mut demo: Vec<Option<Camera>> = demo_rig().into_iter().map(Some).collect();
    let n = rig.cameras.len();
    rig.cameras
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let bad = |source: CameraSetupError| RunError::Camera {
                camera: c.name.clone(),
                source,
            };
            if let CameraSource::V4l2(dev) = &c.source {
                if !dev.exists() {
                    return Err(bad(CameraSetupError::NoDevice {
                        key: format!("camera[{i}].source"),
                        path: dev.clone(),
                    }));
                }
            }
            if let Some(path) = &c.calibration_file {
                need_file(format!("camera[{i}].calibration_file"), path)?;
                let at = calib::checks::Placement {
                    cameras: n,
                    origin: c.world_origin,
                    unit: rig.unit,
                };
                let read = calib::from_opencv_file(path, Some((c.width, c.height)))
                    .and_then(|read| calib::checks::place(read, &path.display().to_string(), at))
                    .map_err(|e| bad(e.into()))?;
                return Ok(read);
            }
            if let CameraSource::Replay(path) = &c.source {
                // A recording carries the calibration it was recorded with.
                need_file(format!("camera[{i}].source"), path)?;
                let recorded = crate::camera::replay::recorded_calibrations(path)
                    .map_err(|e| bad(e.into()))?;
                if let Some(Some(cal)) = recorded.get(&(i as u32)) {
                    return Ok(*cal);
                }
            }
            if !c.source.is_synthetic() {
                return Err(bad(CameraSetupError::NeedsCalibration {
                    key: format!("camera[{i}].calibration_file"),
                }));
            }
            let same = demo.iter_mut().find(|d| {
                d.as_ref()
                    .is_some_and(|d| d.width == c.width && d.height == c.height)
            });
            if let Some(d) = same.and_then(Option::take) {
                return Ok(d);
            }
            let a = std::f64::consts::TAU * i as f64 / n as f64;
            Camera::look_at(
                nalgebra::Point3::new(2.6 * a.sin(), -2.6 * a.cos(), 0.4),
                nalgebra::Point3::origin(),
                nalgebra::Vector3::z(),
                62.0,
                (c.width, c.height),
                Distortion::default(),
            )
            .map_err(|e| bad(e.into()))
        })
        .collect()
}

/// The body model and its rig for the fit.
///
/// # Errors
/// [`RunError::MissingFile`] / [`RunError::BodyModel`] naming the model,
/// [`RunError::BodyKeypoints`] when the decoder's keypoints are not the
/// model's first, [`RunError::BodyRig`] when the fit's rig cannot be built.
pub fn body(rig: &RigConfig) -> Result<(Arc<BodyRig>, &'static str), RunError> {
    let model: Model;
    let (m, name): (&Model, &'static str) = match &rig.body.model {
        Some(path) => {
            need_file("body.model".into(), path)?;
            model = Model::load(path).map_err(|source| RunError::BodyModel {
                model: path.display().to_string(),
                source,
            })?;
            (&model, "file")
        }
        None => (
            Model::embedded().map_err(|source| RunError::BodyModel {
                model: "embedded".into(),
                source,
            })?,
            "embedded",
        ),
    };
    match rig.body.keypoints {
        // The fit feeds the decoder's keypoint i to the body's keypoint i.
        KeypointsFrom::Decoder => {
            crate::decode::keypoints::check_coco17_prefix(m.keypoint_labels()).map_err(
                |source| RunError::BodyKeypoints {
                    model: name,
                    source,
                },
            )?;
        }
        KeypointsFrom::GroundTruth => {}
    }
    let body = BodyRig::anny(m, rig.body.limits)?;
    Ok((Arc::new(body), name))
}

/// A fitter over the rig's cameras.
///
/// # Errors
/// [`RunError::BodyRig`] when a camera is refused, [`RunError::Fitter`] when
/// the fitter refuses the rig.
pub fn fitter(body: &BodyRig, calibrations: &[Camera]) -> Result<PoseFitter, RunError> {
    let cameras = calibrations
        .iter()
        .enumerate()
        .map(|(index, c)| {
            c.check()
                .map(|()| *c)
                .map_err(|source| RunError::FitCamera { index, source })
        })
        .collect::<Result<Vec<_>, _>>()?;
    PoseFitter::new(
        body.rig.clone(),
        body.limits.clone(),
        body.active.clone(),
        cameras,
        FitConfig::default(),
    )
    .map_err(|source| RunError::Fitter { source })
}

/// The preprocessor of each camera into its graph's input.
///
/// # Errors
/// [`RunError::Camera`] naming the camera.
pub fn preprocessors(
    rig: &RigConfig,
    graphs: &[BuiltGraph],
    graph_of: &[usize],
) -> Result<Vec<Preprocessor>, RunError> {
    rig.cameras
        .iter()
        .zip(graph_of)
        .map(|(c, &g)| {
            Preprocessor::new(
                graphs[g].input_spec.clone(),
                PreprocessConfig {
                    fit: c.preprocess_fit(),
                    ..PreprocessConfig::default()
                },
            )
            .map_err(|e| RunError::Camera {
                camera: c.name.clone(),
                source: e.into(),
            })
        })
        .collect()
}
