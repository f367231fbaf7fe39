//! The committed fixtures: up to date, listed as their models, and each
//! corrupted variant refused with its own error naming the file.

use std::path::{Path, PathBuf};

use hef::samples::{self, fixture_files};
use hef::{
    ChecksumAlgorithm, Chip, DataType, Direction, ErrorClass, FormatOrder, HeaderVersion, Hef,
    HefErrorKind, HwArch, Quantization, ReaderOptions, StreamShape,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(name)
}

fn sorted(mut hef: Hef) -> Hef {
    hef.network_groups.sort_by(|a, b| a.name.cmp(&b.name));
    hef
}

#[test]
fn fixtures_are_up_to_date_and_deterministic() {
    let first = fixture_files().expect("samples write");
    let second = fixture_files().expect("samples write");
    assert_eq!(first, second, "the generator is not deterministic");
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, bytes) in &first {
        std::fs::write(dir.path().join(name), bytes).expect("write");
        let committed = std::fs::read(fixture(name)).unwrap_or_else(|e| {
            panic!("{name}: {e}; run `cargo run -p hef --example make_fixtures -- fixtures`")
        });
        let fresh = std::fs::read(dir.path().join(name)).expect("read back");
        assert!(
            committed == fresh,
            "fixtures/{name} differs from a fresh generation; run `cargo run -p hef --example make_fixtures -- fixtures`"
        );
    }
    let committed: Vec<_> = std::fs::read_dir(fixture(""))
        .expect("fixtures dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".hef"))
        .collect();
    for name in committed {
        assert!(
            first.iter().any(|(n, _)| *n == name),
            "stale fixture {name}"
        );
    }
}

#[test]
fn valid_fixtures_list_their_models() {
    let cases = [
        ("backbone_288.hef", samples::backbone(288)),
        ("backbone_432.hef", samples::backbone(432)),
        ("backbone_taps_288.hef", samples::backbone_taps(288)),
        ("two_groups.hef", samples::two_groups()),
        ("multi_context.hef", samples::multi_context()),
        ("header_v0.hef", samples::tiny(HeaderVersion::V0)),
        ("header_v1.hef", samples::tiny(HeaderVersion::V1)),
        ("header_v2.hef", samples::tiny(HeaderVersion::V2)),
        ("header_v3.hef", samples::tiny(HeaderVersion::V3)),
        ("header_v3_proto_hash.hef", samples::tiny(HeaderVersion::V3)),
    ];
    for (name, model) in cases {
        let hef = Hef::open(fixture(name)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(hef, sorted(model), "{name}");
        hef.check_compatible(Chip::Hailo10H)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let h8l = Hef::open(fixture("hailo8l_multi_layout.hef")).expect("multi-layout reads");
    assert_eq!(h8l.hw_arch, HwArch::HAILO8L);
    assert_eq!(h8l.network_groups[0].name, "tiny_net");
    assert_eq!(h8l.network_groups[0].outputs.len(), 1);
}

#[test]
fn backbone_fixtures_hold_the_rf_detr_backbone() {
    for (side, macs) in [(288u32, 17.8e9), (432, 48.7e9)] {
        let hef = Hef::open(fixture(&format!("backbone_{side}.hef"))).expect("reads");
        assert_eq!(hef.header_version, HeaderVersion::V3);
        assert_eq!(hef.hw_arch, HwArch(103));
        assert_eq!(hef.compatible_chips(), &[Chip::Hailo15H, Chip::Hailo10H]);
        let [ng] = hef.network_groups.as_slice() else {
            panic!("one group")
        };
        assert_eq!(ng.name, format!("backbone_{side}"));
        assert!(!ng.is_multi_context());
        assert_eq!(ng.ops_per_frame, Some((2.0 * macs) as u64));
        let fps = ng.bottleneck_fps.expect("bottleneck fps");
        assert!((20.0..2000.0).contains(&fps), "{fps}");
        let [input] = ng.inputs.as_slice() else {
            panic!("one input")
        };
        assert_eq!(
            input.shape,
            StreamShape::Image {
                height: side,
                width: side,
                features: 3
            }
        );
        assert_eq!(
            (input.data_type, input.device_order, input.host_order),
            (DataType::Uint8, FormatOrder::Nhwc, FormatOrder::Nhwc)
        );
        assert_eq!(input.direction, Direction::Input);
        // The design split: the ViT and both projectors, two named 256-channel maps.
        let names: Vec<String> = ng.outputs.iter().map(|o| o.name.clone()).collect();
        assert_eq!(
            names,
            [
                format!("backbone_{side}/cross_attn_features"),
                format!("backbone_{side}/features")
            ]
        );
        let g = side / 12;
        let mut scales = Vec::new();
        for out in &ng.outputs {
            assert_eq!(
                out.shape,
                StreamShape::Image {
                    height: g,
                    width: g,
                    features: 256
                }
            );
            assert_eq!(out.data_type, DataType::Uint8);
            let Quantization::Uniform(q) = out.quant else {
                panic!("uniform")
            };
            scales.push(q.scale.to_bits());
        }
        scales.sort_unstable();
        scales.dedup();
        assert_eq!(scales.len(), 2, "each output has its own quantisation");
    }
}

#[test]
fn two_groups_cover_the_listing_rules() {
    let hef = Hef::open(fixture("two_groups.hef")).expect("reads");
    let names: Vec<_> = hef.network_groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["classifier", "detector"], "sorted by name");
    let c = hef.network_group("classifier").expect("classifier");
    assert_eq!(c.networks, ["classifier/head_a", "classifier/head_b"]);
    assert_eq!(
        c.stream("classifier/head_b/fc1").expect("stream").network,
        "classifier/head_b"
    );
    assert_eq!(c.inputs[0].device_order, FormatOrder::Rgb888);
    assert_eq!(c.inputs[0].host_order, FormatOrder::Nhwc);
    let d = hef.network_group("detector").expect("detector");
    let nms = d.stream("detector/nms1").expect("nms");
    assert_eq!(
        nms.shape,
        StreamShape::Nms {
            classes: 80,
            bbox_params: 5,
            max_bboxes_per_class: 100
        }
    );
    assert_eq!(nms.host_order, FormatOrder::NmsByClass);
    let t = d.stream("detector/conv_t").expect("transposed");
    assert!(t.transposed);
    assert_eq!(
        t.shape,
        StreamShape::Image {
            height: 6,
            width: 8,
            features: 4
        }
    );
    assert_eq!(
        d.stream("detector/conv_16bit").expect("u16").data_type,
        DataType::Uint16
    );
    let Quantization::PerFeature(qs) = &d.stream("detector/conv_pf").expect("pf").quant else {
        panic!("per-feature")
    };
    assert_eq!(
        qs.iter().map(|q| q.scale).collect::<Vec<_>>(),
        [0.5, 0.25, 0.125]
    );
}

#[test]
fn multi_context_lists_boundary_layers_and_expands_the_mux() {
    let hef = Hef::open(fixture("multi_context.hef")).expect("reads");
    let ng = &hef.network_groups[0];
    assert_eq!(ng.contexts, 3);
    assert!(ng.is_multi_context());
    // The file also holds intermediate context-to-context layers and a MUX.
    let names: Vec<_> = ng.streams().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "multi_ctx/input_layer1",
            "multi_ctx/output_layer1",
            "multi_ctx/output_layer2"
        ]
    );
}

fn expect_error(name: &str, class: ErrorClass, check: impl Fn(&HefErrorKind) -> bool) {
    let path = fixture(name);
    let err = Hef::open(&path).expect_err(name);
    assert_eq!(err.class(), class, "{name}: {err}");
    assert!(check(err.kind()), "{name}: unexpected {err:?}");
    let shown = err.to_string();
    assert!(shown.contains(name), "{shown} does not name the file");
    assert_eq!(err.path(), Some(path.as_path()));
    // The same bytes in memory give the same kind of error.
    let mem = Hef::from_bytes(&std::fs::read(&path).expect("read")).expect_err(name);
    assert_eq!(
        std::mem::discriminant(mem.kind()),
        std::mem::discriminant(err.kind())
    );
}

#[test]
fn each_corruption_class_gives_its_error() {
    // The corrupted files are variants of header_v2.hef.
    let base = std::fs::metadata(fixture("header_v2.hef"))
        .expect("base")
        .len();
    expect_error("corrupt_bad_magic.hef", ErrorClass::NotSupported, |k| {
        matches!(k, HefErrorKind::BadMagic { found: 0x01454c46 })
    });
    expect_error(
        "corrupt_unknown_version.hef",
        ErrorClass::NotSupported,
        |k| matches!(k, HefErrorKind::UnknownVersion { version: 7 }),
    );
    expect_error(
        "corrupt_unknown_extension.hef",
        ErrorClass::NotSupported,
        |k| matches!(k, HefErrorKind::UnknownExtension { index: 99, name } if name == "FUTURE_FEATURE"),
    );
    expect_error(
        "corrupt_truncated.hef",
        ErrorClass::Corrupted,
        |k| matches!(k, HefErrorKind::Truncated { needed, available, .. } if *needed == base && *available == base - 100),
    );
    expect_error(
        "corrupt_size_mismatch.hef",
        ErrorClass::Corrupted,
        |k| matches!(k, HefErrorKind::SizeMismatch { header, actual } if *header == base && *actual == base + 16),
    );
    expect_error(
        "corrupt_checksum_mismatch.hef",
        ErrorClass::Corrupted,
        |k| matches!(k, HefErrorKind::ChecksumMismatch { algorithm: ChecksumAlgorithm::Xxh3, expected, actual } if expected != actual),
    );
    expect_error("corrupt_protobuf_garbage.hef", ErrorClass::Corrupted, |k| {
        matches!(k, HefErrorKind::Protobuf { .. })
    });
}

#[test]
fn wrong_arch_is_sound_but_not_for_hailo10h() {
    let path = fixture("wrong_arch_hailo8.hef");
    let hef = Hef::verify(&path).expect("structurally sound");
    hef.check_compatible(Chip::Hailo8).expect("runs on Hailo-8");
    let err = hef
        .check_compatible(Chip::Hailo10H)
        .expect_err("not on Hailo-10H")
        .with_path(&path);
    assert_eq!(err.class(), ErrorClass::NotCompatible);
    let shown = err.to_string();
    assert!(
        shown.contains("wrong_arch_hailo8.hef")
            && shown.contains("HAILO10H")
            && shown.contains("HAILO8"),
        "{shown}"
    );
}

#[test]
fn checksum_is_skipped_only_when_asked() {
    let path = fixture("corrupt_checksum_mismatch.hef");
    let lazy = ReaderOptions::new()
        .verify_checksum(false)
        .open(&path)
        .expect("lists without hashing");
    assert_eq!(lazy.network_groups[0].name, "tiny_net");
    assert!(Hef::verify(&path).is_err());
}

#[test]
fn proto_limit_is_enforced() {
    let err = ReaderOptions::new()
        .max_proto_size(16)
        .open(fixture("header_v2.hef"))
        .expect_err("limit");
    assert_eq!(err.class(), ErrorClass::LimitExceeded);
    assert!(err.to_string().contains("header_v2.hef"));
}
