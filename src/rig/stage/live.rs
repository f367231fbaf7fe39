//! The live tap: what a running rig offers to a viewer (the dashboard of
//! `run --serve`, or any later live output) without ever waiting for it.
//!
//! Three kinds of item leave the pipeline through it: camera frames, at most
//! a few per second per camera (copied as the NPU stage takes them); every
//! fitted instant with its per-view keypoints and 3D keypoints; and the status
//! figures the terminal status line shows. The pipeline's threads offer items
//! with `try_send` into one bounded queue; when it is full the item is dropped
//! and counted, so a consumer that falls behind costs the pipeline nothing.
//!
//! Nothing is copied, converted or even looked at while nobody watches: the
//! consumer calls [`LiveTap::watch`] for each viewer, and every offer starts
//! with one relaxed atomic load of the watcher count.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use serde::Serialize;

use crate::body::SkeletonNaming;
use crate::camera::{Frame, PixelFormat, SourceInfo};
use crate::geom::Camera;
use crate::npu::{BackendKind, Device};
use crate::rig::stage::capture::CaptureThread;
use crate::rig::stats::LiveStats;
use crate::rig::status::{StatusFigures, StatusRates};
use crate::rig::RigConfig;

use super::sinks::FrameResult;

/// Items the tap's queue holds before it drops what is offered.
const TAP_DEPTH: usize = 256;

/// One camera frame, copied out of the pipeline.
#[derive(Debug, Clone)]
pub struct LiveFrame {
    pub camera: usize,
    pub sequence: u64,
    pub capture_ns: u64,
    pub format: PixelFormat,
    pub width: u32,
    pub height: u32,
    pub data: Vec<u8>,
}

/// One view of a fitted instant.
#[derive(Debug, Clone, Serialize)]
pub struct LiveView {
    pub camera: usize,
    pub sequence: u64,
    /// The decoder's keypoints, camera pixels: `[x, y, visibility, score]`.
    pub keypoints: Vec<[f32; 4]>,
}

/// One fitted instant.
#[derive(Debug, Clone)]
pub struct LiveResult {
    pub capture_ns: u64,
    pub views: Vec<LiveView>,
    /// The fitted body's 3D keypoints, metres (none when the fit failed).
    pub keypoints_3d: Option<Vec<[f64; 3]>>,
    pub residual_px: Option<f64>,
    pub mpjpe_mm: Option<f64>,
    pub fit_error: Option<String>,
}

/// The status figures, and where the device's come from.
#[derive(Debug, Clone)]
pub struct LiveStatus {
    pub figures: StatusFigures,
    /// Device figures (rates, switches, busy share) were measured on a real
    /// device; otherwise the simulator modelled them.
    pub device_measured: bool,
}

/// One camera of the rig, as a viewer draws it.
#[derive(Debug, Clone, Serialize)]
pub struct LiveCamera {
    pub name: String,
    pub width: u32,
    pub height: u32,
    pub fps: f64,
    pub calibration: Option<Camera>,
}

/// What a viewer needs before the first item: the cameras with their
/// calibrations, the graphs, the device and the skeleton.
#[derive(Debug, Clone, Serialize)]
pub struct LiveRig {
    pub cameras: Vec<LiveCamera>,
    pub graphs: Vec<String>,
    pub device: String,
    pub device_measured: bool,
    pub keypoints: Vec<String>,
}

impl LiveRig {
    /// The rig as `run` opened it.
    pub fn describe(
        rig: &RigConfig,
        device: &Device,
        naming: &SkeletonNaming,
        infos: &[SourceInfo],
    ) -> Self {
        // The same calibrations the fit uses; a rig without them still streams its views.
        let calibrations = crate::rig::build::calibrations(rig).ok();
        Self {
            cameras: rig
                .cameras
                .iter()
                .enumerate()
                .map(|(i, c)| LiveCamera {
                    name: c.name.clone(),
                    width: infos.get(i).map_or(0, |s| s.width),
                    height: infos.get(i).map_or(0, |s| s.height),
                    fps: c.fps,
                    calibration: calibrations.as_ref().and_then(|k| k.get(i).copied()),
                })
                .collect(),
            graphs: rig.graphs.iter().map(|g| g.name.clone()).collect(),
            device: device.describe(),
            device_measured: device.backend() == BackendKind::HailoRt,
            keypoints: naming.keypoints.clone(),
        }
    }
}

/// What leaves the pipeline through the tap.
#[derive(Debug, Clone)]
pub enum LiveItem {
    Frame(LiveFrame),
    Result(LiveResult),
    Status(LiveStatus),
}

/// What the consumer counts of its viewers (the report's `serve` section).
#[derive(Debug, Default)]
pub struct ConsumerCounts {
    /// Viewers that connected.
    pub clients_served: AtomicU64,
    /// Viewers dropped because they stayed behind.
    pub clients_dropped: AtomicU64,
    /// Messages not sent to a viewer because its queue was full.
    pub messages_dropped: AtomicU64,
}

/// The tap's figures for the report: what the pipeline offered and what the
/// consumer did with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LiveReport {
    /// Where the consumer is (e.g. the dashboard's URL).
    pub address: String,
    pub clients_served: u64,
    /// Clients dropped from the fan-out for not keeping up.
    pub clients_dropped_slow: u64,
    /// Messages a slow client did not get (its queue was full).
    pub messages_dropped_slow: u64,
    pub frames_tapped: u64,
    pub results_tapped: u64,
    /// Items the consumer was too slow to take from the tap.
    pub items_dropped_at_tap: u64,
}

struct Shared {
    watchers: AtomicUsize,
    /// Per camera: the capture time of the last frame tapped, ns.
    last_frame_ns: Vec<AtomicU64>,
    frame_period_ns: u64,
    tx: Sender<LiveItem>,
    frames: AtomicU64,
    results: AtomicU64,
    dropped: AtomicU64,
    consumers: Arc<ConsumerCounts>,
    address: Mutex<String>,
    rig: Mutex<Option<LiveRig>>,
    rates: Mutex<Option<StatusRates>>,
}

/// The pipeline's side of the tap (cheap to clone; every clone offers into
/// the same queue).
#[derive(Clone)]
pub struct LiveTap(Arc<Shared>);

impl std::fmt::Debug for LiveTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveTap")
            .field("watchers", &self.0.watchers.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A viewer is watching while this lives.
#[derive(Debug)]
pub struct Watching(LiveTap);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0 .0.watchers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl LiveTap {
    /// A tap for `cameras` cameras passing at most `frames_per_s` frames per
    /// camera per second, and the queue its consumer reads.
    pub fn new(cameras: usize, frames_per_s: f64) -> (Self, Receiver<LiveItem>) {
        let (tx, rx) = bounded(TAP_DEPTH);
        let period = if frames_per_s > 0.0 && frames_per_s.is_finite() {
            Duration::from_secs_f64(1.0 / frames_per_s).as_nanos() as u64
        } else {
            u64::MAX
        };
        let shared = Shared {
            watchers: AtomicUsize::new(0),
            last_frame_ns: (0..cameras).map(|_| AtomicU64::new(0)).collect(),
            frame_period_ns: period,
            tx,
            frames: AtomicU64::new(0),
            results: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            consumers: Arc::default(),
            address: Mutex::default(),
            rig: Mutex::default(),
            rates: Mutex::default(),
        };
        (Self(Arc::new(shared)), rx)
    }

    /// Counts one viewer until the returned guard drops.
    pub fn watch(&self) -> Watching {
        self.0.watchers.fetch_add(1, Ordering::Relaxed);
        Watching(self.clone())
    }

    /// Whether anyone watches: the one check every offer makes first.
    pub fn watched(&self) -> bool {
        self.0.watchers.load(Ordering::Relaxed) > 0
    }

    fn offer(&self, item: LiveItem) -> bool {
        match self.0.tx.try_send(item) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.0.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Offers a frame the NPU stage took: copied when someone watches and the
    /// camera's last tapped frame is a frame period of the tap old.
    pub fn offer_frame(&self, camera: usize, frame: &Frame) {
        if !self.watched() {
            return;
        }
        let Some(last) = self.0.last_frame_ns.get(camera) else {
            return;
        };
        let prev = last.load(Ordering::Relaxed);
        if prev != 0 && frame.capture_ns.saturating_sub(prev) < self.0.frame_period_ns {
            return;
        }
        last.store(frame.capture_ns.max(1), Ordering::Relaxed);
        let item = LiveItem::Frame(LiveFrame {
            camera,
            sequence: frame.sequence,
            capture_ns: frame.capture_ns,
            format: frame.format,
            width: frame.width,
            height: frame.height,
            data: frame.data.to_vec(),
        });
        if self.offer(item) {
            self.0.frames.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Offers a fitted instant (callers check [`LiveTap::watched`] before
    /// building it).
    pub fn offer_result(&self, result: &FrameResult<'_>) {
        if !self.watched() {
            return;
        }
        let item = LiveItem::Result(LiveResult {
            capture_ns: result.capture_ns,
            views: result
                .views
                .iter()
                .map(|v| LiveView {
                    camera: v.camera,
                    sequence: v.sequence,
                    keypoints: v.keypoints.clone(),
                })
                .collect(),
            keypoints_3d: result.fit.as_ref().map(|f| f.keypoints_3d.clone()),
            residual_px: result.fit.as_ref().and_then(|f| f.residual_px),
            mpjpe_mm: result.fit.as_ref().and_then(|f| f.mpjpe_mm),
            fit_error: result.fit_error.clone(),
        });
        if self.offer(item) {
            self.0.results.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Offers the status figures when someone watches (the run's wait loop
    /// calls this at its status period; rates are over the time since the
    /// last figures, as the status line's are).
    pub fn tick(
        &self,
        stats: &LiveStats,
        captures: &[CaptureThread],
        device: &Device,
        elapsed: Duration,
    ) {
        if !self.watched() {
            // Rates start afresh with the next viewer, not over the time nobody watched.
            if let Ok(mut rates) = self.0.rates.try_lock() {
                if let Some(r) = rates.as_mut() {
                    r.restart();
                }
            }
            return;
        }
        let figures = {
            let mut rates = self.0.rates.lock().unwrap_or_else(|e| e.into_inner());
            let Some(rates) = rates.as_mut() else {
                return;
            };
            rates.figures(stats, captures, device, elapsed)
        };
        if let Some(figures) = figures {
            self.offer(LiveItem::Status(LiveStatus {
                figures,
                device_measured: device.backend() == BackendKind::HailoRt,
            }));
        }
    }

    /// Tells the tap the rig it serves (`run` calls this once the device and
    /// the cameras are open).
    pub fn set_rig(&self, rig: LiveRig) {
        let names = rig.cameras.iter().map(|c| c.name.clone()).collect();
        let graphs = rig.graphs.clone();
        *self.0.rates.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(StatusRates::new(names, graphs));
        *self.0.rig.lock().unwrap_or_else(|e| e.into_inner()) = Some(rig);
    }

    /// The rig, once `run` has set it.
    pub fn rig(&self) -> Option<LiveRig> {
        self.0.rig.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Where the consumer counts its viewers.
    pub fn consumers(&self) -> Arc<ConsumerCounts> {
        Arc::clone(&self.0.consumers)
    }

    /// Names where the consumer is, for the report.
    pub fn set_address(&self, address: impl Into<String>) {
        *self.0.address.lock().unwrap_or_else(|e| e.into_inner()) = address.into();
    }

    /// The figures so far.
    pub fn report(&self) -> LiveReport {
        let c = &self.0.consumers;
        LiveReport {
            address: self
                .0
                .address
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            clients_served: c.clients_served.load(Ordering::Relaxed),
            clients_dropped_slow: c.clients_dropped.load(Ordering::Relaxed),
            messages_dropped_slow: c.messages_dropped.load(Ordering::Relaxed),
            frames_tapped: self.0.frames.load(Ordering::Relaxed),
            results_tapped: self.0.results.load(Ordering::Relaxed),
            items_dropped_at_tap: self.0.dropped.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::camera::CameraId;

    fn frame(capture_ns: u64) -> Frame {
        Frame {
            capture_ns,
            sequence: capture_ns,
            ..Frame::still(CameraId(0), PixelFormat::Grey, 2, 2, vec![1, 2, 3, 4])
        }
    }

    #[test]
    fn nothing_is_copied_while_nobody_watches_and_frames_are_throttled_per_camera() {
        let (tap, rx) = LiveTap::new(1, 4.0);
        for i in 1..=100 {
            tap.offer_frame(0, &frame(i * 10_000_000));
        }
        assert_eq!(rx.try_iter().count(), 0);
        assert_eq!(tap.report().frames_tapped, 0);
        let guard = tap.watch();
        // One second of 100 fps at 4 fps: the first frame and one every 250 ms.
        for i in 1..=100 {
            tap.offer_frame(0, &frame(i * 10_000_000));
        }
        assert_eq!(rx.try_iter().count(), 4);
        drop(guard);
        assert!(!tap.watched());
        // A camera the tap does not know is ignored, never a panic.
        let _again = tap.watch();
        tap.offer_frame(7, &frame(1));
        assert_eq!(rx.try_iter().count(), 0);
    }

    #[test]
    fn a_full_tap_drops_and_counts_without_waiting() {
        let (tap, _rx) = LiveTap::new(1, 1e9);
        let _w = tap.watch();
        let t = std::time::Instant::now();
        for i in 1..=(TAP_DEPTH as u64 + 100) {
            tap.offer_frame(0, &frame(i));
        }
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        let r = tap.report();
        assert_eq!(r.frames_tapped, TAP_DEPTH as u64);
        assert_eq!(r.items_dropped_at_tap, 100);
    }
}
