//! Quantisation of normalised pixels into a HEF input's UINT8 range.
//!
//! Most HEFs fold normalisation into the network and take raw 0..255 pixels;
//! then nothing is done here. When the rig says the network expects
//! `(x / 255 - mean) / std` quantised with the input's `(zp, scale)`, each
//! channel becomes a 256-entry table applied while the output is written.

use serde::{Deserialize, Serialize};

use hef::{QuantInfo, Quantization};

/// Per-channel normalisation the network was trained with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Normalize {
    pub mean: [f32; 3],
    pub std: [f32; 3],
}

/// Per-channel lookup applied to every output byte; identity when `None`.
pub type ChannelLut = Option<Box<[[u8; 256]; 3]>>;

/// Why a HEF input's quantisation cannot express the rig's normalisation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantizeError {
    #[error("{count} per-feature quantisation entries, expected 3 (one per RGB channel)")]
    FeatureCount { count: usize },
    #[error("channel {channel}: zero quantisation scale or normalisation std, expected non-zero")]
    ZeroScale { channel: usize },
}

/// Builds the per-channel tables, or `None` when the input takes raw pixels.
///
/// # Errors
/// [`QuantizeError::FeatureCount`] when per-feature quantisation does not
/// have three entries, [`QuantizeError::ZeroScale`] for a zero scale or std.
pub fn tables(
    normalize: Option<Normalize>,
    quant: &Quantization,
) -> Result<ChannelLut, QuantizeError> {
    let Some(norm) = normalize else {
        return Ok(None);
    };
    let per_channel: [QuantInfo; 3] = match quant {
        Quantization::Uniform(q) => [*q; 3],
        Quantization::PerFeature(qs) if qs.len() == 3 => [qs[0], qs[1], qs[2]],
        Quantization::PerFeature(qs) => {
            return Err(QuantizeError::FeatureCount { count: qs.len() })
        }
    };
    let mut t = Box::new([[0u8; 256]; 3]);
    for c in 0..3 {
        let q = per_channel[c];
        if q.scale == 0.0 || norm.std[c] == 0.0 {
            return Err(QuantizeError::ZeroScale { channel: c });
        }
        for x in 0..256 {
            let real = (x as f32 / 255.0 - norm.mean[c]) / norm.std[c];
            t[c][x] = q.quantize(real).clamp(0.0, 255.0) as u8;
        }
    }
    Ok(Some(t))
}

/// Applies the tables, if any, to a row of RGB pixels.
#[inline]
pub fn apply(lut: &ChannelLut, rgb: &mut [u8]) {
    if let Some(t) = lut {
        for px in rgb.chunks_exact_mut(3) {
            px.copy_from_slice(&[
                t[0][px[0] as usize],
                t[1][px[1] as usize],
                t[2][px[2] as usize],
            ]);
        }
    }
}

/// The tables applied to one RGB pixel.
#[inline]
pub fn pixel(lut: &ChannelLut, rgb: [u8; 3]) -> [u8; 3] {
    match lut {
        None => rgb,
        Some(t) => [
            t[0][rgb[0] as usize],
            t[1][rgb[1] as usize],
            t[2][rgb[2] as usize],
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imagenet_normalisation_quantises_as_hailort_would() {
        let norm = Normalize {
            mean: [0.485, 0.456, 0.406],
            std: [0.229, 0.224, 0.225],
        };
        let q = QuantInfo {
            zp: 128.0,
            scale: 0.02,
            limvals_min: -2.56,
            limvals_max: 2.54,
        };
        let t = tables(Some(norm), &Quantization::Uniform(q))
            .unwrap()
            .unwrap();
        // x = 124 (~mean red): real ~ 0 -> zp.
        let real = (124.0 / 255.0 - 0.485) / 0.229;
        assert_eq!(t[0][124], (real / 0.02 + 128.0f32).round() as u8);
        assert_eq!(t[0][0], 22); // (-0.485/0.229)/0.02 + 128 = 22.1
        assert_eq!(t[2][255], 255); // saturates
        assert!(tables(None, &Quantization::Uniform(q)).unwrap().is_none());
        let bad = Quantization::PerFeature(vec![q; 2]);
        assert!(tables(Some(norm), &bad)
            .unwrap_err()
            .to_string()
            .contains("expected 3"));
    }
}
