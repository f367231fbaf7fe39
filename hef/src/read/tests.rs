//! Reader rules that need a hand-made protobuf or header.

use prost::Message;

use crate::format::{HeaderTail, RawHeader};
use crate::model::{HeaderVersion, Hef, Quantization, StreamShape};
use crate::proto::{self, ext, Edge, InnerEdge};
use crate::samples;
use crate::{ErrorClass, HefBuilder, HefErrorKind};

/// The message the builder writes for `hef`, tampered with by `edit`, in a
/// v2 file with a valid checksum.
fn tampered(hef: &Hef, edit: impl FnOnce(&mut proto::ProtoHefHef)) -> Vec<u8> {
    let builder = HefBuilder::new(hef).version(HeaderVersion::V2);
    let mut message = builder.message().expect("sample encodes");
    edit(&mut message);
    builder
        .build_around(message.encode_to_vec())
        .expect("assembles")
}

fn kind(bytes: &[u8]) -> HefErrorKind {
    match Hef::from_bytes(bytes) {
        Ok(_) => panic!("expected an error"),
        Err(e) => {
            assert!(e.to_string().starts_with("HEF <in memory>: "), "{e}");
            e.into_kind()
        }
    }
}

fn first_layer(m: &mut proto::ProtoHefHef) -> &mut proto::ProtoHefEdgeLayer {
    let core = m.network_groups[0].ops[0]
        .core_op
        .as_mut()
        .expect("core op");
    let meta = core.contexts[0].metadata.as_mut().expect("metadata");
    &mut meta.edge_layers[0]
}

fn first_info(m: &mut proto::ProtoHefHef) -> &mut proto::ProtoHefEdgeLayerInfo {
    match first_layer(m).edge.as_mut() {
        Some(Edge::LayerInfo(info)) => info,
        _ => panic!("info layer"),
    }
}

fn tiny() -> Hef {
    samples::tiny(HeaderVersion::V2)
}

#[test]
fn unknown_fields_and_optional_extensions_are_skipped() {
    let hef = tiny();
    let mut bytes = HefBuilder::new(&hef).proto_bytes().expect("encodes");
    // Field 99 (varint 1) and field 100 (length-delimited, 3 bytes) at the root.
    bytes.extend_from_slice(&[0x98, 0x06, 0x01, 0xA2, 0x06, 0x03, 1, 2, 3]);
    let file = HefBuilder::new(&hef)
        .build_around(bytes)
        .expect("assembles");
    assert_eq!(Hef::from_bytes(&file).expect("reads"), hef);

    let file = tampered(&hef, |m| {
        m.optional_extensions.push(proto::ProtoHefExtension {
            type_index: 4000,
            name: "FUTURE_OPTIONAL".into(),
        })
    });
    assert_eq!(Hef::from_bytes(&file).expect("reads"), hef);
}

#[test]
fn required_extensions_follow_hailort_5_2() {
    let hef = tiny();
    for (index, known) in [
        (0, true),
        (6, true),
        (7, false),
        (8, false),
        (35, true),
        (36, false),
    ] {
        let file = tampered(&hef, |m| {
            m.extensions.push(proto::ProtoHefExtension {
                type_index: index,
                name: format!("EXT_{index}"),
            })
        });
        match Hef::from_bytes(&file) {
            Ok(_) => assert!(known, "extension {index} must be refused"),
            Err(e) => {
                assert!(!known, "extension {index} must be accepted: {e}");
                assert_eq!(e.class(), ErrorClass::NotSupported);
                assert!(
                    matches!(e.kind(), HefErrorKind::UnknownExtension { index: i, .. } if *i == index)
                );
            }
        }
    }
    let file = tampered(&hef, |m| {
        m.extensions
            .retain(|e| e.type_index != ext::PERIPH_CALCULATION_IN_HAILORT)
    });
    assert!(matches!(
        kind(&file),
        HefErrorKind::MissingExtension { index: 26, .. }
    ));
    // With proto version 0 the extension list does not apply at all.
    let file = tampered(&hef, |m| m.header.as_mut().expect("header").version = 0);
    assert!(matches!(kind(&file), HefErrorKind::MissingExtension { .. }));
}

type Edit = dyn Fn(&mut proto::ProtoHefHef);

#[test]
fn invalid_fields_are_named_by_path() {
    let hef = tiny();
    let cases: [(&str, Box<Edit>); 5] = [
        (
            "edge_layer_base.format",
            Box::new(|m| first_info(m).edge_layer_base.as_mut().expect("base").format = 9),
        ),
        (
            "edge_layer_base.data_bytes",
            Box::new(|m| {
                first_info(m)
                    .edge_layer_base
                    .as_mut()
                    .expect("base")
                    .data_bytes = 4
            }),
        ),
        (
            "edge_layers[0].direction",
            Box::new(|m| first_layer(m).direction = 5),
        ),
        (
            "edge_layers[0].edge",
            Box::new(|m| first_layer(m).edge = None),
        ),
        (
            "network_groups[0].ops",
            Box::new(|m| m.network_groups[0].ops[0].core_op = None),
        ),
    ];
    for (path, edit) in cases {
        let file = tampered(&hef, |m| edit(m));
        let err = Hef::from_bytes(&file).expect_err(path);
        assert_eq!(err.class(), ErrorClass::Corrupted);
        let HefErrorKind::InvalidField { field, .. } = err.kind() else {
            panic!("{path}: {err}")
        };
        assert!(field.contains(path), "{field} does not contain {path}");
    }
}

#[test]
fn quantisation_rules() {
    let hef = tiny();
    // Without extension 25 the scalars win even when vectors are present.
    let file = tampered(&hef, |m| {
        let n = first_info(m).numeric_info.as_mut().expect("numeric");
        n.qp_zps = vec![2.0; 3];
        n.qp_scales = vec![0.5; 3];
    });
    assert_eq!(Hef::from_bytes(&file).expect("reads"), hef);
    // An input whose per-feature values differ is refused.
    let file = tampered(&hef, |m| {
        first_info(m)
            .numeric_info
            .as_mut()
            .expect("numeric")
            .qp_scales = vec![0.5, 0.25, 0.5];
    });
    assert!(matches!(kind(&file), HefErrorKind::InvalidField { .. }));
    // Per-feature vectors must match the feature count.
    let mut two = samples::two_groups();
    two.network_groups.sort_by(|a, b| a.name.cmp(&b.name));
    let file = tampered(&two, |m| {
        for ng in &mut m.network_groups {
            let core = ng.ops[0].core_op.as_mut().expect("core");
            for l in &mut core.contexts[0]
                .metadata
                .as_mut()
                .expect("meta")
                .edge_layers
            {
                if let Some(Edge::LayerInfo(info)) = &mut l.edge {
                    if info.name == "detector/conv_pf" {
                        info.numeric_info
                            .as_mut()
                            .expect("numeric")
                            .qp_zps
                            .push(4.0);
                    }
                }
            }
        }
    });
    let err = kind(&file);
    assert!(
        matches!(&err, HefErrorKind::InvalidField { field, .. } if field.contains("numeric_info")),
        "{err}"
    );
}

#[test]
fn nested_mux_expands_into_its_predecessors() {
    let hef = samples::multi_context();
    let file = {
        let builder = HefBuilder::new(&hef).mux_outputs(true);
        let mut m = builder.message().expect("encodes");
        let core = m.network_groups[0].ops[0].core_op.as_mut().expect("core");
        let last = core.contexts.last_mut().expect("context");
        let layers = &mut last.metadata.as_mut().expect("meta").edge_layers;
        let outer = layers.iter_mut().find_map(|l| match &mut l.edge {
            Some(Edge::LayerMux(mux)) => Some(mux),
            _ => None,
        });
        let outer = outer.expect("mux layer");
        // Wrap the second predecessor in an inner MUX.
        let second = outer.predecessors.pop().expect("two predecessors");
        outer.predecessors.push(proto::ProtoHefEdge {
            edge: Some(InnerEdge::LayerMux(Box::new(proto::ProtoHefEdgeLayerMux {
                name: "inner_mux".into(),
                edge_layer_base: None,
                predecessors: vec![second],
            }))),
        });
        builder.build_around(m.encode_to_vec()).expect("assembles")
    };
    assert_eq!(Hef::from_bytes(&file).expect("reads"), hef);
}

fn header_of(bytes: &[u8]) -> RawHeader {
    RawHeader::parse(bytes).expect("header")
}

fn with_header(bytes: &[u8], header: RawHeader) -> Vec<u8> {
    let mut out = header.to_bytes();
    out.extend_from_slice(&bytes[out.len()..]);
    out
}

#[test]
fn header_sizes_are_never_trusted() {
    let hef = samples::tiny(HeaderVersion::V3);
    let file = HefBuilder::new(&hef)
        .ccw_bytes(vec![1; 64])
        .build()
        .expect("builds");
    let mut h = header_of(&file);
    if let HeaderTail::V3 { padding_size, .. } = &mut h.tail {
        *padding_size = u32::MAX;
    }
    assert!(matches!(
        kind(&with_header(&file, h)),
        HefErrorKind::InvalidHeader {
            field: "hef_padding_size",
            ..
        }
    ));

    let mut h = header_of(&file);
    if let HeaderTail::V3 {
        additional_info_size,
        ..
    } = &mut h.tail
    {
        *additional_info_size = u64::MAX;
    }
    assert!(matches!(
        kind(&with_header(&file, h)),
        HefErrorKind::InvalidHeader { .. }
    ));

    // A 4 GiB protobuf announced in a small file: refused before allocating.
    let mut h = header_of(&file);
    h.common.proto_size = u32::MAX;
    assert!(matches!(
        kind(&with_header(&file, h)),
        HefErrorKind::Truncated { what: "protobuf", needed, .. } if needed == 56 + u64::from(u32::MAX)
    ));

    for len in [0, 1, 11, 12, 55] {
        assert!(
            matches!(
                kind(&file[..len]),
                HefErrorKind::Truncated { what: "header", .. }
            ),
            "{len}"
        );
    }
}

#[test]
fn v3_proto_hash_checks_only_the_protobuf() {
    let hef = samples::tiny(HeaderVersion::V3);
    let mut file = HefBuilder::new(&hef)
        .ccw_bytes(vec![1; 64])
        .proto_only_hash(true)
        .build()
        .expect("builds");
    let last = file.len() - 1;
    file[last] ^= 1;
    assert_eq!(
        Hef::from_bytes(&file).expect("code words are not hashed"),
        hef
    );
    let proto_byte = 56 + 3;
    file[proto_byte] ^= 1;
    let err = Hef::from_bytes(&file).expect_err("protobuf is hashed");
    assert!(matches!(
        err.kind(),
        HefErrorKind::ChecksumMismatch {
            algorithm: crate::ChecksumAlgorithm::Xxh3Proto,
            ..
        }
    ));
}

#[test]
fn every_version_detects_a_flipped_byte() {
    for version in HeaderVersion::ALL {
        let hef = samples::tiny(version);
        let ccws = if version == HeaderVersion::V0 {
            vec![]
        } else {
            vec![9; 32]
        };
        let file = HefBuilder::new(&hef)
            .ccw_bytes(ccws)
            .build()
            .expect("builds");
        assert_eq!(Hef::from_bytes(&file).expect("sound"), hef);
        let mut bad = file.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0x80;
        let err = Hef::from_bytes(&bad).expect_err("flipped");
        assert!(
            matches!(err.kind(), HefErrorKind::ChecksumMismatch { .. }),
            "{version:?}: {err}"
        );
    }
}

#[test]
fn nms_shape_and_legacy_layout() {
    let mut two = samples::two_groups();
    two.network_groups.sort_by(|a, b| a.name.cmp(&b.name));
    let file = HefBuilder::new(&two)
        .net_flow(false)
        .build()
        .expect("builds");
    let read = Hef::from_bytes(&file).expect("reads");
    assert_eq!(read, two);
    let nms = read.network_groups[1].stream("detector/nms1").expect("nms");
    assert!(matches!(nms.shape, StreamShape::Nms { classes: 80, .. }));
    assert!(matches!(nms.quant, Quantization::Uniform(_)));
}

#[test]
fn outputs_follow_sorted_outputs_order() {
    let hef = samples::backbone(288);
    let reversed = tampered(&hef, |m| m.network_groups[0].sorted_outputs_order.reverse());
    let read = Hef::from_bytes(&reversed).expect("reads");
    let names: Vec<_> = read.network_groups[0]
        .outputs
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["backbone_288/features", "backbone_288/cross_attn_features"]
    );
    // Very old files keep the order in the last context instead.
    let old_style = tampered(&hef, |m| {
        let order = std::mem::take(&mut m.network_groups[0].sorted_outputs_order);
        let core = m.network_groups[0].ops[0].core_op.as_mut().expect("core");
        let meta = core
            .contexts
            .last_mut()
            .and_then(|c| c.metadata.as_mut())
            .expect("meta");
        meta.sorted_outputs_order = order.into_iter().rev().collect();
    });
    let read = Hef::from_bytes(&old_style).expect("reads");
    assert_eq!(
        read.network_groups[0].outputs[0].name,
        "backbone_288/features"
    );
}

#[test]
fn protobuf_errors_carry_the_field_path() {
    // Root field 1 (header), 2 bytes: field 1 (hw_arch) with a cut varint.
    let file = HefBuilder::new(&tiny())
        .build_around(vec![0x0A, 0x02, 0x08, 0xFF])
        .expect("assembles");
    let err = Hef::from_bytes(&file).expect_err("does not decode");
    let HefErrorKind::Protobuf { message } = err.kind() else {
        panic!("{err}")
    };
    assert!(message.contains("hw_arch"), "{message}");
    assert!(err.to_string().contains("ProtoHEFHef"), "{err}");
}
