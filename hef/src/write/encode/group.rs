//! One network group of the message: its streams as edge layers placed in its contexts, and
//! its metadata, in the net-flow or legacy layout.

use crate::model::{Direction, NetworkGroup, StreamInfo};
use crate::proto;

use super::{invalid, layer_info};
use crate::write::{HefBuilder, WriteError};

/// Encodes one network group: its streams as the boundary edge layers of its first and last
/// contexts, placeholder edges between consecutive contexts, and its metadata, in the
/// net-flow or legacy layout the builder asks for.
pub(super) fn network_group(
    g: &NetworkGroup,
    index: usize,
    opts: &HefBuilder,
    multi_layout: bool,
) -> Result<proto::ProtoHefNetworkGroup, WriteError> {
    let path = format!("network_groups[{index}] ({})", g.name);
    let networks_names = network_names(g, &path)?;
    let mut contexts = empty_contexts(g, &path)?;
    let last = g.contexts.saturating_sub(1);
    let (input_layers, output_layers) = stream_layers(g, &path)?;
    let output_edges = output_edges(g, &path, output_layers, opts.mux_outputs)?;
    for layer in input_layers {
        push_edge(
            &mut contexts,
            0,
            proto::DIRECTION_HOST_TO_DEVICE,
            proto::CONNECTION_BOUNDARY,
            layer.network_index,
            proto::Edge::LayerInfo(layer.info),
        );
    }
    push_intermediate_edges(&mut contexts, &g.name, last);
    for (net, e) in output_edges {
        push_edge(
            &mut contexts,
            last,
            proto::DIRECTION_DEVICE_TO_HOST,
            proto::CONNECTION_BOUNDARY,
            net,
            e,
        );
    }

    let body = GroupBody {
        metadata: group_metadata(g, index),
        contexts,
        networks_names,
        sorted_outputs_order: sorted_outputs_order(g),
    };
    let mut out = proto::ProtoHefNetworkGroup {
        sorted_outputs_order: body.sorted_outputs_order.clone(),
        network_group_metadata: Some(proto::ProtoHefNetworkGroupMetadata {
            network_group_name: g.name.clone(),
            network_group_index: index as u32,
            ..Default::default()
        }),
        network_group_name: g.name.clone(),
        network_group_index: index as u32,
        ..Default::default()
    };
    if opts.net_flow {
        out.ops = vec![net_flow_op(&g.name, body, multi_layout)];
    } else {
        place_legacy(&mut out, body, multi_layout);
    }
    Ok(out)
}

/// The group's network names without the `<group>/` prefix, refused when there is none or a
/// name lacks the prefix; empty when the group's one network is named after the group.
fn network_names(g: &NetworkGroup, path: &str) -> Result<Vec<String>, WriteError> {
    let prefix = format!("{}/", g.name);
    if g.networks.is_empty() {
        return Err(invalid(
            format!("{path}.networks"),
            "needs at least one network",
        ));
    }
    let names = g
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
    Ok(if names == [g.name.clone()] {
        Vec::new()
    } else {
        names
    })
}

/// The group's contexts, named and without edge layers yet; a group with streams needs one.
fn empty_contexts(g: &NetworkGroup, path: &str) -> Result<Vec<proto::ProtoHefContext>, WriteError> {
    if g.contexts == 0 && (!g.inputs.is_empty() || !g.outputs.is_empty()) {
        return Err(invalid(
            format!("{path}.contexts"),
            "streams need at least one context",
        ));
    }
    Ok((0..g.contexts)
        .map(|ci| proto::ProtoHefContext {
            context_index: ci,
            metadata: Some(proto::ProtoHefContextMetadata {
                name: format!("context_{ci}"),
                edge_layers: Vec::new(),
                sorted_outputs_order: Vec::new(),
            }),
        })
        .collect())
}

/// A boundary stream encoded as an edge layer, with the index of its network in the group.
struct StreamLayer {
    network_index: u32,
    info: proto::ProtoHefEdgeLayerInfo,
}

/// The group's input and output streams as edge layers, numbered in that order from sys
/// index 1.
fn stream_layers(
    g: &NetworkGroup,
    path: &str,
) -> Result<(Vec<StreamLayer>, Vec<StreamLayer>), WriteError> {
    let mut sys_index = 0u32;
    let mut input_layers = Vec::new();
    for s in &g.inputs {
        input_layers.push(stream_layer(g, path, s, Direction::Input, &mut sys_index)?);
    }
    let mut output_layers = Vec::new();
    for s in &g.outputs {
        output_layers.push(stream_layer(g, path, s, Direction::Output, &mut sys_index)?);
    }
    Ok((input_layers, output_layers))
}

/// One stream listed among the group's `dir` streams, as the edge layer of sys index
/// `*sys + 1` (which it takes); refused when its direction or network disagrees with the
/// group.
fn stream_layer(
    g: &NetworkGroup,
    path: &str,
    s: &StreamInfo,
    dir: Direction,
    sys: &mut u32,
) -> Result<StreamLayer, WriteError> {
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
    Ok(StreamLayer {
        network_index: network_index as u32,
        info: layer_info(s, &format!("{path}.{}", s.name), *sys)?,
    })
}

/// The output edges with their network index: one per output, or with `mux` one MUX layer
/// whose predecessors are the outputs, which must then belong to one network.
fn output_edges(
    g: &NetworkGroup,
    path: &str,
    output_layers: Vec<StreamLayer>,
    mux: bool,
) -> Result<Vec<(u32, proto::Edge)>, WriteError> {
    if !mux || output_layers.is_empty() {
        return Ok(output_layers
            .into_iter()
            .map(|l| (l.network_index, proto::Edge::LayerInfo(l.info)))
            .collect());
    }
    let net = output_layers[0].network_index;
    if output_layers.iter().any(|l| l.network_index != net) {
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
            .map(|l| proto::ProtoHefEdge {
                edge: Some(proto::InnerEdge::LayerInfo(l.info)),
            })
            .collect(),
    };
    Ok(vec![(net, proto::Edge::LayerMux(mux))])
}

/// Adds the edge `e` of network `network_index` to context `ci`, if the group has it, with
/// its direction and connection type.
fn push_edge(
    contexts: &mut [proto::ProtoHefContext],
    ci: u32,
    direction: i32,
    connection: i32,
    network_index: u32,
    e: proto::Edge,
) {
    let layer = proto::ProtoHefEdgeLayer {
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
    };
    if let Some(meta) = contexts
        .get_mut(ci as usize)
        .and_then(|c| c.metadata.as_mut())
    {
        meta.edge_layers.push(layer);
    }
}

/// Context-to-context edges, which the listing must skip: each context up to `last` hands
/// an 8x8x16 layer to the next.
fn push_intermediate_edges(contexts: &mut [proto::ProtoHefContext], group: &str, last: u32) {
    for ci in 0..last {
        let name = format!("{group}/intermediate_{ci}_{}", ci + 1);
        push_edge(
            contexts,
            ci,
            proto::DIRECTION_DEVICE_TO_HOST,
            proto::CONNECTION_INTERMEDIATE,
            0,
            proto::Edge::LayerInfo(intermediate_layer(name.clone())),
        );
        push_edge(
            contexts,
            ci + 1,
            proto::DIRECTION_HOST_TO_DEVICE,
            proto::CONNECTION_INTERMEDIATE,
            0,
            proto::Edge::LayerInfo(intermediate_layer(name)),
        );
    }
}

/// The 8x8x16 one-byte layer of a context-to-context edge.
fn intermediate_layer(name: String) -> proto::ProtoHefEdgeLayerInfo {
    proto::ProtoHefEdgeLayerInfo {
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
    }
}

/// The group's full metadata: name, index, and the compiler's fps and ops when known.
fn group_metadata(g: &NetworkGroup, index: usize) -> proto::ProtoHefNetworkGroupMetadata {
    proto::ProtoHefNetworkGroupMetadata {
        network_group_name: g.name.clone(),
        network_group_index: index as u32,
        transposed_net: false,
        bottleneck_fps: g.bottleneck_fps.unwrap_or(0.0),
        latency: 0.0,
        computational_ops: g.ops_per_frame.unwrap_or(0),
    }
}

/// The output order HailoRT lists by: the outputs in file order, or empty when two share a
/// name (the order is only meaningful for unique names).
fn sorted_outputs_order(g: &NetworkGroup) -> Vec<String> {
    let mut names: Vec<&str> = g.outputs.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    if names.len() == g.outputs.len() {
        g.outputs.iter().map(|s| s.name.clone()).collect()
    } else {
        Vec::new()
    }
}

/// What a network group stores once per layout: its metadata, contexts, network names and
/// output order.
struct GroupBody {
    metadata: proto::ProtoHefNetworkGroupMetadata,
    contexts: Vec<proto::ProtoHefContext>,
    networks_names: Vec<String>,
    sorted_outputs_order: Vec<String>,
}

/// The physical layout of a multi-layout arch's one partial group: the first cluster.
fn first_cluster_layout() -> Option<proto::ProtoHefPhysicalLayout> {
    Some(proto::ProtoHefPhysicalLayout {
        partial_clusters_layout_bitmap: 1,
    })
}

/// The group as a net-flow op holding its core op; on multi-layout arches the core op is
/// wrapped in one partial core op.
fn net_flow_op(name: &str, body: GroupBody, multi_layout: bool) -> proto::ProtoHefOp {
    let core = proto::ProtoHefCoreOp {
        network_group_metadata: Some(body.metadata),
        contexts: body.contexts,
        networks_names: body.networks_names,
        partial_core_ops: Vec::new(),
    };
    let core = if multi_layout {
        proto::ProtoHefCoreOp {
            network_group_metadata: core.network_group_metadata.clone(),
            partial_core_ops: vec![proto::ProtoHefPartialCoreOp {
                core_op: Some(Box::new(core)),
                layout: first_cluster_layout(),
            }],
            ..Default::default()
        }
    } else {
        core
    };
    proto::ProtoHefOp {
        name: name.to_string(),
        core_op: Some(core),
    }
}

/// Puts the group's body in the legacy network-group fields of `out`: in one partial
/// network group on multi-layout arches, else in `out` itself.
fn place_legacy(out: &mut proto::ProtoHefNetworkGroup, body: GroupBody, multi_layout: bool) {
    let legacy = proto::ProtoHefNetworkGroup {
        network_group_metadata: Some(body.metadata),
        contexts: body.contexts,
        networks_names: body.networks_names,
        sorted_outputs_order: body.sorted_outputs_order,
        ..Default::default()
    };
    if multi_layout {
        out.partial_network_groups = vec![proto::ProtoHefPartialNetworkGroup {
            network_group: Some(Box::new(legacy)),
            layout: first_cluster_layout(),
        }];
    } else {
        out.contexts = legacy.contexts;
        out.networks_names = legacy.networks_names;
        out.network_group_metadata = legacy.network_group_metadata;
    }
}
