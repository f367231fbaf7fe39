//! From a [`Hef`] model to the protobuf message the reader lists back.

use crate::model::{
    Direction, FormatOrder, Hef, NetworkGroup, Quantization, StreamInfo, StreamShape,
};
use crate::proto::{self, ext};

use super::{HefBuilder, WriteError};

fn invalid(field: String, reason: impl Into<String>) -> WriteError {
    WriteError::InvalidModel {
        field,
        reason: reason.into(),
    }
}

/// The compiler format number of a device order, where one exists.
fn format_number(order: FormatOrder) -> Option<u32> {
    use FormatOrder::*;
    Some(match order {
        Nhwc => 0,
        Nhcw => 1,
        Nc => 2,
        Fcr => 3,
        BayerRgb => 4,
        Nhw => 5,
        NmsOnChip => 6,
        F8cr => 7,
        Rgb888 => 8,
        Yuy2 => 11,
        Yyuv => 14,
        Yyvu => 15,
        Yyyyuv => 16,
        _ => return None,
    })
}

fn extension(index: u32, name: &str) -> proto::ProtoHefExtension {
    proto::ProtoHefExtension {
        type_index: index,
        name: name.to_string(),
    }
}

/// Builds the root message for `hef` with the builder's options.
pub(super) fn message(hef: &Hef, opts: &HefBuilder) -> Result<proto::ProtoHefHef, WriteError> {
    let per_feature = hef
        .network_groups
        .iter()
        .flat_map(|g| g.outputs.iter())
        .any(|s| matches!(s.quant, Quantization::PerFeature(_)));
    let mut extensions = vec![extension(
        ext::PERIPH_CALCULATION_IN_HAILORT,
        "PERIPH_CALCULATION_IN_HAILORT",
    )];
    if opts.net_flow {
        extensions.push(extension(ext::HAILO_NET_FLOW, "HAILO_NET_FLOW"));
    }
    if per_feature {
        extensions.push(extension(
            ext::OUTPUT_SCALE_PER_FEATURE,
            "OUTPUT_SCALE_PER_FEATURE",
        ));
    }
    for (index, name) in &opts.extra_extensions {
        extensions.push(extension(*index, name));
    }
    extensions.sort_by_key(|e| e.type_index);
    let multi_network = hef
        .network_groups
        .iter()
        .any(|g| g.networks != [format!("{}/{}", g.name, g.name)]);
    let optional_extensions = if multi_network {
        vec![extension(
            ext::MULTI_NETWORK_VARIABLE_BATCH_SIZE,
            "MULTI_NETWORK_VARIABLE_BATCH_SIZE",
        )]
    } else {
        Vec::new()
    };
    let sdk = hef.sdk_version.clone().unwrap_or_default();
    let sdk_struct = parse_sdk(&sdk).map(|(a, b, c)| proto::ProtoHefSdkVersion {
        sdk_version_major: a,
        sdk_version_minor: b,
        sdk_version_revision: c,
    });
    let header = proto::ProtoHefHeader {
        hw_arch: hef.hw_arch.0,
        timestamp: opts.timestamp,
        sdk_version_str: sdk,
        version: 1,
        sdk_version: sdk_struct,
    };
    let multi_layout = matches!(hef.hw_arch.0, 3 | 4);
    let network_groups = hef
        .network_groups
        .iter()
        .enumerate()
        .map(|(i, g)| network_group(g, i, opts, multi_layout))
        .collect::<Result<_, _>>()?;
    Ok(proto::ProtoHefHef {
        header: Some(header),
        network_groups,
        extensions,
        optional_extensions,
        external_resources: Vec::new(),
    })
}

/// `"a.b.c"` when it prints back identically, so the reader returns the same string.
fn parse_sdk(s: &str) -> Option<(u32, u32, u32)> {
    let mut it = s.split('.').map(|p| p.parse::<u32>().ok());
    let v = (it.next()??, it.next()??, it.next()??);
    (it.next().is_none() && format!("{}.{}.{}", v.0, v.1, v.2) == s && v != (0, 0, 0)).then_some(v)
}

fn network_group(
    g: &NetworkGroup,
    index: usize,
    opts: &HefBuilder,
    multi_layout: bool,
) -> Result<proto::ProtoHefNetworkGroup, WriteError> {
    let path = format!("network_groups[{index}] ({})", g.name);
    let prefix = format!("{}/", g.name);
    if g.networks.is_empty() {
        return Err(invalid(
            format!("{path}.networks"),
            "needs at least one network",
        ));
    }
    let networks_names = g
        .networks
        .iter()
        .map(|n| {
            n.strip_prefix(&prefix).map(str::to_string).ok_or_else(|| {
                invalid(
                    format!("{path}.networks"),
                    format!("'{n}' must start with '{prefix}'"),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if g.contexts == 0 && (!g.inputs.is_empty() || !g.outputs.is_empty()) {
        return Err(invalid(
            format!("{path}.contexts"),
            "streams need at least one context",
        ));
    }
    let last = g.contexts.saturating_sub(1);
    let mut contexts: Vec<proto::ProtoHefContext> = (0..g.contexts)
        .map(|ci| proto::ProtoHefContext {
            context_index: ci,
            metadata: Some(proto::ProtoHefContextMetadata {
                name: format!("context_{ci}"),
                edge_layers: Vec::new(),
                sorted_outputs_order: Vec::new(),
            }),
        })
        .collect();
    let mut sys_index = 0u32;
    let layer = |s: &StreamInfo, dir: Direction, sys: &mut u32| -> Result<_, WriteError> {
        if s.direction != dir {
            return Err(invalid(
                format!("{path}.{}", s.name),
                format!(
                    "listed among the {}s but its direction is {}",
                    dir.name(),
                    s.direction.name()
                ),
            ));
        }
        let network_index = g
            .networks
            .iter()
            .position(|n| *n == s.network)
            .ok_or_else(|| {
                invalid(
                    format!("{path}.{}.network", s.name),
                    format!("'{}' is not a network of the group", s.network),
                )
            })?;
        *sys += 1;
        Ok((
            network_index as u32,
            layer_info(s, &format!("{path}.{}", s.name), *sys)?,
        ))
    };
    let mut input_layers = Vec::new();
    for s in &g.inputs {
        input_layers.push(layer(s, Direction::Input, &mut sys_index)?);
    }
    let mut output_layers = Vec::new();
    for s in &g.outputs {
        output_layers.push(layer(s, Direction::Output, &mut sys_index)?);
    }
    let edge = |direction: i32, ci: u32, connection: i32, network_index: u32, e: proto::Edge| {
        proto::ProtoHefEdgeLayer {
            direction,
            edge_layer_type: match e {
                proto::Edge::LayerMux(_) => proto::EDGE_TYPE_MUX,
                _ => proto::EDGE_TYPE_INFO,
            },
            edge: Some(e),
            context_switch_info: Some(proto::ProtoHefContextSwitchInformation {
                context_index: ci,
                edge_connection_type: connection,
            }),
            network_index,
        }
    };
    let push =
        |contexts: &mut Vec<proto::ProtoHefContext>, ci: u32, l: proto::ProtoHefEdgeLayer| {
            if let Some(meta) = contexts
                .get_mut(ci as usize)
                .and_then(|c| c.metadata.as_mut())
            {
                meta.edge_layers.push(l);
            }
        };
    for (net, info) in input_layers {
        push(
            &mut contexts,
            0,
            edge(
                proto::DIRECTION_HOST_TO_DEVICE,
                0,
                proto::CONNECTION_BOUNDARY,
                net,
                proto::Edge::LayerInfo(info),
            ),
        );
    }
    // Context-to-context edges, which the listing must skip.
    for ci in 0..last {
        let inter = |name: String| proto::ProtoHefEdgeLayerInfo {
            name,
            edge_layer_base: Some(proto::ProtoHefEdgeLayerBase {
                height: 8,
                width: 8,
                features: 16,
                data_bytes: 1,
                ..Default::default()
            }),
            numeric_info: None,
            transposed: false,
        };
        let name = format!("{}/intermediate_{ci}_{}", g.name, ci + 1);
        push(
            &mut contexts,
            ci,
            edge(
                proto::DIRECTION_DEVICE_TO_HOST,
                ci,
                proto::CONNECTION_INTERMEDIATE,
                0,
                proto::Edge::LayerInfo(inter(name.clone())),
            ),
        );
        push(
            &mut contexts,
            ci + 1,
            edge(
                proto::DIRECTION_HOST_TO_DEVICE,
                ci + 1,
                proto::CONNECTION_INTERMEDIATE,
                0,
                proto::Edge::LayerInfo(inter(name)),
            ),
        );
    }
    let output_edges: Vec<(u32, proto::Edge)> = if opts.mux_outputs && !output_layers.is_empty() {
        let net = output_layers[0].0;
        if output_layers.iter().any(|(n, _)| *n != net) {
            return Err(invalid(
                format!("{path}.outputs"),
                "a MUX joins outputs of one network only",
            ));
        }
        let mux = proto::ProtoHefEdgeLayerMux {
            name: format!("{}/mux_out", g.name),
            edge_layer_base: Some(proto::ProtoHefEdgeLayerBase {
                data_bytes: 1,
                ..Default::default()
            }),
            predecessors: output_layers
                .into_iter()
                .map(|(_, info)| proto::ProtoHefEdge {
                    edge: Some(proto::InnerEdge::LayerInfo(info)),
                })
                .collect(),
        };
        vec![(net, proto::Edge::LayerMux(mux))]
    } else {
        output_layers
            .into_iter()
            .map(|(net, info)| (net, proto::Edge::LayerInfo(info)))
            .collect()
    };
    for (net, e) in output_edges {
        push(
            &mut contexts,
            last,
            edge(
                proto::DIRECTION_DEVICE_TO_HOST,
                last,
                proto::CONNECTION_BOUNDARY,
                net,
                e,
            ),
        );
    }

    let metadata = proto::ProtoHefNetworkGroupMetadata {
        network_group_name: g.name.clone(),
        network_group_index: index as u32,
        transposed_net: false,
        bottleneck_fps: g.bottleneck_fps.unwrap_or(0.0),
        latency: 0.0,
        computational_ops: g.ops_per_frame.unwrap_or(0),
    };
    let name_only = proto::ProtoHefNetworkGroupMetadata {
        network_group_name: g.name.clone(),
        network_group_index: index as u32,
        ..Default::default()
    };
    let networks_names = if networks_names == [g.name.clone()] {
        Vec::new()
    } else {
        networks_names
    };
    let layout = Some(proto::ProtoHefPhysicalLayout {
        partial_clusters_layout_bitmap: 1,
    });
    // The output order HailoRT lists by; only meaningful for unique names.
    let mut names: Vec<&str> = g.outputs.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let sorted_outputs_order: Vec<String> = if names.len() == g.outputs.len() {
        g.outputs.iter().map(|s| s.name.clone()).collect()
    } else {
        Vec::new()
    };
    let mut out = proto::ProtoHefNetworkGroup {
        sorted_outputs_order: sorted_outputs_order.clone(),
        network_group_metadata: Some(name_only),
        network_group_name: g.name.clone(),
        network_group_index: index as u32,
        ..Default::default()
    };
    if opts.net_flow {
        let core = proto::ProtoHefCoreOp {
            network_group_metadata: Some(metadata),
            contexts,
            networks_names,
            partial_core_ops: Vec::new(),
        };
        let core = if multi_layout {
            proto::ProtoHefCoreOp {
                network_group_metadata: core.network_group_metadata.clone(),
                partial_core_ops: vec![proto::ProtoHefPartialCoreOp {
                    core_op: Some(Box::new(core)),
                    layout,
                }],
                ..Default::default()
            }
        } else {
            core
        };
        out.ops = vec![proto::ProtoHefOp {
            name: g.name.clone(),
            core_op: Some(core),
        }];
    } else {
        let legacy = proto::ProtoHefNetworkGroup {
            network_group_metadata: Some(metadata),
            contexts,
            networks_names,
            sorted_outputs_order,
            ..Default::default()
        };
        if multi_layout {
            out.partial_network_groups = vec![proto::ProtoHefPartialNetworkGroup {
                network_group: Some(Box::new(legacy)),
                layout,
            }];
        } else {
            out.contexts = legacy.contexts;
            out.networks_names = legacy.networks_names;
            out.network_group_metadata = legacy.network_group_metadata;
        }
    }
    Ok(out)
}

fn layer_info(
    s: &StreamInfo,
    path: &str,
    sys_index: u32,
) -> Result<proto::ProtoHefEdgeLayerInfo, WriteError> {
    let format = format_number(s.device_order).ok_or_else(|| {
        invalid(
            format!("{path}.device_order"),
            format!("{} has no compiler format number", s.device_order.name()),
        )
    })?;
    if s.host_order != s.device_order.host_order() {
        return Err(invalid(
            format!("{path}.host_order"),
            format!(
                "HailoRT maps device order {} to {}",
                s.device_order.name(),
                s.device_order.host_order().name()
            ),
        ));
    }
    let mut base = proto::ProtoHefEdgeLayerBase {
        format,
        sys_index,
        data_bytes: s.data_type.size() as u32,
        ..Default::default()
    };
    match (s.shape, s.device_order == FormatOrder::NmsOnChip) {
        (StreamShape::Image { height, width, features }, false) => {
            let (h, w) = if s.transposed { (width, height) } else { (height, width) };
            base.height = h;
            base.padded_height = h;
            base.width = w;
            base.padded_width = w;
            base.features = features;
            base.padded_features = features;
        }
        (StreamShape::Nms { classes, bbox_params, max_bboxes_per_class }, true) if !s.transposed => {
            base.additional_info = Some(proto::ProtoHefAdditionalInfo {
                nms_info: Some(proto::ProtoHefNmsInfo {
                    type_index: 0,
                    number_of_classes: classes.into(),
                    max_output_size: max_bboxes_per_class.into(),
                    bbox_size: bbox_params.into(),
                    input_division_factor: 1,
                }),
            });
        }
        _ => return Err(invalid(format!("{path}.shape"), "an NMS shape goes with NMS_ON_CHIP (not transposed), an image shape with any other order")),
    }
    let numeric_info = match &s.quant {
        Quantization::Uniform(q) => proto::ProtoHefEdgeLayerNumericInfo {
            qp_zp: q.zp,
            qp_scale: q.scale,
            limvals_min: q.limvals_min,
            limvals_max: q.limvals_max,
            ..Default::default()
        },
        Quantization::PerFeature(qs) => {
            let features = match s.shape {
                StreamShape::Image { features, .. } => features as usize,
                StreamShape::Nms { .. } => 0,
            };
            if s.direction != Direction::Output || qs.len() != features || qs.is_empty() {
                return Err(invalid(
                    format!("{path}.quant"),
                    "per-feature quantisation is for outputs, one entry per feature",
                ));
            }
            if qs
                .iter()
                .any(|q| q.limvals_min != qs[0].limvals_min || q.limvals_max != qs[0].limvals_max)
            {
                return Err(invalid(
                    format!("{path}.quant"),
                    "a HEF stores one limvals pair per stream",
                ));
            }
            proto::ProtoHefEdgeLayerNumericInfo {
                qp_zp: 0.0,
                qp_scale: 0.0,
                limvals_min: qs[0].limvals_min,
                limvals_max: qs[0].limvals_max,
                qp_zps: qs.iter().map(|q| f64::from(q.zp)).collect(),
                qp_scales: qs.iter().map(|q| f64::from(q.scale)).collect(),
            }
        }
    };
    Ok(proto::ProtoHefEdgeLayerInfo {
        name: s.name.clone(),
        edge_layer_base: Some(base),
        numeric_info: Some(numeric_info),
        transposed: s.transposed,
    })
}
