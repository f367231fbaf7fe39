//! hailo-edge: a multi-camera whole-body capture runtime for the Hailo-10H NPU.
//!
//! # A frame's path
//!
//! Each stage of the path is a module under [`rig::stage`], in the order a frame meets it;
//! the work each stage does lives in the room named after it.
//!
//! | # | stage | thread | does | with |
//! |---|---|---|---|---|
//! | 1 | [`rig::stage::capture`] | one per camera | reads a [`camera`] source into a drop-oldest camera queue | [`camera`] |
//! | 2 | [`rig::stage::npu`] | one | admits frames, preprocesses them into job buffers, batches per graph, submits, switches graphs, routes completions | [`preprocess`], [`npu`] |
//! | 3 | [`rig::stage::decode`] | a pool | turns the backbone's feature maps into keypoints | [`decode`] |
//! | 4 | [`rig::stage::sync`] | (fit thread) | groups the views of one instant across cameras | |
//! | 5 | [`rig::stage::fit`] | one | triangulates and fits the body pose | [`body`], [`geom`] |
//! | 6 | [`rig::stage::sinks`] | one | writes JSON lines and the MCAP recording | [`camera::record`] |
//!
//! [`rig`] builds a rig from its file ([`rig::config`]), runs the stages and writes the
//! report; [`scene`] is the synthetic subject the demo rig films.
//!
//! # Around the path
//!
//! | module | what it does |
//! |---|---|
//! | [`npu`] | one safe API over one C table of HailoRT functions, real (C++ shim) or simulated |
//! | [`bench`](mod@bench) | drives the NPU to measure it: fps, latency, busy and compute share, switches |
//! | [`metrics`] | figures with provenance, statistics, utilisation, op counts, the planner |
//! | [`cpu`] | the CPU features the binary assumes against the running CPU's, checked at start |
//! | [`calibrate`] | rig calibration from an AprilGrid board: intrinsics, then extrinsics by bundle adjustment |
//! | [`geom`] | the one camera model and the clocks every stamp is taken on |
//! | [`doctor`] | deployment checks: HailoRT, PCIe, USB, network, udev, link budget |
//! | [`gate`] | a HEF's outputs on the device against its reference ONNX, by name, within a bound |
//! | [`hef`] | the HEF container: reader and writer |
//! | [`limits`] | the bound of every size, count and duration from a file, flag or device |
//! | [`digest`] | SHA-256 in the hex form cache names and provenance records carry |
//! | [`serve`] | `run --serve`: the live dashboard in a browser (HTTP and a WebSocket, assets in the binary) |
//! | [`publish`] | results where people and tools look: Foxglove messages and server, Zenoh |
//! | [`fuse`] | `hailo-edge fuse`: one body from the Zenoh views of several boxes |
//! | [`output`] | output files: checked before a run, no links followed, nothing overwritten unasked, private, reports replaced atomically |
//! | [`text`] | values as errors and reports print them: tensor shapes |
//!
//! # Errors
//!
//! Each room has its own error enum, whose message names the file, key, camera or device and
//! what was expected. A message holds its cause's text, so it reads whole where it is printed
//! alone (a report's field, a log line), and `source()` returns the cause for a caller that
//! walks or downcasts the chain; [`output::error_text`] prints a chain with each cause once.

pub mod bench;
pub mod body;
pub mod calibrate;
pub mod camera;
pub mod cpu;
pub mod decode;
pub mod digest;
pub mod doctor;
pub mod first_light;
pub mod fuse;
pub mod gate;
pub mod geom;
pub mod limits;
pub mod metrics;
pub mod npu;
pub mod output;
pub mod preprocess;
pub mod publish;
pub mod rig;
pub mod scene;
pub mod serve;
pub mod text;

pub use hef;

/// The repository's `fixtures/` file `name`, which unit tests read.
#[cfg(test)]
pub(crate) fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}
