//! Writer -> reader round trip over random models, for every header version
//! and writer layout (net flow or legacy, multi-layout arches, MUX outputs).

use hef::{
    DataType, Direction, FormatOrder, HeaderVersion, Hef, HefBuilder, HwArch, NetworkGroup,
    QuantInfo, Quantization, ReaderOptions, StreamInfo, StreamShape,
};
use proptest::prelude::*;

/// Device orders the writer can express for image-shaped streams.
const IMAGE_ORDERS: [FormatOrder; 12] = [
    FormatOrder::Nhwc,
    FormatOrder::Nhcw,
    FormatOrder::Nc,
    FormatOrder::Fcr,
    FormatOrder::F8cr,
    FormatOrder::Nhw,
    FormatOrder::BayerRgb,
    FormatOrder::Rgb888,
    FormatOrder::Yuy2,
    FormatOrder::Yyuv,
    FormatOrder::Yyvu,
    FormatOrder::Yyyyuv,
];

fn finite() -> impl Strategy<Value = f32> {
    prop_oneof![-1e6f32..1e6, Just(0.0f32), Just(1.0 / 255.0)]
}

fn quant_info(limvals: (f32, f32)) -> impl Strategy<Value = QuantInfo> {
    (finite(), finite()).prop_map(move |(zp, scale)| QuantInfo {
        zp,
        scale,
        limvals_min: limvals.0,
        limvals_max: limvals.1,
    })
}

fn stream(direction: Direction, networks: Vec<String>) -> impl Strategy<Value = StreamInfo> {
    let image = (
        1u32..64,
        1u32..64,
        1u32..12,
        prop::sample::select(IMAGE_ORDERS.to_vec()),
        any::<bool>(),
    )
        .prop_map(|(h, w, f, order, transposed)| {
            (
                StreamShape::Image {
                    height: h,
                    width: w,
                    features: f,
                },
                order,
                transposed,
            )
        });
    let nms = (1u32..100, 1u32..8, 1u32..200).prop_map(|(c, b, m)| {
        (
            StreamShape::Nms {
                classes: c,
                bbox_params: b,
                max_bboxes_per_class: m,
            },
            FormatOrder::NmsOnChip,
            false,
        )
    });
    let shape = if direction == Direction::Output {
        prop_oneof![4 => image, 1 => nms].boxed()
    } else {
        image.boxed()
    };
    (
        "[a-z][a-z0-9_/]{0,14}",
        prop::sample::select(networks),
        shape,
        prop::sample::select(vec![DataType::Uint8, DataType::Uint16]),
        (finite(), finite()),
        any::<bool>(),
    )
        .prop_flat_map(
            move |(name, network, (shape, order, transposed), data_type, limvals, per_feature)| {
                let features = match shape {
                    StreamShape::Image { features, .. }
                        if direction == Direction::Output && per_feature =>
                    {
                        Some(features as usize)
                    }
                    _ => None,
                };
                let quant = match features {
                    Some(n) => prop::collection::vec(quant_info(limvals), n)
                        .prop_map(Quantization::PerFeature)
                        .boxed(),
                    None => quant_info(limvals).prop_map(Quantization::Uniform).boxed(),
                };
                quant.prop_map(move |quant| StreamInfo {
                    name: name.clone(),
                    network: network.clone(),
                    direction,
                    shape,
                    device_order: order,
                    host_order: order.host_order(),
                    data_type,
                    transposed,
                    quant,
                })
            },
        )
}

fn group(index: usize) -> impl Strategy<Value = NetworkGroup> {
    ("[a-z][a-z0-9_]{0,10}", 1usize..4, 1u32..5)
        .prop_flat_map(move |(stem, n_networks, contexts)| {
            let name = format!("{stem}{index}");
            let networks: Vec<String> = if n_networks == 1 {
                vec![format!("{name}/{name}")]
            } else {
                (0..n_networks).map(|j| format!("{name}/net{j}")).collect()
            };
            (
                Just(name),
                Just(networks.clone()),
                Just(contexts),
                prop::option::of(1e-3f64..1e5),
                prop::option::of(1u64..u64::MAX),
                prop::collection::vec(stream(Direction::Input, networks.clone()), 0..3),
                prop::collection::vec(stream(Direction::Output, networks), 0..5),
            )
        })
        .prop_map(
            |(name, networks, contexts, fps, ops, inputs, outputs)| NetworkGroup {
                name,
                networks,
                contexts,
                bottleneck_fps: fps,
                ops_per_frame: ops,
                inputs,
                outputs,
            },
        )
}

fn model() -> impl Strategy<Value = Hef> {
    (
        prop::sample::select(HeaderVersion::ALL.to_vec()),
        prop::sample::select(vec![0u64, 1, 3, 4, 6, 103, 104, 108, 999]),
        prop::option::of(prop_oneof![
            "[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}",
            "[a-z0-9.-]{1,12}"
        ]),
        0usize..4,
    )
        .prop_flat_map(|(version, arch, sdk, n)| {
            let groups: Vec<_> = (0..n).map(group).collect();
            (Just(version), Just(arch), Just(sdk), groups)
        })
        .prop_map(|(header_version, arch, sdk_version, mut network_groups)| {
            network_groups.sort_by(|a, b| a.name.cmp(&b.name));
            Hef {
                header_version,
                hw_arch: HwArch(arch),
                sdk_version,
                network_groups,
            }
        })
}

/// Writer options that the model allows.
fn options() -> impl Strategy<Value = (bool, bool, Vec<u8>, bool, Vec<u8>)> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 0..300),
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 0..40),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn written_models_read_back_unchanged(hef in model(), (net_flow, mux, ccws, proto_hash, extra) in options()) {
        let v0 = hef.header_version == HeaderVersion::V0;
        let v3 = hef.header_version == HeaderVersion::V3;
        // A MUX joins the outputs of one network; only use it where that holds.
        let mux = mux && hef.network_groups.iter().all(|g| g.outputs.windows(2).all(|w| w[0].network == w[1].network));
        let mut builder = HefBuilder::new(&hef).net_flow(net_flow).mux_outputs(mux);
        if !v0 {
            builder = builder.ccw_bytes(ccws);
        }
        if v3 {
            builder = builder.proto_only_hash(proto_hash).additional_info(extra);
        }
        let bytes = builder.build().expect("valid models write");
        let read = Hef::from_bytes(&bytes).expect("written files read");
        prop_assert_eq!(&read, &hef);
        // Listing without hashing gives the same model.
        let lazy = ReaderOptions::new().verify_checksum(false).read_bytes(&bytes).expect("reads");
        prop_assert_eq!(&lazy, &hef);
        // Writing is deterministic.
        prop_assert_eq!(builder.build().expect("writes"), bytes);
    }
}
