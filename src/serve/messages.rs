//! The dashboard's WebSocket messages (JSON text, one object each, told apart
//! by `type`), the skeleton's bones by keypoint name, and frames as JPEG.
//!
//! | type | when | carries |
//! |---|---|---|
//! | `hello` | first, once per connection | cameras (size, rate, calibration), graphs, device, keypoint names and bones, which figures are measured |
//! | `view` | a few per second per camera | the frame as a JPEG data URL, the keypoints the fit used for that frame, the fitted body reprojected into it |
//! | `body` | up to [`BODY_PER_S`] per second | the fitted body's 3D keypoints, its residual and MPJPE |
//! | `figures` | about twice a second | the status line's figures, each with its provenance |

use base64::Engine;
use nalgebra::Point3;
use serde::Serialize;

use crate::camera::PixelFormat;
use crate::decode::keypoints::bones;
use crate::first_light::Label;
use crate::geom::Camera;
use crate::rig::stage::live::{LiveFrame, LiveRig, LiveStatus};
use crate::rig::status::FitFigure;

/// Bodies sent per second at most (results arrive at the camera rate).
pub const BODY_PER_S: f64 = 15.0;

/// JPEG quality of the views: small enough for a few views a second per
/// camera over Wi-Fi, sharp enough to judge a keypoint.
const JPEG_QUALITY: u8 = 75;

/// The first message.
#[derive(Debug, Serialize)]
pub struct Hello<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(flatten)]
    pub rig: &'a LiveRig,
    pub bones: Vec<[usize; 2]>,
    /// Device rates, switches and busy share: measured on a real device,
    /// modelled by the simulator.
    pub device_figures: Label,
}

impl<'a> Hello<'a> {
    pub fn new(rig: &'a LiveRig) -> Self {
        Self {
            kind: "hello",
            rig,
            bones: bones(&rig.keypoints),
            device_figures: device(rig.device_measured),
        }
    }
}

fn device(measured: bool) -> Label {
    if measured {
        Label::Measured
    } else {
        Label::Modelled
    }
}

/// One camera frame with what was found in it.
#[derive(Debug, Serialize)]
pub struct View {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub camera: usize,
    pub sequence: u64,
    pub capture_ns: u64,
    /// `data:image/jpeg;base64,...`
    pub image: String,
    /// The keypoints the fit used for this very frame, `[x, y, visibility, score]`
    /// (none when no result matched it).
    pub keypoints: Option<Vec<[f32; 4]>>,
    /// The fitted body of this frame's instant projected into this camera
    /// (none for a keypoint behind it).
    pub fit_2d: Option<Vec<Option<[f64; 2]>>>,
}

/// The fitted body.
#[derive(Debug, Serialize)]
pub struct Body<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub capture_ns: u64,
    pub keypoints_3d: &'a [[f64; 3]],
    pub residual_px: Option<f64>,
    pub mpjpe_mm: Option<f64>,
}

/// One labelled figure.
#[derive(Debug, Serialize)]
pub struct Labelled {
    pub value: f64,
    pub provenance: Label,
}

#[derive(Debug, Serialize)]
pub struct CameraFigure {
    pub name: String,
    pub fps: Labelled,
    /// Frames dropped anywhere since the start.
    pub dropped: Labelled,
}

#[derive(Debug, Serialize)]
pub struct GraphFigure {
    pub name: String,
    pub device_fps: Labelled,
}

#[derive(Debug, Serialize)]
pub struct StageLatency {
    pub stage: &'static str,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub provenance: Label,
}

/// The status line's figures, each labelled.
#[derive(Debug, Serialize)]
pub struct Figures {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub elapsed_s: f64,
    pub cameras: Vec<CameraFigure>,
    pub graphs: Vec<GraphFigure>,
    pub switches_per_s: Labelled,
    /// Only the simulator knows it, so it is modelled whenever present.
    pub npu_busy: Option<Labelled>,
    pub latency: Vec<StageLatency>,
    /// `mpjpe_mm` (against the synthetic ground truth) or `residual_px`.
    pub fit: Option<(&'static str, Labelled)>,
}

impl Figures {
    pub fn new(s: &LiveStatus) -> Self {
        let f = &s.figures;
        let measured = |value| Labelled {
            value,
            provenance: Label::Measured,
        };
        let dev = |value| Labelled {
            value,
            provenance: device(s.device_measured),
        };
        Self {
            kind: "figures",
            elapsed_s: f.elapsed.as_secs_f64(),
            cameras: f
                .cameras
                .iter()
                .map(|c| CameraFigure {
                    name: c.name.clone(),
                    fps: measured(c.fps),
                    dropped: measured(c.dropped as f64),
                })
                .collect(),
            graphs: f
                .graphs
                .iter()
                .map(|(name, fps)| GraphFigure {
                    name: name.clone(),
                    device_fps: dev(*fps),
                })
                .collect(),
            switches_per_s: dev(f.switches_per_s),
            npu_busy: f.modelled_busy.map(|value| Labelled {
                value,
                provenance: Label::Modelled,
            }),
            latency: f
                .latency
                .iter()
                .map(|&(stage, p50_ms, p99_ms)| StageLatency {
                    stage,
                    p50_ms,
                    p99_ms,
                    provenance: Label::Measured,
                })
                .collect(),
            fit: f.fit.map(|fit| match fit {
                FitFigure::MpjpeMm(v) => ("mpjpe_mm", measured(v)),
                FitFigure::ResidualPx(v) => ("residual_px", measured(v)),
            }),
        }
    }
}

/// `keypoints` (metres) projected through `camera`.
pub fn project(camera: &Camera, keypoints: &[[f64; 3]]) -> Vec<Option<[f64; 2]>> {
    keypoints
        .iter()
        .map(|&[x, y, z]| {
            camera
                .project(&Point3::new(x, y, z))
                .map(|p| [p.x, p.y])
                .filter(|p| p.iter().all(|v| v.is_finite()))
        })
        .collect()
}

/// The frame as a JPEG data URL; none for a frame whose bytes do not match
/// its format and size.
pub fn data_url(frame: &LiveFrame) -> Option<String> {
    let jpeg = jpeg(frame)?;
    let mut url = String::from("data:image/jpeg;base64,");
    base64::engine::general_purpose::STANDARD.encode_string(&jpeg, &mut url);
    Some(url)
}

/// The frame as JPEG: MJPEG passes as it came, other formats are converted
/// to RGB (or kept grey) and encoded.
fn jpeg(f: &LiveFrame) -> Option<Vec<u8>> {
    use jpeg_encoder::ColorType::{Luma as L8, Rgb as Rgb8};
    let (w, h) = (f.width as usize, f.height as usize);
    let expected = f.format.frame_len(f.width, f.height);
    if expected.is_some_and(|n| n != f.data.len()) || f.data.is_empty() || w == 0 || h == 0 {
        return None;
    }
    let (pixels, colour) = match f.format {
        PixelFormat::Mjpeg => return Some(f.data.clone()),
        PixelFormat::Grey => (f.data.clone(), L8),
        PixelFormat::Rgb24 => (f.data.clone(), Rgb8),
        PixelFormat::Yuyv if w % 2 == 0 => {
            let mut rgb = vec![0u8; 3 * w * h];
            for (src, dst) in f.data.chunks_exact(2 * w).zip(rgb.chunks_exact_mut(3 * w)) {
                crate::preprocess::yuv::yuyv_row_to_rgb(src, dst);
            }
            (rgb, Rgb8)
        }
        PixelFormat::Nv12 if w % 2 == 0 && h % 2 == 0 => {
            let (luma, uv) = f.data.split_at(w * h);
            let mut rgb = vec![0u8; 3 * w * h];
            for (row, dst) in rgb.chunks_exact_mut(3 * w).enumerate() {
                let y = &luma[row * w..(row + 1) * w];
                let c = &uv[(row / 2) * w..(row / 2 + 1) * w];
                crate::preprocess::yuv::nv12_row_to_rgb(y, c, dst);
            }
            (rgb, Rgb8)
        }
        PixelFormat::Yuyv | PixelFormat::Nv12 => return None,
    };
    let mut out = Vec::with_capacity(w * h / 4);
    let (width, height) = (u16::try_from(f.width).ok()?, u16::try_from(f.height).ok()?);
    jpeg_encoder::Encoder::new(&mut out, JPEG_QUALITY)
        .encode(&pixels, width, height, colour)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_keypoint_of_the_body_has_a_bone_and_unknown_names_are_left_out() {
        use crate::decode::keypoints::{bones, BONES};
        let names = crate::body::Model::embedded().unwrap().naming().keypoints;
        let b = bones(&names);
        assert_eq!(b.len(), BONES.len(), "{names:?}");
        for (i, name) in names.iter().enumerate() {
            assert!(b.iter().any(|e| e.contains(&i)), "{name} has no bone");
        }
        // Negative control: a body of COCO's 17 keeps only the bones among them.
        let coco: Vec<String> = crate::decode::keypoints::COCO17
            .iter()
            .map(|s| (*s).to_string())
            .collect();
        assert_eq!(bones(&coco).len(), 19);
    }

    fn frame(format: PixelFormat, w: u32, h: u32, data: Vec<u8>) -> LiveFrame {
        LiveFrame {
            camera: 0,
            sequence: 0,
            capture_ns: 0,
            format,
            width: w,
            height: h,
            data,
        }
    }

    #[test]
    fn frames_become_jpeg_of_their_size_and_bad_frames_none() {
        for (format, len) in [
            (PixelFormat::Rgb24, 3 * 16 * 8),
            (PixelFormat::Yuyv, 2 * 16 * 8),
            (PixelFormat::Nv12, 16 * 8 * 3 / 2),
            (PixelFormat::Grey, 16 * 8),
        ] {
            let jpeg = jpeg(&frame(format, 16, 8, vec![128; len])).unwrap();
            let mut decoder = zune_jpeg::JpegDecoder::new(&jpeg);
            decoder
                .decode_headers()
                .unwrap_or_else(|e| panic!("{format:?}: {e}"));
            let info = decoder.info().unwrap();
            assert_eq!((info.width, info.height), (16, 8));
            // One byte short is refused, not a panic.
            assert!(jpeg_of_len(format, len - 1).is_none());
        }
        let url = data_url(&frame(PixelFormat::Grey, 4, 4, vec![9; 16])).unwrap();
        assert!(url.starts_with("data:image/jpeg;base64,/9j/"), "{url}");
        // An odd YUYV width cannot be converted pairwise.
        assert!(jpeg(&frame(PixelFormat::Yuyv, 3, 2, vec![0; 12])).is_none());
    }

    fn jpeg_of_len(format: PixelFormat, len: usize) -> Option<Vec<u8>> {
        jpeg(&frame(format, 16, 8, vec![0; len]))
    }
}
