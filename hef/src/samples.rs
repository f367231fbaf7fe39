//! Sample models and the committed fixture files made from them.
//!
//! The fixtures under `fixtures/` are exactly [`fixture_files`] written to
//! disk (`cargo run -p hef --example make_fixtures -- fixtures`); a test
//! regenerates them and compares byte for byte. The backbone models describe
//! the RF-DETR keypoint backbone compiled at `num_windows=1` for the
//! Hailo-10H; their code-word sections are a few fake bytes, not weights.

use crate::model::{
    DataType, Direction, FormatOrder, HeaderVersion, Hef, HwArch, NetworkGroup, QuantInfo,
    Quantization, StreamInfo, StreamShape,
};
use crate::write::{HefBuilder, WriteError};

/// Multiply-accumulates per frame of the device half at 288x288 (17.8 G): the ViT
/// and both C2f projectors.
pub const BACKBONE_288_MACS: u64 = 17_800_000_000;
/// Multiply-accumulates per frame of the device half at 432x432 (48.7 G).
pub const BACKBONE_432_MACS: u64 = 48_700_000_000;
/// Multiply-accumulates of the two C2f projectors at 288x288 (2 x 0.830 G), which the
/// taps split leaves to the host.
pub const PROJECTORS_288_MACS: u64 = 1_660_000_000;

/// Planning figure used for the fixtures' bottleneck fps: 45 % of the
/// Hailo-10H's 20 TOPS INT8 divided by the operations per frame. An assumed
/// figure, not a compiler's estimate.
const ASSUMED_EFFECTIVE_OPS_PER_S: f64 = 0.45 * 20e12;

/// The SDK version written into the sample files.
pub const SAMPLE_SDK_VERSION: &str = "5.2.0";

/// Quantisation whose limvals span the 8-bit range.
fn uniform(zp: f32, scale: f32) -> Quantization {
    uniform_over(zp, scale, 255.0)
}

fn uniform_over(zp: f32, scale: f32, max_q: f32) -> Quantization {
    Quantization::Uniform(QuantInfo {
        zp,
        scale,
        limvals_min: (0.0 - zp) * scale,
        limvals_max: (max_q - zp) * scale,
    })
}

fn image(height: u32, width: u32, features: u32) -> StreamShape {
    StreamShape::Image {
        height,
        width,
        features,
    }
}

/// A stream with the usual defaults: UINT8, NHWC both sides, not transposed.
pub fn stream(
    group: &str,
    name: &str,
    direction: Direction,
    shape: StreamShape,
    quant: Quantization,
) -> StreamInfo {
    StreamInfo {
        name: format!("{group}/{name}"),
        network: format!("{group}/{group}"),
        direction,
        shape,
        device_order: FormatOrder::Nhwc,
        host_order: FormatOrder::Nhwc,
        data_type: DataType::Uint8,
        transposed: false,
        quant,
    }
}

/// A classifier head's output: `classes` scores in NC order on network
/// `network` of group `group`.
fn class_scores(
    group: &str,
    network: &str,
    name: &str,
    classes: u32,
    quant: Quantization,
) -> StreamInfo {
    let mut s = stream(group, name, Direction::Output, image(1, 1, classes), quant);
    s.network = format!("{group}/{network}");
    s.device_order = FormatOrder::Nc;
    s.host_order = FormatOrder::Nc;
    s
}

/// A single-network group with the usual defaults.
pub fn group(
    name: &str,
    contexts: u32,
    inputs: Vec<StreamInfo>,
    outputs: Vec<StreamInfo>,
) -> NetworkGroup {
    NetworkGroup {
        name: name.to_string(),
        networks: vec![format!("{name}/{name}")],
        contexts,
        bottleneck_fps: None,
        ops_per_frame: None,
        inputs,
        outputs,
    }
}

/// The device half of the RF-DETR keypoint model at the design split for a
/// `side` x `side` input (288 or 432): the ViT and both C2f projectors. One
/// (side, side, 3) UINT8 NHWC input; two (g, g, 256) UINT8 outputs, g = side / 12,
/// `cross_attn_features` first and `features` second (the decoder reads them the
/// other way round, so a reader must pair them by name); ops per frame = 2 x MACs.
pub fn backbone(side: u32) -> Hef {
    let macs = if side == 432 {
        BACKBONE_432_MACS
    } else {
        // Other sides scale with the token count (side^2) from the 288 figure.
        scaled(BACKBONE_288_MACS, side)
    };
    let outputs = [("cross_attn_features", 0u8), ("features", 1)].map(|(name, k)| {
        (
            name.to_owned(),
            256,
            118.0 + 5.0 * f32::from(k),
            0.02 + 0.004 * f32::from(k),
        )
    });
    feature_model(&format!("backbone_{side}"), side, macs, &outputs)
}

/// The device half at the taps split for a `side` x `side` input: the ViT alone, four
/// (g, g, 384) UINT8 outputs `tap0` .. `tap3` (the projectors run on the host).
pub fn backbone_taps(side: u32) -> Hef {
    let macs = scaled(BACKBONE_288_MACS - PROJECTORS_288_MACS, side);
    let outputs: Vec<_> = (0..4u8)
        .map(|k| {
            (
                format!("tap{k}"),
                384,
                123.0 + 3.0 * f32::from(k),
                0.02 + 0.005 * f32::from(k),
            )
        })
        .collect();
    feature_model(&format!("backbone_taps_{side}"), side, macs, &outputs)
}

/// `macs_288` at another side, scaled with the token count (side^2).
fn scaled(macs_288: u64, side: u32) -> u64 {
    (macs_288 as f64 * f64::from(side * side) / (288.0 * 288.0)) as u64
}

/// One image input and image outputs `(name, channels, zero point, scale)`.
fn feature_model(name: &str, side: u32, macs: u64, outputs: &[(String, u32, f32, f32)]) -> Hef {
    let g = side / 12;
    let ops = 2 * macs;
    let fps = (ASSUMED_EFFECTIVE_OPS_PER_S / ops as f64 * 10.0).round() / 10.0;
    let input = stream(
        name,
        "input_layer1",
        Direction::Input,
        image(side, side, 3),
        uniform(0.0, 1.0 / 255.0),
    );
    let outputs = outputs
        .iter()
        .map(|(out, channels, zp, scale)| {
            stream(
                name,
                out,
                Direction::Output,
                image(g, g, *channels),
                uniform(*zp, *scale),
            )
        })
        .collect();
    let mut ng = group(name, 1, vec![input], outputs);
    ng.bottleneck_fps = Some(fps);
    ng.ops_per_frame = Some(ops);
    Hef {
        header_version: HeaderVersion::V3,
        hw_arch: HwArch::HAILO1XH,
        sdk_version: Some(SAMPLE_SDK_VERSION.to_string()),
        network_groups: vec![ng],
    }
}

/// A tiny one-group model (8x8x3 in, 2x2x16 out) in the given header version.
pub fn tiny(version: HeaderVersion) -> Hef {
    let name = "tiny_net";
    let input = stream(
        name,
        "input_layer1",
        Direction::Input,
        image(8, 8, 3),
        uniform(2.0, 0.5),
    );
    let output = stream(
        name,
        "output_layer1",
        Direction::Output,
        image(2, 2, 16),
        uniform(7.0, 0.25),
    );
    Hef {
        header_version: version,
        hw_arch: HwArch::HAILO1XH,
        sdk_version: Some(SAMPLE_SDK_VERSION.to_string()),
        network_groups: vec![group(name, 1, vec![input], vec![output])],
    }
}

/// Two network groups exercising the listing's corners: a two-network
/// classifier (extension 8), and a detector with an NMS output, a
/// transposed NHCW output, a UINT16 output and per-feature output scales
/// (extension 25). Groups are given unsorted; the reader sorts them.
pub fn two_groups() -> Hef {
    let c = "classifier";
    let mut c_in = stream(
        c,
        "input_layer1",
        Direction::Input,
        image(32, 32, 3),
        uniform(0.0, 0.0078125),
    );
    c_in.device_order = FormatOrder::Rgb888;
    c_in.host_order = FormatOrder::Nhwc;
    let c_head = class_scores(c, "head_b", "head_b/fc1", 10, uniform(100.0, 0.125));
    let c_out = class_scores(c, "head_a", "fc1", 1000, uniform(90.0, 0.0625));
    c_in.network = format!("{c}/head_a");
    let mut classifier = group(c, 1, vec![c_in], vec![c_out, c_head]);
    classifier.networks = vec![format!("{c}/head_a"), format!("{c}/head_b")];
    classifier.bottleneck_fps = Some(1200.0);

    let d = "detector";
    let d_in = stream(
        d,
        "input_layer1",
        Direction::Input,
        image(64, 48, 3),
        uniform(0.0, 1.0 / 255.0),
    );
    let mut nms = stream(
        d,
        "nms1",
        Direction::Output,
        StreamShape::Nms {
            classes: 80,
            bbox_params: 5,
            max_bboxes_per_class: 100,
        },
        uniform(0.0, 1.0),
    );
    nms.device_order = FormatOrder::NmsOnChip;
    nms.host_order = FormatOrder::NmsByClass;
    let mut transposed = stream(
        d,
        "conv_t",
        Direction::Output,
        image(6, 8, 4),
        uniform(5.0, 0.5),
    );
    transposed.transposed = true;
    transposed.device_order = FormatOrder::Nhcw;
    transposed.host_order = FormatOrder::Nhwc;
    let mut wide = stream(
        d,
        "conv_16bit",
        Direction::Output,
        image(4, 4, 2),
        uniform_over(1000.0, 0.001, 65535.0),
    );
    wide.data_type = DataType::Uint16;
    let per_feature = stream(
        d,
        "conv_pf",
        Direction::Output,
        image(2, 2, 3),
        Quantization::PerFeature(
            [(1.0, 0.5), (2.0, 0.25), (3.0, 0.125)]
                .into_iter()
                .map(|(zp, scale)| QuantInfo {
                    zp,
                    scale,
                    limvals_min: -1.0,
                    limvals_max: 1.0,
                })
                .collect(),
        ),
    );
    let mut detector = group(d, 1, vec![d_in], vec![nms, transposed, wide, per_feature]);
    detector.bottleneck_fps = Some(310.5);
    detector.ops_per_frame = Some(8_400_000_000);
    Hef {
        header_version: HeaderVersion::V2,
        hw_arch: HwArch::HAILO1XH,
        sdk_version: Some(SAMPLE_SDK_VERSION.to_string()),
        network_groups: vec![detector, classifier],
    }
}

/// A three-context group whose outputs the writer joins in a MUX layer.
pub fn multi_context() -> Hef {
    let name = "multi_ctx";
    let input = stream(
        name,
        "input_layer1",
        Direction::Input,
        image(96, 96, 3),
        uniform(0.0, 1.0 / 255.0),
    );
    let outputs = (1..=2)
        .map(|k| {
            stream(
                name,
                &format!("output_layer{k}"),
                Direction::Output,
                image(12, 12, 64),
                uniform(128.0, 0.05),
            )
        })
        .collect();
    let mut ng = group(name, 3, vec![input], outputs);
    ng.bottleneck_fps = Some(48.0);
    Hef {
        header_version: HeaderVersion::V3,
        hw_arch: HwArch::HAILO1XH,
        sdk_version: Some(SAMPLE_SDK_VERSION.to_string()),
        network_groups: vec![ng],
    }
}

/// A deterministic fake code-word section.
pub fn fake_ccws(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0])
        .collect()
}

/// Every committed fixture: file name and bytes.
///
/// # Errors
/// Only if a sample model were unwritable (a bug).
pub fn fixture_files() -> Result<Vec<(&'static str, Vec<u8>)>, WriteError> {
    let ccws = fake_ccws(256);
    let b288 = backbone(288);
    let b432 = backbone(432);
    let taps288 = backbone_taps(288);
    let two = two_groups();
    let multi = multi_context();
    let v0 = tiny(HeaderVersion::V0);
    let v1 = tiny(HeaderVersion::V1);
    let v2 = tiny(HeaderVersion::V2);
    let v3 = tiny(HeaderVersion::V3);
    let mut h8 = tiny(HeaderVersion::V2);
    h8.hw_arch = HwArch::HAILO8;
    let mut h8l = tiny(HeaderVersion::V1);
    h8l.hw_arch = HwArch::HAILO8L;

    // Every fixture with a code-word section carries the same one.
    let with_ccws = |hef| HefBuilder::new(hef).ccw_bytes(ccws.clone());
    let base = with_ccws(&v2).build()?;
    let mut bad_magic = base.clone();
    bad_magic[..4].copy_from_slice(b"\x01ELF");
    let mut unknown_version = base.clone();
    unknown_version[4..8].copy_from_slice(&7u32.to_be_bytes());
    let truncated = base[..base.len() - 100].to_vec();
    let mut size_mismatch = base.clone();
    size_mismatch.extend_from_slice(&[0u8; 16]);
    let mut checksum_mismatch = base.clone();
    let last = checksum_mismatch.len() - 1;
    checksum_mismatch[last] ^= 0x55;

    Ok(vec![
        ("backbone_288.hef", with_ccws(&b288).build()?),
        ("backbone_432.hef", with_ccws(&b432).build()?),
        ("backbone_taps_288.hef", with_ccws(&taps288).build()?),
        ("two_groups.hef", with_ccws(&two).build()?),
        (
            "multi_context.hef",
            with_ccws(&multi).mux_outputs(true).build()?,
        ),
        (
            "header_v0.hef",
            HefBuilder::new(&v0).net_flow(false).build()?,
        ),
        ("header_v1.hef", with_ccws(&v1).build()?),
        ("header_v2.hef", base.clone()),
        (
            "header_v3.hef",
            with_ccws(&v3).additional_info(vec![7; 32]).build()?,
        ),
        (
            "header_v3_proto_hash.hef",
            with_ccws(&v3).proto_only_hash(true).build()?,
        ),
        (
            "hailo8l_multi_layout.hef",
            with_ccws(&h8l).net_flow(false).build()?,
        ),
        ("corrupt_bad_magic.hef", bad_magic),
        ("corrupt_unknown_version.hef", unknown_version),
        ("corrupt_truncated.hef", truncated),
        ("corrupt_size_mismatch.hef", size_mismatch),
        ("corrupt_checksum_mismatch.hef", checksum_mismatch),
        (
            "corrupt_protobuf_garbage.hef",
            HefBuilder::new(&v2).build_around(vec![0xFF; 24])?,
        ),
        (
            "corrupt_unknown_extension.hef",
            HefBuilder::new(&v2)
                .required_extension(99, "FUTURE_FEATURE")
                .build()?,
        ),
        ("wrong_arch_hailo8.hef", HefBuilder::new(&h8).build()?),
    ])
}
