//! Helpers shared by the integration tests: the NPU tests' devices and HEFs here, running the
//! binary in [`cli`], publishing boxes in [`boxes`], a small backbone in [`vit`], the dashboard's run and stream in [`serve`]
//! and headless Chromium in [`chromium`].
#![allow(dead_code)]

pub mod boxes;
pub mod chromium;
pub mod cli;
pub mod serve;
pub mod vit;

use std::path::PathBuf;

use hailo_edge::npu::sim::{DeviceProfile, Link, ManualClock, SimProfile, TimeBase};
use hailo_edge::npu::{Backend, ConfiguredModel, Device, DeviceOptions, Scheduling};

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// A Hailo-10H on the virtual clock with no link time.
pub fn compute_only() -> SimProfile {
    SimProfile::new(DeviceProfile::hailo10h().with_link(Link::free()))
}

pub fn open(profile: SimProfile) -> Device {
    Device::open(Backend::Sim(profile)).expect("open the simulator")
}

/// A compute-only device on a manual clock, and the clock that drives it.
pub fn open_manual_clock() -> (ManualClock, Device) {
    let clock = ManualClock::new();
    let device = open(compute_only().with_clock(TimeBase::Manual(clock.clone())));
    (clock, device)
}

/// The little-endian f32 values of a FLOAT32 stream's buffer.
pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// One frame through `cm`: `frame` written to the input stream `input`, the
/// FLOAT32 output stream `output` read back.
pub fn run_f32(cm: &ConfiguredModel, input: &str, frame: &[u8], output: &str) -> Vec<f32> {
    let mut b = cm.bindings().unwrap();
    b.write_input(input, frame).unwrap();
    let b = cm.run(b, std::time::Duration::from_secs(10)).unwrap();
    f32s(b.output(output).unwrap())
}

/// `hef` loaded on `device` and configured with the defaults.
pub fn configured(device: &Device, hef: &[u8]) -> ConfiguredModel {
    device.load_model(hef).unwrap().configure().unwrap()
}

/// `hef` loaded on `device` with batch size `batch`, then configured.
pub fn configured_with_batch(device: &Device, hef: &[u8], batch: u16) -> ConfiguredModel {
    let mut model = device.load_model(hef).unwrap();
    model.set_batch_size(batch).unwrap();
    model.configure().unwrap()
}

pub fn open_manual_scheduling(profile: SimProfile) -> Device {
    Device::open_with(
        Backend::Sim(profile),
        DeviceOptions {
            scheduling: Scheduling::None,
            group_id: None,
            ..DeviceOptions::default()
        },
    )
    .expect("open the simulator")
}

/// A small HEF in memory: one (h, w, 3) input, one (h, w, c) output.
pub fn tiny_hef(name: &str, side: u32, out_features: u32, ops: Option<u64>) -> Vec<u8> {
    use hef::samples::{group, stream};
    use hef::{Direction, HeaderVersion, Hef, HwArch, QuantInfo, Quantization, StreamShape};
    let q = |zp: f32, scale: f32| {
        Quantization::Uniform(QuantInfo {
            zp,
            scale,
            limvals_min: -zp * scale,
            limvals_max: (255.0 - zp) * scale,
        })
    };
    let input = stream(
        name,
        "input",
        Direction::Input,
        StreamShape::Image {
            height: side,
            width: side,
            features: 3,
        },
        q(0.0, 1.0 / 255.0),
    );
    let output = stream(
        name,
        "output",
        Direction::Output,
        StreamShape::Image {
            height: side,
            width: side,
            features: out_features,
        },
        q(128.0, 0.01),
    );
    let mut g = group(name, 1, vec![input], vec![output]);
    g.ops_per_frame = ops;
    let hef = Hef {
        header_version: HeaderVersion::V3,
        hw_arch: HwArch::HAILO1XH,
        sdk_version: Some("5.2.0".into()),
        network_groups: vec![g],
    };
    hef::HefBuilder::new(&hef)
        .build()
        .expect("write the tiny HEF")
}

/// A fresh simulated device id (so parallel tests never share a device).
pub fn sim_id() -> String {
    hailo_edge::npu::sim::registry::register(compute_only())
}
