//! The final report of a run: what ran, frame accounting per camera, device
//! and pipeline rates, switching, per-stage latency, fit quality, host CPU per
//! stage and, when the machine cannot keep up, which stage is the bottleneck
//! and by how much. Every figure says whether it was measured or modelled.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::camera::SourceInfo;
use crate::metrics::figure::{Assumption, Figure, Provenance, Unit};
use crate::metrics::stats::{FrameCounts, LatencySummary};
use crate::npu::{BackendKind, Device};
use crate::rig::stage::capture::CameraStatus;

use super::config::{KeypointsFrom, RigConfig, SwitchingConfig};
use super::run::RunOptions;
use super::stage::sinks::Recorded;
use super::stats::{DropStage, LiveStats, END_TO_END};

/// Resident set size of this process, bytes (0 where /proc is missing).
pub fn rss_bytes() -> u64 {
    let page = 4096;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page)
}

/// Everything the report is made from.
pub struct RunFacts<'a> {
    pub origin: String,
    pub rig: &'a RigConfig,
    pub device: &'a Device,
    pub infos: &'a [SourceInfo],
    pub camera_status: &'a [Arc<CameraStatus>],
    pub stats: &'a LiveStats,
    pub run_time: Duration,
    pub drain_time: Duration,
    pub process_cpu_ns: u64,
    pub rss_samples: Vec<(f64, u64)>,
    pub model: &'static str,
    pub options: &'a RunOptions,
    pub recorded: Option<Recorded>,
}

/// What ran.
#[derive(Debug, Clone, Serialize)]
pub struct WhatRan {
    pub rig: String,
    pub backend: BackendKind,
    pub device: String,
    pub simulator_clock: Option<String>,
    /// Where the NPU outputs came from (device, reference ONNX, synthetic).
    pub npu_outputs: String,
    pub decoder: String,
    pub decoder_threads: usize,
    /// Where the fit's 2D keypoints came from.
    pub fit_keypoints: String,
    pub body_model: String,
    pub switching: String,
    pub notes: Vec<String>,
    /// Figures the simulator assumes (empty on a real device).
    pub assumed: Vec<Assumption>,
}

/// One camera's frames.
#[derive(Debug, Clone, Serialize)]
pub struct CameraReport {
    pub name: String,
    pub graph: String,
    pub nominal_fps: f64,
    pub captured_fps: f64,
    pub processed_fps: f64,
    /// captured = processed + dropped (by stage) + in flight.
    pub frames: FrameCounts,
    pub accounting_ok: bool,
}

/// One graph on the device.
#[derive(Debug, Clone, Serialize)]
pub struct GraphReport {
    pub name: String,
    pub batch: u16,
    pub priority: u8,
    pub threshold: u32,
    pub timeout_ms: f64,
    pub frames: u64,
    pub jobs: u64,
    pub device_fps: Figure,
}

/// Graph switching.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchReport {
    pub mode: String,
    pub switches: Option<u64>,
    pub switches_per_s: Option<Figure>,
    pub ms_per_switch: Option<Figure>,
    /// Manual mode: switches made by the application and host time per switch.
    pub app_switches: u64,
    pub app_ms_per_switch: Option<f64>,
    pub npu_busy: Option<Figure>,
}

/// CPU per stage, measured with thread CPU clocks.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub cores: usize,
    /// The pipeline itself (NPU stage, decoder threads outside the decoder,
    /// sync and sinks), per frame taken from a camera queue.
    pub pipeline_us_per_frame: Option<f64>,
    /// `pipeline_us_per_frame` by thread, per frame taken.
    pub pipeline_breakdown_us: Option<PipelineBreakdown>,
    pub decode_ms_per_frame: Option<f64>,
    pub fit_ms_per_group: Option<f64>,
    /// Everything else in the process (capture threads with synthetic rendering,
    /// the simulator, the status line), per captured frame.
    pub other_us_per_frame: Option<f64>,
    pub process_cpu_share: f64,
    pub rss_first_10s_mb: Option<f64>,
    pub rss_last_mb: Option<f64>,
}

/// Where the pipeline's own CPU goes, us per frame taken from a camera queue.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PipelineBreakdown {
    /// NPU stage: preprocessing frames into the HEF inputs.
    pub preprocess: f64,
    /// NPU stage: waiting for work (the CPU its wake-ups cost).
    pub npu_stage_wait: f64,
    /// NPU stage: everything else (queues, batching, submission, routing).
    pub npu_stage_rest: f64,
    /// Decoder threads outside the decoder.
    pub decode_overhead: f64,
    /// The fit thread outside the fit: sync and sinks.
    pub sync_sinks: f64,
}

/// Can the machine keep up, and if not, where it falls short.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub sustained: bool,
    pub frames_offered_per_s: f64,
    /// CPU seconds per second each stage needs at the nominal rate.
    pub cores_needed: BTreeMap<String, f64>,
    pub bottleneck: Option<String>,
    /// Share of the device the offered rate needs (1 = all of it): mean device
    /// time per frame x frames per second. Modelled on the simulator.
    pub device_share_needed: Option<f64>,
    /// Capture to fitted body with no queueing at all: device time of one
    /// instant's frames, decoding them on the decoder threads, and the fit.
    pub latency_floor_ms: Option<f64>,
    pub text: String,
}

/// Fit quality.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    pub fits: u64,
    pub cold_starts: u64,
    pub mpjpe_mm: Option<f64>,
    pub residual_px: Option<f64>,
}

/// The final report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub what_ran: WhatRan,
    pub duration_s: f64,
    pub drain_s: f64,
    pub cameras: Vec<CameraReport>,
    pub accounting_ok: bool,
    pub graphs: Vec<GraphReport>,
    pub switching: SwitchReport,
    /// Per-stage latency and capture to fitted body (`end_to_end`), ms.
    pub latency_ms: BTreeMap<String, LatencySummary>,
    pub latency_note: String,
    pub fit: FitReport,
    pub host: HostReport,
    pub verdict: Verdict,
    pub recorded: Option<Recorded>,
}

impl Report {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// End-to-end latency summary, when any frame was fitted.
    pub fn end_to_end(&self) -> Option<&LatencySummary> {
        self.latency_ms.get(END_TO_END)
    }

    /// Builds the report.
    pub fn build(f: &RunFacts<'_>) -> Report {
        let rig = f.rig;
        let secs = f.run_time.as_secs_f64().max(1e-9);
        let sim = f.device.sim_stats();
        let modelled = || {
            Provenance::modelled(
                f.device
                    .assumed_figures()
                    .into_iter()
                    .map(|(n, fig)| Assumption::new(n, format!("{} ({})", fig.value, fig.source))),
            )
        };
        let device_prov = match f.device.backend() {
            BackendKind::HailoRt => Provenance::measured(f.device.device_id()),
            BackendKind::Sim => modelled(),
        };
        let fig = |value: f64, unit: Unit| Figure {
            value,
            unit,
            provenance: device_prov.clone(),
        };
        let cameras: Vec<CameraReport> = rig
            .cameras
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let snap = f.camera_status[i].snapshot();
                let counters = &f.stats.cameras[i];
                let mut dropped = BTreeMap::new();
                dropped.insert("camera_queue".to_string(), snap.queue_drops);
                for s in DropStage::ALL {
                    dropped.insert(s.name().to_string(), counters.dropped(s));
                }
                let processed = counters.processed.load(Ordering::Relaxed);
                let accounted: u64 = processed + dropped.values().sum::<u64>();
                let frames = FrameCounts {
                    captured: snap.frames,
                    processed,
                    dropped,
                    in_flight: snap.frames.saturating_sub(accounted),
                };
                let accounting_ok = frames.check(&c.name).is_ok() && frames.in_flight == 0;
                CameraReport {
                    name: c.name.clone(),
                    graph: c.graph.clone(),
                    nominal_fps: c.fps,
                    captured_fps: snap.frames as f64 / secs,
                    processed_fps: processed as f64 / secs,
                    frames,
                    accounting_ok,
                }
            })
            .collect();
        let graphs: Vec<GraphReport> = rig
            .graphs
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let frames = f.stats.graphs[i].completed.load(Ordering::Relaxed);
                GraphReport {
                    name: g.name.clone(),
                    batch: rig.batch(g),
                    priority: g.priority,
                    threshold: rig.threshold(g),
                    timeout_ms: rig.timeout_ms(g),
                    frames,
                    jobs: f.stats.graphs[i].batches.load(Ordering::Relaxed),
                    device_fps: fig(frames as f64 / secs, Unit::Fps),
                }
            })
            .collect();
        let app_switches = f.stats.app_switches.load(Ordering::Relaxed);
        let switching = SwitchReport {
            mode: match rig.switching {
                SwitchingConfig::Scheduler => "scheduler (HailoRT round robin)".into(),
                SwitchingConfig::Manual { frames_per_switch } => {
                    format!("manual (scheduling NONE, switch every {frames_per_switch} frames)")
                }
            },
            switches: sim.as_ref().map(|s| s.switches),
            switches_per_s: sim.as_ref().map(|s| {
                fig(
                    s.switches as f64 / (s.now_ns.max(1) as f64 / 1e9),
                    Unit::PerSecond,
                )
            }),
            ms_per_switch: sim.as_ref().map(|s| {
                fig(
                    s.switch_ns.iter().sum::<u64>() as f64 / 1e6 / s.switches.max(1) as f64,
                    Unit::Milliseconds,
                )
            }),
            app_switches,
            app_ms_per_switch: (app_switches > 0).then(|| {
                f.stats.app_switch_ns.load(Ordering::Relaxed) as f64 / 1e6 / app_switches as f64
            }),
            npu_busy: sim
                .as_ref()
                .map(|s| fig(s.busy_ns as f64 / s.now_ns.max(1) as f64, Unit::Fraction)),
        };
        let q = f.stats.fit_quality();
        let fit = FitReport {
            fits: q.fits,
            cold_starts: q.cold_starts,
            mpjpe_mm: q.mpjpe_mm(),
            residual_px: q.residual_px(),
        };
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
        let host = HostReport {
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
        };
        let offered: f64 = rig.cameras.iter().map(|c| c.fps).sum();
        let group_rate = rig
            .cameras
            .iter()
            .map(|c| c.fps)
            .fold(f64::INFINITY, f64::min);
        let mut need = BTreeMap::new();
        if let Some(us) = host.pipeline_us_per_frame {
            need.insert("pipeline".to_string(), us * 1e-6 * offered);
        }
        if let Some(ms) = host.decode_ms_per_frame {
            need.insert("decode".to_string(), ms * 1e-3 * offered);
        }
        if let Some(ms) = host.fit_ms_per_group {
            need.insert("fit".to_string(), ms * 1e-3 * group_rate);
        }
        if let Some(us) = host.other_us_per_frame {
            need.insert("capture+simulator".to_string(), us * 1e-6 * offered);
        }
        let total: f64 = need.values().sum();
        let drops: u64 = cameras.iter().map(|c| c.frames.dropped_total()).sum();
        let sustained = drops == 0 && captured > 0;
        // The device's side: mean device time per frame (busy time over frames
        // done), from the simulator's timing model.
        let device_ms = sim.as_ref().and_then(|s| {
            let frames: u64 = s.models.values().map(|m| m.frames).sum();
            (frames > 0).then(|| s.busy_ns as f64 / frames as f64 / 1e6)
        });
        let device_share = device_ms.map(|ms| ms * 1e-3 * offered);
        let floor = latency_floor(
            device_ms,
            host.decode_ms_per_frame,
            host.fit_ms_per_group,
            rig.cameras.len(),
            rig.decoder.threads,
        );
        let cpu_bound = need
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(k, _)| k.clone());
        // The device limits first when it needs more of itself than the host
        // needs of its cores.
        let device_first = device_share.is_some_and(|d| d > 1.0 && d > total / cores as f64);
        let bottleneck = if device_first {
            Some("device".to_string())
        } else {
            cpu_bound.clone()
        };
        let text = if sustained {
            format!(
                "sustained: {offered:.0} frames/s offered, none dropped; the stages need {total:.2} of {cores} cores"
            )
        } else {
            // The heaviest CPU stage: the bottleneck itself unless the device is.
            let cpu_stage = cpu_bound.clone().unwrap_or_default();
            let cpu_need = need.get(&cpu_stage).copied().unwrap_or(0.0);
            let per_frame = match cpu_stage.as_str() {
                "decode" => host
                    .decode_ms_per_frame
                    .map(|v| format!("{v:.2} ms CPU per frame")),
                "fit" => host
                    .fit_ms_per_group
                    .map(|v| format!("{v:.2} ms CPU per group")),
                "pipeline" => host
                    .pipeline_us_per_frame
                    .map(|v| format!("{v:.1} us CPU per frame")),
                _ => host
                    .other_us_per_frame
                    .map(|v| format!("{v:.1} us CPU per frame")),
            }
            .unwrap_or_default();
            let budget_ms = cores as f64 * 1e3 / offered.max(1e-9);
            let cpu_text = format!(
                "at {offered:.0} frames/s that is {cpu_need:.2} cores, and all CPU stages together need {total:.2} of the {cores} cores ({:.1}x the machine). The whole CPU budget is {budget_ms:.2} ms per frame; the host sustains about {:.1} fps per camera.",
                total / cores as f64,
                offered / rig.cameras.len() as f64 * (cores as f64 / total.max(1e-9)).min(1.0)
            );
            match (device_first, device_share) {
                (true, Some(d)) => format!(
                    "not sustained: {drops} of {captured} frames dropped. Bottleneck: the device (modelled), which needs {d:.2}x its time at this rate. On the host the heaviest stage, {cpu_stage}, needs {per_frame}; {cpu_text}"
                ),
                (_, d) => format!(
                    "not sustained: {drops} of {captured} frames dropped. Bottleneck: {cpu_stage} needs {per_frame}; {cpu_text}{}",
                    d.map(|d| format!(" The device (modelled) needs {d:.2}x its time at this rate.")).unwrap_or_default()
                ),
            }
        };
        let text = match &floor {
            Some(fl) => format!("{text} {}", fl.text(group_rate)),
            None => text,
        };
        let verdict = Verdict {
            sustained,
            frames_offered_per_s: offered,
            cores_needed: need,
            bottleneck: (!sustained).then_some(bottleneck).flatten(),
            device_share_needed: device_share,
            latency_floor_ms: floor.as_ref().map(LatencyFloor::total_ms),
            text,
        };
        let demo_keypoints = match rig.body.keypoints {
            KeypointsFrom::GroundTruth => true,
            KeypointsFrom::Decoder => false,
        };
        let mut notes = Vec::new();
        if demo_keypoints {
            notes.push(format!(
                "the fit takes the synthetic scene's 2D keypoints with {} px noise, not the decoder's: the decoder runs for real on the NPU features (its cost is real) but its weights are random",
                rig.body.noise_px
            ));
        }
        if f.options.pipeline_only {
            notes.push("pipeline-only run: the decoder and the fit were skipped".into());
        }
        if let Some(d) = f.options.fit_delay {
            notes.push(format!(
                "a delay of {d:?} per view was added to the fit stage on purpose"
            ));
        }
        if f.device.backend() == BackendKind::Sim {
            notes.push("device figures (device fps, switches, busy, NPU stage latency) are modelled by the simulator; host CPU, queue, decode, sync, fit latencies and camera rates are measured".into());
        }
        let what_ran = WhatRan {
            rig: f.origin.clone(),
            backend: f.device.backend(),
            device: f.device.describe(),
            simulator_clock: f.device.sim_profile().map(|p| p.clock.name().to_string()),
            npu_outputs: format!(
                "{:?}",
                f.device.sim_profile().map_or("device", |p| {
                    if p.references.is_empty() {
                        "simulator: synthetic deterministic outputs"
                    } else {
                        "simulator: reference ONNX, quantised per the HEF"
                    }
                })
            ),
            decoder: if f.options.pipeline_only {
                "skipped".into()
            } else {
                rig.decoder.engine.key().to_owned()
            },
            decoder_threads: rig.decoder.threads,
            fit_keypoints: if demo_keypoints {
                format!("ground truth + {} px Gaussian noise", rig.body.noise_px)
            } else {
                "decoder".into()
            },
            body_model: f.model.into(),
            switching: switching.mode.clone(),
            notes,
            assumed: f
                .device
                .assumed_figures()
                .into_iter()
                .map(|(n, fig)| Assumption::new(n, format!("{} ({})", fig.value, fig.source)))
                .collect(),
        };
        let accounting_ok = cameras.iter().all(|c| c.accounting_ok);
        Report {
            schema: "hailo-edge.run-report/1",
            what_ran,
            duration_s: secs,
            drain_s: f.drain_time.as_secs_f64(),
            accounting_ok,
            cameras,
            graphs,
            switching,
            latency_ms: f.stats.latencies().summaries(),
            latency_note: "capture = capture stamp to the NPU stage taking the frame (camera queue wait included); queue = batcher wait; npu = submit to completion; decode includes its queue; sync = waiting for the other views; fit = triangulation and fit; end_to_end = capture to fitted body".into(),
            fit,
            host,
            verdict,
            recorded: f.recorded,
        }
    }
}

/// What one capture instant costs with no queueing at all.
///
/// Decoding overlaps the device: the views of the graph that runs first are
/// decoded while the next graph is on the device. So the floor is the larger of
/// two bounds, each of which every instant must pay: the instant's last frame
/// leaves the device after all of its frames' device time and then needs one
/// decode; and the busiest decoder thread decodes its share of the views one
/// after another. Costs are means over the run, so the floor is what a typical
/// instant cannot beat.
#[derive(Debug, Clone, PartialEq)]
struct LatencyFloor {
    /// Device time of one frame (modelled or measured), ms.
    device_per_frame_ms: Option<f64>,
    cameras: usize,
    views_per_thread: usize,
    decode_per_view_ms: f64,
    fit_ms: f64,
}

impl LatencyFloor {
    /// All of the instant's device time, then the last view's decode.
    fn device_bound_ms(&self) -> f64 {
        self.device_per_frame_ms.unwrap_or(0.0) * self.cameras as f64 + self.decode_per_view_ms
    }

    /// The busiest decoder thread's views, one after another.
    fn decode_bound_ms(&self) -> f64 {
        self.decode_per_view_ms * self.views_per_thread as f64
    }

    fn total_ms(&self) -> f64 {
        self.device_bound_ms().max(self.decode_bound_ms()) + self.fit_ms
    }

    fn text(&self, group_rate: f64) -> String {
        let period_ms = 1e3 / group_rate.max(1e-9);
        let device = match self.device_per_frame_ms {
            Some(ms) => format!(
                "its {} frames need {:.1} ms on the device (modelled) and the last of them one decode after that ({:.1} ms); ",
                self.cameras,
                ms * self.cameras as f64,
                self.device_bound_ms()
            ),
            None => String::new(),
        };
        format!(
            "Latency floor: {device}the busiest decoder thread needs {} views x {:.1} ms ({:.1} ms); with {:.2} ms of fit, capture to fitted body cannot be under {:.1} ms ({:.1} frame periods) here, before any queueing.",
            self.views_per_thread,
            self.decode_per_view_ms,
            self.decode_bound_ms(),
            self.fit_ms,
            self.total_ms(),
            self.total_ms() / period_ms
        )
    }
}

/// The floor from per-frame costs (see [`LatencyFloor`]).
fn latency_floor(
    device_ms_per_frame: Option<f64>,
    decode_ms_per_frame: Option<f64>,
    fit_ms_per_group: Option<f64>,
    cameras: usize,
    threads: usize,
) -> Option<LatencyFloor> {
    let decode = decode_ms_per_frame?;
    Some(LatencyFloor {
        device_per_frame_ms: device_ms_per_frame,
        cameras,
        views_per_thread: cameras.div_ceil(threads.max(1)),
        decode_per_view_ms: decode,
        fit_ms: fit_ms_per_group.unwrap_or(0.0),
    })
}

#[cfg(test)]
mod floor_tests {
    use super::latency_floor;

    #[test]
    fn the_floor_is_the_larger_of_the_device_and_the_decoder_bound() {
        // Demo-like: 4 cameras, 2 threads, 9.5 ms device per frame, 16.5 ms decode.
        // Device bound: 38 + 16.5; decoder bound: 2 x 16.5.
        let f = latency_floor(Some(9.5), Some(16.5), Some(0.25), 4, 2).unwrap();
        assert_eq!(f.views_per_thread, 2);
        assert!(
            (f.total_ms() - (54.5 + 0.25)).abs() < 1e-9,
            "{}",
            f.total_ms()
        );
        // A slow decoder makes the decoder bound the larger: 2 x 30 over 4 + 30.
        let slow = latency_floor(Some(1.0), Some(30.0), None, 4, 2).unwrap();
        assert!((slow.total_ms() - 60.0).abs() < 1e-9, "{}", slow.total_ms());
        // Three views on two threads: one thread decodes two.
        let g = latency_floor(None, Some(10.0), None, 3, 2).unwrap();
        assert!((g.total_ms() - 20.0).abs() < 1e-9);
        assert!(
            g.text(120.0).contains("2.4 frame periods"),
            "{}",
            g.text(120.0)
        );
        // No decoder (pipeline-only): no floor.
        assert!(latency_floor(Some(1.0), None, None, 4, 2).is_none());
    }
}
