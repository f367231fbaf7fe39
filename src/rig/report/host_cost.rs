//! Host CPU per stage, measured with thread CPU clocks, and the process's
//! resident memory.

use std::sync::atomic::Ordering;

use super::schema::{CameraReport, HostReport, PipelineBreakdown};
use super::RunFacts;

/// Resident set size of this process, bytes (0 where /proc is missing).
pub fn rss_bytes() -> u64 {
    let page = 4096;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page)
}

/// What each stage cost the host per frame (or per group, for the fit) over
/// a run of `secs`.
pub(super) fn host(f: &RunFacts<'_>, secs: f64, cameras: &[CameraReport]) -> HostReport {
    let cpu = &f.stats.cpu;
    let taken: u64 = f
        .stats
        .cameras
        .iter()
        .map(|c| c.taken.load(Ordering::Relaxed))
        .sum();
    let captured: u64 = cameras.iter().map(|c| c.frames.captured).sum();
    let decoded = cpu.decoded_frames.load(Ordering::Relaxed);
    let groups = cpu.fitted_groups.load(Ordering::Relaxed);
    let pipeline_ns = cpu.npu_stage.load(Ordering::Relaxed)
        + cpu.decode_overhead.load(Ordering::Relaxed)
        + cpu.sync_sinks.load(Ordering::Relaxed);
    let decode_ns = cpu.decode.load(Ordering::Relaxed);
    let fit_ns = cpu.fit.load(Ordering::Relaxed);
    let other_ns = f
        .process_cpu_ns
        .saturating_sub(pipeline_ns + decode_ns + fit_ns);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = |ns: u64, n: u64, scale: f64| (n > 0).then(|| ns as f64 / n as f64 / scale);
    let first10 = f
        .rss_samples
        .iter()
        .filter(|(t, _)| *t <= 10.0)
        .map(|&(_, r)| r)
        .max();
    HostReport {
        cores,
        pipeline_us_per_frame: per(pipeline_ns, taken, 1e3),
        pipeline_breakdown_us: (taken > 0).then(|| {
            let us = |ns: u64| ns as f64 / taken as f64 / 1e3;
            let npu = cpu.npu_stage.load(Ordering::Relaxed);
            let pre = cpu.preprocess.load(Ordering::Relaxed);
            let wait = cpu.npu_wait.load(Ordering::Relaxed);
            PipelineBreakdown {
                preprocess: us(pre),
                npu_stage_wait: us(wait),
                npu_stage_rest: us(npu.saturating_sub(pre + wait)),
                decode_overhead: us(cpu.decode_overhead.load(Ordering::Relaxed)),
                sync_sinks: us(cpu.sync_sinks.load(Ordering::Relaxed)),
            }
        }),
        decode_ms_per_frame: per(decode_ns, decoded, 1e6),
        fit_ms_per_group: per(fit_ns, groups, 1e6),
        other_us_per_frame: per(other_ns, captured, 1e3),
        process_cpu_share: f.process_cpu_ns as f64 / 1e9 / secs / cores as f64,
        rss_first_10s_mb: first10.map(|r| r as f64 / 1e6),
        rss_last_mb: f.rss_samples.last().map(|&(_, r)| r as f64 / 1e6),
    }
}
