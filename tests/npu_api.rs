//! The full NPU API path on the simulator: open, load a HEF fixture, inspect,
//! set batch and formats, configure, bind, run, run_async, submit, stats.

mod common;

use std::time::Duration;

use common::{compute_only, fixture, open};
use hailo_edge::npu::sim::OutputKind;
use hailo_edge::npu::{Backend, BackendKind, Device, Direction, FormatType, Status};

const T: Duration = Duration::from_secs(10);

#[test]
fn full_path_on_the_288_backbone_fixture() {
    let device = open(compute_only());
    assert_eq!(device.backend(), BackendKind::Sim);
    assert!(device.describe().contains("simulator"));
    assert_eq!(device.library_version().unwrap(), (5, 2, 0));

    let mut model = device.load_model_file(fixture("backbone_288.hef")).unwrap();
    let hef = hef::Hef::open(fixture("backbone_288.hef")).unwrap();
    let group = &hef.network_groups[0];
    assert_eq!(model.name(), group.name);
    assert_eq!(model.inputs().len(), group.inputs.len());
    assert_eq!(model.outputs().len(), group.outputs.len());
    let input = model.inputs()[0].clone();
    assert_eq!(input.shape, (288, 288, 3));
    assert_eq!(input.frame_size, 288 * 288 * 3);
    assert_eq!(input.direction, Direction::Input);
    let out0 = model.outputs()[0].clone();
    assert_eq!(out0.frame_size as u64, group.outputs[0].frame_size());
    assert_eq!(model.computational_ops().unwrap(), 35_600_000_000);

    // FLOAT32 outputs are four bytes per element.
    model
        .set_format_type(Direction::Output, &out0.name, FormatType::Float32)
        .unwrap();
    assert_eq!(model.outputs()[0].frame_size, out0.frame_size * 4);
    assert_eq!(model.outputs()[0].format_type, FormatType::Float32);
    model.set_batch_size(2).unwrap();
    model.set_ultra_performance(false).unwrap();

    let cm = model.configure().unwrap();
    assert_eq!(cm.output_kind(), OutputKind::SimSynthetic);
    cm.set_scheduler_priority(20).unwrap();
    cm.set_scheduler_threshold(1).unwrap();
    cm.set_scheduler_timeout(Duration::from_millis(5)).unwrap();

    // Blocking run.
    let mut b = cm.bindings().unwrap();
    let frame = vec![7u8; input.frame_size];
    b.write_input(&input.name, &frame).unwrap();
    let b = cm.run(b, T).unwrap();
    let first: Vec<u8> = b.output(&out0.name).unwrap().to_vec();
    assert_eq!(first.len(), out0.frame_size * 4);
    // Dequantised floats are finite values within the quant range.
    let floats = common::f32s(&first);
    let q = out0.quant[0];
    assert!(floats
        .iter()
        .all(|v| v.is_finite() && *v >= q.limvals_min - 1e-3 && *v <= q.limvals_max + 1e-3));
    assert!(
        floats.iter().any(|v| *v != floats[0]),
        "outputs are not constant"
    );

    // run_async: the bindings travel with the job and come back.
    let mut job = cm.run_async(b).unwrap();
    let done = job.wait(T).unwrap();
    done.status.unwrap();
    assert_eq!(done.output_kind, OutputKind::SimSynthetic);
    let second = done.bindings.output(&out0.name).unwrap().to_vec();
    assert_ne!(first, second, "synthetic outputs depend on the job number");
    assert!(matches!(
        job.wait(T),
        Err(hailo_edge::npu::NpuError::AlreadyCompleted { .. })
    ));

    // submit / pending / wait_next_complete, reusing the returned bindings.
    let mut bindings = vec![done.bindings];
    for _ in 0..3 {
        bindings.push(cm.bindings().unwrap());
    }
    let mut ids = vec![];
    for b in bindings {
        ids.push(cm.submit(b).unwrap());
    }
    let mut seen = vec![];
    while seen.len() < ids.len() {
        let c = cm.wait_next_complete(T).expect("a completion");
        c.status.unwrap();
        seen.push(c.job);
    }
    seen.sort_unstable();
    assert_eq!(seen, ids);
    assert_eq!(cm.pending(), 0);

    let stats = device.sim_stats().unwrap();
    let m = &stats.models[&group.name];
    assert_eq!(m.frames, 6);
    assert_eq!(stats.bytes_in, 6 * 288 * 288 * 3);
    assert_eq!(
        stats.bytes_out,
        6 * group.outputs.iter().map(|s| s.frame_size()).sum::<u64>()
    );
    assert!(stats.compute_ns > 0 && stats.busy_ns >= stats.compute_ns);
    let perf = device.performance_stats().unwrap();
    assert!(perf.nnc_utilization > 0.0 && perf.nnc_utilization <= 100.0);
    assert_eq!(
        device.power().unwrap_err().status(),
        Some(Status::NotSupported)
    );
}

#[test]
fn outputs_are_deterministic_across_devices() {
    let run = || {
        let device = open(compute_only());
        let model = device.load_model_file(fixture("backbone_288.hef")).unwrap();
        let cm = model.configure().unwrap();
        let mut job = cm.run_async(cm.bindings().unwrap()).unwrap();
        let done = job.wait(T).unwrap();
        let out = done.bindings.outputs().next().unwrap().to_vec();
        out
    };
    assert_eq!(run(), run());
}

#[test]
fn auto_backend_says_which_it_took() {
    let device = Device::open(Backend::Auto).unwrap();
    if hailort_sys::HAILORT_LINKED {
        eprintln!("SKIPPED: this build links HailoRT; Auto may take a real device");
        return;
    }
    // Without HailoRT, Auto must fall back to the simulator and say so.
    assert_eq!(device.backend(), BackendKind::Sim);
    assert!(device.describe().starts_with("simulator"));
    assert!(!device.assumptions().is_empty());
    let err = Device::open(Backend::HailoRt { device_id: None }).unwrap_err();
    assert!(err.to_string().contains("does not link HailoRT"), "{err}");
}

#[test]
fn load_from_memory_matches_load_from_file() {
    let device = open(compute_only());
    let bytes = std::fs::read(fixture("backbone_432.hef")).unwrap();
    let a = device.load_model(&bytes).unwrap();
    let b = device.load_model_file(fixture("backbone_432.hef")).unwrap();
    assert_eq!(a.name(), b.name());
    assert_eq!(a.outputs().len(), b.outputs().len());
    assert_eq!(a.inputs()[0].shape, (432, 432, 3));
}

#[test]
fn format_order_is_set_per_stream() {
    let device = open(compute_only());
    let mut model = device.load_model_file(fixture("backbone_288.hef")).unwrap();
    let name = model.inputs()[0].name.clone();
    let nhwc = hef::FormatOrder::Nhwc.c_value();
    let nchw = hef::FormatOrder::Nchw.c_value();
    assert_eq!(model.inputs()[0].format_order, nhwc);
    model
        .set_format_order(Direction::Input, &name, nchw)
        .unwrap();
    assert_eq!(model.inputs()[0].format_order, nchw);
    // Not a hailo_format_order_t value: refused by the table.
    let err = model
        .set_format_order(Direction::Input, &name, 99)
        .unwrap_err();
    assert_eq!(err.status(), Some(Status::InvalidArgument));
    assert_eq!(model.inputs()[0].format_order, nchw);
}
