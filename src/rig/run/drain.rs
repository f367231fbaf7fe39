//! The drain after a stop: every stage in the order the frame meets it,
//! each waited for until one deadline, the recorder last so its file is
//! finished whatever the others did.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::report::DrainReport;
use super::super::stage::capture::CameraStatus;
use super::super::stage::sinks::{Recorded, SinkFailure};
use super::super::stage::Running;
use super::super::RigConfig;
use super::super::RunError;
use super::{Stages, RECORDER_GRACE};

/// What the drained stages handed back.
pub(super) struct Drained {
    pub camera_status: Vec<Arc<CameraStatus>>,
    pub recorded: Option<Recorded>,
    /// When the last stage finished (or the drain gave up).
    pub at: Instant,
    pub drain: DrainReport,
    pub failures: Vec<SinkFailure>,
}

/// Stops the cameras first, then lets every later stage drain in the order
/// the frame meets them, until `timeout`; stages still running then are left
/// (and reported), and the recorder finishes with what reached it. The first
/// stage that failed is the error, once the recording is finished.
pub(super) fn drain(
    rig: &RigConfig,
    stages: Stages,
    timeout: Duration,
) -> Result<Drained, RunError> {
    let camera_status: Vec<_> = stages
        .captures
        .into_iter()
        .map(|c| {
            let status = Arc::clone(&c.status);
            c.stop();
            status
        })
        .collect();
    let deadline = Instant::now() + timeout;
    let mut state = Draining::default();
    let npu = state.drain(stages.npu, deadline);
    for d in stages.decoders {
        state.drain(d, deadline);
    }
    let fit = state.drain(stages.fit, deadline);
    let recorded = match stages.recording {
        Some(r) => {
            if !state.waiting_for.is_empty() {
                stages.abandon.request();
            }
            let grace = deadline.max(Instant::now()) + RECORDER_GRACE;
            state.drain(r, grace).transpose()?
        }
        None => None,
    };
    let at = Instant::now();
    let Draining {
        waiting_for,
        first_error,
    } = state;
    if let Some(e) = first_error {
        return Err(e);
    }
    if let Some(npu) = npu {
        npu.map_err(|source| RunError::Npu { source })?;
    }
    if let Some(fit) = fit {
        fit.map_err(|source| RunError::Io {
            path: rig
                .output
                .jsonl
                .clone()
                .unwrap_or_else(|| PathBuf::from("-")),
            source,
        })?;
    }
    Ok(Drained {
        camera_status,
        recorded,
        at,
        drain: DrainReport {
            completed: waiting_for.is_empty(),
            timeout_s: timeout.as_secs_f64(),
            waiting_for,
            frames_in_flight: 0,
        },
        failures: stages.failures.list(),
    })
}

/// The stages a drain is still waiting for, and the first that panicked.
#[derive(Default)]
struct Draining {
    waiting_for: Vec<String>,
    first_error: Option<RunError>,
}

impl Draining {
    /// Drains `running` until `deadline`: its output, or `None` when it
    /// panicked or is still running (noted).
    fn drain<T>(&mut self, running: Running<T>, deadline: Instant) -> Option<T> {
        match running.drain_until(deadline) {
            Ok(Ok(out)) => Some(out),
            Ok(Err(panicked)) => {
                self.first_error.get_or_insert(RunError::Panicked(panicked));
                None
            }
            Err(left) => {
                self.waiting_for.push(left.name().to_owned());
                None
            }
        }
    }
}
