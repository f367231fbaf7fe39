//! The soak: the demo rig on the zero-time device at twice the load its fit stage sustains,
//! for as long as asked, with the process's resident size, threads and open file descriptors
//! sampled once a second. A leak shows as growth between the reference sample (at 10 minutes,
//! or a sixth of a shorter run) and the last sample before the stop; the frame accounting
//! shows whether anything was lost uncounted.
//!
//! `benches/bench_pipeline.rs -- soak` runs it for `HAILO_EDGE_SOAK_SECS` (an hour for the
//! figure in docs/performance.md); `tests/soak.rs` runs it for two minutes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::config::SimProfileName;
use super::report::host_cost::rss_bytes;
use super::{run, Report, RigConfig, RunError, RunOptions};
use crate::npu::sim::DeviceProfile;

/// Views per second the soak's fit stage takes: half of the demo rig's 480 (four cameras at
/// 120 fps), so the offered load is twice the sustainable one.
pub const SUSTAINABLE_VIEWS_PER_S: f64 = 240.0;

/// The reference sample's time: 10 minutes into the run, or a sixth of a shorter run.
const REFERENCE_MAX: Duration = Duration::from_secs(600);

/// How often the sampler reads /proc.
const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// Resident size may grow this much between the reference and the last sample.
pub const RSS_TOLERANCE: f64 = 0.10;

/// The process's resident size, threads and open descriptors at one moment of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Seconds since the run started.
    pub at_s: f64,
    /// Resident set size, bytes.
    pub rss_bytes: u64,
    /// Entries of /proc/self/task.
    pub threads: usize,
    /// Entries of /proc/self/fd.
    pub fds: usize,
}

impl Sample {
    /// Reads /proc/self now; counts are 0 where /proc is missing.
    pub fn now(at_s: f64) -> Self {
        let count = |dir: &str| std::fs::read_dir(dir).map_or(0, |d| d.count());
        Self {
            at_s,
            rss_bytes: rss_bytes(),
            threads: count("/proc/self/task"),
            fds: count("/proc/self/fd"),
        }
    }
}

/// A soak's figures: the run's report, the reference sample and the last one before the stop.
pub struct Soak {
    /// How long the rig ran.
    pub duration: Duration,
    /// The run's report (accounting, rates).
    pub report: Report,
    /// The sample nearest the reference time.
    pub reference: Sample,
    /// The last sample taken before the stop.
    pub end: Sample,
    /// Samples taken while the rig ran.
    pub samples: usize,
}

impl Soak {
    /// What broke the soak's targets: resident size above the reference by more than
    /// [`RSS_TOLERANCE`], threads or descriptors changed, the accounting not adding up, or
    /// too few samples to tell. Empty when every target is met.
    pub fn failures(&self) -> Vec<String> {
        missed(
            &self.reference,
            &self.end,
            self.samples,
            self.report.accounting_ok,
        )
    }
}

/// The targets that `r` (reference) and `e` (end) of `samples` samples and the accounting miss.
fn missed(r: &Sample, e: &Sample, samples: usize, accounting_ok: bool) -> Vec<String> {
    let mut out = Vec::new();
    if samples < 2 || e.at_s <= r.at_s {
        out.push(format!(
            "{samples} samples, the last at {:.0} s, not after the reference at {:.0} s",
            e.at_s, r.at_s
        ));
    }
    if e.rss_bytes as f64 > r.rss_bytes as f64 * (1.0 + RSS_TOLERANCE) {
        out.push(format!(
            "resident size grew from {:.1} MB to {:.1} MB (more than {:.0}%)",
            r.rss_bytes as f64 / 1e6,
            e.rss_bytes as f64 / 1e6,
            RSS_TOLERANCE * 100.0
        ));
    }
    if e.threads != r.threads {
        out.push(format!("threads went from {} to {}", r.threads, e.threads));
    }
    if e.fds != r.fds {
        out.push(format!("open descriptors went from {} to {}", r.fds, e.fds));
    }
    if !accounting_ok {
        out.push("the frame accounting does not add up".to_owned());
    }
    out
}

/// Runs the soak on the demo rig whose HEFs are in `fixtures` for `duration`, sampling
/// /proc/self every second from a thread of its own.
///
/// # Errors
/// [`RunError`] from the run, or the sampler thread that could not start.
pub fn soak(fixtures: &Path, duration: Duration) -> Result<Soak, RunError> {
    let mut rig = RigConfig::demo(fixtures);
    rig.device.profile = SimProfileName::ZeroTime;
    let options = RunOptions {
        duration: Some(duration),
        pipeline_only: true,
        fit_delay: Some(Duration::from_secs_f64(1.0 / SUSTAINABLE_VIEWS_PER_S)),
        profile: Some(DeviceProfile::zero_time()),
        ..RunOptions::default()
    };
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let sampler = {
        let done = Arc::clone(&done);
        std::thread::Builder::new()
            .name("soak-sampler".into())
            .spawn(move || {
                let mut samples = Vec::new();
                while !done.load(Ordering::Relaxed) && started.elapsed() < duration {
                    std::thread::sleep(
                        SAMPLE_PERIOD.min(duration.saturating_sub(started.elapsed())),
                    );
                    let at = started.elapsed();
                    if at < duration && !done.load(Ordering::Relaxed) {
                        samples.push(Sample::now(at.as_secs_f64()));
                    }
                }
                samples
            })
            .map_err(|source| RunError::Spawn { source })?
    };
    let report = run(&rig, "demo (soak at twice the sustainable load)", &options);
    done.store(true, Ordering::Relaxed);
    let samples = sampler.join().unwrap_or_default();
    let report = report?;
    let reference_at = REFERENCE_MAX.min(duration / 6).as_secs_f64();
    let missing = Sample {
        at_s: 0.0,
        rss_bytes: 0,
        threads: 0,
        fds: 0,
    };
    let reference = samples
        .iter()
        .min_by(|a, b| {
            (a.at_s - reference_at)
                .abs()
                .total_cmp(&(b.at_s - reference_at).abs())
        })
        .copied()
        .unwrap_or(missing);
    Ok(Soak {
        duration,
        report,
        reference,
        end: samples.last().copied().unwrap_or(missing),
        samples: samples.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFERENCE: Sample = Sample {
        at_s: 600.0,
        rss_bytes: 100_000_000,
        threads: 20,
        fds: 12,
    };

    fn end(rss_bytes: u64, threads: usize, fds: usize) -> Sample {
        Sample {
            at_s: 3599.0,
            rss_bytes,
            threads,
            fds,
        }
    }

    #[test]
    fn a_steady_process_meets_every_target() {
        assert!(missed(&REFERENCE, &end(109_000_000, 20, 12), 3599, true).is_empty());
    }

    #[test]
    fn each_leak_and_a_lost_frame_is_named() {
        let rss = missed(&REFERENCE, &end(111_000_000, 20, 12), 3599, true);
        assert_eq!(rss.len(), 1);
        assert!(rss[0].starts_with("resident size grew from 100.0 MB to 111.0 MB"));
        let threads = missed(&REFERENCE, &end(100_000_000, 21, 12), 3599, true);
        assert_eq!(threads, ["threads went from 20 to 21"]);
        let fds = missed(&REFERENCE, &end(100_000_000, 20, 13), 3599, true);
        assert_eq!(fds, ["open descriptors went from 12 to 13"]);
        let lost = missed(&REFERENCE, &end(100_000_000, 20, 12), 3599, false);
        assert_eq!(lost, ["the frame accounting does not add up"]);
    }

    #[test]
    fn a_run_without_samples_after_the_reference_fails() {
        assert_eq!(missed(&REFERENCE, &REFERENCE, 1, true).len(), 1);
    }

    #[test]
    fn this_process_has_threads_and_descriptors() {
        let s = Sample::now(0.0);
        assert!(s.threads >= 1 && s.fds >= 3 && s.rss_bytes > 0);
    }
}
