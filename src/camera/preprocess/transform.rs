//! The geometry between camera pixels and tensor pixels.
//!
//! Coordinates are continuous: the top-left pixel covers `[0, 1) x [0, 1)`,
//! so its centre is `(0.5, 0.5)`. The resizer uses the same convention, which
//! is what lets a keypoint found in the tensor map back to the exact camera
//! pixel.

use serde::{Deserialize, Serialize};

/// How the camera image is fitted into the tensor's aspect ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Fit {
    /// Cut the centre region of the tensor's aspect ratio; nothing is padded.
    Crop,
    /// Scale the whole image to fit and pad the rest with `pad` (R, G, B).
    Letterbox { pad: [u8; 3] },
}

impl Default for Fit {
    fn default() -> Self {
        Self::Letterbox {
            pad: [114, 114, 114],
        }
    }
}

/// An axis-aligned scale and offset: `tensor = camera * scale + offset`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Transform {
    pub scale: [f64; 2],
    pub offset: [f64; 2],
}

impl Transform {
    /// Camera pixel to tensor pixel.
    pub fn to_tensor(&self, p: [f64; 2]) -> [f64; 2] {
        [
            p[0] * self.scale[0] + self.offset[0],
            p[1] * self.scale[1] + self.offset[1],
        ]
    }

    /// Tensor pixel back to camera pixel.
    pub fn to_camera(&self, p: [f64; 2]) -> [f64; 2] {
        [
            (p[0] - self.offset[0]) / self.scale[0],
            (p[1] - self.offset[1]) / self.scale[1],
        ]
    }
}

/// Where the source is read from and where it lands in the tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    /// Source region read (continuous camera pixels): left, top, width, height.
    pub src: [f64; 4],
    /// Tensor region written with image content: left, top, width, height.
    pub dst: [u32; 4],
    pub transform: Transform,
}

impl Layout {
    /// Plans fitting a `src_w` x `src_h` image into `dst_w` x `dst_h`.
    ///
    /// `align` (1 or 2) keeps the content offset and size multiples of it, as
    /// chroma-subsampled outputs need.
    pub fn plan(src_w: u32, src_h: u32, dst_w: u32, dst_h: u32, fit: Fit, align: u32) -> Self {
        let (sw, sh, dw, dh) = (
            f64::from(src_w),
            f64::from(src_h),
            f64::from(dst_w),
            f64::from(dst_h),
        );
        match fit {
            Fit::Crop => {
                let (cw, ch) = if sw * dh > sh * dw {
                    (sh * dw / dh, sh)
                } else {
                    (sw, sw * dh / dw)
                };
                let (x0, y0) = ((sw - cw) / 2.0, (sh - ch) / 2.0);
                let scale = [dw / cw, dh / ch];
                Self {
                    src: [x0, y0, cw, ch],
                    dst: [0, 0, dst_w, dst_h],
                    transform: Transform {
                        scale,
                        offset: [-x0 * scale[0], -y0 * scale[1]],
                    },
                }
            }
            Fit::Letterbox { .. } => {
                let s = (dw / sw).min(dh / sh);
                let a = align.max(1);
                let round = |v: f64, max: u32| -> u32 {
                    let n = ((v / f64::from(a)).round() as u32).max(1) * a;
                    n.min(max)
                };
                let (cw, ch) = (round(sw * s, dst_w), round(sh * s, dst_h));
                let (px, py) = ((dst_w - cw) / 2 / a * a, (dst_h - ch) / 2 / a * a);
                let scale = [f64::from(cw) / sw, f64::from(ch) / sh];
                Self {
                    src: [0.0, 0.0, sw, sh],
                    dst: [px, py, cw, ch],
                    transform: Transform {
                        scale,
                        offset: [f64::from(px), f64::from(py)],
                    },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crop_takes_the_centre_square_of_a_wide_frame() {
        let l = Layout::plan(1280, 720, 288, 288, Fit::Crop, 1);
        assert_eq!(l.src, [280.0, 0.0, 720.0, 720.0]);
        assert_eq!(l.dst, [0, 0, 288, 288]);
        // The crop corners land on the tensor corners.
        assert_eq!(l.transform.to_tensor([280.0, 0.0]), [0.0, 0.0]);
        let br = l.transform.to_tensor([1000.0, 720.0]);
        assert!((br[0] - 288.0).abs() < 1e-9 && (br[1] - 288.0).abs() < 1e-9);
    }

    #[test]
    fn letterbox_pads_top_and_bottom_evenly() {
        let l = Layout::plan(1280, 720, 288, 288, Fit::default(), 2);
        assert_eq!(l.dst, [0, 62, 288, 162]);
        assert_eq!(l.transform.to_tensor([0.0, 0.0]), [0.0, 62.0]);
        let p = [611.25, 99.5];
        let back = l.transform.to_camera(l.transform.to_tensor(p));
        assert!((back[0] - p[0]).abs() < 1e-9 && (back[1] - p[1]).abs() < 1e-9);
    }

    #[test]
    fn tall_frames_crop_vertically() {
        let l = Layout::plan(480, 640, 288, 288, Fit::Crop, 1);
        assert_eq!(l.src, [0.0, 80.0, 480.0, 480.0]);
    }
}
