//! A source wrapper that injects faults on a script, for reliability tests
//! and the capture example's `--faults` mode.

use super::frame::{Frame, PixelFormat};
use super::pool::PooledBuffer;
use super::source::{Source, SourceError, SourceInfo};

/// One injected fault, triggered at a frame index of the wrapped source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CameraFault {
    /// Deliver the frame with its last bytes cut off.
    WrongSize { at: u64 },
    /// Replace the frame's bytes with a broken JPEG (the frame claims MJPEG).
    CorruptJpeg { at: u64 },
    /// Unplug: `next_frame` reports a disconnect and `reconnect` fails
    /// `failed_reconnects` times before the device comes back.
    Unplug { at: u64, failed_reconnects: u32 },
}

/// Wraps a source and injects [`CameraFault`]s.
pub struct FaultySource<S> {
    inner: S,
    faults: Vec<CameraFault>,
    frames: u64,
    unplugged: Option<u32>,
    /// Reconnect attempts seen (for tests of the backoff).
    pub reconnect_attempts: u32,
}

impl<S: Source> FaultySource<S> {
    pub fn new(inner: S, faults: Vec<CameraFault>) -> Self {
        Self {
            inner,
            faults,
            frames: 0,
            unplugged: None,
            reconnect_attempts: 0,
        }
    }
}

impl<S: Source> Source for FaultySource<S> {
    fn info(&self) -> &SourceInfo {
        self.inner.info()
    }

    fn next_frame(&mut self) -> Result<Frame, SourceError> {
        if self.unplugged.is_some() {
            return Err(SourceError::Disconnected {
                device: self.inner.info().name.clone(),
                reason: "No such device (injected)".into(),
            });
        }
        let index = self.frames;
        if let Some(CameraFault::Unplug {
            failed_reconnects, ..
        }) = self
            .faults
            .iter()
            .find(|f| matches!(f, CameraFault::Unplug { at, .. } if *at == index))
            .copied()
        {
            self.frames += 1;
            self.unplugged = Some(failed_reconnects);
            return Err(SourceError::Disconnected {
                device: self.inner.info().name.clone(),
                reason: "No such device (injected)".into(),
            });
        }
        let mut frame = self.inner.next_frame()?;
        self.frames += 1;
        for fault in &self.faults {
            match *fault {
                CameraFault::WrongSize { at } if at == index => {
                    let n = frame.data.len();
                    frame.data.truncate(n.saturating_sub(n / 3 + 1));
                    frame.check_size()?;
                }
                CameraFault::CorruptJpeg { at } if at == index => {
                    frame.format = PixelFormat::Mjpeg;
                    frame.data = PooledBuffer::detached(vec![
                        0xff, 0xd8, 0xff, 0xdb, 0x00, 0x43, 0x00, 0x01, 0x02,
                    ]);
                }
                _ => {}
            }
        }
        Ok(frame)
    }

    fn reconnect(&mut self) -> Result<(), SourceError> {
        self.reconnect_attempts += 1;
        match self.unplugged {
            Some(0) | None => {
                self.unplugged = None;
                Ok(())
            }
            Some(n) => {
                self.unplugged = Some(n - 1);
                Err(SourceError::Disconnected {
                    device: self.inner.info().name.clone(),
                    reason: "still unplugged (injected)".into(),
                })
            }
        }
    }

    fn driver_drops(&self) -> u64 {
        self.inner.driver_drops()
    }

    fn stop_on(&mut self, stop: crate::camera::Stop) {
        self.inner.stop_on(stop);
    }
}
