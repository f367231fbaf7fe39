//! Waiting for the run's end: a stop, the set duration (wall time on a real-time clock), or
//! every camera ended; the status line and the live view are drawn, and the resident size
//! sampled, along the way.

use std::time::Duration;

use crate::npu::Device;

use super::super::config::RigConfig;
use super::super::report::host_cost::rss_bytes;
use super::super::stage::capture::CaptureThread;
use super::super::stats::LiveStats;
use super::super::status::StatusLine;
use super::{RunOptions, Started};

/// How often the wait loop samples the resident size and redraws the status.
const STATUS_PERIOD: Duration = Duration::from_millis(100);

/// How long the rig ran, and the process's resident size along the way.
pub(super) struct Waited {
    pub(super) elapsed: Duration,
    pub(super) rss_samples: Vec<(f64, u64)>,
    pub(super) status: Option<StatusLine>,
}

/// Waits until the run is told to stop, its duration passes or every camera
/// has ended, sampling the resident size and drawing the status line.
pub(super) fn wait(
    rig: &RigConfig,
    options: &RunOptions,
    device: &Device,
    stats: &LiveStats,
    started: &Started,
) -> Waited {
    let captures = &started.stages.captures;
    let mut status = options.status.then(|| StatusLine::new(rig, device));
    let mut rss_samples = Vec::new();
    // On a virtual clock the duration is the cameras' time: they end after it (`camera::take`).
    let duration = options.duration.filter(|_| rig.device.clock.is_real_time());
    loop {
        let elapsed = started.at.elapsed();
        if options.stop.is_requested() || duration.is_some_and(|d| elapsed >= d) {
            break;
        }
        if captures.iter().all(CaptureThread::is_finished) {
            break;
        }
        let left = duration.map_or(STATUS_PERIOD, |d| d.saturating_sub(elapsed));
        options.stop.wait_for(left.min(STATUS_PERIOD));
        rss_samples.push((started.at.elapsed().as_secs_f64(), rss_bytes()));
        if let Some(s) = &mut status {
            s.update(stats, captures, device, started.at.elapsed());
        }
        if let Some(tap) = &options.live {
            tap.tick(stats, captures, device, started.at.elapsed());
        }
    }
    Waited {
        elapsed: started.at.elapsed(),
        rss_samples,
        status,
    }
}
