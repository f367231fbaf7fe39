//! One output of the part against its reference, element by element, over every frame.
//!
//! Two figures per output, both against the [`Bound`]:
//! - the relative error, `‖device − reference‖₂ / ‖reference‖₂` over all elements of all
//!   frames (the inverse of a signal-to-noise ratio: 0.1 is 20 dB);
//! - the largest absolute difference, also counted in the output's quantisation steps
//!   (its `scale`, per feature when the HEF has one per feature), so one bound reads the
//!   same for outputs of any range.

use serde::Serialize;

use crate::npu::sim::model_spec::StreamSpec;

/// What an output may differ from its reference by.
///
/// The defaults are for an INT8 HEF (see `docs/gate.md`): rounding one 8-bit output to
/// its grid alone gives a relative error near 0.01 and at most half a step per element
/// (a uniform quantiser's error is at most `scale / 2`, RMS `scale / √12`); a compiled
/// network re-quantises every layer's activations and weights to 8 bits, and those
/// errors add up to a few hundredths. `rel` = 0.1 (20 dB) leaves room for that and still
/// refuses an output that is not the reference's (two different maps differ by a
/// relative error near 1 or above); `max_steps` = 32 (an eighth of the 8-bit range)
/// refuses a single element no rounding explains.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bound {
    /// Largest relative error, `‖d‖₂ / ‖reference‖₂`.
    pub rel: f64,
    /// Largest |difference| of one element, in quantisation steps of its output.
    pub max_steps: f64,
}

impl Bound {
    /// The default relative error (20 dB).
    pub const DEFAULT_REL: f64 = 0.1;
    /// The default largest difference of one element, in quantisation steps.
    pub const DEFAULT_MAX_STEPS: f64 = 32.0;
}

impl Default for Bound {
    fn default() -> Self {
        Bound {
            rel: Bound::DEFAULT_REL,
            max_steps: Bound::DEFAULT_MAX_STEPS,
        }
    }
}

/// Where an output's largest difference is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Worst {
    /// The frame (0-based, in input order).
    pub frame: usize,
    /// The element, NHWC order.
    pub element: usize,
    /// The device's value there.
    pub device: f32,
    /// The reference's value there.
    pub reference: f32,
}

/// One output's figures over all frames.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputFigures {
    /// The HEF's output stream.
    pub stream: String,
    /// The reference ONNX output it is compared with (paired by name).
    pub onnx_output: String,
    /// Elements per frame.
    pub elements: usize,
    /// Frames compared.
    pub frames: usize,
    /// Largest |device − reference| (infinite for a non-finite device value).
    pub max_abs: f64,
    /// `max_abs` in the output's quantisation steps (the element's own scale).
    pub max_steps: f64,
    /// `‖device − reference‖₂ / ‖reference‖₂` (infinite when the reference is all zero
    /// and the device is not).
    pub rel: f64,
    /// Where the largest difference is.
    pub worst: Option<Worst>,
    /// The smallest and largest reference values.
    pub reference_range: [f32; 2],
    /// The real range the output's quantisation holds (its limvals; the widest over its
    /// features when it has one quant info per feature).
    pub limvals: [f32; 2],
    /// The share of reference values outside the limvals: values the device clips. A
    /// HEF calibrated on other data than the reference sees shows it here.
    pub clipped: f64,
    /// Whether both figures are within the bound.
    pub passed: bool,
}

/// Sums over frames for one output.
#[derive(Debug, Clone)]
pub(crate) struct Accumulator {
    stream: String,
    onnx_output: String,
    elements: usize,
    frames: usize,
    max_abs: f64,
    max_steps: f64,
    sum_sq_diff: f64,
    sum_sq_ref: f64,
    worst: Option<Worst>,
    reference_range: [f32; 2],
    limvals: [f32; 2],
    clipped: u64,
}

impl Accumulator {
    /// An empty sum for `stream`, compared with ONNX output `onnx_output`.
    pub(crate) fn new(stream: &StreamSpec, onnx_output: &str) -> Accumulator {
        Accumulator {
            stream: stream.name.clone(),
            onnx_output: onnx_output.to_owned(),
            elements: stream.elements(),
            frames: 0,
            max_abs: 0.0,
            max_steps: 0.0,
            sum_sq_diff: 0.0,
            sum_sq_ref: 0.0,
            worst: None,
            reference_range: [f32::INFINITY, f32::NEG_INFINITY],
            limvals: limvals(stream),
            clipped: 0,
        }
    }

    /// Adds one frame; `spec` gives each element's quantisation step.
    pub(crate) fn add(&mut self, spec: &StreamSpec, device: &[f32], reference: &[f32]) {
        let frame = self.frames;
        self.frames += 1;
        for (i, (&d, &r)) in device.iter().zip(reference).enumerate() {
            let diff = f64::from(d) - f64::from(r);
            let abs = if diff.is_finite() {
                diff.abs()
            } else {
                f64::INFINITY
            };
            self.sum_sq_diff += abs * abs;
            self.sum_sq_ref += f64::from(r) * f64::from(r);
            self.reference_range = [
                self.reference_range[0].min(r),
                self.reference_range[1].max(r),
            ];
            let q = spec.quant_of(i);
            if r < q.limvals_min || r > q.limvals_max {
                self.clipped += 1;
            }
            let step = f64::from(q.scale.abs()).max(f64::from(f32::MIN_POSITIVE));
            self.max_steps = self.max_steps.max(abs / step);
            if abs > self.max_abs || self.worst.is_none() {
                self.max_abs = self.max_abs.max(abs);
                self.worst = Some(Worst {
                    frame,
                    element: i,
                    device: d,
                    reference: r,
                });
            }
        }
        // A length mismatch is a difference the element loop cannot see.
        if device.len() != reference.len() {
            self.max_abs = f64::INFINITY;
            self.max_steps = f64::INFINITY;
            self.sum_sq_diff = f64::INFINITY;
        }
    }

    /// The figures, judged against `bound`.
    pub(crate) fn finish(self, bound: &Bound) -> OutputFigures {
        let rel = if self.sum_sq_ref > 0.0 {
            (self.sum_sq_diff / self.sum_sq_ref).sqrt()
        } else if self.sum_sq_diff == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        let passed = self.frames > 0 && rel <= bound.rel && self.max_steps <= bound.max_steps;
        let total = (self.frames * self.elements).max(1) as f64;
        OutputFigures {
            stream: self.stream,
            onnx_output: self.onnx_output,
            elements: self.elements,
            frames: self.frames,
            max_abs: self.max_abs,
            max_steps: self.max_steps,
            rel,
            worst: self.worst,
            reference_range: self.reference_range,
            limvals: self.limvals,
            clipped: self.clipped as f64 / total,
            passed,
        }
    }
}

/// The widest real range an output's quant infos hold.
fn limvals(stream: &StreamSpec) -> [f32; 2] {
    if stream.quant.is_empty() {
        let q = stream.quant_of(0);
        return [q.limvals_min, q.limvals_max];
    }
    stream
        .quant
        .iter()
        .fold([f32::INFINITY, f32::NEG_INFINITY], |[lo, hi], q| {
            [lo.min(q.limvals_min), hi.max(q.limvals_max)]
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(scale: f32) -> StreamSpec {
        StreamSpec {
            name: "g/out".into(),
            shape: hef::StreamShape::Image {
                height: 1,
                width: 2,
                features: 2,
            },
            device_type: hef::DataType::Uint8,
            format_type: crate::npu::sim::model_spec::FORMAT_TYPE_FLOAT32,
            format_order: 0,
            quant: vec![hef::QuantInfo {
                zp: 0.0,
                scale,
                limvals_min: 0.0,
                limvals_max: 255.0 * scale,
            }],
        }
    }

    fn judge(device: &[f32], reference: &[f32]) -> OutputFigures {
        let spec = stream(0.5);
        let mut acc = Accumulator::new(&spec, "out");
        acc.add(&spec, device, reference);
        acc.finish(&Bound::default())
    }

    #[test]
    fn figures_are_the_relative_norm_and_the_largest_step() {
        let f = judge(&[1.0, 2.0, 3.0, 4.25], &[1.0, 2.0, 3.0, 4.0]);
        assert!((f.max_abs - 0.25).abs() < 1e-12);
        assert!((f.max_steps - 0.5).abs() < 1e-12, "0.25 at scale 0.5");
        assert!((f.rel - 0.25 / 30f64.sqrt()).abs() < 1e-9);
        assert_eq!(f.worst.map(|w| w.element), Some(3));
        assert!(f.passed);
    }

    #[test]
    fn the_bound_refuses_what_rounding_cannot_explain() {
        // 20 steps on one element: within max_steps, but 10/sqrt(30) relative.
        assert!(!judge(&[1.0, 2.0, 3.0, 14.0], &[1.0, 2.0, 3.0, 4.0]).passed);
        // Swapped halves: a relative error far above 0.1.
        assert!(!judge(&[3.0, 4.0, 1.0, 2.0], &[1.0, 2.0, 3.0, 4.0]).passed);
        // A NaN from the device, a shorter output, an all-zero reference met by noise.
        assert!(!judge(&[f32::NAN, 2.0, 3.0, 4.0], &[1.0, 2.0, 3.0, 4.0]).passed);
        assert!(!judge(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).passed);
        assert!(!judge(&[0.0, 0.0, 0.0, 0.1], &[0.0; 4]).passed);
        // Negative controls: equal outputs and an all-zero pair pass.
        assert!(judge(&[1.0, 2.0, 3.0, 4.0], &[1.0, 2.0, 3.0, 4.0]).passed);
        assert!(judge(&[0.0; 4], &[0.0; 4]).passed);
    }

    #[test]
    fn one_far_element_is_refused_by_its_steps_alone() {
        let spec = stream(0.01);
        let reference: Vec<f32> = (0..4).map(|i| 10.0 + i as f32).collect();
        let mut device = reference.clone();
        device[2] += 0.5; // 50 steps of 0.01, a relative error of 0.02
        let mut acc = Accumulator::new(&spec, "out");
        acc.add(&spec, &device, &reference);
        let f = acc.finish(&Bound::default());
        assert!(f.rel < Bound::DEFAULT_REL && f.max_steps > 49.0, "{f:?}");
        assert!(!f.passed);
        // Negative control: 5 steps passes.
        let mut acc = Accumulator::new(&spec, "out");
        device[2] = reference[2] + 0.05;
        acc.add(&spec, &device, &reference);
        assert!(acc.finish(&Bound::default()).passed);
    }
}
