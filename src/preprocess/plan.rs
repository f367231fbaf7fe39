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

    /// The transform taking rectangle `from` onto rectangle `to` (left, top, width, height).
    pub fn between(from: [f64; 4], to: [f64; 4]) -> Self {
        let scale = [to[2] / from[2], to[3] / from[3]];
        Self {
            scale,
            offset: [to[0] - from[0] * scale[0], to[1] - from[1] * scale[1]],
        }
    }

    /// `self` followed by `next`.
    pub fn then(&self, next: &Self) -> Self {
        Self {
            scale: [self.scale[0] * next.scale[0], self.scale[1] * next.scale[1]],
            offset: [
                self.offset[0] * next.scale[0] + next.offset[0],
                self.offset[1] * next.scale[1] + next.offset[1],
            ],
        }
    }
}

/// What to decode of a JPEG so a [`Layout`]'s source region can be
/// resampled from a reduced image: the decode scale and a window of it.
///
/// A 1/`denom` DCT-domain decode puts scaled pixel `u` over camera pixels
/// `[u * denom, (u + 1) * denom)` (the reduced IDCT samples each 8x8 block
/// at the centres of its `denom` x `denom` cells), so camera coordinates are
/// scaled coordinates times `denom`, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaledWindow {
    /// Decode at 1/`denom`: 1, 2, 4 or 8.
    pub denom: u32,
    /// Window of the scaled image to decode (scaled pixels): left, top, width, height.
    pub rect: [u32; 4],
}

impl ScaledWindow {
    /// Camera pixels to pixels of a decoded window whose top-left is scaled pixel `origin`.
    pub fn camera_to_window(&self, origin: [u32; 2]) -> Transform {
        let s = 1.0 / f64::from(self.denom);
        Transform {
            scale: [s, s],
            offset: [-f64::from(origin[0]), -f64::from(origin[1])],
        }
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

impl Layout {
    /// The coarsest DCT scale (1/1, 1/2, 1/4 or 1/8) at which the source
    /// region still has at least the tensor content's pixels on both axes,
    /// and the window of the `src_w` x `src_h` image scaled by it that holds
    /// the region plus `margin` scaled pixels on each side (clipped to the
    /// image) so resampling taps at its edges read real neighbours.
    pub fn scaled_window(&self, src_w: u32, src_h: u32, margin: u32) -> ScaledWindow {
        let [x0, y0, cw, ch] = self.src;
        let [_, _, dw, dh] = self.dst;
        let denom = [8u32, 4, 2]
            .into_iter()
            .find(|&d| {
                let d = f64::from(d);
                cw / d >= f64::from(dw) && ch / d >= f64::from(dh)
            })
            .unwrap_or(1);
        let d = f64::from(denom);
        let (sw, sh) = (src_w.div_ceil(denom), src_h.div_ceil(denom));
        let span = |start: f64, len: f64, max: u32| -> [u32; 2] {
            let lo = ((start / d).floor() as u32).saturating_sub(margin).min(max);
            let hi = (((start + len) / d).ceil() as u32 + margin).clamp(lo, max);
            [lo, hi - lo]
        };
        let [x, w] = span(x0, cw, sw);
        let [y, h] = span(y0, ch, sh);
        ScaledWindow {
            denom,
            rect: [x, y, w, h],
        }
    }

    /// The source region in pixels of a decoded window of `window.denom`
    /// scale whose top-left is scaled pixel `origin`.
    pub fn src_in_window(&self, window: &ScaledWindow, origin: [u32; 2]) -> [f64; 4] {
        let t = window.camera_to_window(origin);
        let [x0, y0, cw, ch] = self.src;
        let [l, r] = [t.to_tensor([x0, y0]), t.to_tensor([x0 + cw, y0 + ch])];
        [l[0], l[1], r[0] - l[0], r[1] - l[1]]
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
    fn scaled_windows_keep_enough_resolution() {
        // 720x720 centre crop into 288: 1/2 leaves 360 >= 288, 1/4 would leave 180.
        let crop = Layout::plan(1280, 720, 288, 288, Fit::Crop, 1);
        let w = crop.scaled_window(1280, 720, 2);
        assert_eq!(w.denom, 2);
        assert_eq!(w.rect, [138, 0, 364, 360]);
        // Letterbox content 288x162 from 1280x720: 1/4 gives 320x180.
        let lb = Layout::plan(1280, 720, 288, 288, Fit::default(), 1);
        assert_eq!(lb.scaled_window(1280, 720, 2).denom, 4);
        // 432 needs the full 720 rows.
        let big = Layout::plan(1280, 720, 432, 432, Fit::Crop, 1);
        assert_eq!(big.scaled_window(1280, 720, 2).denom, 1);
        // Tiny outputs go down to 1/8, and windows never leave the image.
        let tiny = Layout::plan(1280, 720, 64, 64, Fit::Crop, 1);
        let t = tiny.scaled_window(1280, 720, 100);
        assert_eq!((t.denom, t.rect), (8, [0, 0, 160, 90]));
    }

    #[test]
    fn window_and_scale_compose_to_the_plan_transform() {
        let l = Layout::plan(1280, 720, 288, 288, Fit::Crop, 1);
        let w = l.scaled_window(1280, 720, 2);
        let origin = [136, 0];
        let src = l.src_in_window(&w, origin);
        assert_eq!(src, [4.0, 0.0, 360.0, 360.0]);
        let dst = l.dst.map(f64::from);
        let t = w
            .camera_to_window(origin)
            .then(&Transform::between(src, dst));
        for p in [[280.0, 0.0], [640.25, 359.5], [1000.0, 720.0]] {
            let (a, b) = (t.to_tensor(p), l.transform.to_tensor(p));
            assert!((a[0] - b[0]).abs() < 1e-9 && (a[1] - b[1]).abs() < 1e-9);
        }
        // Negative control: forgetting the window origin moves every point.
        let wrong = w
            .camera_to_window([0, 0])
            .then(&Transform::between(src, dst));
        assert!((wrong.to_tensor([640.0, 360.0])[0] - 144.0).abs() > 50.0);
    }

    #[test]
    fn tall_frames_crop_vertically() {
        let l = Layout::plan(480, 640, 288, 288, Fit::Crop, 1);
        assert_eq!(l.src, [0.0, 80.0, 480.0, 480.0]);
    }
}
