//! Frames per camera (captured, processed, dropped by stage), device rates
//! per graph, and graph switching.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use crate::metrics::figure::{Figure, Provenance, Unit};
use crate::metrics::ops::hef::read_hef;
use crate::metrics::stats::FrameCounts;
use crate::npu::sim::SimStats;
use crate::npu::{BackendKind, Device};
use crate::rig::config::SwitchingConfig;
use crate::rig::stats::DropStage;

use super::schema::{CameraReport, GraphReport, SwitchReport};
use super::{assumptions, RunFacts};

/// Device figures carry where they come from: measured on a device, modelled
/// by the simulator (with its assumptions).
pub(super) struct DeviceFigures(Provenance);

impl DeviceFigures {
    pub(super) fn new(device: &Device) -> Self {
        Self(match device.backend() {
            BackendKind::HailoRt => Provenance::measured(device.device_id()),
            BackendKind::Sim => Provenance::modelled(assumptions(device)),
        })
    }

    fn figure(&self, value: f64, unit: Unit) -> Figure {
        Figure {
            value,
            unit,
            provenance: self.0.clone(),
        }
    }
}

/// Each camera's frames over `secs` of running, and whether they add up.
pub(super) fn cameras(f: &RunFacts<'_>, secs: f64) -> Vec<CameraReport> {
    f.rig
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
                bad_frames: snap.bad_frames,
                last_error: snap.last_error,
                controls: f.camera_status[i].controls(),
            }
        })
        .collect()
}

/// Each graph's settings, frames and device rate.
pub(super) fn graphs(f: &RunFacts<'_>, secs: f64, device: &DeviceFigures) -> Vec<GraphReport> {
    let rig = f.rig;
    rig.graphs
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let counters = &f.stats.graphs[i];
            let frames = counters.completed.load(Ordering::Relaxed);
            let pairing = f.pairings.get(i);
            let hef = read_hef(&g.hef).ok().and_then(|v| v.into_iter().next());
            GraphReport {
                name: g.name.clone(),
                hef: g.hef.display().to_string(),
                side: hef.as_ref().and_then(|h| h.side),
                hef_precision: hef.as_ref().map(|h| h.precision),
                ops_per_frame: hef.as_ref().and_then(|h| h.ops_figure()),
                decoder: f.decoders.get(i).map_or("none".into(), |d| d.describe()),
                split: pairing.map_or("not paired".into(), |p| p.split_text().to_owned()),
                pairing: pairing.map(|p| p.lines()).unwrap_or_default(),
                batch: rig.batch(g),
                priority: g.priority,
                threshold: rig.threshold(g),
                timeout_ms: rig.timeout_ms(g),
                frames,
                jobs: counters.batches.load(Ordering::Relaxed),
                device_fps: device.figure(frames as f64 / secs, Unit::Fps),
                fault: counters.fault(),
                reconfigured: counters.reconfigured.load(Ordering::Relaxed),
                reconfigure_failed: counters.reconfigure_failed.load(Ordering::Relaxed),
                down_ms: counters.down_ns.load(Ordering::Relaxed) as f64 / 1e6,
            }
        })
        .collect()
}

/// How the graphs shared the device: the device's switches (from the
/// simulator) and the application's own (manual switching).
pub(super) fn switching(
    f: &RunFacts<'_>,
    sim: Option<&SimStats>,
    device: &DeviceFigures,
) -> SwitchReport {
    let app_switches = f.stats.app_switches.load(Ordering::Relaxed);
    SwitchReport {
        mode: match f.rig.switching {
            SwitchingConfig::Scheduler => "scheduler (HailoRT round robin)".into(),
            SwitchingConfig::Manual { frames_per_switch } => {
                format!("manual (scheduling NONE, switch every {frames_per_switch} frames)")
            }
        },
        switches: sim.map(|s| s.switches),
        switches_per_s: sim.map(|s| {
            device.figure(
                s.switches as f64 / (s.now_ns.max(1) as f64 / 1e9),
                Unit::PerSecond,
            )
        }),
        ms_per_switch: sim.map(|s| {
            device.figure(
                s.switch_ns.iter().sum::<u64>() as f64 / 1e6 / s.switches.max(1) as f64,
                Unit::Milliseconds,
            )
        }),
        app_switches,
        app_ms_per_switch: (app_switches > 0).then(|| {
            f.stats.app_switch_ns.load(Ordering::Relaxed) as f64 / 1e6 / app_switches as f64
        }),
        npu_busy: sim
            .map(|s| device.figure(s.busy_ns as f64 / s.now_ns.max(1) as f64, Unit::Fraction)),
    }
}
