//! The link budget of a rig: bytes per second of frames in and features out,
//! against what the link to the part carries.
//!
//! Shapes come from the formula of the model's device half (input side x side x 3
//! UINT8; at the design split two outputs of (side/12, side/12, 256) UINT8, at the
//! taps split four of (side/12, side/12, 384)) or from the streams
//! of HEF files ([`graphs_from_hefs`]). Link capacities: raw and
//! line-coded rates are the standards'; the practical share of a link is an
//! assumption, stated in every report.

mod demand;
mod link;

use std::fmt;

use serde::Serialize;

use super::Check;
use crate::metrics::plan::CameraMode;

pub use demand::{backbone_camera, graphs_from_hefs, GraphIo, Rig, ShapeSource};
pub use link::{pick_link, Link, USB2_PRACTICAL_BYTES_PER_S, USB_PRACTICAL_SHARE};

/// Per-camera load, for reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CameraLoad {
    pub camera: CameraMode,
    pub in_bytes_per_s: f64,
    pub out_bytes_per_s: f64,
}

/// A rig's load against a link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkBudget {
    pub rig: String,
    pub shapes: ShapeSource,
    pub cameras: Vec<CameraLoad>,
    pub in_bytes_per_s: f64,
    pub out_bytes_per_s: f64,
    pub link: Option<Link>,
    /// Share of the practical capacity used: the busier direction on a full
    /// duplex link, in plus out on a half duplex one.
    pub utilisation: Option<f64>,
}

/// Utilisation above which the budget warns: bursts and protocol overhead
/// need headroom.
pub const WARN_UTILISATION: f64 = 0.8;

impl LinkBudget {
    pub fn new(rig: &Rig, link: Option<Link>) -> Self {
        let (in_bytes_per_s, out_bytes_per_s) = rig.load();
        let utilisation = link.as_ref().map(|l| {
            let need = if l.full_duplex {
                in_bytes_per_s.max(out_bytes_per_s)
            } else {
                in_bytes_per_s + out_bytes_per_s
            };
            need / l.practical_bytes_per_s
        });
        Self {
            rig: rig.summary(),
            shapes: rig.shapes,
            cameras: rig
                .cameras
                .iter()
                .filter_map(|c| {
                    let (i, o) = rig.camera_load(c)?;
                    Some(CameraLoad {
                        camera: c.clone(),
                        in_bytes_per_s: i,
                        out_bytes_per_s: o,
                    })
                })
                .collect(),
            in_bytes_per_s,
            out_bytes_per_s,
            link,
            utilisation,
        }
    }

    /// `budget.link`: ok below [`WARN_UTILISATION`], a warning up to the
    /// practical capacity, a failure beyond it.
    pub fn check(&self) -> Check {
        const ID: &str = "budget.link";
        let load = format!(
            "{}: in {} + out {}",
            self.rig,
            mbs(self.in_bytes_per_s),
            mbs(self.out_bytes_per_s)
        );
        let (Some(link), Some(u)) = (&self.link, self.utilisation) else {
            return Check::skip(ID, format!("{load}; PCIe link speed unreadable"));
        };
        let detail = format!(
            "{load} on {}: {:.0}% of {} practical ({})",
            link.name,
            u * 100.0,
            mbs(link.practical_bytes_per_s),
            if link.full_duplex {
                "per direction"
            } else {
                "shared"
            }
        );
        let fix = "fewer cameras or a lower fps, or a faster link (the PCIe part; a USB 3 port for a USB 2 link)";
        if u > 1.0 {
            Check::fail(ID, detail, fix)
        } else if u > WARN_UTILISATION {
            Check::warn(ID, detail, fix)
        } else {
            Check::ok(ID, detail)
        }
    }
}

fn mbs(bytes_per_s: f64) -> String {
    format!("{:.1} MB/s", bytes_per_s / 1e6)
}

impl fmt::Display for LinkBudget {
    /// A table: one row per camera, the totals, the link and its assumptions.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shapes = match self.shapes {
            ShapeSource::BackboneFormula => "shapes: RF-DETR backbone formula",
            ShapeSource::Hef => "shapes: HEF streams",
        };
        writeln!(f, "link budget of {} ({shapes})", self.rig)?;
        writeln!(f, "  {:<14} {:>14} {:>14}", "camera", "in", "out")?;
        for c in &self.cameras {
            writeln!(
                f,
                "  {:<14} {:>14} {:>14}",
                c.camera.to_string(),
                mbs(c.in_bytes_per_s),
                mbs(c.out_bytes_per_s)
            )?;
        }
        writeln!(
            f,
            "  {:<14} {:>14} {:>14}",
            "total",
            mbs(self.in_bytes_per_s),
            mbs(self.out_bytes_per_s)
        )?;
        match &self.link {
            Some(l) => write!(
                f,
                "  link {} [{}]: raw {:.2} Gbit/s, coded {}, practical {} ({})",
                l.name,
                l.basis,
                l.raw_bits_per_s / 1e9,
                mbs(l.coded_bytes_per_s),
                mbs(l.practical_bytes_per_s),
                l.assumption
            ),
            None => write!(f, "  link: unknown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::UsbSpeed;
    use crate::npu::link::PcieLink;

    #[test]
    fn demo_rig_fits_gen1_at_the_design_split_not_at_the_taps_nor_usb2() {
        let rig = Rig::demo();
        let gen2 = LinkBudget::new(&rig, Some(Link::usb(UsbSpeed::SuperPlus, "t")));
        assert_eq!(gen2.check().verdict, super::super::Verdict::Ok);
        // Two (g, g, 256) maps a frame: 185.8 MB/s out, 53 % of the 350 MB/s the
        // gadget's hRPC path is assumed to carry.
        let gen1 = LinkBudget::new(&rig, Some(Link::usb(UsbSpeed::Super, "t")));
        assert_eq!(gen1.check().verdict, super::super::Verdict::Ok);
        assert!((gen1.out_bytes_per_s - 185_794_560.0).abs() < 1.0);
        // Four (g, g, 384) taps a frame: 557.4 MB/s, more than Gen 1 carries.
        let taps = Rig::with_graphs(
            rig.cameras.clone(),
            vec![
                GraphIo::backbone_at(288, crate::decode::Split::Taps),
                GraphIo::backbone_at(432, crate::decode::Split::Taps),
            ],
            ShapeSource::BackboneFormula,
        )
        .unwrap();
        let gen1 = LinkBudget::new(&taps, Some(Link::usb(UsbSpeed::Super, "t")));
        assert_eq!(gen1.check().verdict, super::super::Verdict::Fail);
        assert!((gen1.out_bytes_per_s - 557_383_680.0).abs() < 1.0);
        let hs = LinkBudget::new(&rig, Some(Link::usb(UsbSpeed::High, "t")));
        assert_eq!(hs.check().verdict, super::super::Verdict::Fail);
        // Half duplex: in and out add up.
        let u = hs.utilisation.unwrap();
        assert!((u - (hs.in_bytes_per_s + hs.out_bytes_per_s) / 37.5e6).abs() < 1e-9);
        let pcie = Link::pcie(PcieLink { gen: 3, width: 4 }, "t");
        assert_eq!(
            LinkBudget::new(&rig, Some(pcie)).check().verdict,
            super::super::Verdict::Ok
        );
        assert_eq!(
            LinkBudget::new(&rig, None).check().verdict,
            super::super::Verdict::Skip
        );
    }

    #[test]
    fn the_usb_part_is_bounded_by_the_hrpc_path_the_simulator_assumes() {
        let sim = crate::npu::sim::Link::usb_ethernet().bytes_per_s.value;
        for speed in [UsbSpeed::Super, UsbSpeed::SuperPlus, UsbSpeed::SuperPlusX2] {
            let link = Link::usb(speed, "t");
            assert!(
                link.coded_bytes_per_s * USB_PRACTICAL_SHARE > sim,
                "{speed:?}"
            );
            assert_eq!(link.practical_bytes_per_s, sim, "{speed:?}");
            assert!(link.assumption.contains("350 MB/s"), "{}", link.assumption);
        }
        // The control: USB 2.0 carries less than the path, and the bus bounds it.
        let usb2 = Link::usb(UsbSpeed::High, "t");
        assert_eq!(usb2.practical_bytes_per_s, USB2_PRACTICAL_BYTES_PER_S);
        assert!(usb2.practical_bytes_per_s < sim);
    }

    #[test]
    fn a_pcie_gen3_x4_link_carries_what_the_simulator_assumes() {
        let sim = crate::npu::sim::Link::pcie_gen3_x4().bytes_per_s.value;
        let gen3 = Link::pcie(PcieLink { gen: 3, width: 4 }, "t");
        assert!((gen3.practical_bytes_per_s - sim).abs() < 1.0, "{sim}");
        // The control: a Gen3 x1 link is a quarter of it.
        let x1 = Link::pcie(PcieLink { gen: 3, width: 1 }, "t");
        assert!((x1.practical_bytes_per_s * 4.0 - sim).abs() < 1.0);
        assert!((x1.practical_bytes_per_s - sim).abs() > 1e9);
        // The gate's control: the simulator's former 3.2 GB/s would not pass it.
        assert!((gen3.practical_bytes_per_s - 3.2e9).abs() >= 1.0);
    }

    #[test]
    fn budget_warns_near_capacity() {
        // A 432 camera's features (663,552 B a frame) on the 350 MB/s Gen 1 carries
        // through the gadget: 120 fps 79.6 MB/s (23%), 510 fps 338.4 MB/s (97%),
        // 600 fps 398.1 MB/s (114%).
        let gen1 = || Some(Link::usb(UsbSpeed::Super, "t"));
        let rig = |fps| Rig::with_backbone(vec![CameraMode::new(432, fps)]).unwrap();
        assert_eq!(
            LinkBudget::new(&rig(120.0), gen1()).check().verdict,
            super::super::Verdict::Ok
        );
        assert_eq!(
            LinkBudget::new(&rig(510.0), gen1()).check().verdict,
            super::super::Verdict::Warn
        );
        assert_eq!(
            LinkBudget::new(&rig(600.0), gen1()).check().verdict,
            super::super::Verdict::Fail
        );
    }
}
