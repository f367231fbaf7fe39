//! `hailo-edge doctor`: is this box ready to drive a Hailo part, and if not,
//! what fixes it.
//!
//! Every check reads the machine through an injected [`Environment`]: a
//! [`SysRoot`] prefix for `/sys`, `/dev` and `/etc`, a [`UsbBus`] that lists
//! USB devices, [`Interfaces`] for interface addresses, [`Permissions`] for
//! access(2), and the card's hRPC address. The command passes the real
//! machine; tests pass a fake sysfs tree in a temporary directory, a list of
//! USB devices and a loopback listener, so every check is exercised in its
//! good and broken state without hardware or network.
//!
//! | module | checks |
//! |---|---|
//! | [`hailort`] | HailoRT linked in, library version, driver version equal to it |
//! | [`hailort`] | `backend.auto`: what `--backend auto` runs, loudly when the simulator runs beside a part |
//! | [`pcie`] | Hailo PCIe functions, bound driver, device nodes and their access, link |
//! | [`chardev`] | `board_location` and `accelerator_type` under /sys/class/hailo_chardev; a Hailo-8 beside a Hailo-10H without a device id |
//! | [`holders`] | the processes holding a device node (pid and command, from /proc) |
//! | [`usb`] | the USB part's gadget (0525:a4a1) and its link speed |
//! | [`net`] | `usbnet0` up with 192.168.10.11, the card's hRPC port reachable |
//! | [`installed`] | our udev rules and network unit in `/etc`, unchanged |
//! | [`budget`] | frames in and features out of a rig against the link's capacity |
//! | [`identify`] | the part's identity; its firmware version equal to the library's |
//! | [`smoke`] | `--hef`: open, configure and one frame through the safe API |
//!
//! [`run_checks`] runs them all from a [`DoctorConfig`]; other commands call
//! it and print the [`DoctorReport`] (its `Display` is the table).

pub mod budget;
pub mod chardev;
mod config;
mod env;
pub mod hailort;
pub mod holders;
pub mod identify;
pub mod installed;
pub mod net;
pub mod pcie;
pub mod smoke;
pub mod usb;
mod verdict;

pub use config::{run_checks, DoctorConfig, DoctorReport};
pub use smoke::{smoke_test, SmokeError, SmokeOutcome};

pub use env::{Environment, GetIfAddrs, Interfaces, Permissions, ProcessAccess, SysRoot};
pub use hailort::hailort_compiled_in;
pub use usb::{HostUsb, SysfsUsb, UsbBus, UsbDevice, UsbSpeed};
pub use verdict::{Check, Report, Verdict};

#[cfg(feature = "usb")]
pub use usb::RusbBus;

use budget::{LinkBudget, Rig};

use crate::metrics::plan::CameraModeError;

/// Errors of the doctor's own inputs. Problems of the machine are not errors:
/// they are [`Verdict::Fail`] checks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DoctorError {
    /// A `--camera` value that is not a camera mode the backbone takes.
    #[error(transparent)]
    BadCamera(#[from] CameraModeError),
    /// A rig with no cameras.
    #[error("the rig has no cameras")]
    EmptyRig,
    /// A camera whose side no graph of the rig accepts.
    #[error("camera {side}x{side}: no graph of the rig takes a {side}x{side} input")]
    NoGraphForCamera { side: u32 },
    /// A HEF that cannot be read.
    #[error(transparent)]
    Hef(#[from] hef::HefError),
    /// A HEF network group the budget cannot size (it needs exactly one
    /// square image input).
    #[error("HEF {path}: network group '{group}' has not exactly one square image input")]
    UnsupportedGraph { path: String, group: String },
    /// USB enumeration failed.
    #[error("USB enumeration failed: {0}")]
    Usb(String),
    /// Reading interface addresses failed.
    #[error("reading interface addresses failed: {0}")]
    Interfaces(String),
}

/// Runs every check against `env` and computes the link budget of `rig`.
pub fn diagnose(env: &Environment<'_>, rig: &Rig) -> Report {
    let mut checks = Vec::new();
    checks.extend(hailort::checks(env));

    let pci = pcie::scan(&env.root);
    let usb_devices = env.usb.devices();
    let gadget = match &usb_devices {
        Ok(list) => usb::find_gadget(list).cloned(),
        Err(_) => None,
    };
    let transports = Transports {
        pcie: !pci.is_empty(),
        usb: gadget.is_some(),
        usb_enumerated: usb_devices.is_ok(),
    };

    checks.push(hailort::driver_check(env, &transports));
    let probe = crate::npu::probe::Probe::new(env.root.clone());
    checks.push(hailort::auto_check(env, &probe.parts()));
    checks.extend(pcie::checks(env, &pci, &transports));
    let nodes = probe.chardev_nodes();
    checks.push(chardev::check(&nodes, &transports));
    checks.push(chardev::types_check(&nodes, env.device_id.as_deref()));
    let paths: Vec<String> = nodes.iter().map(|n| n.dev_path()).collect();
    checks.push(holders::check(&env.root, &paths));
    checks.extend(usb::checks(&usb_devices, &transports));
    checks.extend(net::checks(env, &transports));
    checks.extend(installed::checks(&env.root));

    let link = budget::pick_link(&pci, gadget.as_ref());
    let budget = LinkBudget::new(rig, link);
    checks.push(budget.check());
    Report {
        checks,
        budget: Some(budget),
    }
}

/// Which transports to a Hailo part this box has: checks of a transport that
/// is absent are skipped when the other one is present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transports {
    /// A Hailo function on the PCI bus.
    pub pcie: bool,
    /// The USB part's gadget on the USB bus.
    pub usb: bool,
    /// Whether the USB bus could be listed at all (when not, `usb` is
    /// unknown rather than false).
    pub usb_enumerated: bool,
}

impl Transports {
    /// Whether the USB part's network checks apply: its gadget is there, or
    /// the bus could not be listed and there is no PCIe part either.
    pub fn usb_network(self) -> bool {
        self.usb || (!self.usb_enumerated && !self.pcie)
    }
}
