//! Safe API over one C table of HailoRT functions: the real part through the
//! C++ shim, or the simulator.
//!
//! | layer | where | what |
//! |---|---|---|
//! | raw | `hailort-sys` | the `hes_api` table of C function pointers and its types |
//! | checked | [`result`] | one function per table entry, grouped per handle, status to `Result` |
//! | safe | this module | [`Device`], [`Model`], [`ConfiguredModel`], [`Bindings`], [`Job`] |
//!
//! The same safe code runs over HailoRT's table and the simulator's
//! ([`sim`]), so tests on the simulator exercise the real code path. A third
//! table, [`Api::stub`], answers `HAILO_NOT_IMPLEMENTED` from every entry.
//!
//! ```
//! use std::time::Duration;
//! use hailo_edge::npu::{sim, Backend, Device};
//!
//! let hef = hef::HefBuilder::new(&hef::samples::backbone(288)).build().unwrap();
//! let device = Device::open(Backend::Sim(sim::SimProfile::default()))?;
//! let model = device.load_model(&hef)?;
//! let configured = model.configure()?;
//! drop(device); // the configured model keeps its device open
//! let mut job = configured.run_async(configured.bindings()?)?;
//! let done = job.wait(Duration::from_secs(5))?;
//! done.status?;
//! assert_eq!(done.output_kind, sim::OutputKind::SimSynthetic);
//! # Ok::<(), hailo_edge::npu::NpuError>(())
//! ```
//!
//! Ownership: models, configured models, bindings and jobs hold an `Arc` to
//! their device, so none can outlive it; [`Bindings`] are moved into a
//! [`Job`] and come back in its [`Completion`]; the C callback only forwards
//! to a channel.

pub mod api;
mod auto;
pub(crate) mod buffer;
mod configured;
mod device;
pub mod error;
mod identity;
mod infer_model;
mod job;
pub mod link;
mod open_params;
pub mod probe;
mod reaper;
pub mod result;
pub mod sim;

/// Re-exported where the NPU's users look for them: the stream direction is the HEF's,
/// the backend kind the reports'.
pub use crate::metrics::figure::BackendKind;
pub use api::Api;
pub(crate) use auto::open as auto_open;
pub use buffer::{page_size, DmaMapper, PageBuf, PagePool};
pub use configured::ConfiguredModel;
pub use device::{scan_hailort, Backend, Device, DeviceOptions, RanOn, Scheduling};
pub use error::{NpuError, Status};
pub use hef::Direction;
pub use identity::Identity;
pub use infer_model::{FormatType, Model, StreamDesc};
pub use job::{Bindings, Completion, Job};
pub use open_params::{BadGroupId, GroupId};
pub use sim::OutputKind;

static_assertions::assert_impl_all!(Device: Send, Sync, Clone);
static_assertions::assert_impl_all!(Model: Send, Sync);
static_assertions::assert_impl_all!(ConfiguredModel: Send, Sync);
static_assertions::assert_impl_all!(Bindings: Send, Sync);
static_assertions::assert_impl_all!(Job: Send);
static_assertions::assert_impl_all!(Completion: Send);
static_assertions::assert_impl_all!(NpuError: Send, Sync, std::error::Error);
static_assertions::assert_not_impl_any!(Bindings: Clone);
static_assertions::assert_not_impl_any!(Job: Clone);
