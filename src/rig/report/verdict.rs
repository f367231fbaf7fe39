//! Whether the machine keeps up with the rig and, when it does not, which
//! stage falls short and by how much; and the latency floor of one instant.

use std::collections::BTreeMap;

use crate::npu::sim::SimStats;
use crate::rig::config::RigConfig;

use super::schema::{CameraReport, HostReport, Verdict};

/// The verdict on a run from its host costs, its cameras' frames and the
/// simulator's device time.
pub(super) fn verdict(
    rig: &RigConfig,
    host: &HostReport,
    cameras: &[CameraReport],
    sim: Option<&SimStats>,
) -> Verdict {
    let load = Load::new(rig, host);
    let captured: u64 = cameras.iter().map(|c| c.frames.captured).sum();
    let drops: u64 = cameras.iter().map(|c| c.frames.dropped_total()).sum();
    let sustained = drops == 0 && captured > 0;
    // The device's side: mean device time per frame (busy time over frames
    // done), from the simulator's timing model.
    let device_ms = sim.and_then(|s| {
        let frames: u64 = s.models.values().map(|m| m.frames).sum();
        (frames > 0).then(|| s.busy_ns as f64 / frames as f64 / 1e6)
    });
    let device_share = device_ms.map(|ms| ms * 1e-3 * load.offered);
    let floor = latency_floor(
        device_ms,
        host.decode_ms_per_frame,
        host.fit_ms_per_group,
        rig.cameras.len(),
        rig.decoder.threads,
    );
    let cpu_bound = load.heaviest();
    // The device limits first when it needs more of itself than the host
    // needs of its cores.
    let device_first = device_share.is_some_and(|d| d > 1.0 && d > load.total / load.cores as f64);
    let bottleneck = if device_first {
        Some("device".to_string())
    } else {
        cpu_bound.clone()
    };
    let text = if sustained {
        let (offered, total, cores) = (load.offered, load.total, load.cores);
        format!(
            "sustained: {offered:.0} frames/s offered, none dropped; the stages need {total:.2} of {cores} cores"
        )
    } else {
        let dropped = format!("not sustained: {drops} of {captured} frames dropped.");
        // The heaviest CPU stage: the bottleneck itself unless the device is.
        load.shortfall_text(
            host,
            &dropped,
            &cpu_bound.unwrap_or_default(),
            device_first,
            device_share,
        )
    };
    let text = match &floor {
        Some(fl) => format!("{text} {}", fl.text(load.group_rate)),
        None => text,
    };
    Verdict {
        sustained,
        frames_offered_per_s: load.offered,
        cores_needed: load.need,
        bottleneck: (!sustained).then_some(bottleneck).flatten(),
        device_share_needed: device_share,
        latency_floor_ms: floor.as_ref().map(LatencyFloor::total_ms),
        text,
    }
}

/// What the rig's rates ask of the host's cores.
struct Load {
    /// Frames per second over all cameras.
    offered: f64,
    /// Groups per second: the slowest camera's rate.
    group_rate: f64,
    cameras: usize,
    cores: usize,
    /// Cores each CPU stage needs at these rates.
    need: BTreeMap<String, f64>,
    /// All CPU stages together, cores.
    total: f64,
}

impl Load {
    fn new(rig: &RigConfig, host: &HostReport) -> Self {
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
        Self {
            offered,
            group_rate,
            cameras: rig.cameras.len(),
            cores: host.cores,
            need,
            total,
        }
    }

    /// The CPU stage that needs the most cores.
    fn heaviest(&self) -> Option<String> {
        self.need
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(k, _)| k.clone())
    }

    /// Why the host falls short: `cpu_stage`'s cost and what all CPU stages
    /// need of the machine, after the `dropped` sentence and, when the device
    /// limits first, the device's share.
    fn shortfall_text(
        &self,
        host: &HostReport,
        dropped: &str,
        cpu_stage: &str,
        device_first: bool,
        device_share: Option<f64>,
    ) -> String {
        let (offered, total, cores) = (self.offered, self.total, self.cores);
        let cpu_need = self.need.get(cpu_stage).copied().unwrap_or(0.0);
        let per_frame = match cpu_stage {
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
            offered / self.cameras as f64 * (cores as f64 / total.max(1e-9)).min(1.0)
        );
        match (device_first, device_share) {
            (true, Some(d)) => format!(
                "{dropped} Bottleneck: the device (modelled), which needs {d:.2}x its time at this rate. On the host the heaviest stage, {cpu_stage}, needs {per_frame}; {cpu_text}"
            ),
            (_, d) => format!(
                "{dropped} Bottleneck: {cpu_stage} needs {per_frame}; {cpu_text}{}",
                d.map(|d| format!(" The device (modelled) needs {d:.2}x its time at this rate.")).unwrap_or_default()
            ),
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
mod tests {
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
