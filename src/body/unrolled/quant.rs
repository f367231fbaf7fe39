//! The Hailo dataflow compiler's quantisation, emulated: every tensor (weights and
//! activations) per-tensor asymmetric unsigned integers over a range calibrated with min/max on
//! synthetic frames, 8 bits by default and 16 for the tensors named sensitive. The emulation
//! fake-quantises each tensor where the evaluator makes it (quantise, then dequantise), so the
//! next operator sees exactly the values the integer tensor can hold.

use std::collections::{BTreeMap, BTreeSet};

use ndarray::ArrayD;

/// How one tensor is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// Not quantised (f32).
    Float,
    /// Unsigned asymmetric integers of this many bits.
    Bits(u32),
}

/// Which precision each tensor gets, and its calibrated range.
#[derive(Debug, Clone, Default)]
pub struct Quantiser {
    ranges: BTreeMap<String, (f32, f32)>,
    default: Option<u32>,
    wide: BTreeSet<String>,
    wide_bits: u32,
    only: Option<String>,
}

/// The class of a tensor: its name without the iteration prefix `sN/`, so a tensor and its
/// counterpart in every other iteration share one precision.
pub fn class(name: &str) -> &str {
    match name.split_once('/') {
        Some((head, rest))
            if head.len() > 1
                && head.starts_with('s')
                && head[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            rest
        }
        _ => name,
    }
}

impl Quantiser {
    /// Every calibrated tensor at `bits`, except the classes in `wide`, at `wide_bits`.
    pub fn new(
        ranges: BTreeMap<String, (f32, f32)>,
        bits: u32,
        wide: BTreeSet<String>,
        wide_bits: u32,
    ) -> Self {
        Self {
            ranges,
            default: Some(bits),
            wide,
            wide_bits,
            only: None,
        }
    }

    /// Only the tensors of class `only` quantised, at `bits`; everything else f32 (to find
    /// which tensors are sensitive).
    pub fn only(ranges: BTreeMap<String, (f32, f32)>, only: &str, bits: u32) -> Self {
        Self {
            ranges,
            default: Some(bits),
            wide: BTreeSet::new(),
            wide_bits: bits,
            only: Some(only.to_owned()),
        }
    }

    /// The calibrated range and the precision of tensor `name`; `None` for a tensor that was
    /// never calibrated (it stays f32).
    pub fn plan(&self, name: &str) -> Option<((f32, f32), Precision)> {
        let range = *self.ranges.get(name)?;
        let c = class(name);
        if self.only.as_deref().is_some_and(|o| o != c) {
            return Some((range, Precision::Float));
        }
        let bits = if self.wide.contains(c) {
            Some(self.wide_bits)
        } else {
            self.default
        };
        Some((range, bits.map_or(Precision::Float, Precision::Bits)))
    }

    /// The classes of the calibrated tensors.
    pub fn classes(ranges: &BTreeMap<String, (f32, f32)>) -> BTreeSet<String> {
        ranges.keys().map(|n| class(n).to_owned()).collect()
    }
}

/// Quantises `a` to `bits`-bit unsigned integers over `range` (widened to hold zero, as the
/// compiler's asymmetric scheme does, so zero is exact) and back.
pub fn fake_quantise(a: &mut ArrayD<f32>, range: (f32, f32), bits: u32) {
    let (lo, hi) = (range.0.min(0.0), range.1.max(0.0));
    let levels = ((1u64 << bits) - 1) as f32;
    let scale = (hi - lo) / levels;
    if !(scale > 0.0 && scale.is_finite()) {
        a.fill(0.0);
        return;
    }
    let zero = (-lo / scale).round();
    a.mapv_inplace(|x| {
        let q = (x / scale + zero).round().clamp(0.0, levels);
        (q - zero) * scale
    });
}

#[cfg(test)]
mod tests {
    use ndarray::{arr1, ArrayD};

    use super::*;

    #[test]
    fn eight_bits_hold_256_levels_with_zero_exact() {
        let mut a: ArrayD<f32> = arr1(&[-1.0f32, -0.3, 0.0, 0.5, 3.0, 7.0]).into_dyn();
        fake_quantise(&mut a, (-1.0, 3.0), 8);
        let step = 4.0 / 255.0;
        assert_eq!(a[2], 0.0);
        assert!((a[1] + 0.3).abs() <= step / 2.0 + 1e-6);
        // Outside the calibrated range values saturate.
        assert!((a[5] - a[4]).abs() < 1e-6 && (a[4] - 3.0).abs() < step);
        // Negative control: 16 bits are 256 times finer.
        let mut b: ArrayD<f32> = arr1(&[-0.3f32]).into_dyn();
        fake_quantise(&mut b, (-1.0, 3.0), 16);
        assert!((b[0] + 0.3).abs() <= 4.0 / 65535.0);
        assert!((b[0] + 0.3).abs() < (a[1] + 0.3).abs() || (a[1] + 0.3).abs() < 1e-7);
    }

    #[test]
    fn classes_strip_the_iteration() {
        assert_eq!(class("s3/solve/x2"), "solve/x2");
        assert_eq!(class("const/p"), "const/p");
        assert_eq!(class("sx/a"), "sx/a");
    }
}
