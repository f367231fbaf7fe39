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
use crate::model::{Direction, HeaderVersion, Hef, HwArch, NetworkGroup, StreamInfo};
use crate::proto::{self, ext};

mod stream;

use stream::{push_edge, EdgeRef, StreamContext};

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

/// The listing of one network group.
fn network_group(
    ng: &proto::ProtoHefNetworkGroup,
    path: &str,
    features: &Features,
) -> Result<NetworkGroup, HefErrorKind> {
    let name = group_name(ng, path)?;
    let core = core_op(ng, path, features)?;
    let networks = network_names(&name, &core, features);
    let Streams {
        inputs,
        mut outputs,
    } = boundary_streams(&core, &networks, features)?;
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

/// The network group of `ng`'s first partial network group; `what` names what was
/// expected when there is none.
fn first_partial<'a>(
    ng: &'a proto::ProtoHefNetworkGroup,
    path: &str,
    what: &'static str,
) -> Result<&'a proto::ProtoHefNetworkGroup, HefErrorKind> {
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
}

/// The network group's name: its first partial network group's when it has one, else its
/// own; empty without metadata.
fn group_name(ng: &proto::ProtoHefNetworkGroup, path: &str) -> Result<String, HefErrorKind> {
    let metadata = match ng.partial_network_groups.first() {
        Some(_) => first_partial(ng, path, "a partial network group")?
            .network_group_metadata
            .as_ref(),
        None => ng.network_group_metadata.as_ref(),
    };
    Ok(metadata
        .map(|m| m.network_group_name.clone())
        .unwrap_or_default())
}

/// The core op the group's streams are read from: with net flow, the first op that holds
/// one ([`net_flow_core_op`]); else the group's own fields, or its first partial network
/// group's on a multi-layout arch.
fn core_op<'a>(
    ng: &'a proto::ProtoHefNetworkGroup,
    path: &str,
    features: &Features,
) -> Result<CoreOpView<'a>, HefErrorKind> {
    if features.net_flow {
        net_flow_core_op(ng, path, features)
    } else if features.multi_layout {
        let partial = first_partial(ng, path, "a partial network group (multi-layout arch)")?;
        Ok(CoreOpView::of_group(
            partial,
            format!("{path}.partial_network_groups[0].network_group"),
        ))
    } else {
        Ok(CoreOpView::of_group(ng, path.to_string()))
    }
}

/// The first `ops[k].core_op` of a net-flow group, or its first partial core op on a
/// multi-layout arch.
fn net_flow_core_op<'a>(
    ng: &'a proto::ProtoHefNetworkGroup,
    path: &str,
    features: &Features,
) -> Result<CoreOpView<'a>, HefErrorKind> {
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
    if !features.multi_layout {
        return Ok(CoreOpView::of_core_op(op, op_path));
    }
    let Some(partial) = op
        .partial_core_ops
        .first()
        .and_then(|p| p.core_op.as_deref())
    else {
        return Err(absent(
            format!("{op_path}.partial_core_ops"),
            "a partial core op (multi-layout arch)",
        ));
    };
    Ok(CoreOpView::of_core_op(
        partial,
        format!("{op_path}.partial_core_ops[0].core_op"),
    ))
}

/// The group's networks, each `group/network`: one per `networks_names` entry in a
/// multi-network file, else the group alone.
fn network_names(name: &str, core: &CoreOpView<'_>, features: &Features) -> Vec<String> {
    if features.multi_network && !core.networks_names.is_empty() {
        core.networks_names
            .iter()
            .map(|n| format!("{name}/{n}"))
            .collect()
    } else {
        vec![format!("{name}/{name}")]
    }
}

/// A group's streams by direction.
#[derive(Default)]
struct Streams {
    inputs: Vec<StreamInfo>,
    outputs: Vec<StreamInfo>,
}

/// The streams of the BOUNDARY edge layers of every context of `core`, in file order.
fn boundary_streams(
    core: &CoreOpView<'_>,
    networks: &[String],
    features: &Features,
) -> Result<Streams, HefErrorKind> {
    let mut streams = Streams::default();
    for (ci, ctx) in core.contexts.iter().enumerate() {
        let Some(meta) = &ctx.metadata else { continue };
        for (li, layer) in meta.edge_layers.iter().enumerate() {
            let lpath = format!("{}.contexts[{ci}].metadata.edge_layers[{li}]", core.path);
            let Some(shared) = layer_context(layer, &lpath, networks, features)? else {
                continue;
            };
            let target = match shared.direction {
                Direction::Input => &mut streams.inputs,
                Direction::Output => &mut streams.outputs,
            };
            let edge = layer.edge.as_ref().map(EdgeRef::of_layer);
            push_edge(edge, &lpath, &shared, target)?;
        }
    }
    Ok(streams)
}

/// What the streams of an edge layer share: its direction, its network, and whether its
/// outputs are quantised per feature; `None` for a layer that is not BOUNDARY.
fn layer_context(
    layer: &proto::ProtoHefEdgeLayer,
    lpath: &str,
    networks: &[String],
    features: &Features,
) -> Result<Option<StreamContext>, HefErrorKind> {
    let connection = layer
        .context_switch_info
        .as_ref()
        .map_or(proto::CONNECTION_BOUNDARY, |c| c.edge_connection_type);
    if connection != proto::CONNECTION_BOUNDARY {
        return Ok(None);
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
    Ok(Some(StreamContext {
        direction,
        network,
        per_feature: features.per_feature_scales && direction == Direction::Output,
    }))
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
