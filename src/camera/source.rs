//! The one trait every camera source implements: V4L2, synthetic, replay.

use std::time::Duration;

use super::frame::{CameraId, Frame, FrameError, PixelFormat, TimestampSource};
use super::stop::Stop;

/// What a source delivers, fixed once it is open.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceInfo {
    pub camera: CameraId,
    /// Device path, recording name or scene name, for messages.
    pub name: String,
    pub format: PixelFormat,
    pub width: u32,
    pub height: u32,
    /// Nominal frame rate (frames per second).
    pub fps: f64,
    pub timestamp_source: TimestampSource,
}

impl SourceInfo {
    /// Nominal time between frames.
    pub fn frame_period(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.fps.max(1e-3))
    }
}

/// A camera, real or not: a blocking stream of frames.
///
/// A source runs on its own thread (one per camera, blocking on the driver).
/// Errors say whether the stream can go on: [`SourceError::is_recoverable`]
/// errors are counted and the next frame is read; a
/// [`SourceError::Disconnected`] source is retried with [`Source::reconnect`].
pub trait Source: Send {
    /// What this source delivers.
    fn info(&self) -> &SourceInfo;

    /// Blocks until the next frame.
    ///
    /// # Errors
    /// [`SourceError::BadFrame`] for one unusable frame (the stream goes on),
    /// [`SourceError::Disconnected`] when the device went away,
    /// [`SourceError::EndOfStream`] when a finite source is done.
    fn next_frame(&mut self) -> Result<Frame, SourceError>;

    /// Tries once to bring a disconnected source back.
    ///
    /// # Errors
    /// The reason it is still unavailable.
    fn reconnect(&mut self) -> Result<(), SourceError> {
        Err(SourceError::Disconnected {
            device: self.info().name.clone(),
            reason: "this source cannot reconnect".into(),
        })
    }

    /// Frames the driver dropped so far (gaps in its sequence numbers).
    fn driver_drops(&self) -> u64 {
        0
    }

    /// What became of the rig file's camera controls (V4L2 cameras; none
    /// elsewhere), as the device last read them back.
    fn controls(&self) -> &[crate::camera::controls::ControlOutcome] {
        &[]
    }

    /// The stop every wait of this source ends on: once it is requested,
    /// [`Source::next_frame`] returns [`SourceError::Stopped`] instead of
    /// waiting out a frame period. Sources whose waits are short already
    /// (a driver's poll) may ignore it.
    fn stop_on(&mut self, stop: Stop) {
        let _ = stop;
    }
}

/// A boxed source is a source, so that wrappers (`FaultySource`, the recorder's tap) take
/// the rig's boxed sources as they take concrete ones.
impl<S: Source + ?Sized> Source for Box<S> {
    fn info(&self) -> &SourceInfo {
        (**self).info()
    }

    fn next_frame(&mut self) -> Result<Frame, SourceError> {
        (**self).next_frame()
    }

    fn reconnect(&mut self) -> Result<(), SourceError> {
        (**self).reconnect()
    }

    fn driver_drops(&self) -> u64 {
        (**self).driver_drops()
    }

    fn controls(&self) -> &[crate::camera::controls::ControlOutcome] {
        (**self).controls()
    }

    fn stop_on(&mut self, stop: Stop) {
        (**self).stop_on(stop);
    }
}

/// Why a source produced no frame.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// One frame could not be used; the stream goes on.
    #[error(transparent)]
    BadFrame(#[from] FrameError),
    /// The device is gone (unplugged, closed); try [`Source::reconnect`].
    #[error("{device}: disconnected: {reason}")]
    Disconnected { device: String, reason: String },
    /// No frame within the timeout.
    #[error("{device}: no frame within {} ms", .timeout.as_millis())]
    Timeout { device: String, timeout: Duration },
    /// A finite source (a recording) has no more frames.
    #[error("end of stream")]
    EndOfStream,
    /// The run stopped while the source waited for its next frame.
    #[error("stopped")]
    Stopped,
    /// A recording cut short ended: the frames after its last whole message
    /// are lost. The stream ends after this.
    #[error("{device}: cut short: {bytes_discarded} bytes after the last whole message discarded")]
    Truncated {
        device: String,
        bytes_discarded: u64,
    },
    /// The device cannot deliver what the rig asks for.
    #[error("{device}: {what}")]
    Unsupported { device: String, what: String },
    /// An I/O error on a device or file.
    #[error("{device}: {context}: {source}")]
    Io {
        device: String,
        context: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl SourceError {
    /// Whether the next call to [`Source::next_frame`] may succeed without a reconnect.
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            Self::BadFrame(_) | Self::Timeout { .. } | Self::Truncated { .. }
        )
    }
}

/// A source whose frames pass through a hook: the hook reads the next frame from the
/// inner source (or declines to), and may look at it on the way. Everything else is the
/// inner source's.
pub struct Hooked<S, F> {
    inner: S,
    hook: F,
}

impl<S, F> Hooked<S, F>
where
    S: Source,
    F: FnMut(&mut S) -> Result<Frame, SourceError> + Send,
{
    /// `inner`, its frames read through `hook`.
    pub fn new(inner: S, hook: F) -> Self {
        Self { inner, hook }
    }
}

impl<S, F> Source for Hooked<S, F>
where
    S: Source,
    F: FnMut(&mut S) -> Result<Frame, SourceError> + Send,
{
    fn info(&self) -> &SourceInfo {
        self.inner.info()
    }

    fn next_frame(&mut self) -> Result<Frame, SourceError> {
        (self.hook)(&mut self.inner)
    }

    fn reconnect(&mut self) -> Result<(), SourceError> {
        self.inner.reconnect()
    }

    fn driver_drops(&self) -> u64 {
        self.inner.driver_drops()
    }

    fn controls(&self) -> &[crate::camera::controls::ControlOutcome] {
        self.inner.controls()
    }

    fn stop_on(&mut self, stop: Stop) {
        self.inner.stop_on(stop);
    }
}

/// `inner`, ending after `frames` frames.
///
/// A run on a virtual clock lasts a number of the cameras' frames, not of the host's
/// seconds, so that it is the same frames, groups and fit whatever the host's speed.
pub fn take<S: Source>(inner: S, frames: u64) -> impl Source {
    let mut left = frames;
    Hooked::new(inner, move |inner: &mut S| {
        if left == 0 {
            return Err(SourceError::EndOfStream);
        }
        let frame = inner.next_frame()?;
        left -= 1;
        Ok(frame)
    })
}
