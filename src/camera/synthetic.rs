//! Synthetic cameras: a [`Scene`] rendered into calibrated virtual cameras, with
//! ground truth attached to every frame.
//!
//! Time is a pure function of the frame index (`t = sequence / fps`), so a
//! synthetic run is repeatable frame for frame. Cameras of one rig share a
//! start stamp, so their capture times are on one clock and sync can be
//! tested against the truth. Pacing is real time or as fast as possible.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nalgebra::{Point3, Vector3};

use super::frame::{CameraId, Frame, PixelFormat, TimestampSource};
use super::pool::BufferPool;
use super::source::{Source, SourceError, SourceInfo};
use super::stop::Stop;
use crate::geom::time::monotonic_ns;
use crate::geom::{Camera, Distortion};
use crate::preprocess::rgb_to_yuv;
use crate::scene::Scene;

/// One virtual camera of a synthetic rig.
#[derive(Debug, Clone)]
pub struct SyntheticCamera {
    pub camera: CameraId,
    pub calibration: Camera,
    pub format: PixelFormat,
    pub fps: f64,
    /// Capture-time offset from the rig's start (unsynchronised cameras).
    pub offset_ns: u64,
}

/// Renders a [`Scene`] into one camera.
pub struct SyntheticSource {
    cam: SyntheticCamera,
    info: SourceInfo,
    scene: Arc<dyn Scene>,
    start_ns: u64,
    start: Instant,
    real_time: bool,
    /// What a real-time wait for the next frame ends on.
    stop: Stop,
    next: u64,
    /// Frames skipped because rendering fell behind real time.
    dropped: u64,
    rgb: Vec<u8>,
    pool: BufferPool,
}

impl SyntheticSource {
    /// Sources for every camera of a rig, sharing one start stamp.
    ///
    /// # Errors
    /// [`SourceError::Unsupported`] for MJPEG (no encoder in the runtime) or
    /// an odd size in a 4:2:2 / 4:2:0 format.
    pub fn rig(
        scene: Arc<dyn Scene>,
        cameras: &[SyntheticCamera],
        real_time: bool,
    ) -> Result<Vec<Self>, SourceError> {
        let start_ns = monotonic_ns();
        let start = Instant::now();
        cameras
            .iter()
            .map(|c| {
                let (w, h) = (c.calibration.width, c.calibration.height);
                let unsupported = |what: String| SourceError::Unsupported {
                    device: format!("synthetic {}", c.camera),
                    what,
                };
                if c.format.frame_len(w, h).is_none() {
                    return Err(unsupported(format!(
                        "cannot synthesise {} frames",
                        c.format
                    )));
                }
                if c.format.needs_even_size() && (w % 2 != 0 || h % 2 != 0) {
                    return Err(unsupported(format!(
                        "{w}x{h} is odd; {} needs even sizes",
                        c.format
                    )));
                }
                Ok(Self {
                    info: SourceInfo {
                        camera: c.camera,
                        name: format!("synthetic {} ({})", c.camera, scene.name()),
                        format: c.format,
                        width: w,
                        height: h,
                        fps: c.fps,
                        timestamp_source: TimestampSource::Synthetic,
                    },
                    cam: c.clone(),
                    scene: Arc::clone(&scene),
                    start_ns,
                    start,
                    real_time,
                    stop: Stop::new(),
                    next: 0,
                    dropped: 0,
                    rgb: vec![0; w as usize * h as usize * 3],
                    pool: BufferPool::new(8),
                })
            })
            .collect()
    }

    /// The buffer pool (its counters show steady-state allocation).
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }
}

impl Source for SyntheticSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn next_frame(&mut self) -> Result<Frame, SourceError> {
        if self.real_time {
            // A camera whose host falls behind loses frames: skip to the one
            // due now and count the gap, as a driver's sequence would show.
            let elapsed = self.start.elapsed().as_nanos() as f64 - self.cam.offset_ns as f64;
            let due = (elapsed * self.cam.fps / 1e9).floor();
            if due > self.next as f64 {
                self.dropped += due as u64 - self.next;
                self.next = due as u64;
            }
        }
        let seq = self.next;
        self.next += 1;
        let rel_ns = self.cam.offset_ns + (seq as f64 * 1e9 / self.cam.fps).round() as u64;
        if self.real_time {
            let wait = Duration::from_nanos(rel_ns).saturating_sub(self.start.elapsed());
            if self.stop.wait_for(wait) {
                return Err(SourceError::Stopped);
            }
        }
        let t = rel_ns as f64 * 1e-9;
        let truth = self
            .scene
            .render(t, &self.cam.calibration, &mut self.rgb)
            .map_err(|e| SourceError::Unsupported {
                device: self.info.name.clone(),
                what: e.to_string(),
            })?;
        let (w, h) = (self.info.width as usize, self.info.height as usize);
        let len = self
            .info
            .format
            .frame_len(self.info.width, self.info.height)
            .unwrap_or(0);
        let mut data = self.pool.zeroed(len);
        encode(&self.rgb, w, h, self.info.format, &mut data);
        Ok(Frame {
            camera: self.info.camera,
            format: self.info.format,
            width: self.info.width,
            height: self.info.height,
            capture_ns: self.start_ns + rel_ns,
            sequence: seq,
            timestamp_source: TimestampSource::Synthetic,
            data,
            truth: Some(Arc::new(truth)),
        })
    }

    fn driver_drops(&self) -> u64 {
        self.dropped
    }

    fn stop_on(&mut self, stop: Stop) {
        self.stop = stop;
    }
}

/// Packs an RGB image into a camera format (BT.601 limited range for YUV).
fn encode(rgb: &[u8], w: usize, h: usize, format: PixelFormat, out: &mut [u8]) {
    let px = |i: usize| [rgb[i * 3], rgb[i * 3 + 1], rgb[i * 3 + 2]];
    match format {
        PixelFormat::Rgb24 => out.copy_from_slice(rgb),
        PixelFormat::Grey => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = rgb_to_yuv(px(i))[0];
            }
        }
        PixelFormat::Yuyv => {
            for (j, o) in out.chunks_exact_mut(4).enumerate() {
                let (a, b) = (rgb_to_yuv(px(2 * j)), rgb_to_yuv(px(2 * j + 1)));
                let u = (u16::from(a[1]) + u16::from(b[1])).div_ceil(2) as u8;
                let v = (u16::from(a[2]) + u16::from(b[2])).div_ceil(2) as u8;
                o.copy_from_slice(&[a[0], u, b[0], v]);
            }
        }
        PixelFormat::Nv12 => {
            let (y_plane, uv) = out.split_at_mut(w * h);
            for (i, o) in y_plane.iter_mut().enumerate() {
                *o = rgb_to_yuv(px(i))[0];
            }
            for cy in 0..h / 2 {
                for cx in 0..w / 2 {
                    let (mut su, mut sv) = (0u16, 0u16);
                    for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                        let [_, u, v] = rgb_to_yuv(px((2 * cy + dy) * w + 2 * cx + dx));
                        su += u16::from(u);
                        sv += u16::from(v);
                    }
                    uv[(cy * w / 2 + cx) * 2] = ((su + 2) / 4) as u8;
                    uv[(cy * w / 2 + cx) * 2 + 1] = ((sv + 2) / 4) as u8;
                }
            }
        }
        PixelFormat::Mjpeg => {}
    }
}

/// A capture rig of four cameras at mixed resolutions, rates and pixel
/// formats around a subject whose root (pelvis) is at the origin, facing -y:
/// three body cameras 3 m away (in front and 70 degrees to each side) and a
/// face camera 0.9 m in front of the head. Unlike the demo's
/// [`crate::scene::demo_rig`] (one tensor size per camera, 120 fps) it
/// exercises format conversion and resizing, and keeps every marker of
/// [`crate::scene::MarkerScene`] in every view.
///
/// # Errors
/// [`SourceError::Unsupported`] if a camera cannot be placed (never for these constants).
pub fn mixed_rig() -> Result<Vec<SyntheticCamera>, SourceError> {
    let target = Point3::new(0.0, 0.0, 0.05);
    let head = Point3::new(0.0, 0.0, 0.62);
    let body_eye = |deg: f64| {
        let a = deg.to_radians();
        target + Vector3::new(3.0 * a.cos(), 3.0 * a.sin(), 0.35)
    };
    let cams = [
        (
            640,
            480,
            60.0,
            PixelFormat::Yuyv,
            body_eye(-90.0),
            target,
            50.0,
        ),
        (
            800,
            600,
            30.0,
            PixelFormat::Nv12,
            body_eye(-20.0),
            target,
            50.0,
        ),
        (
            640,
            480,
            30.0,
            PixelFormat::Yuyv,
            body_eye(-160.0),
            target,
            50.0,
        ),
        (
            1280,
            720,
            30.0,
            PixelFormat::Yuyv,
            head + Vector3::new(0.0, -0.9, 0.05),
            head,
            40.0,
        ),
    ];
    cams.iter()
        .enumerate()
        .map(|(i, &(w, h, fps, format, eye, at, fov))| {
            let calibration =
                Camera::look_at(eye, at, Vector3::z(), fov, (w, h), Distortion::default())
                    .map_err(|e| SourceError::Unsupported {
                        device: format!("synthetic cam{i}"),
                        what: e.to_string(),
                    })?;
            Ok(SyntheticCamera {
                camera: CameraId(i as u32),
                calibration,
                format,
                fps,
                offset_ns: 0,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preprocess::{Fit, InputSpec, PreprocessConfig, Preprocessor};
    use crate::scene::MarkerScene;

    #[test]
    fn frames_carry_truth_and_repeat_exactly() {
        let scene: Arc<dyn Scene> = Arc::new(MarkerScene::default());
        let rig = mixed_rig().unwrap();
        let mut a = SyntheticSource::rig(Arc::clone(&scene), &rig, false).unwrap();
        let mut b = SyntheticSource::rig(scene, &rig, false).unwrap();
        for _ in 0..3 {
            for (sa, sb) in a.iter_mut().zip(b.iter_mut()) {
                let (fa, fb) = (sa.next_frame().unwrap(), sb.next_frame().unwrap());
                fa.check_size().unwrap();
                assert_eq!(&fa.data[..], &fb.data[..]);
                assert_eq!(fa.capture_ns - sa.start_ns, fb.capture_ns - sb.start_ns);
                let truth = fa.truth.as_ref().unwrap();
                assert_eq!(truth.keypoints_2d.len(), 17);
                assert!(
                    truth.keypoints_2d.iter().all(Option::is_some),
                    "all markers in view"
                );
            }
        }
        // 60 fps camera: the third frame is 2/60 s after the first.
        let s = &mut a[0];
        let f = s.next_frame().unwrap();
        assert_eq!(f.sequence, 3);
        assert_eq!(f.capture_ns - s.start_ns, 50_000_000);
    }

    #[test]
    fn ground_truth_lands_on_the_rendered_marker() {
        // Through the preprocessing transform: the tensor pixel at a truth
        // keypoint has the marker's colour.
        let scene = MarkerScene::default();
        let cam = mixed_rig().unwrap()[0].clone();
        let mut src = SyntheticSource::rig(Arc::new(scene), &[cam], false)
            .unwrap()
            .remove(0);
        let frame = src.next_frame().unwrap();
        let mut pre = Preprocessor::new(
            InputSpec::rgb(288, 288),
            PreprocessConfig {
                fit: Fit::Crop,
                ..Default::default()
            },
        )
        .unwrap();
        let t = pre.run(&frame).unwrap();
        let truth = frame.truth.as_ref().unwrap();
        // Marker 0 (bottom of the chain) is red and not hidden behind others.
        let [x, y] = truth.keypoints_2d[0].unwrap();
        let [tx, ty] = t.transform.to_tensor([f64::from(x), f64::from(y)]);
        let i = (ty as usize * 288 + tx as usize) * 3;
        let px = &t.data[i..i + 3];
        assert!(
            px[0] > 180 && px[1] < 110 && px[2] < 110,
            "{px:?} at {tx},{ty}"
        );
    }

    #[test]
    fn steady_state_synthesis_does_not_allocate_frame_buffers() {
        let mut src = SyntheticSource::rig(
            Arc::new(MarkerScene::default()),
            &mixed_rig().unwrap()[..1],
            false,
        )
        .unwrap()
        .remove(0);
        for _ in 0..3 {
            drop(src.next_frame().unwrap());
        }
        let warm = src.pool().stats().allocations;
        for _ in 0..20 {
            drop(src.next_frame().unwrap());
        }
        assert_eq!(src.pool().stats().allocations, warm);
    }
}
