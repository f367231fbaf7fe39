//! What the simulator knows about a configured model: its streams in the
//! user's formats, its operations per frame, and how it makes outputs.
//!
//! Outputs come from the graph's reference ONNX when one is registered (run
//! on the CPU, then quantised per the HEF's output quant info, as the device
//! would emit them), otherwise from a deterministic generator seeded by the
//! job number. [`OutputKind`] says which, so synthetic data is never taken for
//! real features.

use std::sync::Arc;

use hef::{DataType, Quantization, StreamInfo, StreamShape};

use super::completion::RawBuf;
use super::reference::{ReferenceError, ReferenceModel};

/// `hailo_format_type_t` values.
pub const FORMAT_TYPE_AUTO: u32 = 0;
pub const FORMAT_TYPE_UINT8: u32 = 1;
pub const FORMAT_TYPE_UINT16: u32 = 2;
pub const FORMAT_TYPE_FLOAT32: u32 = 3;

/// Where a model's outputs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum OutputKind {
    /// Produced by the NPU.
    Device,
    /// The simulator ran the graph's reference ONNX and quantised the result.
    SimReference,
    /// Deterministic synthetic bytes: not features of any image.
    SimSynthetic,
}

/// Where a model's operations per frame come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum OpsSource {
    /// `NetworkGroup::ops_per_frame` of the HEF.
    Hef,
    /// Counted from the reference ONNX (2 x multiply-accumulates).
    ReferenceOnnx,
    /// Given in the simulator profile.
    Given,
    /// Derived from the HEF's bottleneck fps at the profile's peak x utilisation.
    BottleneckFps,
    /// Unknown: compute time is zero.
    Unknown,
}

/// One stream as the user sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSpec {
    pub name: String,
    pub shape: StreamShape,
    pub device_type: DataType,
    /// The user's `hailo_format_type_t` (never AUTO here).
    pub format_type: u32,
    /// The user's `hailo_format_order_t`.
    pub format_order: u32,
    pub quant: Vec<hef::QuantInfo>,
}

impl StreamSpec {
    /// The spec of a HEF stream with the device's own format.
    pub fn from_hef(info: &StreamInfo) -> StreamSpec {
        let quant = match &info.quant {
            Quantization::Uniform(q) => vec![*q],
            Quantization::PerFeature(v) => v.clone(),
        };
        StreamSpec {
            name: info.name.clone(),
            shape: info.shape,
            device_type: info.data_type,
            format_type: device_format_type(info.data_type),
            format_order: info.host_order.c_value(),
            quant,
        }
    }

    /// Elements in one frame.
    pub fn elements(&self) -> usize {
        self.shape.elements() as usize
    }

    /// Bytes per element of the user format.
    pub fn element_size(&self) -> usize {
        match self.format_type {
            FORMAT_TYPE_FLOAT32 => 4,
            FORMAT_TYPE_UINT16 => 2,
            _ => 1,
        }
    }

    /// Bytes of one frame in the user format.
    pub fn frame_size(&self) -> usize {
        self.elements() * self.element_size()
    }

    /// Bytes of one frame on the link (device format).
    pub fn device_frame_size(&self) -> usize {
        self.elements() * self.device_type.size()
    }

    fn features(&self) -> usize {
        match self.shape {
            StreamShape::Image { features, .. } => features.max(1) as usize,
            StreamShape::Nms { .. } => 1,
        }
    }

    /// The quant info of element `i` (NHWC: the feature is `i % features`).
    pub fn quant_of(&self, i: usize) -> hef::QuantInfo {
        let q = &self.quant;
        match q.len() {
            0 => hef::QuantInfo {
                zp: 0.0,
                scale: 1.0,
                limvals_min: 0.0,
                limvals_max: 255.0,
            },
            1 => q[0],
            n => q[(i % self.features()) % n],
        }
    }

    /// Largest quantised value of the device type.
    pub fn q_max(&self) -> f32 {
        match self.device_type {
            DataType::Uint8 => 255.0,
            DataType::Uint16 => 65535.0,
        }
    }
}

/// The user format type equal to a device data type.
pub fn device_format_type(t: DataType) -> u32 {
    match t {
        DataType::Uint8 => FORMAT_TYPE_UINT8,
        DataType::Uint16 => FORMAT_TYPE_UINT16,
    }
}

/// A model as configured on the simulated device.
#[derive(Debug, Clone)]
pub struct ModelSpec {
    pub name: String,
    pub batch: u16,
    pub inputs: Vec<StreamSpec>,
    pub outputs: Vec<StreamSpec>,
    pub ops_per_frame: f64,
    pub ops_source: OpsSource,
    pub reference: Option<Arc<ReferenceModel>>,
    /// Utilisation of a burst of `n` frames at index `n - 1`, for `n` up to
    /// the batch: resolved at configure, so a batch the profile's
    /// utilisation does not cover fails there.
    pub utilisation_by_burst: Vec<f64>,
}

impl ModelSpec {
    /// The utilisation a burst of `frames` is charged at (a burst is never
    /// larger than the batch; a larger one is charged at the batch's).
    pub fn utilisation(&self, frames: usize) -> f64 {
        let i = frames.clamp(1, self.utilisation_by_burst.len().max(1)) - 1;
        self.utilisation_by_burst.get(i).copied().unwrap_or(0.0)
    }

    /// Bytes of one frame's inputs on the link.
    pub fn device_bytes_in(&self) -> u64 {
        self.inputs
            .iter()
            .map(|s| s.device_frame_size() as u64)
            .sum()
    }

    /// Bytes of one frame's outputs on the link.
    pub fn device_bytes_out(&self) -> u64 {
        self.outputs
            .iter()
            .map(|s| s.device_frame_size() as u64)
            .sum()
    }

    /// Where this model's outputs come from.
    pub fn output_kind(&self) -> OutputKind {
        if self.reference.is_some() {
            OutputKind::SimReference
        } else {
            OutputKind::SimSynthetic
        }
    }
}

/// SplitMix64: a tiny, well-known deterministic generator.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Writes quantised values into a user buffer in the stream's user format.
fn write_quantized(spec: &StreamSpec, out: &mut [u8], mut q_at: impl FnMut(usize) -> f32) {
    match spec.format_type {
        FORMAT_TYPE_FLOAT32 => {
            for (i, chunk) in out.chunks_exact_mut(4).enumerate() {
                let v = spec.quant_of(i).dequantize(q_at(i));
                chunk.copy_from_slice(&v.to_le_bytes());
            }
        }
        FORMAT_TYPE_UINT16 => {
            for (i, chunk) in out.chunks_exact_mut(2).enumerate() {
                chunk.copy_from_slice(&(q_at(i) as u16).to_le_bytes());
            }
        }
        _ => {
            for (i, b) in out.iter_mut().enumerate() {
                *b = q_at(i) as u8;
            }
        }
    }
}

/// Deterministic synthetic output of job `index`, stream `k`.
pub fn fill_synthetic(spec: &StreamSpec, index: u64, k: usize, out: &mut [u8]) {
    let mut state =
        index.wrapping_mul(0x1000_0000_01B3) ^ (k as u64).wrapping_add(1).rotate_left(32);
    if spec.format_type == FORMAT_TYPE_UINT8 || spec.format_type == FORMAT_TYPE_AUTO {
        for chunk in out.chunks_mut(8) {
            let bytes = splitmix(&mut state).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        return;
    }
    let q_max = spec.q_max() as u64 + 1;
    write_quantized(spec, out, |_| (splitmix(&mut state) % q_max) as f32);
}

/// Quantises real values the way the device emits them: round, clamp.
pub fn quantize_into(spec: &StreamSpec, values: &[f32], out: &mut [u8]) {
    let q_max = spec.q_max();
    write_quantized(spec, out, |i| {
        let x = values.get(i).copied().unwrap_or(0.0);
        spec.quant_of(i).quantize(x).clamp(0.0, q_max)
    });
}

/// A job's outputs could not be made: its graph's reference model failed.
#[derive(Debug, thiserror::Error)]
#[error("reference ONNX of '{group}' failed: {source}")]
pub struct FillError {
    /// The network group whose reference failed.
    pub group: String,
    #[source]
    pub source: ReferenceError,
}

/// Fills the output buffers of one finished job; `Err` when the reference
/// model failed (the job then fails rather than pass off other data).
pub(crate) fn fill_outputs(
    spec: &ModelSpec,
    index: u64,
    inputs: &[RawBuf],
    outputs: &[RawBuf],
) -> Result<(), FillError> {
    let outs: Vec<&mut [u8]> = outputs
        .iter()
        // SAFETY: each RawBuf was checked against its stream's frame size when set
        // on the bindings and is lent to the device, untouched by the submitter,
        // until this job's completion callback, which runs after this function.
        .map(|b| unsafe { std::slice::from_raw_parts_mut(b.ptr, b.len) })
        .collect();
    if let Some(reference) = &spec.reference {
        let ins: Vec<&[u8]> = inputs
            .iter()
            // SAFETY: as above, for the input buffers, which are only read.
            .map(|b| unsafe { std::slice::from_raw_parts(b.ptr.cast_const(), b.len) })
            .collect();
        let values = reference.run(spec, &ins).map_err(|source| FillError {
            group: spec.name.clone(),
            source,
        })?;
        for ((out, stream), v) in outs.into_iter().zip(&spec.outputs).zip(&values) {
            quantize_into(stream, v, out);
        }
        return Ok(());
    }
    for (k, (out, stream)) in outs.into_iter().zip(&spec.outputs).enumerate() {
        fill_synthetic(stream, index, k, out);
    }
    Ok(())
}
