//! The rig: cameras, graphs, NPU, decoder, multi-view sync, fit and sinks.

pub mod config;
pub mod queue;
pub mod stamp;

pub use config::{ConfigError, RigConfig};
pub use queue::{drop_oldest, DropOldestReceiver, DropOldestSender, Pushed};
