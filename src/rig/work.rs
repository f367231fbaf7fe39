//! What travels between the stages.

use std::sync::Arc;

use crate::decode::Detection;
use crate::npu::Bindings;
use crate::preprocess::Transform;
use crate::rig::stage::sync::Stamped;
use crate::scene::GroundTruth;

use super::stamp::Stamps;

/// A frame's identity and timing, from the NPU stage to the sinks.
#[derive(Debug, Clone)]
pub struct FrameMeta {
    /// Index of the camera in the rig (dense, from 0).
    pub camera: usize,
    /// Index of the graph the camera feeds.
    pub graph: usize,
    pub sequence: u64,
    pub stamps: Stamps,
    /// Camera pixel <-> graph input pixel.
    pub transform: Transform,
    /// Ground truth of synthetic cameras.
    pub truth: Option<Arc<GroundTruth>>,
}

/// One NPU completion for the decoder pool.
#[derive(Debug)]
pub struct DecodeWork {
    pub meta: FrameMeta,
    /// The job's buffers (outputs filled); they go back to the NPU stage after decoding.
    pub bindings: Bindings,
}

/// One view after the decoder: what the sync and the fit need.
#[derive(Debug, Clone)]
pub struct ViewResult {
    pub meta: FrameMeta,
    /// The decoder's top detection in camera pixels (`None`: no detection).
    pub detection: Option<Detection>,
}

impl Stamped for ViewResult {
    fn camera_index(&self) -> usize {
        self.meta.camera
    }
    fn capture_ns(&self) -> u64 {
        self.meta.stamps.capture_ns()
    }
}

/// A decoded frame's buffers on their way back to the NPU stage; their return
/// also frees the frame's in-flight slot and its decoder's queue place.
#[derive(Debug)]
pub struct Returned {
    pub graph: usize,
    pub camera: usize,
    /// Index of the decoder thread that decoded it.
    pub worker: usize,
    pub bindings: Bindings,
}
