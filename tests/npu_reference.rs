//! Reference ONNX outputs: the simulator runs the graph's float model on the
//! CPU (tract) and quantises per the HEF's output quant info. The ONNX is
//! built here through tract's protobuf types, so no Python is needed.
#![cfg(feature = "sim-onnx")]

mod common;

use std::time::Duration;

use common::{configured, open, tiny_hef};
use hailo_edge::metrics::ops::builder::{value_info, Dim};
use hailo_edge::npu::sim::{
    DeviceProfile, Link, OutputKind, ProfileFigure, ReferenceModel, SimProfile,
};
use hailo_edge::npu::{Direction, FormatType};
use prost::Message;
use tract_onnx::pb;

const W: [f32; 9] = [0.5, -1.0, 0.25, 1.0, 0.5, -0.5, -0.25, 0.75, 1.0];

fn tensor(name: &str, dims: &[usize]) -> pb::ValueInfoProto {
    let dims: Vec<Dim> = dims.iter().map(|&d| d.into()).collect();
    value_info(name, &dims)
}

/// output[1,2,2,3] = x[1,2,2,3] @ W[3,3]; the output is named like the HEF's.
fn matmul_onnx() -> Vec<u8> {
    matmul_onnx_named("output")
}

fn matmul_onnx_named(out: &str) -> Vec<u8> {
    let graph = pb::GraphProto {
        name: "ref".into(),
        node: vec![pb::NodeProto {
            op_type: "MatMul".into(),
            input: vec!["x".into(), "w".into()],
            output: vec![out.into()],
            ..Default::default()
        }],
        initializer: vec![pb::TensorProto {
            name: "w".into(),
            dims: vec![3, 3],
            data_type: 1,
            float_data: W.to_vec(),
            ..Default::default()
        }],
        input: vec![tensor("x", &[1, 2, 2, 3])],
        output: vec![tensor(out, &[1, 2, 2, 3])],
        ..Default::default()
    };
    pb::ModelProto {
        ir_version: 7,
        opset_import: vec![pb::OperatorSetIdProto {
            domain: String::new(),
            version: 13,
        }],
        graph: Some(graph),
        ..Default::default()
    }
    .encode_to_vec()
}

#[test]
fn outputs_are_the_reference_graph_quantised() {
    let reference = ReferenceModel::from_onnx_bytes(&matmul_onnx()).unwrap();
    // 2 x (2 x 2 x 3 x 3) multiply-accumulates.
    assert_eq!(reference.ops_per_frame(), Some(72));
    // A device slow enough that 72 ops take one second shows the ops came
    // from the ONNX (the HEF states none).
    let slow = DeviceProfile {
        int8_ops_per_s: ProfileFigure::assumed(240.0, "test: 72 ops at 30 % take 1 s"),
        ..DeviceProfile::hailo10h().with_link(Link::free())
    };
    let device = open(SimProfile::new(slow).with_reference("ref", reference));
    let mut model = device.load_model(&tiny_hef("ref", 2, 3, None)).unwrap();
    let cm = model.configure().unwrap();
    assert_eq!(cm.output_kind(), OutputKind::SimReference);

    let input: Vec<u8> = (0..12u8).map(|i| i * 20).collect();
    let mut b = cm.bindings().unwrap();
    b.write_input("ref/input", &input).unwrap();
    let mut job = cm.run_async(b).unwrap();
    let done = job.wait(Duration::from_secs(10)).unwrap();
    done.status.unwrap();
    assert_eq!(done.output_kind, OutputKind::SimReference);
    // Expected, computed here: dequantise (zp 0, scale 1/255), multiply,
    // quantise (zp 128, scale 0.01), clamp to u8.
    let x: Vec<f32> = input.iter().map(|&q| f32::from(q) / 255.0).collect();
    let mut want = vec![0u8; 12];
    for pixel in 0..4 {
        for j in 0..3 {
            let y: f32 = (0..3).map(|k| x[pixel * 3 + k] * W[k * 3 + j]).sum();
            want[pixel * 3 + j] = (y / 0.01 + 128.0).round().clamp(0.0, 255.0) as u8;
        }
    }
    let got = done.bindings.output("ref/output").unwrap().to_vec();
    assert_eq!(got, want);
    // Negative control: a different input gives different outputs.
    let mut b = done.bindings;
    b.write_input("ref/input", &[0u8; 12]).unwrap();
    let b = cm.run(b, Duration::from_secs(10)).unwrap();
    assert_ne!(b.output("ref/output").unwrap(), &want[..]);
    assert!(b.output("ref/output").unwrap().iter().all(|&q| q == 128));
    assert_eq!(device.sim_stats().unwrap().compute_ns, 2_000_000_000);

    // FLOAT32 outputs are the dequantised device values.
    model
        .set_format_type(Direction::Output, "ref/output", FormatType::Float32)
        .unwrap();
    let cm = model.configure().unwrap();
    let floats = common::run_f32(&cm, "ref/input", &input, "ref/output");
    for (f, q) in floats.iter().zip(&want) {
        assert!((f - (f32::from(*q) - 128.0) * 0.01).abs() < 1e-6);
    }
}

#[test]
fn a_broken_onnx_is_a_clear_error() {
    let err = ReferenceModel::from_onnx_bytes(b"not an onnx model")
        .unwrap_err()
        .to_string();
    assert!(err.contains("ONNX"), "{err}");
}

#[test]
fn a_reference_that_does_not_fit_the_hef_fails_the_job() {
    // The HEF's output has 4 features where the reference gives 3; the reference's
    // output is named otherwise than the HEF's `ref/output` (outputs pair by name).
    for (features, output) in [(4, "output"), (3, "y")] {
        let reference = ReferenceModel::from_onnx_bytes(&matmul_onnx_named(output)).unwrap();
        let device =
            open(SimProfile::new(DeviceProfile::hailo10h()).with_reference("ref", reference));
        let cm = configured(&device, &tiny_hef("ref", 2, features, Some(100)));
        let err = cm
            .run(cm.bindings().unwrap(), Duration::from_secs(10))
            .unwrap_err();
        assert_eq!(
            err.status(),
            Some(hailo_edge::npu::Status::InternalFailure),
            "{features} features, output {output}: {err}"
        );
    }
    // Negative control: the fitting HEF and the fitting name run.
    let reference = ReferenceModel::from_onnx_bytes(&matmul_onnx()).unwrap();
    let device = open(SimProfile::new(DeviceProfile::hailo10h()).with_reference("ref", reference));
    let cm = configured(&device, &tiny_hef("ref", 2, 3, Some(100)));
    cm.run(cm.bindings().unwrap(), Duration::from_secs(10))
        .unwrap();
}
