//! The hub thread: turns what the live tap passes into the dashboard's
//! messages and pushes them into the fan-out.
//!
//! The JPEG encoding and the JSON happen here, off the pipeline's threads. A
//! tapped frame waits here for the result of its own instant, so its
//! keypoints are drawn over the very frame they were found in (the views lag
//! by the pipeline's latency). Results come in capture order per camera, so
//! when a frame's result comes, the frames tapped before it that are still
//! waiting will get none (they were dropped later in the pipeline) and are
//! let go; a frame that waits longer than `MATCH_WAIT` (the run skips the
//! fit, or the host is far behind) is sent alone.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::Utf8Bytes;
use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::geom::Camera;
use crate::rig::stage::live::{LiveFrame, LiveItem, LiveResult, LiveTap};

use super::fanout::Fanout;
use super::messages::{self, Body, Figures, View, BODY_PER_S};

/// How long a tapped frame waits for its result: above the capture-to-body
/// latency of a host that keeps up, and of one several times too slow.
const MATCH_WAIT: Duration = Duration::from_secs(3);

/// Frames waiting per camera at most (the oldest goes alone beyond it).
const MAX_WAITING: usize = 16;

/// How often the hub looks at its stop flag and its waiting frames.
const POLL: Duration = Duration::from_millis(50);

/// The hub's state.
pub struct Hub {
    pub items: Receiver<LiveItem>,
    pub tap: LiveTap,
    pub fanout: Arc<Fanout<Utf8Bytes>>,
    pub stop: Arc<AtomicBool>,
    /// Per camera: the frames waiting for their results, oldest first.
    waiting: Vec<VecDeque<(LiveFrame, Instant)>>,
    calibrations: Vec<Option<Camera>>,
    last_body: Option<Instant>,
}

impl Hub {
    pub fn new(
        items: Receiver<LiveItem>,
        tap: LiveTap,
        fanout: Arc<Fanout<Utf8Bytes>>,
        stop: Arc<AtomicBool>,
    ) -> Self {
        Self {
            items,
            tap,
            fanout,
            stop,
            waiting: Vec::new(),
            calibrations: Vec::new(),
            last_body: None,
        }
    }

    /// Runs until the stop flag is set.
    pub fn run(mut self) {
        while !self.stop.load(Ordering::Relaxed) {
            match self.items.recv_timeout(POLL) {
                Ok(item) => self.take(item),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.send_stale(Instant::now());
        }
    }

    fn take(&mut self, item: LiveItem) {
        match item {
            LiveItem::Frame(frame) => self.frame(frame),
            LiveItem::Result(result) => self.result(&result),
            LiveItem::Status(status) => self.push(&Figures::new(&status)),
        }
    }

    fn push<T: serde::Serialize>(&self, message: &T) {
        if let Ok(text) = serde_json::to_string(message) {
            self.fanout.push(Utf8Bytes::from(text));
        }
    }

    fn frame(&mut self, frame: LiveFrame) {
        let c = frame.camera;
        if self.waiting.len() <= c {
            self.waiting.resize_with(c + 1, VecDeque::new);
        }
        self.waiting[c].push_back((frame, Instant::now()));
        if self.waiting[c].len() > MAX_WAITING {
            if let Some((old, _)) = self.waiting[c].pop_front() {
                self.send_view(&old, None, None);
            }
        }
    }

    fn result(&mut self, r: &LiveResult) {
        if self.calibrations.is_empty() {
            if let Some(rig) = self.tap.rig() {
                self.calibrations = rig.cameras.iter().map(|c| c.calibration).collect();
            }
        }
        for v in &r.views {
            let Some(waiting) = self.waiting.get_mut(v.camera) else {
                continue;
            };
            let Some(at) = waiting.iter().position(|(f, _)| f.sequence == v.sequence) else {
                continue;
            };
            // The frames before it will get no result.
            waiting.drain(..at);
            if let Some((frame, _)) = waiting.pop_front() {
                let fit_2d = r.keypoints_3d.as_deref().and_then(|k| {
                    let cam = self.calibrations.get(v.camera).copied().flatten()?;
                    Some(messages::project(&cam, k))
                });
                self.send_view(&frame, Some(v.keypoints.clone()), fit_2d);
            }
        }
        let Some(keypoints_3d) = &r.keypoints_3d else {
            return;
        };
        let now = Instant::now();
        let due = self
            .last_body
            .is_none_or(|t| now.duration_since(t).as_secs_f64() >= 1.0 / BODY_PER_S);
        if due {
            self.last_body = Some(now);
            self.push(&Body {
                kind: "body",
                capture_ns: r.capture_ns,
                keypoints_3d,
                residual_px: r.residual_px,
                mpjpe_mm: r.mpjpe_mm,
            });
        }
    }

    /// Sends the frames that waited longer than [`MATCH_WAIT`] alone.
    fn send_stale(&mut self, now: Instant) {
        for c in 0..self.waiting.len() {
            while self.waiting[c]
                .front()
                .is_some_and(|(_, at)| now.duration_since(*at) >= MATCH_WAIT)
            {
                if let Some((frame, _)) = self.waiting[c].pop_front() {
                    self.send_view(&frame, None, None);
                }
            }
        }
    }

    fn send_view(
        &self,
        frame: &LiveFrame,
        keypoints: Option<Vec<[f32; 4]>>,
        fit_2d: Option<Vec<Option<[f64; 2]>>>,
    ) {
        let Some(image) = messages::data_url(frame) else {
            log::warn!(
                "dashboard: camera {} frame {} could not be encoded; not sent",
                frame.camera,
                frame.sequence
            );
            return;
        };
        self.push(&View {
            kind: "view",
            camera: frame.camera,
            sequence: frame.sequence,
            capture_ns: frame.capture_ns,
            image,
            keypoints,
            fit_2d,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::PixelFormat;
    use crate::rig::stage::live::LiveView;
    use crate::serve::fanout::FanoutConfig;

    fn frame(camera: usize, sequence: u64) -> LiveItem {
        LiveItem::Frame(LiveFrame {
            camera,
            sequence,
            capture_ns: sequence,
            format: PixelFormat::Grey,
            width: 4,
            height: 4,
            data: vec![7; 16],
        })
    }

    fn result(camera: usize, sequence: u64) -> LiveItem {
        LiveItem::Result(LiveResult {
            capture_ns: sequence,
            views: vec![LiveView {
                camera,
                sequence,
                keypoints: vec![[1.0, 2.0, 0.9, 0.8]],
            }],
            keypoints_3d: Some(vec![[0.0, 0.0, 2.0]]),
            residual_px: Some(1.0),
            mpjpe_mm: None,
            fit_error: None,
        })
    }

    #[test]
    fn a_frame_is_sent_with_its_own_keypoints_and_frames_that_get_none_are_let_go() {
        let (tap, items) = LiveTap::new(2, 4.0);
        let fanout = Arc::new(Fanout::new(FanoutConfig::default(), tap.consumers()));
        let mut sub = fanout.subscribe();
        let mut hub = Hub::new(items, tap, Arc::clone(&fanout), Arc::default());
        for item in [frame(0, 1), frame(0, 2), frame(0, 3), frame(1, 2)] {
            hub.take(item);
        }
        hub.take(result(0, 2));
        let got: Vec<serde_json::Value> = std::iter::from_fn(|| sub.rx.try_recv().ok())
            .map(|m| serde_json::from_str(m.as_str()).unwrap())
            .collect();
        // Frame 2 of camera 0 with its keypoints, then the body; frame 1 got no result
        // and is not sent after a newer one.
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0]["type"], "view");
        assert_eq!(
            (got[0]["camera"].as_u64(), got[0]["sequence"].as_u64()),
            (Some(0), Some(2))
        );
        assert_eq!(got[0]["keypoints"][0][0], 1.0);
        assert_eq!(got[1]["type"], "body");
        // Frame 3 of camera 0 and frame 2 of camera 1 wait; past the wait they go alone.
        hub.send_stale(Instant::now() + MATCH_WAIT);
        let late: Vec<serde_json::Value> = std::iter::from_fn(|| sub.rx.try_recv().ok())
            .map(|m| serde_json::from_str(m.as_str()).unwrap())
            .collect();
        let seen: Vec<_> = late
            .iter()
            .map(|v| {
                (
                    v["camera"].as_u64(),
                    v["sequence"].as_u64(),
                    v["keypoints"].is_null(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![(Some(0), Some(3), true), (Some(1), Some(2), true)]
        );
    }
}
