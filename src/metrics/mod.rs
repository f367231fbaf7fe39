//! Op counts, latency and fps statistics, utilisation, reports and plots, and the rig planner.
//!
//! | module | what it does |
//! |---|---|
//! | [`ops`] | MAC counts of ONNX graphs with full shape inference; unresolved nodes are named |
//! | [`onnx_graph`] | a small builder of ONNX graphs (tests and fixture generators) |
//! | [`figure`] | figures with units and provenance (measured on a device, or modelled with assumptions) |
//! | [`hef_ops`] | operations per frame and precision of the graphs in a HEF |
//! | [`measure`] | running HEFs on a device and measuring fps, latency, busy and compute share, switches, link |
//! | [`bench`](mod@bench) | the `hailo-edge bench` sweep, its report files and plots |
//! | [`utilisation`] | compute share against the INT8 and INT4 peaks, busy share |
//! | [`stats`] | latency percentiles and jitter per stage (hdrhistogram), frame accounting |
//! | [`report`] | the utilisation report schema (`report.json`) the planner reads |
//! | [`plan`] | the rig planner and the planning-table check |
//! | [`vit_graph`] | the RF-DETR keypoint backbone (ViT-S/12 + projectors) as an ONNX graph |

pub mod bench;
pub mod figure;
pub mod hef_ops;
pub mod measure;
pub mod onnx_graph;
pub mod ops;
pub mod plan;
pub mod report;
pub mod stats;
pub mod utilisation;
pub mod vit_graph;
