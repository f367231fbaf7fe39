//! Board views captured from the rig's cameras, live or from a recording: each camera's
//! frames read on a thread of its own, one frame per camera examined at each instant (an
//! instant every [`CaptureSettings::every`] of capture time, from the first frame), its
//! corners found by the [`BoardDetector`], and each camera's [`Coverage`] told to the
//! caller as views arrive, for the status line. Each time a camera's views grow by half, a
//! worker thread solves its intrinsics from them, and the coverage records how far they pin
//! the principal point.
//!
//! Views of one instant in several cameras are the board in one pose, which is what ties
//! the cameras together: the cameras' clocks must agree (V4L2's monotonic stamps on one
//! box, or one recording's), and a board that moves fast blurs that agreement, so the board
//! is held still a moment at each pose.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_channel as channel;

use super::board::AprilGrid;
use super::coverage::Coverage;
use super::detect::{BoardDetector, Luma};
use super::synthetic::MIN_CORNERS_PER_VIEW;
use super::{BoardView, CornerMeans, Settings};
use crate::camera::source::{Source, SourceError};
use crate::camera::stop::Stop;

mod collect;

use collect::{principal_std, Collector, Job, Pinned};

/// How the capture samples the cameras.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaptureSettings {
    /// Time between instants.
    pub every: Duration,
    /// Capture time after which the capture ends; `None` runs until every source ends or
    /// the stop is requested.
    pub duration: Option<Duration>,
    /// The calibration's settings: the coverage asks for their tilt and the principal point
    /// they accept, and the capture's interim solves use them, so that the status line asks
    /// for what the calibration checks.
    pub calibration: Settings,
}

impl Default for CaptureSettings {
    fn default() -> Self {
        Self {
            every: Duration::from_millis(250),
            duration: None,
            calibration: Settings::default(),
        }
    }
}

/// What one camera's capture came to.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CameraTally {
    /// Frames read.
    pub frames: u64,
    /// Frames searched for the board (one per instant).
    pub examined: u64,
    /// Frames in which the board was found (a view).
    pub views: u64,
    /// Frames the source could not deliver whole (counted, skipped).
    pub bad_frames: u64,
    /// Frames whose pixels could not be read (a JPEG that does not decode, a wrong size).
    pub unreadable: u64,
    /// The last unreadable frame's reason.
    pub last_error: Option<String>,
}

/// The capture: the views and what each camera's frames came to.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The views, ordered by instant and camera.
    pub views: Vec<BoardView>,
    /// Per camera, in the order of the sources.
    pub tallies: Vec<CameraTally>,
    /// Per camera, the coverage its views reached.
    pub coverage: Vec<Coverage>,
}

/// Why a capture ended without its views.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// A camera stopped delivering (unplugged, a driver error).
    #[error("camera `{camera}` stopped after {frames} frames: {source}")]
    Camera {
        /// The camera.
        camera: String,
        /// Frames it delivered first.
        frames: u64,
        /// What its source said.
        #[source]
        source: SourceError,
    },
    /// Names and sources do not pair up.
    #[error("{names} camera names for {sources} sources")]
    Names {
        /// Names given.
        names: usize,
        /// Sources given.
        sources: usize,
    },
}

/// One camera's message to the collecting thread.
enum Message {
    View(BoardView),
    Done(usize, CameraTally, Option<CaptureError>),
}

/// Captures board views from `sources` (named by `names`, in the rig's order) until they
/// end, the capture's duration passes or `stop` is requested. `status` is called with every
/// camera's coverage each time a view or a solve's result arrives.
///
/// # Errors
/// [`CaptureError::Camera`] for a camera that disconnected (the capture is stopped, and the
/// first such camera is named); [`CaptureError::Names`] for names that do not pair with the
/// sources.
pub fn capture(
    board: &AprilGrid,
    names: &[String],
    sources: Vec<Box<dyn Source>>,
    settings: &CaptureSettings,
    stop: &Stop,
    status: &mut dyn FnMut(&[Coverage]),
) -> Result<Captured, CaptureError> {
    if names.len() != sources.len() {
        return Err(CaptureError::Names {
            names: names.len(),
            sources: sources.len(),
        });
    }
    let instants = Instants::new(settings);
    let (tx, rx) = channel::unbounded::<Message>();
    let solve = settings.calibration;
    let sizes: Vec<(u32, u32)> = sources
        .iter()
        .map(|s| (s.info().width, s.info().height))
        .collect();
    let mut collector = Collector::new(&sizes, &solve);
    let (jobs_tx, jobs_rx) = channel::unbounded::<Job>();
    let queued = jobs_rx.clone();
    let (results_tx, results_rx) = channel::unbounded::<Pinned>();
    std::thread::scope(|scope| {
        let sizes = &sizes;
        scope.spawn(move || {
            for (c, own) in jobs_rx {
                let std_px = principal_std(&names[c], sizes[c], board, &own, &solve);
                // The collector drains every result.
                let _ = results_tx.send((c, std_px));
            }
        });
        spawn_cameras(scope, sources, board, names, &instants, stop, tx);
        let results = collector.collect(board, &rx, results_rx, &jobs_tx, stop, status);
        collector.finish_solves(&queued, jobs_tx, results);
    });
    collector.into_captured()
}

/// The capture's instants: one every `every_ns` of capture time from the first frame's
/// (`origin`, shared: 0 until a camera sets it), up to `limit_ns` after it.
struct Instants {
    origin: AtomicU64,
    every_ns: u64,
    limit_ns: Option<u64>,
}

impl Instants {
    /// The instants `settings` ask for, an instant at most every millisecond.
    fn new(settings: &CaptureSettings) -> Self {
        let every_ns = settings
            .every
            .as_nanos()
            .clamp(1_000_000, u128::from(u64::MAX)) as u64;
        let limit_ns = settings
            .duration
            .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64);
        Self {
            origin: AtomicU64::new(0),
            every_ns,
            limit_ns,
        }
    }
}

/// Starts a thread per source in `scope`, each reading its camera ([`camera_loop`]) and
/// telling the collector on `tx` when it ends; `tx` is dropped once they have started, so
/// the collector's receiver ends with the last of them.
fn spawn_cameras<'scope, 'env: 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    sources: Vec<Box<dyn Source>>,
    board: &'env AprilGrid,
    names: &'env [String],
    instants: &'env Instants,
    stop: &Stop,
    tx: channel::Sender<Message>,
) {
    for (c, mut source) in sources.into_iter().enumerate() {
        let tx = tx.clone();
        let name = names[c].as_str();
        let stop = stop.clone();
        source.stop_on(stop.clone());
        scope.spawn(move || {
            let (tally, error) = camera_loop(c, name, board, source.as_mut(), instants, &stop, &tx);
            // The collector outlives every sender.
            let _ = tx.send(Message::Done(c, tally, error));
        });
    }
    drop(tx);
}

/// One camera's frames: read until its source ends, the capture's time passes or the stop
/// is requested; the frame nearest each instant searched.
fn camera_loop(
    camera: usize,
    name: &str,
    board: &AprilGrid,
    source: &mut dyn Source,
    instants: &Instants,
    stop: &Stop,
    tx: &channel::Sender<Message>,
) -> (CameraTally, Option<CaptureError>) {
    let (origin, every_ns, limit_ns) = (&instants.origin, instants.every_ns, instants.limit_ns);
    let mut tally = CameraTally::default();
    let mut detector = BoardDetector::new(board);
    // A frame counts for an instant within half a frame period of it (and never more than
    // half the instants' spacing): the camera's nearest frame.
    let period_ns = source
        .info()
        .frame_period()
        .as_nanos()
        .min(u128::from(u64::MAX)) as u64;
    let window_ns = (period_ns / 2).min(every_ns / 2).max(1);
    let mut last_instant: Option<u64> = None;
    while !stop.is_requested() {
        let frame = match source.next_frame() {
            Ok(f) => f,
            Err(SourceError::EndOfStream | SourceError::Stopped) => break,
            Err(e) if e.is_recoverable() => {
                tally.bad_frames += 1;
                continue;
            }
            Err(e) => {
                let frames = tally.frames;
                return (
                    tally,
                    Some(CaptureError::Camera {
                        camera: name.to_string(),
                        frames,
                        source: e,
                    }),
                );
            }
        };
        tally.frames += 1;
        let t = frame.capture_ns.max(1);
        let start = match origin.compare_exchange(0, t, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => t,
            Err(set) => set,
        };
        let Some(since) = t.checked_sub(start) else {
            continue;
        };
        if limit_ns.is_some_and(|limit| since > limit) {
            break;
        }
        let instant = (since + every_ns / 2) / every_ns;
        let off = since.abs_diff(instant * every_ns);
        if off > window_ns || last_instant.is_some_and(|l| l >= instant) {
            continue;
        }
        last_instant = Some(instant);
        tally.examined += 1;
        let corners = match Luma::of_frame(name, &frame).and_then(|l| detector.detect(name, l)) {
            Ok(c) => c,
            Err(e) => {
                tally.unreadable += 1;
                tally.last_error = Some(e.to_string());
                continue;
            }
        };
        if corners.len() >= MIN_CORNERS_PER_VIEW {
            tally.views += 1;
            let view = BoardView {
                camera,
                pose: instant as usize,
                corners,
            };
            if tx.send(Message::View(view)).is_err() {
                break;
            }
        }
    }
    (tally, None)
}

/// Folds the views of a board lying still into the view of its first instant: for each
/// camera that saw `instant`, the views of the instants right after it whose corners are
/// all within `tolerance_px` of that view's are averaged into it and dropped, so the anchor
/// that fixes the world is measured over every frame of it lying there, not one. Returns
/// how many instants were folded in, at most, for any camera.
pub fn average_still(views: &mut Vec<BoardView>, instant: usize, tolerance_px: f64) -> usize {
    let cameras: Vec<usize> = views
        .iter()
        .filter(|v| v.pose == instant)
        .map(|v| v.camera)
        .collect();
    let mut most = 0;
    for camera in cameras {
        let Some(first) = views
            .iter()
            .position(|v| v.pose == instant && v.camera == camera)
        else {
            continue;
        };
        let anchor = views[first].corners.clone();
        let mut means = CornerMeans::default();
        for c in &anchor {
            means.add(c.id, c.pixel);
        }
        let mut folded = Vec::new();
        let mut next = instant + 1;
        while let Some(i) = views
            .iter()
            .position(|v| v.pose == next && v.camera == camera)
        {
            let still = views[i].corners.len() >= anchor.len() / 2
                && views[i].corners.iter().all(|c| {
                    anchor
                        .iter()
                        .find(|a| a.id == c.id)
                        .is_none_or(|a| (a.pixel - c.pixel).norm() <= tolerance_px)
                });
            if !still {
                break;
            }
            for c in &views[i].corners {
                if means.contains(c.id) {
                    means.add(c.id, c.pixel);
                }
            }
            folded.push(i);
            next += 1;
        }
        most = most.max(folded.len());
        views[first].corners = means.means(1);
        folded.sort_unstable_by(|a, b| b.cmp(a));
        for i in folded {
            views.remove(i);
        }
    }
    most
}

#[cfg(test)]
mod tests {
    use nalgebra::Point2;

    use super::*;
    use crate::calibrate::Corner;

    fn view(camera: usize, pose: usize, x: f64) -> BoardView {
        BoardView {
            camera,
            pose,
            corners: (0..8)
                .map(|id| Corner {
                    id,
                    pixel: Point2::new(x + f64::from(id), 10.0),
                })
                .collect(),
        }
    }

    #[test]
    fn a_still_board_is_averaged_into_its_first_instant() {
        // Camera 0: instants 5..=7 still (x 10.0, 10.2, 10.4), 8 moved on; camera 1 saw 5 only.
        let mut views = vec![
            view(0, 5, 10.0),
            view(1, 5, 50.0),
            view(0, 6, 10.2),
            view(0, 7, 10.4),
            view(0, 8, 30.0),
        ];
        assert_eq!(average_still(&mut views, 5, 0.5), 2);
        let poses: Vec<(usize, usize)> = views.iter().map(|v| (v.camera, v.pose)).collect();
        assert_eq!(poses, [(0, 5), (1, 5), (0, 8)]);
        assert!((views[0].corners[0].pixel.x - 10.2).abs() < 1e-12);
        assert!((views[1].corners[0].pixel.x - 50.0).abs() < 1e-12);
        // A board that moved by more than the tolerance is not folded in.
        let mut moved = vec![view(0, 5, 10.0), view(0, 6, 10.6)];
        assert_eq!(average_still(&mut moved, 5, 0.5), 0);
        assert_eq!(moved.len(), 2);
    }
}
