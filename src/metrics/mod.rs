//! Figures with provenance, statistics, utilisation, op counts and the rig planner: what the
//! runtime knows about cost. Nothing here drives the NPU; [`crate::bench`] does.
//!
//! | module | what it does |
//! |---|---|
//! | [`figure`] | figures with units and provenance (measured on a device, published, or modelled with assumptions) |
//! | [`stats`] | latency percentiles and jitter per stage (hdrhistogram), frame accounting |
//! | [`utilisation`] | compute share against the INT8 and INT4 peaks, busy share |
//! | [`ops`] | MAC counts of ONNX graphs and HEFs, the ONNX graph builder and the backbone graph |
//! | [`utilisation_report`] | the utilisation report schema (`report.json`) the planner reads |
//! | [`published`] | the model zoo's published Hailo-10H fps, as data, and their compute share |
//! | [`utilisation_source`] | assumed, published or a report: the one utilisation choice of plan, simulator and rig |
//! | [`plan`] | the rig planner, the three sources side by side and the planning-table check |

pub mod figure;
pub mod ops;
pub mod plan;
pub mod published;
pub mod stats;
pub mod utilisation;
pub mod utilisation_report;
pub mod utilisation_source;
