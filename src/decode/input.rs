//! The decoder's inputs: backbone maps dequantised from the NPU's output buffers.
//!
//! The device hands each map back as a quantised NHWC frame `(g, g, C)` of UINT8 (or
//! UINT16); the ONNX wants NCHW f32 `(1, C, g, g)`. [`FeatureMaps::fill_from_device`]
//! does the dequantisation `real = (q - zp) * scale` and the transpose in one pass,
//! writing straight into the tensors the engine reads. The tensors are kept behind
//! `Arc` so that tract can take them as inputs without a copy and hand the buffers back
//! once the run is over; the next frame then overwrites them in place.
//!
//! Each map carries the name of the decoder input it feeds ([`MapSpec`]); which device
//! buffer fills which map is decided once, by name, in [`pairing`](super::pairing).
//!
//! The maps are tract `Tensor`s because that is what tract's runner takes without a
//! copy; everything else sees them as ndarray views of those buffers
//! ([`FeatureMaps::map`], [`FeatureMaps::map_mut`]), which is also what ONNX Runtime
//! takes.

use std::fmt;
use std::sync::Arc;

use hef::{DataType, QuantInfo, Quantization};
use ndarray::{ArrayView4, ArrayViewMut2, ArrayViewMut4};
use tract_onnx::prelude::{IntoTValue, TValue, TVec, Tensor, TractResult};
use tract_onnx::tract_hir::internal::ensure;

use super::DecodeError;
use crate::text::dims;

/// One input of a decoder graph: its name and its NCHW f32 shape `(1, C, H, W)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MapSpec {
    /// The graph's input name (`features`, `cross_attn_features`, `tap0`, ...).
    pub name: String,
    /// `(1, channels, height, width)`.
    pub shape: [usize; 4],
}

impl MapSpec {
    /// A map named `name` of `channels` x `height` x `width`, batch 1.
    pub fn new(name: impl Into<String>, channels: usize, height: usize, width: usize) -> Self {
        Self {
            name: name.into(),
            shape: [1, channels, height, width],
        }
    }

    /// Channels of the map.
    pub fn channels(&self) -> usize {
        self.shape[1]
    }

    /// Elements of the map.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the map holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Display for MapSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, dims(&self.shape))
    }
}

/// A list of maps as `a (1, 256, 24, 24), b (...)`, for messages.
pub(crate) fn specs_text(specs: &[MapSpec]) -> String {
    let parts: Vec<String> = specs.iter().map(MapSpec::to_string).collect();
    parts.join(", ")
}

/// The decoder's input maps, NCHW f32, reused frame after frame.
#[derive(Debug, Clone)]
pub struct FeatureMaps {
    specs: Vec<MapSpec>,
    maps: Vec<Arc<Tensor>>,
}

/// One quantised device buffer (an output's NHWC frame) with its stream's description.
#[derive(Debug, Clone, Copy)]
pub struct DeviceMap<'a> {
    /// Stream name, for errors.
    pub stream: &'a str,
    /// Raw bytes of one frame, NHWC, little-endian elements.
    pub bytes: &'a [u8],
    /// Element type of the buffer.
    pub data_type: DataType,
    /// The stream's quantisation.
    pub quant: &'a Quantization,
}

impl FeatureMaps {
    /// Zeroed maps of the given names and shapes, in the graph's input order.
    pub fn new(specs: &[MapSpec]) -> Self {
        let maps = specs.iter().map(|s| Arc::new(zeroed(&s.shape))).collect();
        Self {
            specs: specs.to_vec(),
            maps,
        }
    }

    /// Names and shapes of the maps, in the graph's input order.
    pub fn specs(&self) -> &[MapSpec] {
        &self.specs
    }

    /// Number of maps.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    /// Whether there is no map.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// The maps as tract tensors (shared, not copied).
    pub fn tensors(&self) -> &[Arc<Tensor>] {
        &self.maps
    }

    /// Map `i`, (1, channels, height, width).
    pub fn map(&self, i: usize) -> ArrayView4<'_, f32> {
        let data = super::ops::f32s(&self.maps[i]).expect("feature maps are dense f32");
        ArrayView4::from_shape(self.specs[i].shape, data).expect("maps hold their shape's elements")
    }

    /// Map `i`, (1, channels, height, width), writable.
    ///
    /// When an engine still holds the previous frame's tensor, a fresh buffer is
    /// allocated instead of waiting (this is logged, it should not happen in steady
    /// state).
    pub fn map_mut(&mut self, i: usize) -> ArrayViewMut4<'_, f32> {
        let shape = self.specs[i].shape;
        ArrayViewMut4::from_shape(shape, self.elements_mut(i))
            .expect("maps hold their shape's elements")
    }

    /// The elements of map `i`, writable, in a buffer no engine holds.
    fn elements_mut(&mut self, i: usize) -> &mut [f32] {
        if Arc::get_mut(&mut self.maps[i]).is_none() {
            log::debug!(
                "feature map {} still shared; allocating a new buffer",
                self.specs[i].name
            );
            self.maps[i] = Arc::new(zeroed(&self.specs[i].shape));
        }
        super::ops::f32s_mut(Arc::get_mut(&mut self.maps[i]).expect("just made unique"))
            .expect("feature maps are dense f32")
    }

    /// The maps as an engine's inputs, shared rather than copied; map `i` gets
    /// the shape `shapes[i]` when given (the same elements, row-major, under
    /// other axis lengths: see `ops::input_reshape`).
    ///
    /// # Errors
    /// When a shape holds another number of elements than its map.
    pub(crate) fn lend(&mut self, shapes: &[Option<TVec<usize>>]) -> TractResult<TVec<TValue>> {
        for (i, shape) in shapes.iter().enumerate().take(self.maps.len()) {
            let logical = self.specs[i].shape;
            let want: &[usize] = shape.as_deref().unwrap_or(&logical);
            ensure!(
                want.iter().product::<usize>() == self.specs[i].len(),
                "input {} fed as {}, the map is {}",
                self.specs[i].name,
                dims(want),
                dims(&logical)
            );
            if self.maps[i].shape() != want {
                self.elements_mut(i);
                Arc::get_mut(&mut self.maps[i])
                    .expect("made unique by elements_mut")
                    .set_shape(want)?;
            }
        }
        Ok(self.maps.iter().map(|t| t.clone().into_tvalue()).collect())
    }

    /// Dequantises one device buffer (NHWC) per map, in the maps' order, into these
    /// maps (NCHW f32).
    ///
    /// # Errors
    /// [`DecodeError::Buffer`] naming the stream when a buffer's length, data type or
    /// per-feature quantisation count does not match its map, or when the number of
    /// buffers is not the number of maps.
    pub fn fill_from_device(&mut self, buffers: &[DeviceMap<'_>]) -> Result<(), DecodeError> {
        if buffers.len() != self.maps.len() {
            let streams: Vec<&str> = buffers.iter().map(|b| b.stream).collect();
            return Err(DecodeError::Buffer {
                stream: streams.join(", "),
                message: format!(
                    "{} buffers for {} maps ({})",
                    buffers.len(),
                    self.maps.len(),
                    specs_text(&self.specs)
                ),
            });
        }
        for (i, buffer) in buffers.iter().enumerate() {
            let [_, c, h, w] = self.specs[i].shape;
            let planes = ArrayViewMut2::from_shape((c, h * w), self.elements_mut(i))
                .expect("maps hold their shape's elements");
            dequantize_nhwc_to_nchw(buffer, planes)?;
        }
        Ok(())
    }
}

fn zeroed(shape: &[usize]) -> Tensor {
    Tensor::zero::<f32>(shape).expect("f32 tensor of a plain shape")
}

/// Dequantises one NHWC buffer of `pixels × channels` into planes `(channels, pixels)`.
///
/// # Errors
/// [`DecodeError::Buffer`] for a length or quantisation mismatch.
pub fn dequantize_nhwc_to_nchw(
    tap: &DeviceMap<'_>,
    out: ArrayViewMut2<'_, f32>,
) -> Result<(), DecodeError> {
    let (channels, pixels) = out.dim();
    let bad = |message: String| DecodeError::Buffer {
        stream: tap.stream.to_string(),
        message,
    };
    let elem = tap.data_type.size();
    let expected = pixels * channels * elem;
    if tap.bytes.len() != expected {
        return Err(bad(format!(
            "{} bytes, expected {expected} ({pixels} pixels × {channels} features × {elem} B {})",
            tap.bytes.len(),
            tap.data_type.name()
        )));
    }
    // Per-channel affine (a, b) with real = q * a + b: one multiply-add per element.
    let affine: Vec<(f32, f32)> = match tap.quant {
        Quantization::Uniform(q) => vec![affine_of(q); channels],
        Quantization::PerFeature(qs) => {
            if qs.len() != channels {
                return Err(bad(format!(
                    "{} per-feature quantisation entries, expected {channels}",
                    qs.len()
                )));
            }
            qs.iter().map(affine_of).collect()
        }
    };
    match tap.data_type {
        DataType::Uint8 => transpose(tap.bytes, &affine, out, |b, i| b[i]),
        DataType::Uint16 => transpose(tap.bytes, &affine, out, |b, i| {
            u16::from_le_bytes([b[2 * i], b[2 * i + 1]])
        }),
    }
    Ok(())
}

fn affine_of(q: &QuantInfo) -> (f32, f32) {
    (q.scale, -q.zp * q.scale)
}

/// NHWC -> NCHW with dequantisation, in blocks of pixels so that both the reads
/// (contiguous channels) and the writes (one run per channel) stay in cache.
/// The maps are contiguous (`FeatureMaps` owns them in standard layout), so the
/// blocks write plain slices; a strided view falls back to element order.
fn transpose<T: Into<f32> + Copy>(
    bytes: &[u8],
    affine: &[(f32, f32)],
    mut out: ArrayViewMut2<'_, f32>,
    read: impl Fn(&[u8], usize) -> T,
) {
    const BLOCK: usize = 16;
    let (channels, pixels) = out.dim();
    let Some(flat) = out.as_slice_mut() else {
        for ((c, p), o) in out.indexed_iter_mut() {
            let (a, b) = affine[c];
            *o = read(bytes, p * channels + c).into() * a + b;
        }
        return;
    };
    let mut p0 = 0;
    while p0 < pixels {
        let p1 = (p0 + BLOCK).min(pixels);
        for (c, &(a, b)) in affine.iter().enumerate() {
            let dst = &mut flat[c * pixels + p0..c * pixels + p1];
            for (k, o) in dst.iter_mut().enumerate() {
                let q: f32 = read(bytes, (p0 + k) * channels + c).into();
                *o = q * a + b;
            }
        }
        p0 = p1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quant(zp: f32, scale: f32) -> QuantInfo {
        QuantInfo {
            zp,
            scale,
            limvals_min: 0.0,
            limvals_max: 0.0,
        }
    }

    /// The obvious reference: element by element through `QuantInfo::dequantize`.
    fn naive(bytes: &[u8], c: usize, h: usize, w: usize, q: &Quantization) -> Vec<f32> {
        let mut out = vec![0.0; c * h * w];
        for y in 0..h {
            for x in 0..w {
                for ch in 0..c {
                    let qi = match q {
                        Quantization::Uniform(q) => *q,
                        Quantization::PerFeature(v) => v[ch],
                    };
                    out[ch * h * w + y * w + x] =
                        qi.dequantize(f32::from(bytes[(y * w + x) * c + ch]));
                }
            }
        }
        out
    }

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| ((i * 37 + i / 7) % 256) as u8).collect()
    }

    #[test]
    fn dequantises_and_transposes_like_the_naive_reference() {
        let (c, h, w) = (24, 5, 7);
        let raw = bytes(c * h * w);
        let per_feature = Quantization::PerFeature(
            (0..c)
                .map(|i| quant(100.0 + i as f32, 0.01 * (i + 1) as f32))
                .collect(),
        );
        for q in [Quantization::Uniform(quant(128.0, 0.05)), per_feature] {
            let specs = [MapSpec::new("a", c, h, w), MapSpec::new("b", c, h, w)];
            let mut maps = FeatureMaps::new(&specs);
            let tap = DeviceMap {
                stream: "tap",
                bytes: &raw,
                data_type: DataType::Uint8,
                quant: &q,
            };
            maps.fill_from_device(&[tap; 2]).unwrap();
            let want = naive(&raw, c, h, w, &q);
            for i in 0..maps.len() {
                let err = maps
                    .map(i)
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f32::max);
                assert!(err < 1e-5, "map {i}: {err}");
            }
            // Negative control: reading the buffer as if it were already NCHW (no
            // transpose) gives other values, so the comparison can fail.
            let untransposed: Vec<f32> = raw
                .iter()
                .enumerate()
                .map(|(i, &b)| {
                    let qi = match &q {
                        Quantization::Uniform(q) => *q,
                        Quantization::PerFeature(v) => v[i / (h * w)],
                    };
                    qi.dequantize(f32::from(b))
                })
                .collect();
            assert!(maps
                .map(0)
                .iter()
                .zip(&untransposed)
                .any(|(a, b)| (a - b).abs() > 1e-3));
        }
    }

    #[test]
    fn uint16_is_read_little_endian() {
        let (c, h, w) = (3, 2, 2);
        let vals: Vec<u16> = (0..12).map(|i| 1000 + i * 300).collect();
        let raw: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let q = Quantization::Uniform(quant(1000.0, 0.5));
        let mut out = vec![0.0; 12];
        let tap = DeviceMap {
            stream: "t",
            bytes: &raw,
            data_type: DataType::Uint16,
            quant: &q,
        };
        let planes = ArrayViewMut2::from_shape((c, h * w), &mut out).unwrap();
        dequantize_nhwc_to_nchw(&tap, planes).unwrap();
        // channel 1, pixel 2 is element 2*3+1 = 7 of the NHWC buffer.
        assert_eq!(out[4 + 2], (f32::from(vals[7]) - 1000.0) * 0.5);
    }

    #[test]
    fn a_strided_view_gets_the_same_values_as_a_contiguous_one() {
        let (c, h, w) = (5, 3, 4);
        let raw = bytes(c * h * w);
        let q = Quantization::PerFeature((0..c).map(|i| quant(i as f32, 0.5)).collect());
        let tap = DeviceMap {
            stream: "t",
            bytes: &raw,
            data_type: DataType::Uint8,
            quant: &q,
        };
        let mut flat = vec![0.0; c * h * w];
        dequantize_nhwc_to_nchw(
            &tap,
            ArrayViewMut2::from_shape((c, h * w), &mut flat).unwrap(),
        )
        .unwrap();
        // The same planes stored pixel-major: a (channels, pixels) view with strides (1, c).
        let mut pixel_major = vec![f32::NAN; c * h * w];
        let mut view = ArrayViewMut2::from_shape((h * w, c), &mut pixel_major).unwrap();
        view.swap_axes(0, 1);
        assert!(view.as_slice_mut().is_none(), "the view must be strided");
        dequantize_nhwc_to_nchw(&tap, view).unwrap();
        for ch in 0..c {
            for p in 0..h * w {
                assert_eq!(
                    pixel_major[p * c + ch],
                    flat[ch * h * w + p],
                    "channel {ch} pixel {p}"
                );
            }
        }
        assert_eq!(flat, naive(&raw, c, h, w, &q));
    }

    #[test]
    fn wrong_length_and_quant_count_name_the_stream() {
        let (short, long) = (bytes(10), bytes(12));
        let uniform = Quantization::Uniform(quant(0.0, 1.0));
        let two = Quantization::PerFeature(vec![quant(0.0, 1.0); 2]);
        let mut out = vec![0.0; 12];
        let cases = [
            (&short, &uniform, ["backbone/tap2", "expected 12"]),
            (&long, &two, ["2 per-feature", "expected 3"]),
        ];
        for (raw, q, want) in cases {
            let tap = DeviceMap {
                stream: "backbone/tap2",
                bytes: raw,
                data_type: DataType::Uint8,
                quant: q,
            };
            let planes = ArrayViewMut2::from_shape((3, 4), &mut out).unwrap();
            let err = dequantize_nhwc_to_nchw(&tap, planes)
                .unwrap_err()
                .to_string();
            assert!(want.iter().all(|w| err.contains(w)), "{err}");
        }
    }

    #[test]
    fn buffers_are_reused_when_no_one_else_holds_them() {
        let mut maps = FeatureMaps::new(&[MapSpec::new("m", 2, 2, 2)]);
        let before = maps.map(0).as_ptr();
        maps.map_mut(0)[[0, 0, 0, 0]] = 1.0;
        assert_eq!(maps.map(0).as_ptr(), before);
        let held = maps.tensors()[0].clone();
        maps.map_mut(0)[[0, 0, 0, 0]] = 2.0;
        assert_ne!(
            maps.map(0).as_ptr(),
            before,
            "shared buffer must not be written"
        );
        assert_eq!(super::super::ops::f32s(&held).unwrap()[0], 1.0);
    }
}
