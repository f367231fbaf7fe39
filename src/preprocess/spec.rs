//! The HEF input a preprocessor fills, read from the HEF's stream description.

use serde::{Deserialize, Serialize};

use super::PreprocessError;

/// Pixel layout of a HEF input as the host writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum InputLayout {
    /// height x width x 3, UINT8, R G B (HailoRT NHWC / RGB888).
    Rgb,
    /// NV12: luma plane then interleaved UV at half resolution.
    Nv12,
    /// YUY2 (= V4L2 YUYV): packed Y0 U Y1 V.
    Yuy2,
}

impl std::fmt::Display for InputLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Rgb => "RGB",
            Self::Nv12 => "NV12",
            Self::Yuy2 => "YUY2",
        })
    }
}

impl InputLayout {
    /// Bytes of one tensor.
    pub fn len(self, width: u32, height: u32) -> usize {
        let px = width as usize * height as usize;
        match self {
            Self::Rgb => px * 3,
            Self::Nv12 => px * 3 / 2,
            Self::Yuy2 => px * 2,
        }
    }
}

/// The HEF input a preprocessor fills.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSpec {
    pub name: String,
    pub width: u32,
    pub height: u32,
    pub layout: InputLayout,
    pub quant: hef::Quantization,
}

impl InputSpec {
    /// A plain RGB UINT8 input of this size (no quantisation).
    pub fn rgb(width: u32, height: u32) -> Self {
        Self {
            name: format!("rgb_{width}x{height}"),
            width,
            height,
            layout: InputLayout::Rgb,
            quant: hef::Quantization::Uniform(hef::QuantInfo {
                zp: 0.0,
                scale: 1.0,
                limvals_min: 0.0,
                limvals_max: 255.0,
            }),
        }
    }

    /// The input a HEF stream describes.
    ///
    /// # Errors
    /// [`PreprocessError::Spec`] when the stream is an output, is not UINT8,
    /// is transposed or has an order other than NHWC/RGB888 with 3 features,
    /// NV12 or YUY2.
    pub fn from_stream(stream: &hef::StreamInfo) -> Result<Self, PreprocessError> {
        let bad = |reason: String| PreprocessError::Spec {
            stream: stream.name.clone(),
            reason,
        };
        if stream.direction != hef::Direction::Input {
            return Err(bad("is an output stream".into()));
        }
        if stream.data_type != hef::DataType::Uint8 {
            return Err(bad(format!(
                "data type {}, expected UINT8",
                stream.data_type.name()
            )));
        }
        if stream.transposed {
            return Err(bad("transposed inputs are not supported".into()));
        }
        let hef::StreamShape::Image {
            height,
            width,
            features,
        } = stream.shape
        else {
            return Err(bad("is not an image stream".into()));
        };
        let layout = match (stream.host_order, features) {
            (hef::FormatOrder::Nhwc | hef::FormatOrder::Rgb888, 3) => InputLayout::Rgb,
            (hef::FormatOrder::Nv12, _) => InputLayout::Nv12,
            (hef::FormatOrder::Yuy2, _) => InputLayout::Yuy2,
            (order, f) => {
                return Err(bad(format!(
                    "host order {} with {f} features; expected NHWC/RGB888 x3, NV12 or YUY2",
                    order.name()
                )))
            }
        };
        if layout != InputLayout::Rgb && (width % 2 != 0 || height % 2 != 0) {
            return Err(bad(format!(
                "{width}x{height} is odd; {layout} needs even sizes"
            )));
        }
        Ok(Self {
            name: stream.name.clone(),
            width,
            height,
            layout,
            quant: stream.quant.clone(),
        })
    }
}
