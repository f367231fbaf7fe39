//! Device profiles: every figure the simulator's timing uses, with where it
//! comes from.
//!
//! Published figures name their source; the rest are marked assumed, and
//! [`DeviceProfile::assumptions`] lists them, with the utilisation and the
//! source it comes from, so every report can say which figures it rests on.
//!
//! The utilisation is a [`UtilisationCurve`] resolved from the same
//! [`UtilisationSource`](crate::metrics::utilisation_source::UtilisationSource)
//! the planner takes: assumed, published by batch, or a report's.

use hef::Chip;
use serde::Serialize;

use crate::metrics::figure::Assumption;
use crate::metrics::published::PublishedError;
use crate::metrics::utilisation::Precision;
use crate::metrics::utilisation_source::UtilisationCurve;
use crate::npu::link::{PcieLink, PCIE_PRACTICAL_SHARE, USB_ETHERNET_BYTES_PER_S};

/// One constant of the timing model and where it comes from (a reported figure
/// with a unit is [`crate::metrics::figure::Figure`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ProfileFigure {
    pub value: f64,
    /// Whether the value is an assumption rather than a published figure.
    pub assumed: bool,
    /// Where the value comes from, or why it was assumed.
    pub source: &'static str,
}

impl ProfileFigure {
    /// A figure from a published source.
    pub const fn published(value: f64, source: &'static str) -> ProfileFigure {
        ProfileFigure {
            value,
            assumed: false,
            source,
        }
    }

    /// An assumed figure, with the reason.
    pub const fn assumed(value: f64, source: &'static str) -> ProfileFigure {
        ProfileFigure {
            value,
            assumed: true,
            source,
        }
    }
}

/// How the host reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LinkKind {
    /// PCIe DMA (`hailo1x_pci`).
    Pcie(PcieLink),
    /// The USB part: hRPC over TCP over a USB-Ethernet gadget (0525:a4a1).
    UsbEthernet,
    /// No transfer cost (for overhead measurements and compute-only models).
    Free,
}

impl std::fmt::Display for LinkKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkKind::Pcie(l) => write!(f, "PCIe Gen{} x{}", l.gen, l.width),
            LinkKind::UsbEthernet => f.write_str("USB Ethernet"),
            LinkKind::Free => f.write_str("free"),
        }
    }
}

/// Bandwidth and latency of the host link.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Link {
    pub kind: LinkKind,
    /// Effective payload bandwidth, bytes per second.
    pub bytes_per_s: ProfileFigure,
    /// Fixed cost per transfer (one per burst and direction), seconds.
    pub latency_s: ProfileFigure,
}

impl Link {
    /// PCIe Gen3 x4: 3.94 GB/s after 128b/130b coding, [`PCIE_PRACTICAL_SHARE`] of it
    /// usable (3.15 GB/s, assumed); 10 us per transfer assumed.
    pub const fn pcie_gen3_x4() -> Link {
        let link = PcieLink { gen: 3, width: 4 };
        Link {
            kind: LinkKind::Pcie(link),
            bytes_per_s: ProfileFigure::assumed(
                link.coded_bytes_per_s() * PCIE_PRACTICAL_SHARE,
                "PCIe Gen3 x4 is 3.94 GB/s after coding; 80 % usable assumed, not measured",
            ),
            latency_s: ProfileFigure::assumed(10e-6, "per-transfer DMA setup, assumed"),
        }
    }

    /// USB-Ethernet (hRPC over TCP): [`USB_ETHERNET_BYTES_PER_S`] and 0.5 ms per
    /// transfer, both assumed: HailoRT publishes no figure for its USB path.
    pub const fn usb_ethernet() -> Link {
        Link {
            kind: LinkKind::UsbEthernet,
            bytes_per_s: ProfileFigure::assumed(
                USB_ETHERNET_BYTES_PER_S,
                "TCP over a USB 3 Ethernet gadget, 300-400 MB/s assumed; measure on the part",
            ),
            latency_s: ProfileFigure::assumed(0.5e-3, "hRPC round trip over USB-Ethernet, assumed"),
        }
    }

    /// A link that costs nothing.
    pub const fn free() -> Link {
        Link {
            kind: LinkKind::Free,
            bytes_per_s: ProfileFigure::assumed(f64::INFINITY, "link time left out on purpose"),
            latency_s: ProfileFigure::assumed(0.0, "link time left out on purpose"),
        }
    }

    /// Seconds to move `bytes` in one transfer.
    pub fn transfer_s(&self, bytes: u64) -> f64 {
        if bytes == 0 {
            0.0
        } else {
            self.latency_s.value + bytes as f64 / self.bytes_per_s.value
        }
    }
}

/// Everything the timing model of one simulated device uses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceProfile {
    pub name: String,
    /// The chip HEFs are checked against.
    pub chip: Chip,
    /// Peak INT8 operations per second.
    pub int8_ops_per_s: ProfileFigure,
    /// Peak INT4 operations per second.
    pub int4_ops_per_s: ProfileFigure,
    /// On-card memory, bytes.
    pub memory_bytes: ProfileFigure,
    pub link: Link,
    /// Time to switch the device from one network group to another, seconds.
    pub switch_cost_s: ProfileFigure,
    /// Share of peak the compute achieves on these graphs, by burst size.
    pub utilisation: UtilisationCurve,
    /// The precision compute time is charged at (its peak).
    pub precision: Precision,
    /// How long a client asking for a "UNIQUE" VDevice waits for the
    /// device's current holder to close it before HAILO_DEVICE_IN_USE,
    /// seconds. Waited for on the real-time clock only; on a virtual clock
    /// the answer comes at once.
    pub vdevice_wait_s: ProfileFigure,
}

impl Default for DeviceProfile {
    fn default() -> Self {
        DeviceProfile::hailo10h()
    }
}

impl DeviceProfile {
    /// The default: a Hailo-10H on PCIe Gen3 x4.
    ///
    /// Sources: 20 TOPS INT8 / 40 TOPS INT4 are Hailo's marketing figures
    /// (The Register, 2024-04-10); 8 GiB LPDDR4 on the card (Raspberry Pi AI
    /// HAT+ 2). The switch cost (1 ms) is assumed: HailoRT publishes none and
    /// traces it as the `ActivateCoreOp` duration, so measure it on the part.
    /// Utilisation 0.30 is the planning assumption; [`Self::with_utilisation`]
    /// takes the published or a measured one instead.
    pub fn hailo10h() -> DeviceProfile {
        DeviceProfile {
            name: "hailo10h-pcie".into(),
            chip: Chip::Hailo10H,
            int8_ops_per_s: ProfileFigure::published(
                Precision::Int8.hailo10h_peak_tops() * 1e12,
                "Hailo-10H: 20 TOPS INT8 (vendor figure)",
            ),
            int4_ops_per_s: ProfileFigure::published(
                Precision::Int4.hailo10h_peak_tops() * 1e12,
                "Hailo-10H: 40 TOPS INT4 (vendor figure)",
            ),
            memory_bytes: ProfileFigure::published(
                8.0 * 1024.0 * 1024.0 * 1024.0,
                "Hailo-10H: 8 GB LPDDR4 on the card",
            ),
            link: Link::pcie_gen3_x4(),
            switch_cost_s: ProfileFigure::assumed(
                1e-3,
                "no published per-switch cost; HailoRT traces it as ActivateCoreOp duration",
            ),
            utilisation: UtilisationCurve::planning_default(),
            precision: Precision::Int8,
            vdevice_wait_s: ProfileFigure::published(
                5.0,
                "HailoRT 5.2.0 hailort_server.cpp: WAIT_FOR_VDEVICE_TIMEOUT of the card's server",
            ),
        }
    }

    /// The USB part: the same chip reached over USB-Ethernet.
    pub fn hailo10h_usb() -> DeviceProfile {
        DeviceProfile {
            name: "hailo10h-usb".into(),
            link: Link::usb_ethernet(),
            ..DeviceProfile::hailo10h()
        }
    }

    /// No time at all: every job completes as soon as it is scheduled. For
    /// measuring the runtime's own overhead.
    pub fn zero_time() -> DeviceProfile {
        DeviceProfile {
            name: "zero-time".into(),
            int8_ops_per_s: ProfileFigure::assumed(
                f64::INFINITY,
                "compute time left out on purpose",
            ),
            int4_ops_per_s: ProfileFigure::assumed(
                f64::INFINITY,
                "compute time left out on purpose",
            ),
            link: Link::free(),
            switch_cost_s: ProfileFigure::assumed(0.0, "switch time left out on purpose"),
            ..DeviceProfile::hailo10h()
        }
    }

    /// Same profile with another link.
    pub fn with_link(mut self, link: Link) -> DeviceProfile {
        self.link = link;
        self
    }

    /// Same profile with another switch cost (seconds), marked assumed.
    pub fn with_switch_cost(mut self, seconds: f64, source: &'static str) -> DeviceProfile {
        self.switch_cost_s = ProfileFigure::assumed(seconds, source);
        self
    }

    /// Same profile with another utilisation curve (resolve one with
    /// `UtilisationSource::simulator_curve`).
    pub fn with_utilisation(mut self, utilisation: UtilisationCurve) -> DeviceProfile {
        self.utilisation = utilisation;
        self
    }

    /// Same profile with another wait for a held device (seconds), marked
    /// assumed.
    pub fn with_vdevice_wait(mut self, seconds: f64, source: &'static str) -> DeviceProfile {
        self.vdevice_wait_s = ProfileFigure::assumed(seconds, source);
        self
    }

    /// Peak operations per second at the profile's precision.
    pub fn peak_ops_per_s(&self) -> f64 {
        match self.precision {
            Precision::Int8 => self.int8_ops_per_s.value,
            Precision::Int4 => self.int4_ops_per_s.value,
        }
    }

    /// The utilisation of bursts of 1 to `batch` frames, in order: what a
    /// model configured with `batch` is charged at.
    ///
    /// # Errors
    /// [`PublishedError::BatchOutside`] when the utilisation is published
    /// and `batch` lies beyond the published batches.
    pub fn utilisation_by_burst(&self, batch: u16) -> Result<Vec<f64>, PublishedError> {
        (1..=u32::from(batch.max(1)))
            .map(|n| self.utilisation.at(n).map(|f| f.value))
            .collect()
    }

    /// Seconds of compute for `ops` operations at `utilisation`:
    /// ops / (peak x utilisation).
    pub fn compute_s(&self, ops: f64, utilisation: f64) -> f64 {
        if ops <= 0.0 {
            return 0.0;
        }
        let rate = self.peak_ops_per_s() * utilisation;
        if rate.is_infinite() {
            0.0
        } else {
            ops / rate
        }
    }

    /// Every figure, by name.
    pub fn figures(&self) -> Vec<(&'static str, ProfileFigure)> {
        vec![
            ("int8_ops_per_s", self.int8_ops_per_s),
            ("int4_ops_per_s", self.int4_ops_per_s),
            ("memory_bytes", self.memory_bytes),
            ("link_bytes_per_s", self.link.bytes_per_s),
            ("link_latency_s", self.link.latency_s),
            ("switch_cost_s", self.switch_cost_s),
        ]
    }

    /// The figures that are assumptions, by name.
    pub fn assumed(&self) -> Vec<(&'static str, ProfileFigure)> {
        self.figures()
            .into_iter()
            .filter(|(_, f)| f.assumed)
            .collect()
    }

    /// What the timing rests on, as assumptions of the figures it models:
    /// every assumed figure with its reason, then the utilisation with its
    /// source (assumed, published rows or a report).
    pub fn assumptions(&self) -> Vec<Assumption> {
        let mut out: Vec<Assumption> = self
            .assumed()
            .into_iter()
            .map(|(n, f)| Assumption::new(n, format!("{} ({})", f.value, f.source)))
            .collect();
        out.push(Assumption::new("utilisation", self.utilisation.to_string()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hailo10h_defaults_and_provenance() {
        let p = DeviceProfile::hailo10h();
        assert_eq!(p.int8_ops_per_s.value, 20e12);
        assert_eq!(p.int4_ops_per_s.value, 40e12);
        assert_eq!(p.utilisation_by_burst(8).unwrap(), [0.30; 8]);
        let assumed: Vec<_> = p.assumed().into_iter().map(|(n, _)| n).collect();
        assert!(assumed.contains(&"switch_cost_s"));
        assert!(!assumed.contains(&"int8_ops_per_s"));
        let listed = p.assumptions();
        let u = listed.iter().find(|a| a.name == "utilisation").unwrap();
        assert!(u.value.contains("planning default"), "{}", u.value);
    }

    #[test]
    fn published_utilisation_follows_the_burst() {
        use crate::metrics::utilisation_source::UtilisationSource;
        let curve = UtilisationSource::Published.simulator_curve().unwrap();
        let p = DeviceProfile::hailo10h().with_utilisation(curve);
        let by_burst = p.utilisation_by_burst(8).unwrap();
        // vit_small: 8.62 GOPS at 119 fps (batch 1) and 428 fps (batch 8) of 20 TOPS.
        assert!((by_burst[0] - 8.62 * 119.0 / 20e3).abs() < 1e-12);
        assert!((by_burst[7] - 8.62 * 428.0 / 20e3).abs() < 1e-12);
        assert!(by_burst.windows(2).all(|w| w[0] < w[1]));
        assert!(
            p.utilisation_by_burst(9).is_err(),
            "batch 9 is not published"
        );
        let listed = p.assumptions();
        let u = listed.iter().find(|a| a.name == "utilisation").unwrap();
        assert!(u.value.starts_with("published vit_small"), "{}", u.value);
    }

    #[test]
    fn compute_time_of_the_288_backbone() {
        // 17.8 GMAC = 35.6 G ops at 20 TOPS x 0.30 -> 5.933 ms.
        let s = DeviceProfile::hailo10h().compute_s(35.6e9, 0.30);
        assert!((s - 35.6e9 / 6e12).abs() < 1e-12);
        assert_eq!(DeviceProfile::zero_time().compute_s(35.6e9, 0.30), 0.0);
    }

    #[test]
    fn link_transfer_time() {
        let usb = Link::usb_ethernet();
        assert_eq!(usb.transfer_s(0), 0.0);
        assert!((usb.transfer_s(350_000_000) - 1.0005).abs() < 1e-9);
        assert_eq!(Link::free().transfer_s(1 << 30), 0.0);
    }
}
