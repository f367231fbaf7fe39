//! From a [`Hef`] model to the protobuf message the reader lists back.

use crate::model::{Direction, FormatOrder, Hef, Quantization, StreamInfo, StreamShape};
use crate::proto::{self, ext};

use super::{HefBuilder, WriteError};

mod group;

use group::network_group;

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
