//! Synthetic cameras: a [`Scene`] rendered into calibrated virtual cameras, with
//! ground truth attached to every frame.
//!
//! Time is a pure function of the frame index (`t = sequence / fps`), so a
//! synthetic run is repeatable frame for frame. Cameras of one rig share a
//! start stamp, so their capture times are on one clock and sync can be
//! tested against the truth. Pacing is real time or as fast as possible.
//!
//! On the wall clock ([`SceneClock::Wall`]) frames are instead due at the wall-clock
//! instants that are whole multiples of the frame period, and the scene is rendered at the
//! wall-clock time. Rigs in several processes or boxes (clocks synchronised) then capture the
//! same instants of one scene, as hardware-triggered cameras would: what `hailo-edge fuse`
//! is tested on.

use std::sync::Arc;
use std::time::Duration;

use nalgebra::{Point3, Vector3};

use super::frame::{CameraId, Frame, PixelFormat, TimestampSource};
use super::pool::BufferPool;
use super::source::{Source, SourceError, SourceInfo};
use super::stop::Stop;
use crate::geom::time::{monotonic_ns, WallClock};
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

/// Which clock a synthetic rig's frames and scene run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SceneClock {
    /// Time starts at zero with the rig: `t = sequence / fps` (repeatable runs).
    #[default]
    Start,
    /// Real time on the wall-clock grid: frame times are whole multiples of the frame period
    /// on CLOCK_REALTIME, and the scene's time is the wall-clock time in seconds.
    Wall,
}

/// Renders a [`Scene`] into one camera.
pub struct SyntheticSource {
    cam: SyntheticCamera,
    info: SourceInfo,
    scene: Arc<dyn Scene>,
    /// CLOCK_MONOTONIC of frame 0.
    start_ns: u64,
    /// Wall-clock ns of frame 0, on [`SceneClock::Wall`].
    wall_start_ns: Option<u64>,
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
        Self::rig_on(scene, cameras, real_time, SceneClock::Start)
    }

    /// Sources for every camera of a rig on `clock` ([`SceneClock::Wall`] paces in real
    /// time whatever `real_time` says).
    ///
    /// # Errors
    /// As [`SyntheticSource::rig`].
    pub fn rig_on(
        scene: Arc<dyn Scene>,
        cameras: &[SyntheticCamera],
        real_time: bool,
        clock: SceneClock,
    ) -> Result<Vec<Self>, SourceError> {
        let now_ns = monotonic_ns();
        let wall = WallClock::now();
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
                // On the wall clock, frame 0 is the next whole multiple of the period.
                let (start_ns, wall_start_ns) = match clock {
                    SceneClock::Start => (now_ns, None),
                    SceneClock::Wall => {
                        let wall_now = wall.wall_ns(now_ns);
                        let first = grid_ns(c.fps, grid_index(c.fps, wall_now) + 1);
                        let mono = i128::from(first) - wall.offset_ns();
                        (mono.clamp(0, i128::from(u64::MAX)) as u64, Some(first))
                    }
                };
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
                    wall_start_ns,
                    real_time: real_time || clock == SceneClock::Wall,
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
            let elapsed =
                monotonic_ns().saturating_sub(self.start_ns) as f64 - self.cam.offset_ns as f64;
            let due = (elapsed * self.cam.fps / 1e9).floor();
            if due > self.next as f64 {
                self.dropped += due as u64 - self.next;
                self.next = due as u64;
            }
        }
        let seq = self.next;
        self.next += 1;
        let (rel_ns, t) = match self.wall_start_ns {
            None => {
                let rel = self.cam.offset_ns + (seq as f64 * 1e9 / self.cam.fps).round() as u64;
                (rel, rel as f64 * 1e-9)
            }
            Some(first) => {
                let at = grid_ns(self.cam.fps, grid_index(self.cam.fps, first) + seq);
                (at - first, at as f64 * 1e-9)
            }
        };
        if self.real_time {
            let due = self.start_ns.saturating_add(rel_ns);
            let wait = Duration::from_nanos(due.saturating_sub(monotonic_ns()));
            if self.stop.wait_for(wait) {
                return Err(SourceError::Stopped);
            }
        }
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

/// Frame rates are taken to the millihertz, so the wall-clock grid is integer arithmetic
/// and every rig computes the same instants.
fn millihertz(fps: f64) -> u128 {
    ((fps * 1e3).round() as u128).max(1)
}

/// The index of the last grid instant at or before `wall_ns`.
fn grid_index(fps: f64, wall_ns: u64) -> u64 {
    (u128::from(wall_ns) * millihertz(fps) / 1_000_000_000_000) as u64
}

/// The wall-clock ns of grid instant `index`: `index / fps` seconds, rounded up.
fn grid_ns(fps: f64, index: u64) -> u64 {
    let mhz = millihertz(fps);
    (u128::from(index) * 1_000_000_000_000).div_ceil(mhz) as u64
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
    fn on_the_wall_clock_two_rigs_capture_the_same_instants_of_one_scene() {
        let scene: Arc<dyn Scene> = Arc::new(MarkerScene::default());
        let mut cam = mixed_rig().unwrap()[0].clone();
        cam.fps = 40.0;
        let period = 25_000_000;
        let open = || {
            SyntheticSource::rig_on(Arc::clone(&scene), &[cam.clone()], false, SceneClock::Wall)
                .unwrap()
                .remove(0)
        };
        let (mut a, mut b) = (open(), open());
        let wall = WallClock::now();
        let walls = |s: &mut SyntheticSource| {
            (0..3)
                .map(|_| {
                    let f = s.next_frame().unwrap();
                    (wall.wall_ns(f.capture_ns), f.truth.unwrap())
                })
                .collect::<Vec<_>>()
        };
        let (fa, fb) = (walls(&mut a), walls(&mut b));
        for (w, truth) in fa.iter().chain(&fb) {
            // On the grid, to the precision of two reads of the clock offset.
            let off = w % period;
            assert!(
                off.min(period - off) < 2_000_000,
                "{w} is {off} ns off the grid"
            );
            // Rendered at the wall-clock time.
            let mut rgb = vec![0; 640 * 480 * 3];
            let at = (w + period / 2) / period * period;
            let want = scene
                .render(at as f64 * 1e-9, &cam.calibration, &mut rgb)
                .unwrap();
            assert_eq!(**truth, want);
        }
        // Whole periods apart (more than one when the host fell behind).
        let gap = fa[1].0.abs_diff(fa[0].0);
        let off = gap % period;
        assert!(
            gap >= period / 2 && off.min(period - off) < 2_000_000,
            "{gap}"
        );
        // Two rigs opened apart see one instant the same way.
        for (w, truth) in &fb {
            if let Some((_, other)) = fa.iter().find(|(v, _)| v.abs_diff(*w) < 2_000_000) {
                assert_eq!(truth, other);
            }
        }
        // Negative control: counted from the rig's start, the scene is at another time.
        let mut c = SyntheticSource::rig(Arc::clone(&scene), &[cam.clone()], true)
            .unwrap()
            .remove(0);
        let f = c.next_frame().unwrap();
        assert_ne!(**f.truth.as_ref().unwrap(), *fa[0].1);
    }

    #[test]
    fn the_wall_clock_grid_is_integer_and_round_trips() {
        for fps in [120.0, 30.0, 29.97, 7.5] {
            let now = grid_index(fps, 1_800_000_000_000_000_000);
            for i in [0u64, 1, now, now + 1] {
                assert_eq!(grid_index(fps, grid_ns(fps, i)), i, "{fps} {i}");
            }
        }
        assert_eq!(grid_ns(120.0, 120), 1_000_000_000);
        assert_eq!(grid_ns(120.0, 1), 8_333_334);
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
