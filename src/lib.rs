//! hailo-edge: a multi-camera whole-body capture runtime for the Hailo-10H NPU.
//!
//! | module | what it does |
//! |---|---|
//! | [`npu`] | safe API over one C table of HailoRT functions, real or simulated |
//! | [`camera`] | camera sources, frames, preprocessing into HEF inputs, sync, recording |
//! | [`pipeline`] | the rig: cameras to graphs to NPU to decoder to fit to sinks |
//! | [`decode`] | the CPU decoder of the backbone features into keypoints |
//! | [`body`] | the ANNY body model, joint limits, triangulation and the pose fit |
//! | [`doctor`] | deployment checks: HailoRT, PCIe, USB, network, udev, link budget |
//! | [`metrics`] | op counts, latency statistics, utilisation, reports, the planner |

pub mod bench;
pub mod body;
pub mod camera;
pub mod decode;
pub mod doctor;
pub mod geom;
pub mod metrics;
pub mod npu;
pub mod preprocess;
pub mod rig;
pub mod scene;

pub use hef;
