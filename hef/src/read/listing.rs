//! From the decoded protobuf to the [`Hef`] listing, following HailoRT 5.2.
//!
//! - Required extensions outside HailoRT's known set are refused; extension
//!   26 (periph calculation in HailoRT) must be present.
//! - A network group's name comes from its first partial network group when
//!   there is one, else from its own metadata.
//! - Its core op is the first `ops[k].core_op` with extension 13 (net flow),
//!   else the network group's own fields; multi-layout arches (8L, 15M) use
//!   the first partial core op / partial network group.
//! - Streams are the BOUNDARY edge layers of all contexts, in file order;
//!   a MUX layer expands into its predecessors.

use std::collections::BTreeSet;

use crate::error::HefErrorKind;
use crate::model::{
    DataType, Direction, FormatOrder, HeaderVersion, Hef, HwArch, NetworkGroup, QuantInfo,
    Quantization, StreamInfo, StreamShape,
};
use crate::proto::{self, ext, InnerEdge};

fn invalid(field: String, expected: &'static str, found: impl ToString) -> HefErrorKind {
    HefErrorKind::InvalidField {
        field,
        expected,
        found: found.to_string(),
    }
}

/// A field that must be present and is not.
fn absent(field: String, expected: &'static str) -> HefErrorKind {
    invalid(field, expected, "none")
}

/// The parts of a core op the listing reads, whichever message holds them.
struct CoreOpView<'a> {
    metadata: Option<&'a proto::ProtoHefNetworkGroupMetadata>,
    contexts: &'a [proto::ProtoHefContext],
    networks_names: &'a [String],
    path: String,
}

impl<'a> CoreOpView<'a> {
    fn of_group(ng: &'a proto::ProtoHefNetworkGroup, path: String) -> Self {
        Self {
            metadata: ng.network_group_metadata.as_ref(),
            contexts: &ng.contexts,
            networks_names: &ng.networks_names,
            path,
        }
    }
    fn of_core_op(op: &'a proto::ProtoHefCoreOp, path: String) -> Self {
        Self {
            metadata: op.network_group_metadata.as_ref(),
            contexts: &op.contexts,
            networks_names: &op.networks_names,
            path,
        }
    }
}

/// Per-file switches that change how streams are listed.
struct Features {
    net_flow: bool,
    per_feature_scales: bool,
    multi_network: bool,
    multi_layout: bool,
}

/// Builds the listing of a decoded HEF.
pub(crate) fn build(
    message: &proto::ProtoHefHef,
    header_version: HeaderVersion,
) -> Result<Hef, HefErrorKind> {
    let header = message
        .header
        .as_ref()
        .ok_or_else(|| absent("header".into(), "a ProtoHEFHeader"))?;
    let (required, optional): (BTreeSet<u32>, BTreeSet<u32>) = if header.version > 0 {
        for e in &message.extensions {
            if !ext::is_known_required(e.type_index) {
                return Err(HefErrorKind::UnknownExtension {
                    index: e.type_index,
                    name: e.name.clone(),
                });
            }
        }
        (
            message.extensions.iter().map(|e| e.type_index).collect(),
            message
                .optional_extensions
                .iter()
                .map(|e| e.type_index)
                .collect(),
        )
    } else {
        (BTreeSet::new(), BTreeSet::new())
    };
    if !required.contains(&ext::PERIPH_CALCULATION_IN_HAILORT) {
        return Err(HefErrorKind::MissingExtension {
            index: ext::PERIPH_CALCULATION_IN_HAILORT,
            name: "PERIPH_CALCULATION_IN_HAILORT",
        });
    }
    let hw_arch = HwArch(header.hw_arch);
    let features = Features {
        net_flow: required.contains(&ext::HAILO_NET_FLOW),
        per_feature_scales: required.contains(&ext::OUTPUT_SCALE_PER_FEATURE),
        multi_network: optional.contains(&ext::MULTI_NETWORK_VARIABLE_BATCH_SIZE),
        multi_layout: matches!(hw_arch.0, 3 | 4),
    };
    let sdk_version = match &header.sdk_version {
        Some(v)
            if (
                v.sdk_version_major,
                v.sdk_version_minor,
                v.sdk_version_revision,
            ) != (0, 0, 0) =>
        {
            Some(format!(
                "{}.{}.{}",
                v.sdk_version_major, v.sdk_version_minor, v.sdk_version_revision
            ))
        }
        _ if !header.sdk_version_str.is_empty() => Some(header.sdk_version_str.clone()),
        _ => None,
    };
    let mut network_groups = message
        .network_groups
        .iter()
        .enumerate()
        .map(|(i, ng)| network_group(ng, &format!("network_groups[{i}]"), &features))
        .collect::<Result<Vec<_>, _>>()?;
    network_groups.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Hef {
        header_version,
        hw_arch,
        sdk_version,
        network_groups,
    })
}

fn network_group(
    ng: &proto::ProtoHefNetworkGroup,
    path: &str,
    features: &Features,
) -> Result<NetworkGroup, HefErrorKind> {
    let first_partial = |what: &'static str| {
        ng.partial_network_groups
            .first()
            .and_then(|p| p.network_group.as_deref())
            .ok_or_else(|| {
                invalid(
                    format!("{path}.partial_network_groups"),
                    what,
                    "an empty list",
                )
            })
    };
    let name = match ng.partial_network_groups.first() {
        Some(_) => first_partial("a partial network group")?
            .network_group_metadata
            .as_ref()
            .map(|m| m.network_group_name.clone())
            .unwrap_or_default(),
        None => ng
            .network_group_metadata
            .as_ref()
            .map(|m| m.network_group_name.clone())
            .unwrap_or_default(),
    };
    let core = if features.net_flow {
        let (k, op) = ng
            .ops
            .iter()
            .enumerate()
            .find_map(|(k, op)| op.core_op.as_ref().map(|c| (k, c)))
            .ok_or_else(|| {
                absent(
                    format!("{path}.ops"),
                    "an op holding a core_op (HAILO_NET_FLOW is set)",
                )
            })?;
        let op_path = format!("{path}.ops[{k}].core_op");
        if features.multi_layout {
            let partial = op
                .partial_core_ops
                .first()
                .and_then(|p| p.core_op.as_deref())
                .ok_or_else(|| {
                    absent(
                        format!("{op_path}.partial_core_ops"),
                        "a partial core op (multi-layout arch)",
                    )
                })?;
            CoreOpView::of_core_op(partial, format!("{op_path}.partial_core_ops[0].core_op"))
        } else {
            CoreOpView::of_core_op(op, op_path)
        }
    } else if features.multi_layout {
        let partial = first_partial("a partial network group (multi-layout arch)")?;
        CoreOpView::of_group(
            partial,
            format!("{path}.partial_network_groups[0].network_group"),
        )
    } else {
        CoreOpView::of_group(ng, path.to_string())
    };

    let networks = if features.multi_network && !core.networks_names.is_empty() {
        core.networks_names
            .iter()
            .map(|n| format!("{name}/{n}"))
            .collect()
    } else {
        vec![format!("{name}/{name}")]
    };
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (ci, ctx) in core.contexts.iter().enumerate() {
        let Some(meta) = &ctx.metadata else { continue };
        for (li, layer) in meta.edge_layers.iter().enumerate() {
            let lpath = format!("{}.contexts[{ci}].metadata.edge_layers[{li}]", core.path);
            let connection = layer
                .context_switch_info
                .as_ref()
                .map_or(proto::CONNECTION_BOUNDARY, |c| c.edge_connection_type);
            if connection != proto::CONNECTION_BOUNDARY {
                continue;
            }
            let direction = match layer.direction {
                proto::DIRECTION_HOST_TO_DEVICE => Direction::Input,
                proto::DIRECTION_DEVICE_TO_HOST => Direction::Output,
                d => return Err(invalid(format!("{lpath}.direction"), "0 or 1", d)),
            };
            let network_index = if features.multi_network {
                layer.network_index as usize
            } else {
                0
            };
            let network = networks.get(network_index).cloned().ok_or_else(|| {
                invalid(
                    format!("{lpath}.network_index"),
                    "an index into networks_names",
                    layer.network_index,
                )
            })?;
            let ctx = StreamContext {
                direction,
                network,
                per_feature: features.per_feature_scales && direction == Direction::Output,
            };
            let target = match direction {
                Direction::Input => &mut inputs,
                Direction::Output => &mut outputs,
            };
            match &layer.edge {
                Some(proto::Edge::LayerInfo(info)) => {
                    target.push(stream(info, &format!("{lpath}.layer_info"), &ctx)?)
                }
                Some(proto::Edge::LayerMux(mux)) => {
                    expand_mux(mux, &format!("{lpath}.layer_mux"), &ctx, target)?
                }
                Some(proto::Edge::LayerPlanes(planes)) => target.push(planes_stream(
                    planes,
                    &format!("{lpath}.layer_planes"),
                    &ctx,
                )?),
                None => {
                    return Err(absent(
                        format!("{lpath}.edge"),
                        "layer_info, layer_mux or layer_planes",
                    ))
                }
            }
        }
    }
    sort_outputs(&mut outputs, output_order(ng, &core, features));
    let metadata = core.metadata;
    Ok(NetworkGroup {
        name,
        networks,
        contexts: u32::try_from(core.contexts.len()).unwrap_or(u32::MAX),
        // 0 is the protobuf's unset value; any other value is kept, so
        // that `Hef::check_limits` refuses a NaN, infinite or negative rate.
        bottleneck_fps: metadata.map(|m| m.bottleneck_fps).filter(|&f| f != 0.0),
        ops_per_frame: metadata
            .map(|m| m.computational_ops)
            .filter(|&ops| ops != 0),
        inputs,
        outputs,
    })
}

/// The list HailoRT orders output vstreams by: the network group's
/// `sorted_outputs_order` (the first partial group's for legacy multi-layout
/// files), or, for very old files, the last context's.
fn output_order<'a>(
    ng: &'a proto::ProtoHefNetworkGroup,
    core: &CoreOpView<'a>,
    features: &Features,
) -> &'a [String] {
    let partial = ng
        .partial_network_groups
        .first()
        .and_then(|p| p.network_group.as_deref())
        .map(|g| g.sorted_outputs_order.as_slice())
        .filter(|list| !features.net_flow && !list.is_empty());
    if let Some(list) = partial {
        return list;
    }
    if !ng.sorted_outputs_order.is_empty() {
        return &ng.sorted_outputs_order;
    }
    core.contexts
        .last()
        .and_then(|c| c.metadata.as_ref())
        .map_or(&[], |m| m.sorted_outputs_order.as_slice())
}

/// Orders outputs by their place in `order`; outputs missing from it keep
/// their file order after the listed ones (HailoRT refuses such files).
fn sort_outputs(outputs: &mut [StreamInfo], order: &[String]) {
    if order.is_empty() {
        return;
    }
    outputs.sort_by_key(|s| {
        order
            .iter()
            .position(|n| *n == s.name)
            .unwrap_or(usize::MAX)
    });
}

/// What every stream of one edge layer shares.
struct StreamContext {
    direction: Direction,
    network: String,
    per_feature: bool,
}

fn expand_mux(
    mux: &proto::ProtoHefEdgeLayerMux,
    path: &str,
    ctx: &StreamContext,
    out: &mut Vec<StreamInfo>,
) -> Result<(), HefErrorKind> {
    for (i, pred) in mux.predecessors.iter().enumerate() {
        let ppath = format!("{path}.predecessors[{i}]");
        match &pred.edge {
            Some(InnerEdge::LayerInfo(info)) => {
                out.push(stream(info, &format!("{ppath}.layer_info"), ctx)?)
            }
            Some(InnerEdge::LayerMux(inner)) => {
                expand_mux(inner, &format!("{ppath}.layer_mux"), ctx, out)?
            }
            Some(InnerEdge::LayerPlanes(planes)) => out.push(planes_stream(
                planes,
                &format!("{ppath}.layer_planes"),
                ctx,
            )?),
            None => {
                return Err(absent(
                    format!("{ppath}.edge"),
                    "layer_info, layer_mux or layer_planes",
                ))
            }
        }
    }
    Ok(())
}

/// The device order for a compiler format number
/// (`HailoRTDefaults::get_device_format_order`).
pub(crate) fn device_order(format: u32) -> Option<FormatOrder> {
    use FormatOrder::*;
    Some(match format {
        0 | 13 => Nhwc,
        1 => Nhcw,
        2 => Nc,
        3 => Fcr,
        4 => BayerRgb,
        5 => Nhw,
        6 => NmsOnChip,
        7 => F8cr,
        8 => Rgb888,
        11 => Yuy2,
        14 => Yyuv,
        15 => Yyvu,
        16 => Yyyyuv,
        _ => return None,
    })
}

fn stream(
    info: &proto::ProtoHefEdgeLayerInfo,
    path: &str,
    ctx: &StreamContext,
) -> Result<StreamInfo, HefErrorKind> {
    let base = info
        .edge_layer_base
        .as_ref()
        .ok_or_else(|| absent(format!("{path}.edge_layer_base"), "an edge layer base"))?;
    let device = device_order(base.format).ok_or_else(|| {
        invalid(
            format!("{path}.edge_layer_base.format"),
            "a compiler format order (0-8, 11, 13-16)",
            base.format,
        )
    })?;
    let data_type = match base.data_bytes {
        1 => DataType::Uint8,
        2 => DataType::Uint16,
        n => {
            return Err(invalid(
                format!("{path}.edge_layer_base.data_bytes"),
                "1 (UINT8) or 2 (UINT16)",
                n,
            ))
        }
    };
    let shape = if device == FormatOrder::NmsOnChip {
        let nms = base
            .additional_info
            .as_ref()
            .and_then(|a| a.nms_info.as_ref())
            .ok_or_else(|| {
                absent(
                    format!("{path}.edge_layer_base.additional_info.nms_info"),
                    "NMS info for an NMS layer",
                )
            })?;
        let too_big = |field: &str, v: u64| {
            invalid(
                format!("{path}.edge_layer_base.additional_info.nms_info.{field}"),
                "a value that fits in 32 bits",
                v,
            )
        };
        let max_bboxes = nms
            .max_output_size
            .checked_mul(nms.input_division_factor.max(1))
            .filter(|&v| v <= u64::from(u32::MAX))
            .ok_or_else(|| too_big("max_output_size", nms.max_output_size))?;
        StreamShape::Nms {
            classes: u32::try_from(nms.number_of_classes)
                .map_err(|_| too_big("number_of_classes", nms.number_of_classes))?,
            bbox_params: u32::try_from(nms.bbox_size)
                .map_err(|_| too_big("bbox_size", nms.bbox_size))?,
            max_bboxes_per_class: max_bboxes as u32,
        }
    } else if info.transposed {
        StreamShape::Image {
            height: base.width,
            width: base.height,
            features: base.features,
        }
    } else {
        StreamShape::Image {
            height: base.height,
            width: base.width,
            features: base.features,
        }
    };
    let quant = quantization(info.numeric_info.as_ref(), &shape, path, ctx)?;
    Ok(StreamInfo {
        name: info.name.clone(),
        network: ctx.network.clone(),
        direction: ctx.direction,
        shape,
        device_order: device,
        host_order: device.host_order(),
        data_type,
        transposed: info.transposed,
        quant,
    })
}

fn quantization(
    numeric: Option<&proto::ProtoHefEdgeLayerNumericInfo>,
    shape: &StreamShape,
    path: &str,
    ctx: &StreamContext,
) -> Result<Quantization, HefErrorKind> {
    let default = proto::ProtoHefEdgeLayerNumericInfo::default();
    let n = numeric.unwrap_or(&default);
    let uniform = QuantInfo {
        zp: n.qp_zp,
        scale: n.qp_scale,
        limvals_min: n.limvals_min,
        limvals_max: n.limvals_max,
    };
    if n.qp_zps.is_empty() && n.qp_scales.is_empty() {
        return Ok(Quantization::Uniform(uniform));
    }
    // The vectors are in the file, so their length bounds every allocation.
    let count = n.qp_zps.len().max(n.qp_scales.len());
    if let StreamShape::Image { features, .. } = *shape {
        if ctx.per_feature && count != features as usize {
            return Err(invalid(
                format!("{path}.numeric_info"),
                "one qp_zps/qp_scales entry per feature",
                format!("{count} entries for {features} features"),
            ));
        }
    }
    for (field, len) in [("qp_zps", n.qp_zps.len()), ("qp_scales", n.qp_scales.len())] {
        if len != 0 && len != count {
            return Err(invalid(
                format!("{path}.numeric_info.{field}"),
                "as many entries as the other per-feature vector, or none",
                len,
            ));
        }
    }
    let per_feature: Vec<QuantInfo> = (0..count)
        .map(|i| QuantInfo {
            zp: n.qp_zps.get(i).map_or(n.qp_zp, |&v| v as f32),
            scale: n.qp_scales.get(i).map_or(n.qp_scale, |&v| v as f32),
            ..uniform
        })
        .collect();
    if ctx.per_feature {
        return Ok(Quantization::PerFeature(per_feature));
    }
    if ctx.direction == Direction::Input && per_feature.iter().any(|q| *q != per_feature[0]) {
        return Err(invalid(
            format!("{path}.numeric_info"),
            "one quantisation for every feature of an input",
            "differing per-feature values",
        ));
    }
    // Without extension 25 HailoRT uses the scalar fields.
    Ok(Quantization::Uniform(uniform))
}

fn planes_stream(
    planes: &proto::ProtoHefEdgeLayerPlanes,
    path: &str,
    ctx: &StreamContext,
) -> Result<StreamInfo, HefErrorKind> {
    let order = match planes.planes_format {
        0 => FormatOrder::Nv12,
        1 => FormatOrder::Nv21,
        2 => FormatOrder::I420,
        f => {
            return Err(invalid(
                format!("{path}.planes_format"),
                "0 (NV12), 1 (NV21) or 2 (I420)",
                f,
            ))
        }
    };
    let first = planes.planes.first().and_then(|p| match &p.edge {
        Some(InnerEdge::LayerInfo(info)) => Some(info),
        _ => None,
    });
    let plane = first
        .map(|info| stream(info, &format!("{path}.planes[0].layer_info"), ctx))
        .transpose()?;
    Ok(StreamInfo {
        name: planes.name.clone(),
        network: ctx.network.clone(),
        direction: ctx.direction,
        shape: StreamShape::Image {
            height: planes.height,
            width: planes.width,
            features: planes.features,
        },
        device_order: order,
        host_order: order,
        data_type: plane.as_ref().map_or(DataType::Uint8, |p| p.data_type),
        transposed: false,
        quant: plane.map_or(
            Quantization::Uniform(QuantInfo {
                zp: 0.0,
                scale: 0.0,
                limvals_min: 0.0,
                limvals_max: 0.0,
            }),
            |p| p.quant,
        ),
    })
}
