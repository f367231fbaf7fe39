//! One capture thread per camera: blocks on its source, forwards frames into
//! a bounded channel (drop-oldest, counted), counts bad frames, and on a
//! disconnect retries with exponential backoff while the other cameras go on.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError};

use crate::camera::controls::ControlOutcome;
use crate::camera::frame::{CameraId, Frame};
use crate::camera::source::{Source, SourceError};
use crate::camera::Stop;

use super::{start, Running, Stage};

/// Retry schedule after a disconnect.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
    pub factor: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
            factor: 2.0,
        }
    }
}

impl Backoff {
    /// The delay before attempt `n` (0-based).
    pub fn delay(&self, n: u32) -> Duration {
        let d = self.initial.as_secs_f64() * self.factor.powi(n.min(64) as i32);
        Duration::from_secs_f64(d.min(self.max.as_secs_f64()))
    }
}

/// Where a camera is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CameraState {
    Streaming,
    Reconnecting,
    /// A finite source finished.
    Ended,
    /// Stopped on request or after an unrecoverable error.
    Stopped,
}

impl std::fmt::Display for CameraState {
    /// The state as the status line and reports spell it: `streaming`, `reconnecting`,
    /// `ended` or `stopped`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CameraState::Streaming => "streaming",
            CameraState::Reconnecting => "reconnecting",
            CameraState::Ended => "ended",
            CameraState::Stopped => "stopped",
        })
    }
}

impl CameraState {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Streaming,
            1 => Self::Reconnecting,
            2 => Self::Ended,
            _ => Self::Stopped,
        }
    }
}

/// Live counters of one camera, shared between its thread and the status display.
#[derive(Debug, Default)]
pub struct CameraStatus {
    state: AtomicU8,
    frames: AtomicU64,
    bad_frames: AtomicU64,
    timeouts: AtomicU64,
    driver_drops: AtomicU64,
    queue_drops: AtomicU64,
    disconnects: AtomicU64,
    reconnects: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// The source's camera controls as last (re)applied.
    controls: Mutex<Vec<ControlOutcome>>,
}

/// A copy of a camera's counters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StatusSnapshot {
    pub state: CameraState,
    pub frames: u64,
    /// Wrong-size, corrupt or flagged frames (source or preprocessing).
    pub bad_frames: u64,
    pub timeouts: u64,
    /// Gaps in the driver's sequence numbers.
    pub driver_drops: u64,
    /// Frames dropped because the consumer was behind (drop-oldest).
    pub queue_drops: u64,
    pub disconnects: u64,
    pub reconnects: u64,
    pub last_error: Option<String>,
}

impl CameraStatus {
    /// Counts a frame found bad downstream (e.g. a corrupt MJPEG at decode).
    pub fn record_bad_frame(&self, error: &dyn std::fmt::Display) {
        self.bad_frames.fetch_add(1, Ordering::Relaxed);
        self.set_error(error);
    }

    fn set_error(&self, error: &dyn std::fmt::Display) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error.to_string());
    }

    /// The camera controls as the device last read them back.
    pub fn controls(&self) -> Vec<ControlOutcome> {
        self.controls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_controls(&self, source: &dyn Source) {
        *self.controls.lock().unwrap_or_else(|e| e.into_inner()) = source.controls().to_vec();
    }

    fn set_state(&self, s: CameraState) {
        self.state.store(s as u8, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> StatusSnapshot {
        StatusSnapshot {
            state: CameraState::from_u8(self.state.load(Ordering::Relaxed)),
            frames: self.frames.load(Ordering::Relaxed),
            bad_frames: self.bad_frames.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            driver_drops: self.driver_drops.load(Ordering::Relaxed),
            queue_drops: self.queue_drops.load(Ordering::Relaxed),
            disconnects: self.disconnects.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
            last_error: self
                .last_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }
}

/// A running capture thread.
pub struct CaptureThread {
    pub camera: CameraId,
    pub status: Arc<CameraStatus>,
    stop: Stop,
    running: Option<Running<()>>,
}

/// The capture stage of one camera: its source, its queue's two ends and
/// the flags it shares with its [`CaptureThread`].
struct Capture {
    source: Box<dyn Source>,
    tx: Sender<Frame>,
    rx: Receiver<Frame>,
    backoff: Backoff,
    policy: QueuePolicy,
    status: Arc<CameraStatus>,
    stop: Stop,
}

impl Stage for Capture {
    type Output = ();

    fn name(&self) -> String {
        format!("capture-{}", self.source.info().camera)
    }

    fn run(mut self) {
        run(
            self.source.as_mut(),
            &self.tx,
            &self.rx,
            self.backoff,
            self.policy,
            &self.status,
            &self.stop,
        );
    }
}

impl CaptureThread {
    /// Starts capturing from `source` into `tx`; when `tx` is full the oldest
    /// queued frame (taken through `rx`) is dropped and counted.
    pub fn spawn(
        source: Box<dyn Source>,
        tx: Sender<Frame>,
        rx: Receiver<Frame>,
        backoff: Backoff,
    ) -> std::io::Result<Self> {
        Self::spawn_with(source, tx, rx, backoff, QueuePolicy::DropOldest)
    }

    /// As [`CaptureThread::spawn`], doing `policy` when `tx` is full.
    pub fn spawn_with(
        mut source: Box<dyn Source>,
        tx: Sender<Frame>,
        rx: Receiver<Frame>,
        backoff: Backoff,
        policy: QueuePolicy,
    ) -> std::io::Result<Self> {
        let camera = source.info().camera;
        let status = Arc::new(CameraStatus::default());
        let stop = Stop::new();
        source.stop_on(stop.clone());
        let running = start(Capture {
            source,
            tx,
            rx,
            backoff,
            policy,
            status: Arc::clone(&status),
            stop: stop.clone(),
        })?;
        Ok(Self {
            camera,
            status,
            stop,
            running: Some(running),
        })
    }

    /// Asks the thread to stop (a wait for the next frame ends at once) and
    /// waits for it.
    pub fn stop(mut self) {
        self.stop.request();
        if let Some(r) = self.running.take() {
            if r.drain().is_err() {
                log::error!("{}: capture thread panicked", self.camera);
            }
        }
    }

    /// Whether the thread has finished.
    pub fn is_finished(&self) -> bool {
        self.running.as_ref().is_none_or(Running::is_finished)
    }
}

impl Drop for CaptureThread {
    fn drop(&mut self) {
        self.stop.request();
    }
}

fn run(
    source: &mut dyn Source,
    tx: &Sender<Frame>,
    rx: &Receiver<Frame>,
    backoff: Backoff,
    policy: QueuePolicy,
    status: &CameraStatus,
    stop: &Stop,
) {
    let name = source.info().name.clone();
    status.set_controls(source);
    status.set_state(CameraState::Streaming);
    while !stop.is_requested() {
        match source.next_frame() {
            Ok(frame) => {
                status.frames.fetch_add(1, Ordering::Relaxed);
                status
                    .driver_drops
                    .store(source.driver_drops(), Ordering::Relaxed);
                let mut frame = frame;
                loop {
                    match tx.try_send(frame) {
                        Ok(()) => break,
                        Err(TrySendError::Full(f)) if policy == QueuePolicy::Wait => {
                            // Woken by room in the queue, or after a slice to
                            // look at the stop.
                            match tx.send_timeout(f, WAIT_SLICE) {
                                Ok(()) => break,
                                Err(SendTimeoutError::Timeout(f)) if !stop.is_requested() => {
                                    frame = f;
                                }
                                Err(SendTimeoutError::Timeout(_)) => {
                                    // The stop came first: the frame it held
                                    // is dropped at the queue, and counted there.
                                    status.queue_drops.fetch_add(1, Ordering::Relaxed);
                                    return;
                                }
                                Err(SendTimeoutError::Disconnected(_)) => {
                                    status.set_state(CameraState::Stopped);
                                    return;
                                }
                            }
                        }
                        Err(TrySendError::Full(f)) => {
                            if rx.try_recv().is_ok() {
                                status.queue_drops.fetch_add(1, Ordering::Relaxed);
                            }
                            frame = f;
                        }
                        Err(TrySendError::Disconnected(_)) => {
                            status.set_state(CameraState::Stopped);
                            return;
                        }
                    }
                }
            }
            Err(SourceError::EndOfStream) => {
                status.set_state(CameraState::Ended);
                return;
            }
            Err(SourceError::Stopped) => break,
            Err(e @ SourceError::Truncated { .. }) => {
                log::warn!("{e}");
                status.set_error(&e);
            }
            Err(e @ SourceError::BadFrame(_)) => {
                log::warn!("{e}");
                status.record_bad_frame(&e);
            }
            Err(e @ SourceError::Timeout { .. }) => {
                log::warn!("{e}");
                status.timeouts.fetch_add(1, Ordering::Relaxed);
                status.set_error(&e);
            }
            Err(e @ (SourceError::Disconnected { .. } | SourceError::Io { .. })) => {
                log::warn!("{e}; reconnecting");
                status.disconnects.fetch_add(1, Ordering::Relaxed);
                status.set_error(&e);
                status.set_state(CameraState::Reconnecting);
                if !reconnect(source, backoff, status, stop) {
                    break;
                }
                log::info!("{name}: reconnected");
                status.reconnects.fetch_add(1, Ordering::Relaxed);
                status.set_state(CameraState::Streaming);
            }
            Err(e) => {
                log::error!("{e}; camera stopped");
                status.set_error(&e);
                break;
            }
        }
    }
    status.set_state(CameraState::Stopped);
}

/// Retries until the source is back (true) or a stop is requested (false).
fn reconnect(
    source: &mut dyn Source,
    backoff: Backoff,
    status: &CameraStatus,
    stop: &Stop,
) -> bool {
    for attempt in 0.. {
        if stop.wait_for(backoff.delay(attempt)) {
            return false;
        }
        match source.reconnect() {
            Ok(()) => {
                status.set_controls(source);
                return true;
            }
            Err(e) => {
                log::debug!("reconnect attempt {}: {e}", attempt + 1);
                status.set_error(&e);
            }
        }
    }
    false
}

#[cfg(test)]
mod tests;

/// What a capture thread does when its camera's queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueuePolicy {
    /// Drop the oldest queued frame and count it: a real camera does not wait.
    #[default]
    DropOldest,
    /// Wait for room (ending on the stop): sources paced by a virtual clock
    /// lose no frame to the host's speed, so every camera advances in step.
    Wait,
}

/// How often a capture thread waiting for room looks at the stop.
const WAIT_SLICE: Duration = Duration::from_millis(20);
