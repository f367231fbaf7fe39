//! The protobuf payload (`hef.proto` of HailoRT 5.2), as prost derive structs.
//!
//! Only the messages and fields the listing needs are declared; prost skips
//! every other field on decode, as protobuf requires. Field numbers and wire
//! types follow `hailort/libhailort/hef.proto`. Protobuf enums are decoded as
//! plain integers so that an unknown value is reported by the reader with its
//! field path instead of being silently mapped.
//!
//! Written by hand rather than generated so the build needs no `protoc`.

use prost::Message;

/// `ProtoHEFHef`: the root message.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefHef {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ProtoHefHeader>,
    #[prost(message, repeated, tag = "2")]
    pub network_groups: Vec<ProtoHefNetworkGroup>,
    #[prost(message, repeated, tag = "5")]
    pub extensions: Vec<ProtoHefExtension>,
    #[prost(message, repeated, tag = "6")]
    pub optional_extensions: Vec<ProtoHefExtension>,
    #[prost(message, repeated, tag = "7")]
    pub external_resources: Vec<ProtoHefExternalResource>,
}

/// `ProtoHEFExtension` and `ProtoHEFOptionalExtension` (same layout).
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefExtension {
    #[prost(uint32, tag = "1")]
    pub type_index: u32,
    #[prost(string, tag = "2")]
    pub name: String,
}

/// `ProtoHEFExternalResource`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefExternalResource {
    #[prost(uint64, tag = "1")]
    pub offset: u64,
    #[prost(uint64, tag = "2")]
    pub size: u64,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(uint64, tag = "4")]
    pub xxhash: u64,
}

/// `ProtoHEFHeader`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefHeader {
    /// `ProtoHEFHwArch` enum, read as its varint value.
    #[prost(uint64, tag = "1")]
    pub hw_arch: u64,
    #[prost(uint64, tag = "2")]
    pub timestamp: u64,
    /// `sdk_version` in 4.x, `sdk_version_str` in 5.x.
    #[prost(string, tag = "3")]
    pub sdk_version_str: String,
    /// Proto format version; extensions apply when it is > 0.
    #[prost(uint64, tag = "4")]
    pub version: u64,
    #[prost(message, optional, tag = "5")]
    pub sdk_version: Option<ProtoHefSdkVersion>,
}

/// `ProtoHEFSdkVersion` (5.x).
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefSdkVersion {
    #[prost(uint32, tag = "1")]
    pub sdk_version_major: u32,
    #[prost(uint32, tag = "2")]
    pub sdk_version_minor: u32,
    #[prost(uint32, tag = "3")]
    pub sdk_version_revision: u32,
}

/// `ProtoHEFNetworkGroup`: legacy fields 1-7 plus the net-flow ops (8-11).
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefNetworkGroup {
    #[prost(message, optional, tag = "1")]
    pub network_group_metadata: Option<ProtoHefNetworkGroupMetadata>,
    #[prost(message, repeated, tag = "3")]
    pub contexts: Vec<ProtoHefContext>,
    #[prost(string, repeated, tag = "4")]
    pub sorted_outputs_order: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub networks_names: Vec<String>,
    #[prost(message, repeated, tag = "7")]
    pub partial_network_groups: Vec<ProtoHefPartialNetworkGroup>,
    #[prost(message, repeated, tag = "8")]
    pub ops: Vec<ProtoHefOp>,
    #[prost(string, tag = "10")]
    pub network_group_name: String,
    #[prost(uint32, tag = "11")]
    pub network_group_index: u32,
}

/// `ProtoHEFPartialNetworkGroup`: one physical layout of a network group.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefPartialNetworkGroup {
    #[prost(message, optional, boxed, tag = "1")]
    pub network_group: Option<Box<ProtoHefNetworkGroup>>,
    #[prost(message, optional, tag = "2")]
    pub layout: Option<ProtoHefPhysicalLayout>,
}

/// `ProtoHEFPhysicalLayout`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefPhysicalLayout {
    #[prost(uint32, tag = "1")]
    pub partial_clusters_layout_bitmap: u32,
}

/// `ProtoHEFOp`: one op of the net-flow graph. Only the core-op case of the
/// `op` oneof is declared; NMS and logits ops are skipped.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefOp {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "4")]
    pub core_op: Option<ProtoHefCoreOp>,
}

/// `ProtoHEFCoreOp`: the part of a network group that runs on the core.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefCoreOp {
    #[prost(message, optional, tag = "1")]
    pub network_group_metadata: Option<ProtoHefNetworkGroupMetadata>,
    #[prost(message, repeated, tag = "3")]
    pub contexts: Vec<ProtoHefContext>,
    #[prost(string, repeated, tag = "6")]
    pub networks_names: Vec<String>,
    #[prost(message, repeated, tag = "7")]
    pub partial_core_ops: Vec<ProtoHefPartialCoreOp>,
}

/// `ProtoHEFPartialCoreOp`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefPartialCoreOp {
    #[prost(message, optional, boxed, tag = "1")]
    pub core_op: Option<Box<ProtoHefCoreOp>>,
    #[prost(message, optional, tag = "2")]
    pub layout: Option<ProtoHefPhysicalLayout>,
}

/// `ProtoHEFNetworkGroupMetadata`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefNetworkGroupMetadata {
    #[prost(string, tag = "1")]
    pub network_group_name: String,
    #[prost(uint32, tag = "2")]
    pub network_group_index: u32,
    #[prost(bool, tag = "3")]
    pub transposed_net: bool,
    #[prost(double, tag = "4")]
    pub bottleneck_fps: f64,
    #[prost(double, tag = "6")]
    pub latency: f64,
    /// 5.2: operations per frame; 0 means not available.
    #[prost(uint64, tag = "8")]
    pub computational_ops: u64,
}

/// `ProtoHEFContext`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefContext {
    #[prost(uint32, tag = "1")]
    pub context_index: u32,
    #[prost(message, optional, tag = "3")]
    pub metadata: Option<ProtoHefContextMetadata>,
}

/// `ProtoHEFContextMetadata`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefContextMetadata {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub edge_layers: Vec<ProtoHefEdgeLayer>,
    /// Output order of very old HEFs (last context only).
    #[prost(string, repeated, tag = "5")]
    pub sorted_outputs_order: Vec<String>,
}

/// `ProtoHEFEdgeLayerDirection::HOST_TO_DEVICE`.
pub const DIRECTION_HOST_TO_DEVICE: i32 = 0;
/// `ProtoHEFEdgeLayerDirection::DEVICE_TO_HOST`.
pub const DIRECTION_DEVICE_TO_HOST: i32 = 1;
/// `ProtoHEFEdgeLayerType::INFO`.
pub const EDGE_TYPE_INFO: i32 = 0;
/// `ProtoHEFEdgeLayerType::MUX`.
pub const EDGE_TYPE_MUX: i32 = 1;
/// `ProtoHEFEdgeConnectionType::BOUNDARY`.
pub const CONNECTION_BOUNDARY: i32 = 0;
/// `ProtoHEFEdgeConnectionType::INTERMEDIATE`.
pub const CONNECTION_INTERMEDIATE: i32 = 1;

/// `ProtoHEFEdgeLayer`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefEdgeLayer {
    #[prost(int32, tag = "1")]
    pub direction: i32,
    #[prost(int32, tag = "2")]
    pub edge_layer_type: i32,
    #[prost(oneof = "Edge", tags = "3, 4, 8")]
    pub edge: Option<Edge>,
    #[prost(message, optional, tag = "5")]
    pub context_switch_info: Option<ProtoHefContextSwitchInformation>,
    #[prost(uint32, tag = "6")]
    pub network_index: u32,
}

/// The `edge` oneof of `ProtoHEFEdgeLayer`.
#[allow(clippy::enum_variant_names)] // named after the oneof cases of hef.proto
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Edge {
    #[prost(message, tag = "3")]
    LayerInfo(ProtoHefEdgeLayerInfo),
    #[prost(message, tag = "4")]
    LayerMux(ProtoHefEdgeLayerMux),
    #[prost(message, tag = "8")]
    LayerPlanes(ProtoHefEdgeLayerPlanes),
}

/// `ProtoHefEdge`: an edge inside a MUX or planes layer.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefEdge {
    #[prost(oneof = "InnerEdge", tags = "1, 2, 3")]
    pub edge: Option<InnerEdge>,
}

/// The `edge` oneof of `ProtoHefEdge`.
#[allow(clippy::enum_variant_names)] // named after the oneof cases of hef.proto
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum InnerEdge {
    #[prost(message, tag = "1")]
    LayerInfo(ProtoHefEdgeLayerInfo),
    #[prost(message, tag = "2")]
    LayerMux(Box<ProtoHefEdgeLayerMux>),
    #[prost(message, tag = "3")]
    LayerPlanes(ProtoHefEdgeLayerPlanes),
}

/// `ProtoHEFContextSwitchInformation`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefContextSwitchInformation {
    #[prost(uint32, tag = "1")]
    pub context_index: u32,
    /// `ProtoHEFEdgeConnectionType`.
    #[prost(int32, tag = "3")]
    pub edge_connection_type: i32,
}

/// `ProtoHEFEdgeLayerInfo`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefEdgeLayerInfo {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub edge_layer_base: Option<ProtoHefEdgeLayerBase>,
    #[prost(message, optional, tag = "3")]
    pub numeric_info: Option<ProtoHefEdgeLayerNumericInfo>,
    #[prost(bool, tag = "6")]
    pub transposed: bool,
}

/// `ProtoHEFEdgeLayerMux`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefEdgeLayerMux {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub edge_layer_base: Option<ProtoHefEdgeLayerBase>,
    #[prost(message, repeated, tag = "5")]
    pub predecessors: Vec<ProtoHefEdge>,
}

/// `ProtoHEFEdgeLayerPlanes`: a multi-planar (NV12/NV21/I420) input.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefEdgeLayerPlanes {
    #[prost(string, tag = "1")]
    pub name: String,
    /// `ProtoHEFEPlanesFormat`: 0 NV12, 1 NV21, 2 I420.
    #[prost(int32, tag = "2")]
    pub planes_format: i32,
    #[prost(message, repeated, tag = "3")]
    pub planes: Vec<ProtoHefEdge>,
    #[prost(uint32, tag = "4")]
    pub height: u32,
    #[prost(uint32, tag = "5")]
    pub width: u32,
    #[prost(uint32, tag = "6")]
    pub features: u32,
}

/// `ProtoHEFEdgeLayerBase`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefEdgeLayerBase {
    #[prost(uint32, tag = "1")]
    pub height: u32,
    #[prost(uint32, tag = "2")]
    pub padded_height: u32,
    #[prost(uint32, tag = "3")]
    pub width: u32,
    #[prost(uint32, tag = "4")]
    pub padded_width: u32,
    #[prost(uint32, tag = "5")]
    pub features: u32,
    #[prost(uint32, tag = "6")]
    pub padded_features: u32,
    /// Compiler format order (see [`crate::read`] for the mapping).
    #[prost(uint32, tag = "7")]
    pub format: u32,
    #[prost(uint32, tag = "8")]
    pub sys_index: u32,
    #[prost(message, optional, tag = "11")]
    pub additional_info: Option<ProtoHefAdditionalInfo>,
    #[prost(uint32, tag = "12")]
    pub data_bytes: u32,
}

/// `ProtoHEFAdditionalInfo`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefAdditionalInfo {
    #[prost(message, optional, tag = "1")]
    pub nms_info: Option<ProtoHefNmsInfo>,
}

/// `ProtoHEFNmsInfo`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefNmsInfo {
    #[prost(uint32, tag = "1")]
    pub type_index: u32,
    #[prost(uint64, tag = "2")]
    pub number_of_classes: u64,
    #[prost(uint64, tag = "3")]
    pub max_output_size: u64,
    #[prost(uint64, tag = "4")]
    pub bbox_size: u64,
    #[prost(uint64, tag = "7")]
    pub input_division_factor: u64,
}

/// `ProtoHEFEdgeLayerNumericInfo`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoHefEdgeLayerNumericInfo {
    #[prost(float, tag = "1")]
    pub qp_zp: f32,
    #[prost(float, tag = "2")]
    pub qp_scale: f32,
    #[prost(float, tag = "3")]
    pub limvals_min: f32,
    #[prost(float, tag = "4")]
    pub limvals_max: f32,
    #[prost(double, repeated, tag = "5")]
    pub qp_zps: Vec<f64>,
    #[prost(double, repeated, tag = "6")]
    pub qp_scales: Vec<f64>,
}

/// Decodes the root message.
pub fn decode(bytes: &[u8]) -> Result<ProtoHefHef, prost::DecodeError> {
    ProtoHefHef::decode(bytes)
}

/// `ProtoHEFExtensionType` values the reader and writer act on.
pub mod ext {
    /// `TEST_ONE`: never a known required extension.
    pub const TEST_ONE: u32 = 7;
    /// `MULTI_NETWORK_VARIABLE_BATCH_SIZE`: networks listed by name (optional).
    pub const MULTI_NETWORK_VARIABLE_BATCH_SIZE: u32 = 8;
    /// `HAILO_NET_FLOW`: the core op lives in `ops[k].core_op`.
    pub const HAILO_NET_FLOW: u32 = 13;
    /// `OUTPUT_SCALE_PER_FEATURE`: outputs carry per-feature quantisation.
    pub const OUTPUT_SCALE_PER_FEATURE: u32 = 25;
    /// `PERIPH_CALCULATION_IN_HAILORT`: HailoRT 5.x refuses HEFs without it.
    pub const PERIPH_CALCULATION_IN_HAILORT: u32 = 26;
    /// The highest extension HailoRT 5.2 knows (`STRICT_RUNTIME_VERSIONING`).
    pub const LAST_KNOWN: u32 = 35;

    /// Whether HailoRT 5.2 accepts this required extension.
    pub fn is_known_required(index: u32) -> bool {
        index <= LAST_KNOWN && index != TEST_ONE && index != MULTI_NETWORK_VARIABLE_BATCH_SIZE
    }
}
