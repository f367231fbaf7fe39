//! A synthetic capture filmed: every camera's frames of the board as it is carried from pose
//! to pose, rendered ([`super::render`]) and written as an MCAP recording like `run
//! --record`'s, which `calibrate --frames` reads as it reads a real rig's.

use std::path::Path;
use std::time::Duration;

use rand::SeedableRng;

use super::render::{Look, Pattern, Renderer};
use super::synthetic::{observe, Capture};
use crate::camera::frame::{CameraId, Frame, PixelFormat, TimestampSource};
use crate::camera::record::{RecordError, RecordedCamera, Recorder};
use crate::camera::source::SourceInfo;

/// How the capture is filmed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Filming {
    /// Each camera's frame rate.
    pub fps: f64,
    /// How long the board is held at each pose.
    pub hold: Duration,
    /// How long it lies still at the last pose (the floor).
    pub last_hold: Duration,
    /// How the frames look.
    pub look: Look,
    /// The sensor noise's seed.
    pub seed: u64,
}

impl Default for Filming {
    fn default() -> Self {
        Self {
            fps: 8.0,
            hold: Duration::from_millis(250),
            last_hold: Duration::from_secs(3),
            look: Look::default(),
            seed: 1,
        }
    }
}

/// What was filmed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Filmed {
    /// Frames written, all cameras.
    pub frames: u64,
    /// Frames rendered (a pose's frame is rendered once and shown for as long as it is held).
    pub rendered: u64,
    /// The recording's length.
    pub duration: Duration,
}

/// Writes `capture` filmed as `filming` says into a new MCAP file at `path`, the cameras
/// named `names` (grey frames, their true calibrations recorded beside them).
///
/// # Errors
/// [`RecordError`] naming the file: it exists, or cannot be written.
///
/// # Panics
/// Never: a board with more tags than tag36h11 has codes films as a blank board.
pub fn film(
    capture: &Capture,
    names: &[String],
    filming: &Filming,
    path: &Path,
) -> Result<Filmed, RecordError> {
    let cameras: Vec<RecordedCamera> = capture
        .cameras
        .iter()
        .zip(names)
        .enumerate()
        .map(|(i, (c, name))| RecordedCamera {
            info: SourceInfo {
                camera: CameraId(i as u32),
                name: name.clone(),
                format: PixelFormat::Grey,
                width: c.width,
                height: c.height,
                fps: filming.fps,
                timestamp_source: TimestampSource::Synthetic,
            },
            calibration: Some(*c),
        })
        .collect();
    let mut recorder = Recorder::create(path, &cameras)?;
    let pattern = Pattern::new(&capture.board).ok();
    let renderers: Vec<Renderer> = capture
        .cameras
        .iter()
        .map(|c| Renderer::new(c, 3))
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(filming.seed);
    let still = rand_distr::Normal::new(0.0, 0.0).unwrap_or_else(|_| unreachable!());
    let period_ns = (1e9 / filming.fps.clamp(0.1, 1000.0)) as u64;
    let hold_ns = filming.hold.as_nanos().max(1) as u64;
    let last = capture.poses.len().saturating_sub(1);
    let end_ns = last as u64 * hold_ns + filming.last_hold.as_nanos() as u64;
    // Start a second in, as a monotonic clock would.
    let start_ns = 1_000_000_000u64;
    // Each camera's frame of the pose it shows, rendered once and written again, restamped,
    // for as long as the pose is held.
    let mut shown: Vec<Option<(usize, Frame)>> = (0..cameras.len()).map(|_| None).collect();
    let (mut frames, mut rendered) = (0u64, 0u64);
    let mut t = 0u64;
    let mut sequence = 0u64;
    while t < end_ns {
        let pose = ((t / hold_ns) as usize).min(last);
        for (c, renderer) in renderers.iter().enumerate() {
            let cam = renderer.camera();
            let fresh = !matches!(&shown[c], Some((p, _)) if *p == pose);
            if fresh {
                let world_from_board = &capture.poses[pose];
                let visible =
                    observe(&capture.board, cam, world_from_board, &still, &mut rng).len() >= 4;
                let pixels = match (&pattern, visible) {
                    (Some(pattern), true) => {
                        rendered += 1;
                        renderer.render(pattern, world_from_board, &filming.look, &mut rng)
                    }
                    _ => vec![
                        filming.look.background.round() as u8;
                        cam.width as usize * cam.height as usize
                    ],
                };
                let frame = Frame::still(
                    CameraId(c as u32),
                    PixelFormat::Grey,
                    cam.width,
                    cam.height,
                    pixels,
                );
                shown[c] = Some((pose, frame));
            }
            let Some((_, frame)) = &mut shown[c] else {
                continue;
            };
            frame.capture_ns = start_ns + t;
            frame.sequence = sequence;
            recorder.write(frame)?;
            frames += 1;
        }
        sequence += 1;
        t += period_ns;
    }
    recorder.finish()?;
    Ok(Filmed {
        frames,
        rendered,
        duration: Duration::from_nanos(end_ns),
    })
}
