//! What a link to the part carries: raw, line-coded and (assumed) usable
//! bytes per second.

use serde::Serialize;

use crate::doctor::pcie::PciFunction;
use crate::doctor::usb::{UsbDevice, UsbSpeed};
use crate::npu::link::{PcieLink, PCIE_PRACTICAL_SHARE, USB_ETHERNET_BYTES_PER_S};

/// Share of a USB link's coded rate assumed usable for bulk transfers.
pub const USB_PRACTICAL_SHARE: f64 = 0.75;
/// Practical USB 2.0 High Speed throughput assumed (35-40 MB/s is typical).
pub const USB2_PRACTICAL_BYTES_PER_S: f64 = 37.5e6;

/// The link to the part and what it carries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    pub name: String,
    /// Where the link's kind came from.
    pub basis: String,
    pub raw_bits_per_s: f64,
    /// After line coding, per direction.
    pub coded_bytes_per_s: f64,
    /// Assumed usable, per direction.
    pub practical_bytes_per_s: f64,
    /// In and out have their own lanes (USB 3.x, PCIe); USB 2.0 shares one.
    pub full_duplex: bool,
    /// How the practical figure was assumed.
    pub assumption: String,
}

impl Link {
    /// The USB part's link at `speed`: the bus's usable rate, bounded by what hRPC
    /// over the part's Ethernet gadget is assumed to carry ([`USB_ETHERNET_BYTES_PER_S`],
    /// the simulator's USB link), so that the budget and the simulator agree.
    pub fn usb(speed: UsbSpeed, basis: impl Into<String>) -> Self {
        let raw = speed.raw_bits_per_s() as f64;
        let (coded, practical, full_duplex, assumption) = match speed {
            UsbSpeed::Super => {
                let coded = raw * 0.8 / 8.0;
                (
                    coded,
                    coded * USB_PRACTICAL_SHARE,
                    true,
                    "8b/10b coding, 75% of it usable (assumed)",
                )
            }
            UsbSpeed::SuperPlus | UsbSpeed::SuperPlusX2 => {
                let coded = raw * 128.0 / 132.0 / 8.0;
                (
                    coded,
                    coded * USB_PRACTICAL_SHARE,
                    true,
                    "128b/132b coding, 75% of it usable (assumed)",
                )
            }
            UsbSpeed::High => (
                raw / 8.0,
                USB2_PRACTICAL_BYTES_PER_S,
                false,
                "~35-40 MB/s practical, half duplex (typical figure, assumed)",
            ),
            _ => (raw / 8.0, raw / 8.0 * 0.6, false, "60% of raw (assumed)"),
        };
        // The USB part is reached by hRPC over its Ethernet gadget, whose path the
        // simulator's USB link assumes; the narrower of bus and path bounds the budget.
        let path = USB_ETHERNET_BYTES_PER_S;
        let assumption = if practical > path {
            format!(
                "{assumption}: {:.0} MB/s on the bus, but hRPC over the USB-Ethernet gadget is \
                 assumed to carry {:.0} MB/s (not measured), which bounds it",
                practical / 1e6,
                path / 1e6
            )
        } else {
            format!(
                "{assumption}; below the {:.0} MB/s hRPC over the USB-Ethernet gadget is \
                 assumed to carry (not measured)",
                path / 1e6
            )
        };
        let practical = practical.min(path);
        Self {
            name: speed.name().to_owned(),
            basis: basis.into(),
            raw_bits_per_s: raw,
            coded_bytes_per_s: coded,
            practical_bytes_per_s: practical,
            full_duplex,
            assumption,
        }
    }

    /// A PCIe link.
    pub fn pcie(link: PcieLink, basis: impl Into<String>) -> Self {
        let coded = link.coded_bytes_per_s();
        Self {
            name: format!("PCIe {link}"),
            basis: basis.into(),
            raw_bits_per_s: link.gts_per_lane() * 1e9 * f64::from(link.width),
            coded_bytes_per_s: coded,
            practical_bytes_per_s: coded * PCIE_PRACTICAL_SHARE,
            full_duplex: true,
            assumption: "80% of the coded rate usable after TLP/DLLP overhead (assumed)".into(),
        }
    }
}

/// The link the rig would use: the first Hailo PCIe function's trained link,
/// else the USB part's enumerated speed, else the USB part's nominal USB 3.1
/// Gen 2. `None` when a PCIe part's link cannot be read.
pub fn pick_link(pci: &[PciFunction], gadget: Option<&UsbDevice>) -> Option<Link> {
    if let Some(f) = pci.first() {
        return f
            .link
            .map(|l| Link::pcie(l, format!("{} current_link_speed/width in sysfs", f.bdf)));
    }
    match gadget {
        Some(g) if g.speed != UsbSpeed::Unknown => {
            Some(Link::usb(g.speed, "enumerated speed of the USB part"))
        }
        _ => Some(Link::usb(
            UsbSpeed::SuperPlus,
            "nominal: the USB part's USB 3.1 Gen 2 (no device found)",
        )),
    }
}
