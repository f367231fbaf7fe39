//! The USB part: its Ethernet gadget (0525:a4a1) on the bus and its link
//! speed.
//!
//! Enumeration goes through [`UsbBus`]: [`RusbBus`] (libusb, built from
//! source by rusb's `vendored` feature) on a real box, [`SysfsUsb`] under a
//! [`SysRoot`] when the `usb` feature is off or the tree is a fake, and any
//! list in tests.

use serde::Serialize;

use super::env::SysRoot;
use super::{Check, DoctorError, Transports};

/// Vendor id of the USB part's gadget (the generic Linux gadget id).
pub const GADGET_VENDOR: u16 = 0x0525;
/// Product id of the USB part's gadget (CDC Ethernet).
pub const GADGET_PRODUCT: u16 = 0xa4a1;

/// The speed a USB device runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsbSpeed {
    Unknown,
    /// USB 1.x Low Speed, 1.5 Mbit/s.
    Low,
    /// USB 1.x Full Speed, 12 Mbit/s.
    Full,
    /// USB 2.0 High Speed, 480 Mbit/s.
    High,
    /// USB 3.x Gen 1 SuperSpeed, 5 Gbit/s.
    Super,
    /// USB 3.1 Gen 2 SuperSpeed+, 10 Gbit/s.
    SuperPlus,
    /// USB 3.2 Gen 2x2, 20 Gbit/s.
    SuperPlusX2,
}

impl UsbSpeed {
    /// Raw signalling rate in bit/s (0 when unknown).
    pub fn raw_bits_per_s(self) -> u64 {
        match self {
            Self::Unknown => 0,
            Self::Low => 1_500_000,
            Self::Full => 12_000_000,
            Self::High => 480_000_000,
            Self::Super => 5_000_000_000,
            Self::SuperPlus => 10_000_000_000,
            Self::SuperPlusX2 => 20_000_000_000,
        }
    }

    /// The name of the speed as USB-IF and `lsusb -t` print it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Unknown => "unknown speed",
            Self::Low => "USB 1.x Low Speed (1.5 Mbit/s)",
            Self::Full => "USB 1.x Full Speed (12 Mbit/s)",
            Self::High => "USB 2.0 High Speed (480 Mbit/s)",
            Self::Super => "USB 3.x Gen 1 SuperSpeed (5 Gbit/s)",
            Self::SuperPlus => "USB 3.1 Gen 2 SuperSpeed+ (10 Gbit/s)",
            Self::SuperPlusX2 => "USB 3.2 Gen 2x2 (20 Gbit/s)",
        }
    }

    /// The speed sysfs states in `/sys/bus/usb/devices/*/speed` (Mbit/s).
    pub fn from_sysfs(mbit: &str) -> Self {
        match mbit.trim() {
            "1.5" => Self::Low,
            "12" => Self::Full,
            "480" => Self::High,
            "5000" => Self::Super,
            "10000" => Self::SuperPlus,
            "20000" => Self::SuperPlusX2,
            _ => Self::Unknown,
        }
    }

    /// SuperSpeed or better: what the USB part is built for.
    pub fn is_superspeed(self) -> bool {
        self >= Self::Super
    }
}

/// One device on the USB bus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsbDevice {
    pub bus: u8,
    pub address: u8,
    pub vendor: u16,
    pub product: u16,
    pub speed: UsbSpeed,
}

impl UsbDevice {
    /// Whether this is the USB part's Ethernet gadget.
    pub fn is_gadget(&self) -> bool {
        self.vendor == GADGET_VENDOR && self.product == GADGET_PRODUCT
    }
}

/// Lists the devices on the USB bus.
pub trait UsbBus {
    /// Every device the host sees.
    ///
    /// # Errors
    /// [`DoctorError::Usb`] when the bus cannot be enumerated.
    fn devices(&self) -> Result<Vec<UsbDevice>, DoctorError>;
}

impl UsbBus for Vec<UsbDevice> {
    fn devices(&self) -> Result<Vec<UsbDevice>, DoctorError> {
        Ok(self.clone())
    }
}

/// Enumeration through libusb (rusb).
#[cfg(feature = "usb")]
#[derive(Debug, Default, Clone, Copy)]
pub struct RusbBus;

#[cfg(feature = "usb")]
impl UsbBus for RusbBus {
    fn devices(&self) -> Result<Vec<UsbDevice>, DoctorError> {
        use rusb::UsbContext;
        // An own context, not rusb's global one: the global one panics when
        // libusb cannot initialise (no /dev/bus/usb in a container).
        let ctx = rusb::Context::new().map_err(|e| DoctorError::Usb(format!("libusb: {e}")))?;
        let list = ctx
            .devices()
            .map_err(|e| DoctorError::Usb(format!("libusb: {e}")))?;
        let mut out = Vec::new();
        for dev in list.iter() {
            let desc = match dev.device_descriptor() {
                Ok(d) => d,
                Err(e) => {
                    log::debug!(
                        "USB {:03}:{:03}: no descriptor: {e}",
                        dev.bus_number(),
                        dev.address()
                    );
                    continue;
                }
            };
            out.push(UsbDevice {
                bus: dev.bus_number(),
                address: dev.address(),
                vendor: desc.vendor_id(),
                product: desc.product_id(),
                speed: match dev.speed() {
                    rusb::Speed::Low => UsbSpeed::Low,
                    rusb::Speed::Full => UsbSpeed::Full,
                    rusb::Speed::High => UsbSpeed::High,
                    rusb::Speed::Super => UsbSpeed::Super,
                    rusb::Speed::SuperPlus => UsbSpeed::SuperPlus,
                    _ => UsbSpeed::Unknown,
                },
            });
        }
        Ok(out)
    }
}

/// Enumeration from `/sys/bus/usb/devices` under a [`SysRoot`].
#[derive(Debug, Clone)]
pub struct SysfsUsb(pub SysRoot);

impl UsbBus for SysfsUsb {
    fn devices(&self) -> Result<Vec<UsbDevice>, DoctorError> {
        let base = "/sys/bus/usb/devices";
        if !self.0.path(base).is_dir() {
            return Err(DoctorError::Usb(format!(
                "sysfs: no {}",
                self.0.path(base).display()
            )));
        }
        let mut out = Vec::new();
        // Interfaces (`1-2:1.0`) have no idVendor and are skipped.
        for name in self.0.list(base) {
            let attr = |a: &str| self.0.read_attr(format!("{base}/{name}/{a}"));
            let hex = |a: &str| attr(a).and_then(|v| u16::from_str_radix(&v, 16).ok());
            let (Some(vendor), Some(product)) = (hex("idVendor"), hex("idProduct")) else {
                continue;
            };
            out.push(UsbDevice {
                bus: attr("busnum").and_then(|v| v.parse().ok()).unwrap_or(0),
                address: attr("devnum").and_then(|v| v.parse().ok()).unwrap_or(0),
                vendor,
                product,
                speed: attr("speed").map_or(UsbSpeed::Unknown, |s| UsbSpeed::from_sysfs(&s)),
            });
        }
        Ok(out)
    }
}

/// The real machine's bus: libusb when the `usb` feature is on (the
/// default), falling back to sysfs when libusb cannot enumerate (no
/// `/dev/bus/usb` in a container, say); sysfs alone without the feature.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostUsb;

impl UsbBus for HostUsb {
    fn devices(&self) -> Result<Vec<UsbDevice>, DoctorError> {
        #[cfg(feature = "usb")]
        let libusb = match RusbBus.devices() {
            Ok(list) => return Ok(list),
            Err(e) => {
                log::debug!("{e}; reading /sys/bus/usb/devices instead");
                format!("{e}; ")
            }
        };
        #[cfg(not(feature = "usb"))]
        let libusb = String::new();
        SysfsUsb(SysRoot::host()).devices().map_err(|e| match e {
            DoctorError::Usb(sysfs) => DoctorError::Usb(format!("{libusb}{sysfs}")),
            other => other,
        })
    }
}

/// The USB part's gadget, if it is on the bus.
pub fn find_gadget(devices: &[UsbDevice]) -> Option<&UsbDevice> {
    devices.iter().find(|d| d.is_gadget())
}

/// `usb.gadget` and `usb.speed`.
pub fn checks(devices: &Result<Vec<UsbDevice>, DoctorError>, t: &Transports) -> Vec<Check> {
    let list = match devices {
        Ok(list) => list,
        Err(e) if t.pcie => {
            return vec![
                Check::skip("usb.gadget", format!("{e}; a PCIe part is present")),
                Check::skip("usb.speed", "no enumeration"),
            ]
        }
        Err(e) => {
            return vec![
                Check::warn(
                    "usb.gadget",
                    format!("{e}"),
                    "run as a user that can read /dev/bus/usb, or check `lsusb -d 0525:a4a1`",
                ),
                Check::skip("usb.speed", "no enumeration"),
            ]
        }
    };
    let Some(g) = find_gadget(list) else {
        let gadget = Check::missing_part(
            t.pcie,
            "usb.gadget",
            "no USB part (0525:a4a1); a PCIe part is present",
            format!(
                "no Hailo part: nothing on PCIe and no USB gadget 0525:a4a1 among {} USB devices",
                list.len()
            ),
            "plug the card into a USB 3 port and wait for it to boot; `lsusb -d 0525:a4a1` should list it",
        );
        return vec![gadget, Check::skip("usb.speed", "no USB part")];
    };
    let gadget = Check::ok(
        "usb.gadget",
        format!(
            "USB part {:04x}:{:04x} at bus {:03} device {:03}",
            g.vendor, g.product, g.bus, g.address
        ),
    );
    vec![gadget, speed_check(g.speed)]
}

/// SuperSpeed or better is ok; anything slower is a warning that says what
/// bandwidth it leaves.
fn speed_check(speed: UsbSpeed) -> Check {
    let fix = "plug the card into a USB 3 (blue or SS-marked) port with a USB 3 cable, not through a USB 2 hub";
    match speed {
        s if s.is_superspeed() => Check::ok("usb.speed", s.name()),
        UsbSpeed::High => Check::warn(
            "usb.speed",
            "USB 2.0 High Speed: 480 Mbit/s raw, ~35-40 MB/s in practice, shared by frames in and features out",
            fix,
        ),
        UsbSpeed::Unknown => Check::warn("usb.speed", "link speed unknown", fix),
        s => Check::warn(
            "usb.speed",
            format!("{}: ~1 MB/s at best, far too slow for any camera rig", s.name()),
            fix,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(vendor: u16, product: u16, speed: UsbSpeed) -> UsbDevice {
        UsbDevice {
            bus: 2,
            address: 3,
            vendor,
            product,
            speed,
        }
    }

    /// Without /dev/bus/usb (as in containers) libusb cannot start; that must
    /// be an error, never a panic (rusb's global context panics there).
    #[cfg(feature = "usb")]
    #[test]
    fn rusb_enumeration_never_panics() {
        match RusbBus.devices() {
            Ok(list) => assert!(list
                .iter()
                .all(|d| d.bus > 0 || d.address > 0 || d.vendor > 0)),
            Err(e) => assert!(e.to_string().contains("libusb"), "{e}"),
        }
    }

    #[test]
    fn sysfs_speeds_map() {
        assert_eq!(UsbSpeed::from_sysfs("480\n"), UsbSpeed::High);
        assert_eq!(UsbSpeed::from_sysfs("10000"), UsbSpeed::SuperPlus);
        assert_eq!(UsbSpeed::from_sysfs("bogus"), UsbSpeed::Unknown);
        assert!(UsbSpeed::Super.is_superspeed());
        assert!(!UsbSpeed::High.is_superspeed());
    }

    #[test]
    fn gadget_is_found_only_by_its_ids() {
        let list = vec![
            dev(0x1d6b, 0x0003, UsbSpeed::Super),
            dev(0x0525, 0xa4a2, UsbSpeed::Super),
        ];
        assert!(find_gadget(&list).is_none());
        let mut list = list;
        list.push(dev(0x0525, 0xa4a1, UsbSpeed::High));
        assert_eq!(find_gadget(&list).unwrap().speed, UsbSpeed::High);
    }

    #[test]
    fn slow_link_warns_with_its_bandwidth() {
        let c = speed_check(UsbSpeed::High);
        assert_eq!(c.verdict, super::super::Verdict::Warn);
        assert!(c.detail.contains("480 Mbit/s") && c.detail.contains("35-40 MB/s"));
        assert_eq!(
            speed_check(UsbSpeed::SuperPlus).verdict,
            super::super::Verdict::Ok
        );
    }
}
