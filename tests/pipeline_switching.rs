//! Application-driven switching (scheduling NONE) counts exactly what its
//! settings imply: with every frame queued up front and a zero-time device, the
//! NPU stage alternates blocks of K frames between the graphs while both have
//! frames, and the device counts one switch per activation.

mod common;

use std::sync::Arc;

use common::fixture;
use crossbeam_channel::{bounded, unbounded};
use nalgebra::{Point3, Vector3};

use hailo_edge::camera::synthetic::{SyntheticCamera, SyntheticSource};
use hailo_edge::camera::{CameraId, PixelFormat, Source};
use hailo_edge::geom::time::MonotonicClock;
use hailo_edge::geom::{Camera, Distortion};
use hailo_edge::npu::sim::{DeviceProfile, SimProfile};
use hailo_edge::npu::{Backend, Device, DeviceOptions, Scheduling};
use hailo_edge::preprocess::{InputSpec, PreprocessConfig, Preprocessor};
use hailo_edge::rig::stage::npu::{Lane, NpuStage, Switching};
use hailo_edge::rig::stage::Stage;
use hailo_edge::rig::stats::LiveStats;
use hailo_edge::scene::MarkerScene;

/// Runs `frames` frames per camera (three cameras on the 288 graph, one on the
/// 432 graph) through the stage with K = `k`; returns (device switches, app switches).
fn switches(k: u64, frames: usize) -> (u64, u64) {
    let profile = SimProfile::new(DeviceProfile::zero_time());
    let device = Device::open_with(
        Backend::Sim(profile),
        DeviceOptions {
            scheduling: Scheduling::None,
            group_id: None,
            ..DeviceOptions::default()
        },
    )
    .unwrap();
    let mut lanes = Vec::new();
    let mut specs = Vec::new();
    for (side, batch) in [(288, 3u16), (432, 1)] {
        let path = fixture(&format!("backbone_{side}.hef"));
        let hef = hef::Hef::from_bytes(&std::fs::read(&path).unwrap()).unwrap();
        let input = hef.network_groups[0].inputs[0].clone();
        specs.push(InputSpec::from_stream(&input).unwrap());
        let mut model = device.load_model_file(&path).unwrap();
        model.set_batch_size(batch).unwrap();
        let cm = model.configure().unwrap();
        // A long timeout: only K and running out of frames trigger switches.
        lanes.push(
            Lane::new(
                cm,
                input.name,
                usize::from(batch),
                1_000_000_000,
                2 * usize::from(batch),
            )
            .unwrap(),
        );
    }
    let camera_graph = vec![0, 0, 0, 1];
    let cams: Vec<SyntheticCamera> = camera_graph
        .iter()
        .enumerate()
        .map(|(i, _)| SyntheticCamera {
            camera: CameraId(i as u32),
            calibration: Camera::look_at(
                Point3::new(2.0, -2.0 + i as f64, 0.5),
                Point3::origin(),
                Vector3::z(),
                60.0,
                (64, 64),
                Distortion::default(),
            )
            .unwrap(),
            format: PixelFormat::Rgb24,
            fps: 120.0,
            offset_ns: 0,
        })
        .collect();
    let mut sources = SyntheticSource::rig(Arc::new(MarkerScene::default()), &cams, false).unwrap();
    let mut receivers = Vec::new();
    for source in &mut sources {
        let (tx, rx) = unbounded();
        for _ in 0..frames {
            tx.send(source.next_frame().unwrap()).unwrap();
        }
        receivers.push(rx);
    }
    let preprocessors = camera_graph
        .iter()
        .map(|&g| Preprocessor::new(specs[g].clone(), PreprocessConfig::default()).unwrap())
        .collect();
    let stats = Arc::new(LiveStats::new(4, 2));
    let (decode_tx, _decode_rx) = bounded(1);
    let (_recycle_tx, recycle_rx) = unbounded();
    let (bypass_tx, bypass_rx) = unbounded();
    let mut stage = NpuStage::new(
        lanes,
        preprocessors,
        camera_graph,
        receivers,
        vec![decode_tx],
        recycle_rx,
        Switching::Manual {
            frames_per_switch: k,
        },
        Arc::clone(&stats),
        Arc::new(MonotonicClock),
    );
    stage.bypass = Some(bypass_tx);
    stage.run().unwrap();
    assert_eq!(
        bypass_rx.len(),
        4 * frames,
        "every frame came back from the device"
    );
    let app = stats
        .app_switches
        .load(std::sync::atomic::Ordering::Relaxed);
    (device.sim_stats().unwrap().switches, app)
}

/// Blocks of K alternate while both graphs have frames; the graph left over keeps the device.
fn expected(k: u64, frames: u64) -> u64 {
    let body = (3 * frames).div_ceil(k);
    let face = frames.div_ceil(k);
    2 * body.min(face) + u64::from(body != face)
}

#[test]
fn manual_switching_counts_match_k() {
    for k in [6, 3, 100] {
        let (device, app) = switches(k, 8);
        assert_eq!(device, app, "K={k}: the device saw every activation");
        assert_eq!(app, expected(k, 8), "K={k}");
    }
    // The rule can say no: the counts differ between settings.
    assert_ne!(expected(6, 8), expected(3, 8));
}
