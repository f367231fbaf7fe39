//! `hailo-edge ops` on small hand-built graphs whose MAC counts are computed by hand.

mod common;

use common::cli::{hailo_edge, json, write};
use hailo_edge::metrics::ops::builder::{encode, Attr, Dim, GraphBuilder};
use hailo_edge::metrics::ops::{count_bytes, InputShape};

/// x[N,4,8,8] -> Conv 3x3 (6 out, pad 1) -> Relu -> ConvTranspose 2x2/2 (6 -> 2)
/// and a broadcast batched MatMul [2,3,4,5] x [3,5,7] and a Gemm with transB.
fn small_graph(with_unknown_op: bool) -> Vec<u8> {
    let mut g = GraphBuilder::new("small", 17);
    let x = g.input("x", &[Dim::from("N"), 4.into(), 8.into(), 8.into()]);
    let a = g.input("a", &[2.into(), 3.into(), 4.into(), 5.into()]);
    let w = g.random("w", &[6, 4, 3, 3], 0.1);
    let conv = g.node(
        "Conv",
        "conv",
        &[&x, &w],
        &[("pads", Attr::Ints(vec![1, 1, 1, 1]))],
    );
    let relu = g.node("Relu", "relu", &[&conv], &[]);
    let src = if with_unknown_op {
        g.node("FancyOp", "mystery", &[&relu], &[])
    } else {
        relu
    };
    let wt = g.random("wt", &[6, 2, 2, 2], 0.1);
    let up = g.node(
        "ConvTranspose",
        "up",
        &[&src, &wt],
        &[("strides", Attr::Ints(vec![2, 2]))],
    );
    g.output(&up);
    let b = g.random("b", &[3, 5, 7], 0.1);
    let mm = g.node("MatMul", "bmm", &[&a, &b], &[]);
    g.output(&mm);
    let ga = g.random("ga", &[10, 12], 0.1);
    let gb = g.random("gb", &[9, 12], 0.1);
    let gemm = g.node("Gemm", "gemm", &[&ga, &gb], &[("transB", Attr::Int(1))]);
    g.output(&gemm);
    encode(&g.finish())
}

const CONV: u64 = 6 * 8 * 8 * 4 * 3 * 3; // out elements x Cin x k
const CONV_T: u64 = 6 * 8 * 8 * 2 * 2 * 2; // in elements x Cout x k
const BMM: u64 = 2 * 3 * 4 * 7 * 5; // out elements x K
const GEMM: u64 = 10 * 9 * 12; // M x N x K

fn pinned() -> Vec<InputShape> {
    vec!["x=1x4x8x8".parse().unwrap()]
}

#[test]
fn hand_computed_counts() {
    let report = count_bytes("small", &small_graph(false), &pinned()).unwrap();
    assert!(report.is_complete(), "{:?}", report.unresolved);
    let by_name = |n: &str| report.nodes.iter().find(|c| c.name == n).unwrap().macs;
    assert_eq!(by_name("conv"), CONV);
    assert_eq!(by_name("up"), CONV_T);
    assert_eq!(by_name("bmm"), BMM);
    assert_eq!(by_name("gemm"), GEMM);
    assert_eq!(by_name("relu"), 0);
    assert_eq!(report.total_macs(), CONV + CONV_T + BMM + GEMM);
}

#[test]
fn symbolic_batch_without_input_pin_is_incomplete() {
    let report = count_bytes("small", &small_graph(false), &[]).unwrap();
    assert!(!report.is_complete());
    let names: Vec<_> = report.unresolved.iter().map(|u| u.name.as_str()).collect();
    assert!(
        names.contains(&"conv") && names.contains(&"up"),
        "{names:?}"
    );
    // The nodes that do not depend on x are still counted.
    assert_eq!(report.total_macs(), BMM + GEMM);
}

#[test]
fn unknown_op_makes_the_count_incomplete_and_is_named() {
    let report = count_bytes("small", &small_graph(true), &pinned()).unwrap();
    assert!(!report.is_complete());
    let mystery = report
        .unresolved
        .iter()
        .find(|u| u.name == "mystery")
        .expect("mystery listed");
    assert_eq!(mystery.op_type, "FancyOp");
    // The ConvTranspose after it has no input shape, so it is listed too, never counted as 0.
    assert!(
        report.unresolved.iter().any(|u| u.name == "up"),
        "{:?}",
        report.unresolved
    );
    assert!(report.nodes.iter().all(|n| n.name != "up"));
}

#[test]
fn bad_input_name_is_an_error_naming_the_inputs() {
    let err = count_bytes(
        "small",
        &small_graph(false),
        &["image=1x3x8x8".parse().unwrap()],
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("image") && msg.contains("x, a"), "{msg}");
    assert!("x=1xAx8".parse::<InputShape>().is_err());
}

#[test]
fn cli_exit_status_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write(&dir, "ok.onnx", small_graph(false));
    let bad = write(&dir, "bad.onnx", small_graph(true));

    let v = json(
        hailo_edge()
            .args(["ops", "--json", "--input", "x=1x4x8x8"])
            .arg(&ok),
    );
    assert_eq!(v["complete"], true);
    assert_eq!(v["total_macs"], CONV + CONV_T + BMM + GEMM);

    let out = hailo_edge()
        .args(["ops", "--input", "x=1x4x8x8"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("INCOMPLETE") && text.contains("mystery (FancyOp)"),
        "{text}"
    );

    let out = hailo_edge().args(["ops", "missing.onnx"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.onnx"));
}

/// A graph `y = x + c` whose initializer `c` is re-typed by `edit`: encodings tract's
/// tensor loader stops on (`unimplemented!`) instead of returning an error.
fn malformed_initializer(edit: impl FnOnce(&mut tract_onnx::pb::TensorProto)) -> Vec<u8> {
    let mut g = GraphBuilder::new("malformed", 17);
    let x = g.input("x", &[2.into()]);
    let c = g.floats("c", &[2], &[1.0, 2.0]);
    let y = g.node("Add", "add", &[&x, &c], &[]);
    g.output(&y);
    let mut model = g.finish();
    edit(&mut model.graph.as_mut().unwrap().initializer[0]);
    encode(&model)
}

#[test]
fn malformed_onnx_is_an_error_naming_the_file_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    // A string tensor in raw bytes (tract's loader stops on it), and a complex tensor in
    // typed fields (tract refuses it with an error).
    let cases = [
        (
            "raw_string.onnx",
            malformed_initializer(|t| t.data_type = 8),
        ),
        (
            "complex.onnx",
            malformed_initializer(|t| {
                t.data_type = 14;
                t.float_data = vec![1.0, 2.0, 3.0, 4.0];
                t.raw_data.clear();
            }),
        ),
    ];
    for (name, bytes) in cases {
        let err = count_bytes(name, &bytes, &[]).unwrap_err().to_string();
        assert!(err.contains(name) && !err.contains("panic"), "{err}");
        if name == "raw_string.onnx" {
            // tract stops on this one (`unimplemented!`); its words come through as an error.
            assert!(err.contains("tract cannot load this graph"), "{err}");
        }
        let path = write(&dir, name, &bytes);
        let out = hailo_edge().arg("ops").arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(name), "{stderr}");
        assert!(!stderr.contains("panic"), "{stderr}");
    }
}
