//! The board's corners found in a camera frame: AprilTag detection (tag36h11, by
//! `kornia-apriltag`) on the frame's luma, each tag of the board giving its four corners
//! under the board's corner ids.
//!
//! `kornia-apriltag` is pure Rust, with NEON and AVX2 kernels of its own: nothing to build or
//! link for an aarch64 box, where the `apriltag` crate would build the C library (or pick up
//! whichever one pkg-config finds) and put an FFI boundary in the calibration's path.

use std::collections::HashMap;

use kornia_apriltag::errors::AprilTagError;
use kornia_apriltag::family::TagFamilyKind;
use kornia_apriltag::{AprilTagDecoder, DecodeTagsConfig};
use kornia_image::{Image, ImageSize};
use nalgebra::Point2;

use super::board::AprilGrid;
use super::Corner;
use crate::camera::frame::{Frame, PixelFormat};

/// Why a frame gave no corners.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DetectError {
    /// The frame's bytes do not hold its format at its size.
    #[error("{camera}: a {format} frame of {width}x{height} needs {expected} bytes, got {got}")]
    WrongSize {
        /// The camera.
        camera: String,
        /// The frame's format.
        format: PixelFormat,
        /// Its width.
        width: u32,
        /// Its height.
        height: u32,
        /// Bytes its format and size need.
        expected: usize,
        /// Bytes it has.
        got: usize,
    },
    /// An MJPEG frame that does not decode.
    #[error("{camera}: the JPEG frame does not decode: {why}")]
    Jpeg {
        /// The camera.
        camera: String,
        /// The decoder's reason.
        why: String,
    },
    /// The tag detector refused the image.
    #[error("{camera}: the tag detector refused a {width}x{height} image: {why}")]
    Detector {
        /// The camera.
        camera: String,
        /// The image's width.
        width: u32,
        /// Its height.
        height: u32,
        /// The detector's reason.
        why: String,
    },
}

/// Most bit errors a tag's code may have and still count: tag36h11's codes are 11 bits
/// apart, so two errors leave a margin of seven before one tag reads as another.
const MAX_HAMMING: u8 = 2;

/// A grey image: one byte a pixel, row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct Luma {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The pixels.
    pub pixels: Vec<u8>,
}

impl Luma {
    /// The luma of a camera frame of any format the cameras deliver.
    ///
    /// # Errors
    /// [`DetectError::WrongSize`] for bytes that do not match the format and size,
    /// [`DetectError::Jpeg`] for an MJPEG frame that does not decode.
    pub fn of_frame(camera: &str, frame: &Frame) -> Result<Self, DetectError> {
        let (w, h) = (frame.width, frame.height);
        let px = w as usize * h as usize;
        let data: &[u8] = &frame.data;
        let wrong = |expected: usize| DetectError::WrongSize {
            camera: camera.to_string(),
            format: frame.format,
            width: w,
            height: h,
            expected,
            got: data.len(),
        };
        let pixels = match frame.format {
            PixelFormat::Mjpeg => return jpeg_luma(camera, data),
            format => {
                let expected = format.frame_len(w, h).unwrap_or(usize::MAX);
                if data.len() != expected {
                    return Err(wrong(expected));
                }
                match format {
                    PixelFormat::Yuyv => data.iter().step_by(2).copied().collect(),
                    PixelFormat::Nv12 | PixelFormat::Grey => data[..px].to_vec(),
                    // BT.601 luma, as the cameras' own YUV formats carry it.
                    PixelFormat::Rgb24 => data
                        .chunks_exact(3)
                        .map(|p| {
                            let y = 0.299 * f32::from(p[0])
                                + 0.587 * f32::from(p[1])
                                + 0.114 * f32::from(p[2]);
                            y.round().clamp(0.0, 255.0) as u8
                        })
                        .collect(),
                    _ => unreachable!("MJPEG is matched above"),
                }
            }
        };
        Ok(Self {
            width: w,
            height: h,
            pixels,
        })
    }
}

/// The luma plane of a JPEG (a UVC camera's frame without Huffman tables included).
fn jpeg_luma(camera: &str, data: &[u8]) -> Result<Luma, DetectError> {
    use zune_jpeg::zune_core::colorspace::ColorSpace;
    use zune_jpeg::zune_core::options::DecoderOptions;
    let fail = |why: String| DetectError::Jpeg {
        camera: camera.to_string(),
        why,
    };
    let options = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::Luma);
    let mut scratch = Vec::new();
    let data = crate::preprocess::jpeg::tagged_mjpeg(data, &mut scratch);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(data, options);
    let pixels = decoder.decode().map_err(|e| fail(e.to_string()))?;
    let (w, h) = decoder
        .dimensions()
        .ok_or_else(|| fail("no image size".into()))?;
    if pixels.len() != w * h {
        return Err(fail(format!("{} bytes for {w}x{h}", pixels.len())));
    }
    Ok(Luma {
        width: w as u32,
        height: h as u32,
        pixels,
    })
}

/// Finds the board's corners in grey images: one tag decoder per image size, kept between
/// frames (it holds the size's working buffers).
pub struct BoardDetector {
    board: AprilGrid,
    decoders: HashMap<(u32, u32), AprilTagDecoder>,
}

impl std::fmt::Debug for BoardDetector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoardDetector")
            .field("board", &self.board)
            .field("sizes", &self.decoders.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl BoardDetector {
    /// A detector of `board`'s tags.
    pub fn new(board: &AprilGrid) -> Self {
        Self {
            board: *board,
            decoders: HashMap::new(),
        }
    }

    /// The board's corners in `image`: for each of its tags found (ids past the board's are
    /// another board's, and left out), the four corners under ids `4 * tag + k`, `k`
    /// counter-clockwise from the tag's bottom left as printed. A tag found twice is left
    /// out: one of the two is not this board's.
    ///
    /// # Errors
    /// [`DetectError::Detector`] for an image the tag detector cannot take (a side of zero
    /// or over 65535 pixels).
    pub fn detect(&mut self, camera: &str, image: Luma) -> Result<Vec<Corner>, DetectError> {
        let Luma {
            width,
            height,
            pixels,
        } = image;
        let refuse = |why: String| DetectError::Detector {
            camera: camera.to_string(),
            width,
            height,
            why,
        };
        let size = ImageSize {
            width: width as usize,
            height: height as usize,
        };
        let decoder = match self.decoders.entry((width, height)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(
                AprilTagDecoder::new(config().map_err(|e| refuse(e.to_string()))?, size)
                    .map_err(|e| refuse(e.to_string()))?,
            ),
        };
        // The frame's pixels move into the detector's image: no copy per frame.
        let gray = Image::<u8, 1>::new(size, pixels).map_err(|e| refuse(e.to_string()))?;
        let found = decoder.decode(&gray).map_err(|e| refuse(e.to_string()))?;
        let mut count: HashMap<u16, usize> = HashMap::new();
        for d in &found {
            *count.entry(d.id).or_default() += 1;
        }
        let mut corners = Vec::new();
        for d in found.iter().filter(|d| {
            d.hamming <= MAX_HAMMING
                && self.board.tags() > u32::from(d.id)
                && count.get(&d.id) == Some(&1)
        }) {
            // The decoded tag's frame: x right, y down its printed image, corners at ±1; ours
            // run counter-clockwise from the bottom left as the board lies (y up). The
            // detector's pixel centres are at half-integers, ours at integers.
            let quad: Vec<Point2<f64>> = [(-1.0, 1.0), (1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)]
                .into_iter()
                .map(|(x, y)| {
                    let p = d.quad.homography_project(x, y);
                    Point2::new(f64::from(p.x) - 0.5, f64::from(p.y) - 0.5)
                })
                .collect();
            // A cell of the tag (an eighth of its side) in pixels: the clean neighbourhood of
            // each corner, where the tag's border meets the square at the gaps' crossing.
            let side = (0..4)
                .map(|k| (quad[(k + 1) % 4] - quad[k]).norm())
                .fold(f64::INFINITY, f64::min);
            let radius = (side / 8.0).clamp(1.5, 6.0);
            for (k, p) in quad.into_iter().enumerate() {
                if let Some(pixel) = saddle(&gray, p, radius) {
                    corners.push(Corner {
                        id: 4 * u32::from(d.id) + k as u32,
                        pixel,
                    });
                }
            }
        }
        corners.sort_by_key(|c| c.id);
        Ok(corners)
    }
}

/// Pixels kept clear of the frame's edge by a corner's refinement window.
const EDGE_MARGIN: f64 = 1.0;

/// The corner's saddle point to a fraction of a pixel: the point where the image's gradients
/// around it are all perpendicular to their offsets from it (OpenCV's `cornerSubPix`, what
/// Kalibr refines its AprilGrid corners with), over a Gaussian-weighted window of
/// `radius` pixels. A tag's quad is fitted to straight edges, which the lens bends; the
/// saddle where a tag's corner meets the square at the gaps' crossing is not. `None` for a
/// corner whose window leaves the frame, or that moves further than its window (not a
/// saddle: a corner square missing, or a tag that is not flat on the board).
fn saddle(image: &Image<u8, 1>, start: Point2<f64>, radius: f64) -> Option<Point2<f64>> {
    let (w, h) = (image.width() as f64, image.height() as f64);
    let inside = |p: &Point2<f64>| {
        p.x - radius - EDGE_MARGIN >= 0.0
            && p.y - radius - EDGE_MARGIN >= 0.0
            && p.x + radius + EDGE_MARGIN <= w - 1.0
            && p.y + radius + EDGE_MARGIN <= h - 1.0
    };
    if !start.x.is_finite() || !start.y.is_finite() || !inside(&start) {
        return None;
    }
    let at = |x: f64, y: f64| bilinear(image, x, y);
    let reach = radius.ceil() as i32;
    let sigma2 = 2.0 * (radius / 2.0).powi(2);
    let mut q = start;
    for _ in 0..20 {
        let (mut a, mut b) = (
            nalgebra::Matrix2::<f64>::zeros(),
            nalgebra::Vector2::<f64>::zeros(),
        );
        for j in -reach..=reach {
            for i in -reach..=reach {
                let (dx, dy) = (f64::from(i), f64::from(j));
                let r2 = dx * dx + dy * dy;
                if r2 > radius * radius {
                    continue;
                }
                let (x, y) = (q.x + dx, q.y + dy);
                let gx = (at(x + 1.0, y) - at(x - 1.0, y)) / 2.0;
                let gy = (at(x, y + 1.0) - at(x, y - 1.0)) / 2.0;
                let weight = (-r2 / sigma2).exp();
                let g = nalgebra::Matrix2::new(gx * gx, gx * gy, gx * gy, gy * gy) * weight;
                a += g;
                b += g * nalgebra::Vector2::new(x, y);
            }
        }
        let next = Point2::from(a.try_inverse()? * b);
        let step = (next - q).norm();
        q = next;
        if !inside(&q) || (q - start).norm() > radius {
            return None;
        }
        if step < 1e-3 {
            break;
        }
    }
    Some(q)
}

/// The image at a fractional pixel (pixel centres at integers), edges clamped.
fn bilinear(image: &Image<u8, 1>, x: f64, y: f64) -> f64 {
    let (w, h) = (image.width(), image.height());
    let pixels = image.as_slice();
    let x = x.clamp(0.0, (w - 1) as f64);
    let y = y.clamp(0.0, (h - 1) as f64);
    let (x0, y0) = (x.floor() as usize, y.floor() as usize);
    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
    let (fx, fy) = (x - x0 as f64, y - y0 as f64);
    let p = |x: usize, y: usize| f64::from(pixels[y * w + x]);
    let top = p(x0, y0) * (1.0 - fx) + p(x1, y0) * fx;
    let bottom = p(x0, y1) * (1.0 - fx) + p(x1, y1) * fx;
    top * (1.0 - fy) + bottom * fy
}

/// The detector's settings: tag36h11 at full resolution (the rig's frames are small, and a
/// tag a few dozen pixels wide does not survive decimation).
fn config() -> Result<DecodeTagsConfig, AprilTagError> {
    let mut config = DecodeTagsConfig::new(vec![TagFamilyKind::Tag36H11])?;
    config.downscale_factor = 1;
    Ok(config)
}
