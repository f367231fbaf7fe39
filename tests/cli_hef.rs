//! `hailo-edge hef inspect|verify` on the committed fixtures, field by field.

use assert_cmd::Command;

fn hailo_edge() -> Command {
    let mut cmd = Command::cargo_bin("hailo-edge").expect("binary builds");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

fn stdout_of(args: &[&str]) -> (bool, String, String) {
    let out = hailo_edge().args(args).output().expect("runs");
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8(out.stderr).expect("utf-8"),
    )
}

#[test]
fn inspect_lists_the_288_backbone_like_parse_hef() {
    let (ok, out, err) = stdout_of(&["hef", "inspect", "fixtures/backbone_288.hef"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().map(str::trim_end).collect();
    let expected = [
        "HEF file: fixtures/backbone_288.hef",
        "HEF header version: 3",
        "Architecture HEF was compiled for: HAILO1XH (hw_arch 103)",
        "HEF Compatible for: HAILO15H, HAILO10H",
        "HEF Compiler Version: 5.2.0",
        "Network group name: backbone_288, Single Context",
        "    Bottleneck FPS: 252.8",
        "    Operations per frame: 35.60 GOPs (35600000000)",
        "    Network name: backbone_288/backbone_288",
        "        VStream infos:",
        "            Input  backbone_288/input_layer1 UINT8, NHWC(288x288x3) (device order NHWC)",
        "                Quantization: zp=0 scale=0.003921569 limvals=[0, 1]",
        "            Output backbone_288/cross_attn_features UINT8, NHWC(24x24x256) (device order NHWC)",
        "                Quantization: zp=118 scale=0.02 limvals=[-2.36, 2.74]",
        "            Output backbone_288/features UINT8, NHWC(24x24x256) (device order NHWC)",
    ];
    assert_eq!(&lines[..expected.len()], &expected[..]);
    assert_eq!(
        lines.iter().filter(|l| l.contains("Quantization:")).count(),
        3
    );
}

#[test]
fn inspect_432_and_the_corner_cases() {
    let (ok, out, _) = stdout_of(&[
        "hef",
        "inspect",
        "fixtures/backbone_432.hef",
        "fixtures/two_groups.hef",
        "fixtures/multi_context.hef",
    ]);
    assert!(ok);
    for needle in [
        "Input  backbone_432/input_layer1 UINT8, NHWC(432x432x3)",
        "Output backbone_432/features UINT8, NHWC(36x36x256)",
        "Operations per frame: 97.40 GOPs (97400000000)",
        "Network group name: classifier, Single Context",
        "Network name: classifier/head_b",
        "Output classifier/head_b/fc1 UINT8, NC(10) (device order NC)",
        "Input  classifier/input_layer1 UINT8, NHWC(32x32x3) (device order RGB888)",
        "Output detector/nms1 FLOAT32, NMS_BY_CLASS(number of classes: 80, maximum bounding boxes per class: 100, maximum frame size: 160320) (device order NMS_ON_CHIP)",
        "Output detector/conv_t UINT8, NHWC(6x8x4) [transposed] (device order NHCW)",
        "Output detector/conv_16bit UINT16, NHWC(4x4x2)",
        "Quantization: per feature (3): zp=[1, 2, 3] scale=[0.5, 0.25, 0.125] limvals=[-1, 1]",
        "Network group name: multi_ctx, Multi Context - Number of contexts: 3",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    // Groups sorted by name; intermediate layers and the MUX itself not listed.
    assert!(
        out.find("classifier").expect("c") < out.find("Network group name: detector").expect("d")
    );
    assert!(!out.contains("intermediate") && !out.contains("mux_out"));
}

#[test]
fn inspect_json_carries_the_model() {
    let (ok, out, _) = stdout_of(&["hef", "inspect", "--json", "fixtures/backbone_288.hef"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let entry = &v[0];
    assert_eq!(entry["file"], "fixtures/backbone_288.hef");
    assert_eq!(
        entry["compatible_chips"],
        serde_json::json!(["HAILO15H", "HAILO10H"])
    );
    let ng = &entry["hef"]["network_groups"][0];
    assert_eq!(ng["name"], "backbone_288");
    assert_eq!(ng["ops_per_frame"], 35_600_000_000u64);
    assert_eq!(ng["inputs"][0]["shape"]["image"]["height"], 288);
    assert_eq!(ng["outputs"].as_array().expect("outputs").len(), 2);
    assert_eq!(ng["outputs"][1]["name"], "backbone_288/features");
    assert_eq!(ng["outputs"][1]["data_type"], "uint8");
}

#[test]
fn inspect_names_a_bad_file_and_fails() {
    let (ok, out, err) = stdout_of(&[
        "hef",
        "inspect",
        "fixtures/backbone_288.hef",
        "fixtures/corrupt_bad_magic.hef",
    ]);
    assert!(!ok);
    assert!(
        out.contains("backbone_288"),
        "the good file is still listed"
    );
    assert!(
        err.contains("fixtures/corrupt_bad_magic.hef") && err.contains("bad magic"),
        "{err}"
    );
    let (ok, out, _) = stdout_of(&["hef", "inspect", "--json", "fixtures/corrupt_truncated.hef"]);
    assert!(!ok);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert!(v[0]["error"]
        .as_str()
        .expect("error")
        .contains("corrupt_truncated.hef"));
}

#[test]
fn verify_one_line_per_file_and_exit_status() {
    let sound = [
        "fixtures/backbone_288.hef",
        "fixtures/backbone_432.hef",
        "fixtures/header_v0.hef",
        "fixtures/header_v3.hef",
    ];
    let mut args = vec!["hef", "verify"];
    args.extend(sound);
    let (ok, out, err) = stdout_of(&args);
    assert!(ok, "{out}{err}");
    assert_eq!(out.lines().count(), sound.len());
    assert!(out.lines().all(|l| l.starts_with("OK ")));

    let cases = [
        ("fixtures/corrupt_bad_magic.hef", "bad magic"),
        (
            "fixtures/corrupt_unknown_version.hef",
            "unknown header version 7",
        ),
        ("fixtures/corrupt_truncated.hef", "truncated"),
        ("fixtures/corrupt_size_mismatch.hef", "size mismatch"),
        (
            "fixtures/corrupt_checksum_mismatch.hef",
            "checksum mismatch",
        ),
        ("fixtures/corrupt_protobuf_garbage.hef", "protobuf"),
        (
            "fixtures/corrupt_unknown_extension.hef",
            "unknown required extension 99",
        ),
        ("fixtures/wrong_arch_hailo8.hef", "does not run on HAILO10H"),
    ];
    for (file, what) in cases {
        let (ok, out, _) = stdout_of(&["hef", "verify", "fixtures/backbone_288.hef", file]);
        assert!(!ok, "{file} must fail verify");
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].starts_with("OK "));
        assert!(
            lines[1].starts_with("FAIL") && lines[1].contains(file) && lines[1].contains(what),
            "{}",
            lines[1]
        );
    }
    // The arch check follows --chip.
    let verify_on = |chip: &str, file: &str| stdout_of(&["hef", "verify", "--chip", chip, file]);
    let (ok, _, _) = verify_on("hailo8", "fixtures/wrong_arch_hailo8.hef");
    assert!(ok);
    let (ok, _, _) = verify_on("any", "fixtures/wrong_arch_hailo8.hef");
    assert!(ok);
    let (ok, _, err) = verify_on("hailo99", "fixtures/backbone_288.hef");
    assert!(!ok && err.contains("unknown chip"), "{err}");
}

#[test]
fn missing_file_is_named() {
    let (ok, out, _) = stdout_of(&["hef", "verify", "fixtures/no_such.hef"]);
    assert!(!ok);
    assert!(
        out.contains("fixtures/no_such.hef") && out.contains("cannot read"),
        "{out}"
    );
}

#[test]
fn a_directory_stands_for_its_hef_files() {
    let (ok, out, _) = stdout_of(&["hef", "verify", "--chip", "any", "fixtures"]);
    assert!(!ok, "the corrupted fixtures fail");
    let hefs = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))
        .expect("fixtures")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "hef"))
        })
        .count();
    assert_eq!(out.lines().count(), hefs);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("FAIL")).count(),
        7,
        "{out}"
    );
    let (ok, _, err) = stdout_of(&["hef", "inspect", "src/cli"]);
    assert!(!ok && err.contains("holds no .hef files"), "{err}");
}
