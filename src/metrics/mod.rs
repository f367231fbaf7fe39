//! Op counts, latency and fps statistics, utilisation, reports and plots, and the rig planner.
//!
//! | module | what it does |
//! |---|---|
//! | [`ops`] | MAC counts of ONNX graphs with full shape inference; unresolved nodes are named |
//! | [`onnx_graph`] | a small builder of ONNX graphs (tests and fixture generators) |
//! | [`vit_graph`] | the RF-DETR keypoint backbone (ViT-S/12 + projectors) as an ONNX graph |

pub mod onnx_graph;
pub mod ops;
pub mod vit_graph;
