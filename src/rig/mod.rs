//! The rig: cameras, graphs, NPU, decoder, multi-view sync, fit and sinks.
//!
//! | module | what it does |
//! |---|---|
//! | [`config`] | the rig file (TOML), its checks and the built-in demo rig |
//! | [`error`] | why a rig could not run |
//! | [`alloc`] | the allocator setting a program makes at start-up for its decoders |
//! | [`build`] | opening the device, graphs, cameras, decoders and fitter a rig names |
//! | [`stage`] | the stages of a frame's path, in order: capture, NPU, decode, sync, fit, sinks |
//! | [`work`] | what travels between the stages |
//! | [`stats`], [`report`], [`status`] | live counters, the final report, the status line |
//! | [`stamp`] | clocks and per-stage stamps |
//! | [`run`](mod@run) | starting, stopping and draining a rig |
//! | [`inject`] | faults injected into a run (the fault matrix's tests) |
//! | [`soak`] | the soak: twice the sustainable load; resident size, threads and descriptors over time |
//!
//! The camera queues are the capture threads' own drop-oldest queues
//! ([`stage::capture`]); every other queue is bounded and blocking, so a
//! slow stage backs up to the camera queues, where the oldest frames drop and are
//! counted.

pub mod alloc;
pub mod build;
pub mod config;
pub mod decoders;
pub mod error;
pub mod inject;
pub mod report;
pub mod run;
pub mod soak;
pub mod stage;
pub mod stamp;
pub mod stats;
pub mod status;
pub mod work;

pub use config::{ConfigError, RigConfig};
pub use error::{CameraSetupError, GraphError, GraphStep, RunError};
pub use report::Report;
pub use run::{run, RunOptions};
