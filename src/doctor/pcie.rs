//! PCIe parts: Hailo functions in sysfs (vendor 0x1e60), the driver bound to
//! each, the device nodes and whether this user may open them, and the link
//! each function trained to.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use serde::Serialize;

use super::env::{Environment, SysRoot};
use super::{Check, Transports};
use crate::npu::link::PcieLink;

/// PCI vendor id of Hailo.
pub const HAILO_VENDOR: u16 = 0x1e60;

/// The device-node classes: HailoRT 4.x and 5.0-5.2 (`/dev/hailoN`), and the
/// 5.3 drivers (`/dev/h1x-N`).
pub const NODE_CLASSES: &[&str] = &["hailo_chardev", "hailo1x"];

const UDEV_FIX: &str =
    "sudo udev/install.sh && sudo usermod -aG hailo \"$USER\", then log out and in again";

/// The Hailo part behind a PCI device id, and the driver that binds it.
pub fn part(device_id: u16) -> Option<(&'static str, &'static str)> {
    match device_id {
        0x45c4 => Some(("Hailo-10H", "hailo1x_pci")),
        0x2864 => Some(("Hailo-8", "hailo_pci")),
        0x43a2 => Some(("Hailo-15L", "hailo1x_pci")),
        0x26a2 => Some(("MARS/Hailo-12L", "hailo1x_pci")),
        _ => None,
    }
}

/// One Hailo function on the PCI bus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PciFunction {
    /// Bus/device/function, e.g. `0000:01:00.0` (HailoRT's device id).
    pub bdf: String,
    pub device_id: u16,
    /// The driver bound to it, from the `driver` symlink.
    pub driver: Option<String>,
    pub link: Option<PcieLink>,
    pub max_link: Option<PcieLink>,
}

impl PciFunction {
    /// The part's name, or `unknown` with its id.
    pub fn name(&self) -> String {
        part(self.device_id).map_or_else(
            || format!("unknown Hailo device 0x{:04x}", self.device_id),
            |(n, _)| n.to_owned(),
        )
    }
}

/// The Hailo functions in `/sys/bus/pci/devices`.
pub fn scan(root: &SysRoot) -> Vec<PciFunction> {
    let base = "/sys/bus/pci/devices";
    let hex = |s: Option<String>| {
        s.and_then(|v| u16::from_str_radix(v.trim_start_matches("0x"), 16).ok())
    };
    root.list(base)
        .into_iter()
        .filter_map(|bdf| {
            let dir = format!("{base}/{bdf}");
            if hex(root.read_attr(format!("{dir}/vendor")))? != HAILO_VENDOR {
                return None;
            }
            let device_id = hex(root.read_attr(format!("{dir}/device")))?;
            let link = |kind: &str| {
                PcieLink::parse(
                    &root.read_attr(format!("{dir}/{kind}_link_speed"))?,
                    &root.read_attr(format!("{dir}/{kind}_link_width"))?,
                )
            };
            Some(PciFunction {
                driver: root.link_name(format!("{dir}/driver")),
                link: link("current"),
                max_link: link("max"),
                device_id,
                bdf,
            })
        })
        .collect()
}

/// The device nodes the drivers registered: `/dev/<name>` for every entry of
/// the [`NODE_CLASSES`].
pub fn nodes(root: &SysRoot) -> Vec<String> {
    NODE_CLASSES
        .iter()
        .flat_map(|class| root.list(format!("/sys/class/{class}")))
        .map(|name| format!("/dev/{name}"))
        .collect()
}

/// `pcie.devices`, `pcie.driver`, `pcie.nodes` and `pcie.link`.
pub fn checks(env: &Environment<'_>, found: &[PciFunction], t: &Transports) -> Vec<Check> {
    if found.is_empty() {
        let devices = Check::missing_part(
            t.usb,
            "pcie.devices",
            "no Hailo PCIe function; the USB part is present",
            "no PCI function with vendor 0x1e60 in /sys/bus/pci/devices",
            "seat the card in an M.2/PCIe slot and reboot; `lspci -d 1e60:` should list it",
        );
        return vec![
            devices,
            Check::skip("pcie.driver", "no PCIe part"),
            Check::skip("pcie.nodes", "no PCIe part"),
            Check::skip("pcie.link", "no PCIe part"),
        ];
    }
    vec![
        devices_check(found),
        driver_check(found),
        nodes_check(env),
        link_check(found),
    ]
}

fn devices_check(found: &[PciFunction]) -> Check {
    let list: Vec<String> = found
        .iter()
        .map(|f| format!("{} {} (1e60:{:04x})", f.bdf, f.name(), f.device_id))
        .collect();
    Check::ok_or_warn(
        found.iter().all(|f| part(f.device_id).is_some()),
        "pcie.devices",
        list.join(", "),
        "update hailo-edge; this Hailo device id is not known to it",
    )
}

fn driver_check(found: &[PciFunction]) -> Check {
    let mut lines = Vec::new();
    let mut fixes = Vec::new();
    for f in found {
        let want = part(f.device_id).map(|(_, d)| d);
        let have = f.driver.as_deref();
        lines.push(format!("{} {}", f.bdf, have.unwrap_or("no driver")));
        match (want, have) {
            (Some(w), Some(h)) if w == h => {}
            (Some(w), Some(h)) => fixes.push(format!(
                "{}: {} is bound to {h}, which cannot drive it; sudo modprobe -r {h} && sudo modprobe {w}",
                f.bdf,
                f.name()
            )),
            (Some(w), None) => fixes.push(format!("sudo modprobe {w}")),
            (None, _) => {}
        }
    }
    if fixes.is_empty() {
        Check::ok("pcie.driver", lines.join(", "))
    } else {
        Check::warn("pcie.driver", lines.join(", "), fixes.join("; "))
    }
}

fn nodes_check(env: &Environment<'_>) -> Check {
    const ID: &str = "pcie.nodes";
    let nodes = nodes(&env.root);
    if nodes.is_empty() {
        return Check::fail(
            ID,
            "no device node in /sys/class/hailo_chardev or /sys/class/hailo1x",
            "sudo modprobe hailo1x_pci (the driver creates /dev/hailoN or /dev/h1x-N)",
        );
    }
    let mut problems = Vec::new();
    let mut world_writable = Vec::new();
    for node in &nodes {
        let path = env.root.path(node);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(_) => {
                problems.push(format!("{node} missing"));
                continue;
            }
        };
        let mode = meta.permissions().mode() & 0o7777;
        if let Err(e) = env.access.read_write(&path) {
            problems.push(format!(
                "{node} not read/write for this user (mode {mode:04o}, gid {}): {e}",
                meta.gid()
            ));
        } else if mode & 0o002 != 0 {
            world_writable.push(format!("{node} (mode {mode:04o})"));
        }
    }
    if !problems.is_empty() {
        return Check::fail(ID, problems.join("; "), UDEV_FIX);
    }
    if !world_writable.is_empty() {
        return Check::warn(
            ID,
            format!(
                "world-writable: {} (HailoRT's 51-hailo-udev.rules)",
                world_writable.join(", ")
            ),
            "sudo udev/install.sh (group hailo, 0660)",
        );
    }
    Check::ok(ID, format!("{} read/write", nodes.join(", ")))
}

fn link_check(found: &[PciFunction]) -> Check {
    let mut lines = Vec::new();
    let mut degraded = false;
    for f in found {
        match (f.link, f.max_link) {
            (Some(cur), Some(max)) if cur.gen < max.gen || cur.width < max.width => {
                degraded = true;
                lines.push(format!("{} {cur}, below its maximum {max}", f.bdf));
            }
            (Some(cur), _) => lines.push(format!("{} {cur}", f.bdf)),
            (None, _) => {
                degraded = true;
                lines.push(format!("{} link speed unreadable", f.bdf));
            }
        }
    }
    Check::ok_or_warn(
        !degraded,
        "pcie.link",
        lines.join(", "),
        "use a slot wired for the card's full width and generation; `sudo lspci -vv -d 1e60: | grep LnkSta`",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_parses_and_sizes() {
        let l = PcieLink::parse("8.0 GT/s PCIe", "4").unwrap();
        assert_eq!(l, PcieLink { gen: 3, width: 4 });
        assert!((l.coded_bytes_per_s() / 1e9 - 3.938).abs() < 0.01);
        let g2 = PcieLink::parse("5 GT/s", "1").unwrap();
        assert!((g2.coded_bytes_per_s() - 500e6).abs() < 1.0);
        assert_eq!(PcieLink::parse("Unknown", "4"), None);
        assert_eq!(PcieLink::parse("8.0 GT/s", "0"), None);
    }

    #[test]
    fn ids_are_named() {
        assert_eq!(part(0x45c4), Some(("Hailo-10H", "hailo1x_pci")));
        assert_eq!(part(0x2864).unwrap().0, "Hailo-8");
        assert_eq!(part(0x1234), None);
    }
}
