//! The host's link to the part, as the simulator's timing and the doctor's link budget
//! both use it: a PCIe link's generation, lanes and coded rate, and the usable rates
//! assumed where nothing publishes them.

use serde::Serialize;

/// Share of a PCIe link's coded rate assumed usable after TLP and DLLP overhead: the
/// simulator's PCIe link runs at it, and the doctor's link budget takes it.
pub const PCIE_PRACTICAL_SHARE: f64 = 0.80;

/// Payload bytes per second, per direction, assumed for hRPC over the USB part's
/// Ethernet gadget (TCP over USB 3): 300 to 400 MB/s, taken as 350. The simulator's USB
/// link runs at it, and the doctor's link budget for the USB part is bounded by it, since
/// the gadget's network path carries less than a USB 3 bus.
pub const USB_ETHERNET_BYTES_PER_S: f64 = 350e6;

/// A PCIe link: generation and lane count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PcieLink {
    pub gen: u8,
    pub width: u8,
}

impl PcieLink {
    /// Parses sysfs `*_link_speed` ("8.0 GT/s PCIe", "8 GT/s") and
    /// `*_link_width` ("4").
    pub fn parse(speed: &str, width: &str) -> Option<Self> {
        let gts: f64 = speed.split_whitespace().next()?.parse().ok()?;
        let gen = match gts {
            g if (g - 2.5).abs() < 0.01 => 1,
            g if (g - 5.0).abs() < 0.01 => 2,
            g if (g - 8.0).abs() < 0.01 => 3,
            g if (g - 16.0).abs() < 0.01 => 4,
            g if (g - 32.0).abs() < 0.01 => 5,
            g if (g - 64.0).abs() < 0.01 => 6,
            _ => return None,
        };
        let width = width.trim().parse().ok().filter(|w| *w > 0)?;
        Some(Self { gen, width })
    }

    /// Raw transfer rate per lane in GT/s.
    pub const fn gts_per_lane(self) -> f64 {
        match self.gen {
            1 => 2.5,
            2 => 5.0,
            3 => 8.0,
            4 => 16.0,
            5 => 32.0,
            _ => 64.0,
        }
    }

    /// Bytes/s per direction after line coding (8b/10b up to Gen 2,
    /// 128b/130b from Gen 3; Gen 6 FLIT overhead is not modelled).
    pub const fn coded_bytes_per_s(self) -> f64 {
        let coding = if self.gen <= 2 { 0.8 } else { 128.0 / 130.0 };
        self.gts_per_lane() * 1e9 * coding / 8.0 * self.width as f64
    }
}

impl std::fmt::Display for PcieLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Gen{} x{} ({} GT/s per lane)",
            self.gen,
            self.width,
            self.gts_per_lane()
        )
    }
}
