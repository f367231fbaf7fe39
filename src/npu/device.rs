//! The device: which backend, the VDevice handle, telemetry, loading models.

use std::path::Path;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use hailort_sys::hes_vdevice;

use super::api::Api;
use super::auto;
use super::error::NpuError;
use super::infer_model::Model;
use super::open_params::GroupId;
use super::probe::Probe;
use super::result;
use super::sim::{self, SimProfile, SimStats};
use crate::metrics::figure::{Assumption, BackendKind};

/// Which implementation of the table to open.
/// (`Sim` carries a whole profile; a device is opened rarely, so it is not boxed.)
#[derive(Debug, Clone)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)]
pub enum Backend {
    /// The real part when this build links HailoRT and HailoRT opens one
    /// (a scanned PCIe or integrated part, else the USB card at its address
    /// when `usbnet0` is up), else the default simulator; falling back while
    /// a part is present sets [`Device::backend_warning`].
    Auto,
    /// HailoRT; `device_id` picks a device (PCIe BDF, or the IP address of
    /// the USB part), `None` takes any.
    HailoRt { device_id: Option<String> },
    /// The simulator with this profile.
    Sim(SimProfile),
}

/// Which backend ran and on which device, as every report names them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RanOn {
    /// The backend that ran.
    pub backend: BackendKind,
    /// One line naming the device ([`Device::describe`]).
    pub device: String,
    /// Set when `auto` ran the simulator although a Hailo part is present
    /// ([`Device::backend_warning`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_warning: Option<String>,
}

impl RanOn {
    /// True when the real part ran.
    pub fn on_part(&self) -> bool {
        self.backend == BackendKind::HailoRt
    }
}

/// The model scheduler of a VDevice (`hailo_scheduling_algorithm_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scheduling {
    /// HailoRT's default: the device switches between models by itself.
    #[default]
    RoundRobin,
    /// No scheduler: activate one model at a time by hand.
    None,
}

/// Options of [`Device::open_with`].
#[derive(Debug, Clone)]
pub struct DeviceOptions {
    pub scheduling: Scheduling,
    /// VDevice group id (`None`: HailoRT's default, "UNIQUE"). Processes
    /// that share one device open it with the same id other than "UNIQUE".
    pub group_id: Option<GroupId>,
    /// Maps every pooled buffer for DMA once (`VDevice::dma_map`), as
    /// `hailortcli run2` does, instead of letting the driver map it on each
    /// transfer. On by default: the pool reuses its buffers, so each is
    /// mapped once for the model's life; over USB (no local driver) HailoRT
    /// answers success and does nothing.
    pub dma_map: bool,
}

impl Default for DeviceOptions {
    fn default() -> DeviceOptions {
        DeviceOptions {
            scheduling: Scheduling::default(),
            group_id: None,
            dma_map: true,
        }
    }
}

/// A raw handle whose table calls are serialised by a mutex.
pub(crate) struct Handle<T> {
    ptr: NonNull<T>,
    lock: Mutex<()>,
}

// SAFETY: the handle is an opaque token of the backend; both tables accept it
// from any thread, and `with` serialises the calls made through it.
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above: every use goes through `with`, which holds the mutex.
unsafe impl<T> Sync for Handle<T> {}

impl<T> Handle<T> {
    pub fn new(ptr: NonNull<T>) -> Handle<T> {
        Handle {
            ptr,
            lock: Mutex::new(()),
        }
    }

    /// Runs `f` with the handle, one caller at a time.
    pub fn with<R>(&self, f: impl FnOnce(NonNull<T>) -> R) -> R {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        f(self.ptr)
    }

    /// The pointer, for release in Drop (no other user remains).
    pub fn ptr(&self) -> NonNull<T> {
        self.ptr
    }
}

pub(crate) struct DeviceInner {
    pub api: Api,
    pub handle: Handle<hes_vdevice>,
    pub kind: BackendKind,
    pub device_id: String,
    pub sim: Option<SimProfile>,
    pub scheduling: Scheduling,
    /// Whether pooled buffers are mapped for DMA ([`DeviceOptions::dma_map`]).
    pub dma_map: bool,
    /// Why this device is the simulator although a part is present.
    pub backend_warning: Option<String>,
}

impl Drop for DeviceInner {
    fn drop(&mut self) {
        // SAFETY: every model, configured model, bindings and job holds an Arc
        // to this device, so none is left to use the vdevice.
        if let Err(err) = unsafe { result::vdevice::release(&self.api, self.handle.ptr()) } {
            log::warn!("releasing device {}: {err}", self.device_id);
        }
        if self.kind == BackendKind::Sim {
            sim::registry::unregister(&self.device_id);
        }
    }
}

/// An open device (a HailoRT VDevice, real or simulated). Cheap to clone;
/// models keep it open for as long as they live.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("backend", &self.inner.kind)
            .field("device_id", &self.inner.device_id)
            .finish()
    }
}

/// Ids of the Hailo devices HailoRT finds (PCIe BDFs, IP addresses).
///
/// # Errors
/// [`NpuError::BackendUnavailable`] when this build does not link HailoRT.
#[doc(alias = "Device::scan")]
pub fn scan_hailort() -> Result<Vec<String>, NpuError> {
    let api = Api::hailort().ok_or_else(|| auto::not_linked(&Probe::host()))?;
    result::library::scan(&api)
}

impl Device {
    /// Runs `f` on the table and the vdevice handle, under the handle's lock.
    fn with<R>(&self, f: impl FnOnce(&Api, NonNull<hes_vdevice>) -> R) -> R {
        let api = self.inner.api;
        self.inner.handle.with(|v| f(&api, v))
    }

    /// Opens a device with the round-robin scheduler.
    ///
    /// # Errors
    /// [`NpuError::BackendUnavailable`] when HailoRT is asked for but not
    /// linked; the table's status otherwise (e.g. `OutOfPhysicalDevices`).
    #[doc(alias = "VDevice::create")]
    pub fn open(backend: Backend) -> Result<Device, NpuError> {
        Device::open_with(backend, DeviceOptions::default())
    }

    /// Opens a device with explicit options.
    ///
    /// # Errors
    /// As [`Device::open`].
    pub fn open_with(backend: Backend, options: DeviceOptions) -> Result<Device, NpuError> {
        Device::open_inner(backend, options, None)
    }

    /// Opens `backend` as [`Device::open_with`] does, but sends every table
    /// call to `table` instead of the backend's own: a test double, the stub
    /// ([`Api::stub`]) or the simulator's table with some entries replaced.
    /// The backend still decides the device ids and the simulator profile.
    ///
    /// # Errors
    /// As [`Device::open`], from `table`.
    #[doc(hidden)]
    pub fn open_on_table(
        table: Api,
        backend: Backend,
        options: DeviceOptions,
    ) -> Result<Device, NpuError> {
        Device::open_inner(backend, options, Some(table))
    }

    fn open_inner(
        backend: Backend,
        options: DeviceOptions,
        table: Option<Api>,
    ) -> Result<Device, NpuError> {
        if let (Backend::Auto, None) = (&backend, table) {
            return auto::open(&Probe::host(), Api::hailort(), options);
        }
        let (api, kind, ids, sim) = match backend {
            // Only with a caller's table: the default simulator's ids on it.
            Backend::Auto => {
                let profile = SimProfile::default();
                let id = sim::registry::register(profile.clone());
                (Api::sim(), BackendKind::Sim, vec![id], Some(profile))
            }
            Backend::HailoRt { device_id } => {
                let api = table
                    .or_else(Api::hailort)
                    .ok_or_else(|| auto::not_linked(&Probe::host()))?;
                (
                    api,
                    BackendKind::HailoRt,
                    device_id.into_iter().collect(),
                    None,
                )
            }
            Backend::Sim(profile) => {
                let id = sim::registry::register(profile.clone());
                (Api::sim(), BackendKind::Sim, vec![id], Some(profile))
            }
        };
        let api = table.unwrap_or(api);
        let algorithm = match options.scheduling {
            Scheduling::None => 0,
            Scheduling::RoundRobin => 1,
        };
        let group = options.group_id.as_ref().map(GroupId::as_str);
        let handle = result::vdevice::create(&api, &ids, algorithm, group).inspect_err(|_| {
            if kind == BackendKind::Sim {
                ids.iter().for_each(|id| sim::registry::unregister(id));
            }
        })?;
        // SAFETY: `handle` was just created by this table.
        let device_id = unsafe { result::vdevice::device_ids(&api, handle) }
            .ok()
            .and_then(|ids| ids.into_iter().next())
            .or_else(|| ids.first().cloned())
            .unwrap_or_default();
        Ok(Device {
            inner: Arc::new(DeviceInner {
                api,
                handle: Handle::new(handle),
                kind,
                device_id,
                sim,
                scheduling: options.scheduling,
                dma_map: options.dma_map,
                backend_warning: None,
            }),
        })
    }

    /// This device carrying `warning` (set right after opening, while this
    /// is the only handle).
    pub(crate) fn with_backend_warning(mut self, warning: Option<String>) -> Device {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.backend_warning = warning,
            None => log::warn!(
                "device {}: warning not recorded: {}",
                self.inner.device_id,
                warning.as_deref().unwrap_or("")
            ),
        }
        self
    }

    /// Why this device is the simulator although a Hailo part is present
    /// (`Backend::Auto` only): reports carry it as a warning.
    pub fn backend_warning(&self) -> Option<&str> {
        self.inner.backend_warning.as_deref()
    }

    /// The backend, device and fallback warning, for a report.
    pub fn ran_on(&self) -> RanOn {
        RanOn {
            backend: self.backend(),
            device: self.describe(),
            backend_warning: self.backend_warning().map(str::to_owned),
        }
    }

    /// The backend this device runs on.
    pub fn backend(&self) -> BackendKind {
        self.inner.kind
    }

    /// The physical device id (BDF, IP address, or the simulator's id).
    pub fn device_id(&self) -> &str {
        &self.inner.device_id
    }

    /// Whether pooled buffers are mapped for DMA.
    pub fn dma_map(&self) -> bool {
        self.inner.dma_map
    }

    /// The scheduler this device was opened with.
    pub fn scheduling(&self) -> Scheduling {
        self.inner.scheduling
    }

    /// The simulator profile, when simulated.
    pub fn sim_profile(&self) -> Option<&SimProfile> {
        self.inner.sim.as_ref()
    }

    /// What this device's timing rests on: the simulator profile's assumed
    /// figures and its utilisation with its source (empty on real hardware).
    pub fn assumptions(&self) -> Vec<Assumption> {
        self.inner
            .sim
            .as_ref()
            .map(|p| p.device.assumptions())
            .unwrap_or_default()
    }

    /// One line saying what runs: backend, device, profile, clock.
    pub fn describe(&self) -> String {
        match &self.inner.sim {
            Some(p) => format!(
                "simulator {} ({}, {} clock, link {})",
                self.inner.device_id,
                p.device.name,
                p.clock.name(),
                p.device.link.kind
            ),
            None => format!("HailoRT device {}", self.inner.device_id),
        }
    }

    /// What the simulated device did so far (`None` on real hardware).
    pub fn sim_stats(&self) -> Option<SimStats> {
        if self.inner.kind != BackendKind::Sim {
            return None;
        }
        sim::registry::core(&self.inner.device_id).map(|c| c.stats())
    }

    /// Loads a HEF file as a model.
    ///
    /// # Errors
    /// `OpenFileFailure`, `HefFileCorrupted`, `HefNotSupported`, `InvalidHef`.
    #[doc(alias = "VDevice::create_infer_model")]
    pub fn load_model_file(&self, path: impl AsRef<Path>) -> Result<Model, NpuError> {
        let path = path.as_ref().to_string_lossy().into_owned();
        // SAFETY: the vdevice is live while `self` is.
        let handle =
            self.with(|api, v| unsafe { result::infer_model::create_from_file(api, v, &path) })?;
        Model::new(Arc::clone(&self.inner), handle)
    }

    /// Loads a HEF from memory (the backend copies it).
    ///
    /// # Errors
    /// As [`Device::load_model_file`].
    #[doc(alias = "VDevice::create_infer_model")]
    pub fn load_model(&self, hef_bytes: &[u8]) -> Result<Model, NpuError> {
        // SAFETY: the vdevice is live while `self` is.
        let handle = self
            .with(|api, v| unsafe { result::infer_model::create_from_memory(api, v, hef_bytes) })?;
        Model::new(Arc::clone(&self.inner), handle)
    }

    /// `Device::query_performance_stats` of the first physical device.
    ///
    /// # Errors
    /// `NotSupported` where the device cannot report.
    #[doc(alias = "query_performance_stats")]
    pub fn performance_stats(&self) -> Result<hailort_sys::hes_performance_stats, NpuError> {
        // SAFETY: the vdevice is live while `self` is.
        self.with(|api, v| unsafe { result::vdevice::performance_stats(api, v, 0) })
    }

    /// Power draw in watts.
    ///
    /// # Errors
    /// `NotSupported` (the simulator does not model power).
    #[doc(alias = "power_measurement")]
    pub fn power(&self) -> Result<f32, NpuError> {
        // SAFETY: the vdevice is live while `self` is.
        self.with(|api, v| unsafe { result::vdevice::power(api, v, 0) })
    }

    /// Chip temperature, degrees Celsius (both sensors).
    ///
    /// # Errors
    /// `NotSupported` (the simulator does not model temperature).
    #[doc(alias = "get_chip_temperature")]
    pub fn chip_temperature(&self) -> Result<hailort_sys::hes_chip_temperature, NpuError> {
        // SAFETY: the vdevice is live while `self` is.
        self.with(|api, v| unsafe { result::vdevice::chip_temperature(api, v, 0) })
    }

    /// The backend library version.
    ///
    /// # Errors
    /// The table's status.
    pub fn library_version(&self) -> Result<(u32, u32, u32), NpuError> {
        let v = result::library::version(&self.inner.api)?;
        Ok((v.major, v.minor, v.revision))
    }
}
