//! The doctor as a library call: [`run_checks`] over a [`DoctorConfig`].
//!
//! ```no_run
//! use hailo_edge::doctor::{budget::Rig, run_checks, DoctorConfig};
//!
//! let mut config = DoctorConfig::host(Rig::demo());
//! config.hefs.push("fixtures/backbone_288.hef".into());
//! let report = run_checks(&config);
//! println!("{report}");                      // the table, a fix under each failing row
//! std::process::exit(if report.passed() { 0 } else { 1 });
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::npu::probe::Probe;
use crate::npu::{Api, Backend, Device, DeviceOptions, NpuError};

use super::budget::Rig;
use super::{
    diagnose, hailort_compiled_in, identify, smoke, Check, Environment, GetIfAddrs, HostUsb,
    ProcessAccess, Report, SysRoot, SysfsUsb, UsbBus,
};
use crate::npu::probe::USB_CARD_ADDR;

/// The report of [`run_checks`]: its `Display` is the table.
pub type DoctorReport = Report;

/// What the doctor checks, and where it reads the machine.
#[derive(Debug, Clone)]
pub struct DoctorConfig {
    /// Stands in for `/` (`/sys`, `/proc`, `/dev`, `/etc`); the host's `/`
    /// normally, a fake tree in tests. USB devices come from its sysfs when
    /// it is not the host's.
    pub root: SysRoot,
    /// The USB part's hRPC address.
    pub card: SocketAddr,
    /// How long to wait for the card's TCP handshake.
    pub connect_timeout: Duration,
    /// The device id the runtime is configured with (`device.device_id`).
    pub device_id: Option<String>,
    /// What `device.identify` and the smoke tests open: `Auto` picks as
    /// the runtime does, reading the machine under `root`.
    pub backend: Backend,
    /// HEFs to smoke-test: open, configure, one frame.
    pub hefs: Vec<PathBuf>,
    /// The rig whose link budget is checked.
    pub rig: Rig,
}

impl DoctorConfig {
    /// The real machine, `Backend::Auto`, no smoke test.
    pub fn host(rig: Rig) -> Self {
        Self {
            root: SysRoot::host(),
            card: USB_CARD_ADDR,
            connect_timeout: Duration::from_secs(1),
            device_id: None,
            backend: Backend::Auto,
            hefs: Vec::new(),
            rig,
        }
    }

    /// Opens the device the config names. `Auto` reads the machine under
    /// `root`; `HailoRt` without an id takes the configured `device_id`.
    ///
    /// # Errors
    /// As [`Device::open`].
    pub fn open(&self) -> Result<Device, NpuError> {
        match &self.backend {
            Backend::Auto => crate::npu::auto_open(
                &Probe::new(self.root.clone()),
                Api::hailort(),
                DeviceOptions::default(),
            ),
            Backend::HailoRt { device_id: None } => Device::open(Backend::HailoRt {
                device_id: self.device_id.clone(),
            }),
            other => Device::open(other.clone()),
        }
    }
}

/// Every check: the machine's (as [`diagnose`]), then `device.identify` and
/// one `smoke` row per HEF.
pub fn run_checks(config: &DoctorConfig) -> DoctorReport {
    let sysfs = SysfsUsb(config.root.clone());
    let usb: &dyn UsbBus = if config.root.is_host() {
        &HostUsb
    } else {
        &sysfs
    };
    let env = Environment {
        root: config.root.clone(),
        usb,
        net: &GetIfAddrs,
        access: &ProcessAccess,
        card: config.card,
        connect_timeout: config.connect_timeout,
        hailort_linked: hailort_compiled_in(),
        device_id: config.device_id.clone(),
    };
    let mut report = diagnose(&env, &config.rig);
    report.checks.push(identify_row(config, env.hailort_linked));
    for hef in &config.hefs {
        report
            .checks
            .push(smoke::check(&smoke::smoke_test(|| config.open(), hef)));
    }
    report
}

/// `device.identify`, skipped when `Auto` could only open the simulator
/// (the `backend.auto` row says why).
fn identify_row(config: &DoctorConfig, linked: bool) -> Check {
    if matches!(config.backend, Backend::Auto) && !linked {
        return Check::skip(
            "device.identify",
            "HailoRT is not linked: no part to identify (see backend.auto)",
        );
    }
    identify::check(|| config.open())
}
