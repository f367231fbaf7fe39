//! The streams of one edge layer: an info layer's, a MUX's predecessors', a planes
//! layer's, with their shapes, orders and quantisation.

use super::{absent, invalid};
use crate::error::HefErrorKind;
use crate::model::{
    DataType, Direction, FormatOrder, QuantInfo, Quantization, StreamInfo, StreamShape,
};
use crate::proto::{self, InnerEdge};

/// What every stream of one edge layer shares.
pub(super) struct StreamContext {
    pub(super) direction: Direction,
    pub(super) network: String,
    pub(super) per_feature: bool,
}

/// An edge layer's edge, whichever message holds it.
#[derive(Clone, Copy)]
pub(super) enum EdgeRef<'a> {
    Info(&'a proto::ProtoHefEdgeLayerInfo),
    Mux(&'a proto::ProtoHefEdgeLayerMux),
    Planes(&'a proto::ProtoHefEdgeLayerPlanes),
}

impl<'a> EdgeRef<'a> {
    /// The edge of a context's edge layer.
    pub(super) fn of_layer(edge: &'a proto::Edge) -> Self {
        match edge {
            proto::Edge::LayerInfo(info) => Self::Info(info),
            proto::Edge::LayerMux(mux) => Self::Mux(mux),
            proto::Edge::LayerPlanes(planes) => Self::Planes(planes),
        }
    }

    /// The edge of a MUX's predecessor or a plane.
    fn of_inner(edge: &'a InnerEdge) -> Self {
        match edge {
            InnerEdge::LayerInfo(info) => Self::Info(info),
            InnerEdge::LayerMux(mux) => Self::Mux(mux),
            InnerEdge::LayerPlanes(planes) => Self::Planes(planes),
        }
    }
}

/// Adds the streams of the edge at `path` to `out`: an info layer's stream, a MUX's
/// predecessors' streams, or a planes layer's stream.
pub(super) fn push_edge(
    edge: Option<EdgeRef<'_>>,
    path: &str,
    ctx: &StreamContext,
    out: &mut Vec<StreamInfo>,
) -> Result<(), HefErrorKind> {
    match edge {
        Some(EdgeRef::Info(info)) => out.push(stream(info, &format!("{path}.layer_info"), ctx)?),
        Some(EdgeRef::Mux(mux)) => expand_mux(mux, &format!("{path}.layer_mux"), ctx, out)?,
        Some(EdgeRef::Planes(planes)) => {
            out.push(planes_stream(planes, &format!("{path}.layer_planes"), ctx)?)
        }
        None => {
            return Err(absent(
                format!("{path}.edge"),
                "layer_info, layer_mux or layer_planes",
            ))
        }
    }
    Ok(())
}

/// Adds the streams of a MUX layer's predecessors to `out`, in order.
fn expand_mux(
    mux: &proto::ProtoHefEdgeLayerMux,
    path: &str,
    ctx: &StreamContext,
    out: &mut Vec<StreamInfo>,
) -> Result<(), HefErrorKind> {
    for (i, pred) in mux.predecessors.iter().enumerate() {
        let edge = pred.edge.as_ref().map(EdgeRef::of_inner);
        push_edge(edge, &format!("{path}.predecessors[{i}]"), ctx, out)?;
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
