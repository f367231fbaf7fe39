//! A gate run: open the device, pair the outputs by name, run every frame on both sides.

use std::sync::Arc;
use std::time::Duration;

use super::compare::Accumulator;
use super::frames;
use super::report::{GateReport, PairLine};
use super::{GateConfig, GateError};
use crate::npu::sim::model_spec::StreamSpec;
use crate::npu::sim::reference::device_input_values;
use crate::npu::sim::{DeviceProfile, OutputKind, ReferenceModel, SimProfile, TimeBase};
use crate::npu::{
    Backend, BackendKind, ConfiguredModel, Device, Direction, FormatType, Model, NpuError,
};
use crate::preprocess::{InputLayout, InputSpec, Preprocessor};

/// The engine that runs the reference ONNX, as reports name it.
const ENGINE: &str = "tract 0.23 on the CPU, f32";

/// Runs `config.hef` on the device and `config.onnx` on the CPU over the same frames and
/// holds every output to `config.bound`.
///
/// # Errors
/// [`GateError`] when the gate cannot run: an unreadable HEF, ONNX, image or recording, a
/// HEF the gate cannot feed (not one RGB input), outputs that do not pair by name, a device
/// or reference failure. A run whose outputs break the bound is `Ok` with
/// [`GateReport::passed`] false.
pub fn run(config: &GateConfig) -> Result<GateReport, GateError> {
    let hef = hef::Hef::open(&config.hef)?;
    let first = hef
        .network_groups
        .first()
        .ok_or_else(|| GateError::NoNetworkGroup {
            hef: config.hef.clone(),
        })?;
    let reference = Arc::new(
        ReferenceModel::from_onnx_file(&config.onnx)
            .map_err(|e| GateError::Reference(Box::new(e)))?,
    );
    let (device, sim_onnx) = open_device(config, &first.name, &reference)?;
    let mut model = device
        .load_model_file(&config.hef)
        .map_err(device_err("load the HEF"))?;
    let group = hef.network_group(model.name()).unwrap_or(first);
    let input = match group.inputs.as_slice() {
        [one] => one,
        inputs => {
            return Err(GateError::InputCount {
                hef: config.hef.clone(),
                group: group.name.clone(),
                count: inputs.len(),
            })
        }
    };
    let mut pre = preprocessor(config, input)?;
    let configured = configure(&mut model)?;
    let device_outputs = configured.output_kind();
    if device_outputs == OutputKind::SimSynthetic {
        return Err(GateError::SyntheticOutputs {
            group: group.name.clone(),
        });
    }
    let input = StreamSpec::from_hef(input);
    let outputs: Vec<StreamSpec> = group.outputs.iter().map(StreamSpec::from_hef).collect();
    let pairing = pair(config, &reference, &outputs)?;
    let frames = frames::tensors(&config.frames, &mut pre)?;

    let mut sums: Vec<Accumulator> = outputs
        .iter()
        .zip(&pairing)
        .map(|(o, p)| Accumulator::new(o, &p.onnx_output))
        .collect();
    for (info, tensor) in &frames {
        let values = device_input_values(&input, tensor);
        let on_device = run_device(&configured, &input.name, &values, &outputs, config.timeout)?;
        let expected = reference
            .run_values(std::slice::from_ref(&input), vec![values], &outputs)
            .map_err(|source| GateError::Run {
                frame: info.source.clone(),
                source: Box::new(source),
            })?;
        for (((sum, spec), d), r) in sums.iter_mut().zip(&outputs).zip(&on_device).zip(&expected) {
            sum.add(spec, d, r);
        }
    }
    let figures: Vec<_> = sums.into_iter().map(|s| s.finish(&config.bound)).collect();
    Ok(GateReport {
        hef: config.hef.clone(),
        network_group: group.name.clone(),
        onnx: config.onnx.clone(),
        ran_on: device.ran_on(),
        device_outputs,
        sim_onnx,
        engine: ENGINE,
        input_source: config.frames.kind(),
        input_stream: input.name.clone(),
        frames: frames.into_iter().map(|(info, _)| info).collect(),
        pairing,
        bound: config.bound,
        passed: figures.iter().all(|f| f.passed),
        outputs: figures,
    })
}

fn device_err(what: &'static str) -> impl FnOnce(NpuError) -> GateError {
    move |source| GateError::Device { what, source }
}

/// The device, and on the simulator the ONNX its reference path runs for `group`.
fn open_device(
    config: &GateConfig,
    group: &str,
    reference: &Arc<ReferenceModel>,
) -> Result<(Device, Option<std::path::PathBuf>), GateError> {
    let device = match &config.backend {
        Backend::Sim(profile) => return open_sim(config, profile.clone(), group, reference),
        other => Device::open(other.clone()).map_err(device_err("open the device"))?,
    };
    if device.backend() == BackendKind::HailoRt {
        return Ok((device, None));
    }
    // Auto found no part: the simulator again, with the reference path for this HEF.
    drop(device);
    let profile = SimProfile::new(DeviceProfile::hailo10h()).with_clock(TimeBase::Virtual);
    open_sim(config, profile, group, reference)
}

/// The simulator of `profile`, with a reference path for `group`.
fn open_sim(
    config: &GateConfig,
    mut profile: SimProfile,
    group: &str,
    reference: &Arc<ReferenceModel>,
) -> Result<(Device, Option<std::path::PathBuf>), GateError> {
    let sim_reference = match &config.sim_onnx {
        Some(path) => Arc::new(
            ReferenceModel::from_onnx_file(path).map_err(|e| GateError::Reference(Box::new(e)))?,
        ),
        None => Arc::clone(reference),
    };
    profile.references.insert(group.to_owned(), sim_reference);
    let device = Device::open(Backend::Sim(profile)).map_err(device_err("open the simulator"))?;
    let onnx = config
        .sim_onnx
        .clone()
        .unwrap_or_else(|| config.onnx.clone());
    Ok((device, Some(onnx)))
}

/// The rig's preprocessing for the HEF's input; the gate compares RGB inputs only (a YUV
/// tensor's bytes are not one value per element).
fn preprocessor(config: &GateConfig, input: &hef::StreamInfo) -> Result<Preprocessor, GateError> {
    let spec_err = |source| GateError::InputSpec {
        hef: config.hef.clone(),
        source,
    };
    let spec = InputSpec::from_stream(input).map_err(spec_err)?;
    if spec.layout != InputLayout::Rgb {
        return Err(GateError::InputLayout {
            hef: config.hef.clone(),
            stream: input.name.clone(),
            layout: spec.layout,
        });
    }
    Preprocessor::new(spec, config.preprocess).map_err(spec_err)
}

/// Batch 1, FLOAT32 on both sides: HailoRT quantises the inputs and dequantises the outputs.
fn configure(model: &mut Model) -> Result<ConfiguredModel, GateError> {
    let format = device_err("set FLOAT32 buffers");
    let streams: Vec<(Direction, String)> = model
        .inputs()
        .iter()
        .chain(model.outputs())
        .map(|s| (s.direction, s.name.clone()))
        .collect();
    let set = |model: &mut Model| -> Result<(), NpuError> {
        model.set_batch_size(1)?;
        for (direction, name) in &streams {
            model.set_format_type(*direction, name, FormatType::Float32)?;
        }
        Ok(())
    };
    set(model).map_err(format)?;
    model.configure().map_err(device_err("configure the model"))
}

/// One frame on the device: FLOAT32 input values in, FLOAT32 outputs back, in `outputs`' order.
fn run_device(
    configured: &ConfiguredModel,
    input: &str,
    values: &[f32],
    outputs: &[StreamSpec],
    timeout: Duration,
) -> Result<Vec<Vec<f32>>, GateError> {
    let mut bindings = configured.bindings().map_err(device_err("make bindings"))?;
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    bindings
        .write_input(input, &bytes)
        .map_err(device_err("write the input"))?;
    let bindings = configured
        .run(bindings, timeout)
        .map_err(device_err("run a frame"))?;
    outputs
        .iter()
        .map(|o| {
            let data = bindings
                .output(&o.name)
                .map_err(device_err("read an output"))?;
            Ok(data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        })
        .collect()
}

/// Every HEF output with the reference output of its name.
fn pair(
    config: &GateConfig,
    reference: &ReferenceModel,
    outputs: &[StreamSpec],
) -> Result<Vec<PairLine>, GateError> {
    outputs
        .iter()
        .map(|o| {
            let index = reference
                .output_for(&o.name)
                .map_err(|source| GateError::Pairing {
                    hef: config.hef.clone(),
                    onnx: config.onnx.clone(),
                    source: Box::new(source),
                })?;
            Ok(PairLine {
                stream: o.name.clone(),
                onnx_output: reference.output_names()[index].clone(),
                onnx_index: index,
            })
        })
        .collect()
}
