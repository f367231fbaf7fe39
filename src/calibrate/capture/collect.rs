//! The capture's collecting side: the views and tallies the cameras send, gathered, and each
//! camera's intrinsics solved on a worker thread as its views grow, for the coverage.

use crossbeam_channel as channel;

use super::{CameraTally, CaptureError, Captured, Message};
use crate::calibrate::board::AprilGrid;
use crate::calibrate::coverage::Coverage;
use crate::calibrate::{calibrate_intrinsics, BoardView, CalibrateError, Settings};
use crate::camera::stop::Stop;

/// Views a camera has before its intrinsics are first solved during the capture.
const FIRST_SOLVE_VIEWS: usize = 16;

/// How much a camera's views grow between its solves during the capture: each solve costs
/// in proportion to the views, so all of them together cost about three of the last, and
/// the standard deviation shrinks by a fifth between them.
const SOLVE_GROWTH: f64 = 1.5;

/// A solve's result: the camera, and the principal point's standard deviation its views
/// gave (pixels), `None` where they gave none yet (too few, or no tilt).
pub(super) type Pinned = (usize, Option<f64>);

/// Per camera, the views its next solve waits for; `None` while one runs.
struct Solves {
    due: Vec<Option<usize>>,
    limit_px: f64,
}

impl Solves {
    /// Records a solve's result in the camera's coverage and sets its next solve.
    fn record(&mut self, (c, std_px): Pinned, coverage: &mut [Coverage]) {
        if let (Some(cov), Some(due)) = (coverage.get_mut(c), self.due.get_mut(c)) {
            if let Some(std_px) = std_px {
                cov.set_principal_std(std_px, self.limit_px);
            }
            *due = Some((cov.views() as f64 * SOLVE_GROWTH).ceil() as usize);
        }
    }

    /// Whether camera `c`, with `seen` views, is due a solve; if so, it is marked running.
    fn take_due(&mut self, c: usize, seen: usize) -> bool {
        match self.due.get_mut(c) {
            Some(due) if due.is_some_and(|at| seen >= at) => {
                *due = None;
                true
            }
            _ => false,
        }
    }
}

/// The principal point's standard deviation (pixels) that `views` of one camera give, where
/// they give one: solved as the calibration solves them, a looseness it would refuse
/// included.
pub(super) fn principal_std(
    name: &str,
    size: (u32, u32),
    board: &AprilGrid,
    views: &[BoardView],
    settings: &Settings,
) -> Option<f64> {
    let views: Vec<&BoardView> = views.iter().collect();
    match calibrate_intrinsics(name, size, board, &views, settings) {
        Ok(i) => Some(i.principal_std_px()),
        Err(CalibrateError::Uncertain { std_px, .. }) => Some(std_px),
        Err(_) => None,
    }
}

/// A solve to run: the camera, and its views so far.
pub(super) type Job = (usize, Vec<BoardView>);

/// What the collecting thread gathers from the cameras and the solves.
pub(super) struct Collector {
    views: Vec<BoardView>,
    tallies: Vec<CameraTally>,
    coverage: Vec<Coverage>,
    solves: Solves,
    /// The first camera that stopped delivering.
    failure: Option<CaptureError>,
}

impl Collector {
    /// Nothing gathered yet from cameras of `sizes`, solved with `solve`.
    pub(super) fn new(sizes: &[(u32, u32)], solve: &Settings) -> Self {
        Self {
            views: Vec::new(),
            tallies: vec![CameraTally::default(); sizes.len()],
            coverage: sizes
                .iter()
                .map(|&size| Coverage::new(size, solve.min_tilt_deg))
                .collect(),
            solves: Solves {
                due: vec![Some(FIRST_SOLVE_VIEWS); sizes.len()],
                limit_px: solve.max_principal_std_px,
            },
            failure: None,
        }
    }

    /// Takes in the cameras' messages on `rx` and the solves' results on `results` until
    /// every camera's thread has ended, queuing each solve that falls due on `jobs` and
    /// calling `status` each time a view or a result arrives. Returns the results'
    /// receiver, `None` if the worker has gone.
    pub(super) fn collect(
        &mut self,
        board: &AprilGrid,
        rx: &channel::Receiver<Message>,
        results: channel::Receiver<Pinned>,
        jobs: &channel::Sender<Job>,
        stop: &Stop,
        status: &mut dyn FnMut(&[Coverage]),
    ) -> Option<channel::Receiver<Pinned>> {
        // A worker that ended early (it does not) leaves a receiver that is always ready:
        // it is swapped for one that never is.
        let never = channel::never();
        let mut results = Some(results);
        loop {
            let mut worker_gone = false;
            channel::select! {
                recv(rx) -> message => match message {
                    Ok(Message::View(view)) => {
                        self.view(board, view, jobs);
                        status(&self.coverage);
                    }
                    Ok(Message::Done(c, tally, error)) => {
                        self.tallies[c] = tally;
                        if let (Some(e), None) = (error, &self.failure) {
                            self.failure = Some(e);
                            stop.request();
                        }
                    }
                    // Every camera's thread has ended.
                    Err(_) => break,
                },
                recv(results.as_ref().unwrap_or(&never)) -> pinned => match pinned {
                    Ok(pinned) => {
                        self.solves.record(pinned, &mut self.coverage);
                        status(&self.coverage);
                    }
                    Err(_) => worker_gone = true,
                }
            }
            if worker_gone {
                results = None;
            }
        }
        results
    }

    /// Adds a camera's view to its coverage and the views, and queues the camera's solve on
    /// `jobs` when its views have grown enough.
    fn view(&mut self, board: &AprilGrid, view: BoardView, jobs: &channel::Sender<Job>) {
        let c = view.camera;
        if let Some(cov) = self.coverage.get_mut(c) {
            cov.add(board, &view);
        }
        self.views.push(view);
        let seen = self.coverage.get(c).map_or(0, Coverage::views);
        if self.solves.take_due(c, seen) {
            let own = self
                .views
                .iter()
                .filter(|v| v.camera == c)
                .cloned()
                .collect();
            // A worker gone takes no more jobs: the capture goes on without.
            let _ = jobs.send((c, own));
        }
    }

    /// Ends the solves once no view comes any more: the solves not started (still in
    /// `queued`) are dropped (the calibration solves every camera next) but a camera's
    /// first, so that the summary says how far every camera's views pin it; `jobs` is then
    /// closed, and the worker's remaining `results` are kept.
    pub(super) fn finish_solves(
        &mut self,
        queued: &channel::Receiver<Job>,
        jobs: channel::Sender<Job>,
        results: Option<channel::Receiver<Pinned>>,
    ) {
        let first: Vec<_> = queued
            .try_iter()
            .filter(|(c, _)| {
                self.coverage
                    .get(*c)
                    .is_some_and(|cov| cov.principal_std_px().is_none())
            })
            .collect();
        for job in first {
            let _ = jobs.send(job);
        }
        drop(jobs);
        for pinned in results.into_iter().flatten() {
            self.solves.record(pinned, &mut self.coverage);
        }
    }

    /// The views by instant and camera with every camera's tally and coverage, or the first
    /// camera's failure.
    pub(super) fn into_captured(self) -> Result<Captured, CaptureError> {
        if let Some(e) = self.failure {
            return Err(e);
        }
        let mut views = self.views;
        views.sort_by_key(|v| (v.pose, v.camera));
        Ok(Captured {
            views,
            tallies: self.tallies,
            coverage: self.coverage,
        })
    }
}
