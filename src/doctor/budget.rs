//! The link budget of a rig: bytes per second of frames in and features out,
//! against what the link to the part carries.
//!
//! Shapes come from the RF-DETR backbone's formula (input side x side x 3
//! UINT8, four outputs of (side/12, side/12, 384) UINT8) or from the streams
//! of HEF files ([`graphs_from_hefs`]). Link capacities: raw and
//! line-coded rates are the standards'; the practical share of a link is an
//! assumption, stated in every report.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::Serialize;

use super::pcie::{PciFunction, PcieLink};
use super::usb::{UsbDevice, UsbSpeed};
use super::{Check, DoctorError};

/// One camera: a square frame of `side` pixels at `fps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Camera {
    pub side: u32,
    pub fps: u32,
}

impl FromStr for Camera {
    type Err = DoctorError;

    /// `SIDE@FPS`, e.g. `288@120`.
    fn from_str(spec: &str) -> Result<Self, DoctorError> {
        let bad = |reason: &str| DoctorError::BadCamera {
            spec: spec.to_owned(),
            reason: reason.to_owned(),
        };
        let (side, fps) = spec.split_once('@').ok_or_else(|| bad("no '@'"))?;
        let side: u32 = side
            .trim()
            .parse()
            .map_err(|_| bad("side is not a number"))?;
        let fps: u32 = fps.trim().parse().map_err(|_| bad("fps is not a number"))?;
        if side == 0 || fps == 0 {
            return Err(bad("side and fps must be positive"));
        }
        if side % 12 != 0 {
            return Err(bad("the backbone needs a side divisible by 12"));
        }
        Ok(Self { side, fps })
    }
}

/// Bytes in and out of one inference of a graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphIo {
    pub name: String,
    /// Side of its square input.
    pub input_side: u32,
    pub in_bytes: u64,
    pub out_bytes: u64,
}

/// Output channels of each of the backbone's four feature maps.
pub const BACKBONE_CHANNELS: u64 = 384;
/// Feature maps of the backbone.
pub const BACKBONE_OUTPUTS: u64 = 4;
/// Stride of the backbone's feature maps.
pub const BACKBONE_STRIDE: u32 = 12;

impl GraphIo {
    /// The RF-DETR keypoint backbone at `side`: input side*side*3 UINT8,
    /// outputs four (g, g, 384) UINT8 with g = side/12.
    pub fn backbone(side: u32) -> Self {
        let s = u64::from(side);
        let g = u64::from(side / BACKBONE_STRIDE);
        Self {
            name: format!("rf-detr backbone {side}"),
            input_side: side,
            in_bytes: s * s * 3,
            out_bytes: BACKBONE_OUTPUTS * g * g * BACKBONE_CHANNELS,
        }
    }

    /// The bytes of a HEF network group: its one square image input, the sum
    /// of its outputs. `None` when the group has not exactly one square input.
    pub fn from_network_group(group: &hef::NetworkGroup) -> Option<Self> {
        let [input] = group.inputs.as_slice() else {
            return None;
        };
        let hef::StreamShape::Image { height, width, .. } = input.shape else {
            return None;
        };
        (height == width).then(|| Self {
            name: group.name.clone(),
            input_side: height,
            in_bytes: input.frame_size(),
            out_bytes: group.outputs.iter().map(hef::StreamInfo::frame_size).sum(),
        })
    }
}

/// The graphs of HEF files: one per network group.
///
/// # Errors
/// [`DoctorError::Hef`] for a file that does not read (it names the file),
/// [`DoctorError::UnsupportedGraph`] for a group without one square input.
pub fn graphs_from_hefs(paths: &[impl AsRef<Path>]) -> Result<Vec<GraphIo>, DoctorError> {
    let mut graphs = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let model = hef::Hef::open(path)?;
        for group in &model.network_groups {
            graphs.push(GraphIo::from_network_group(group).ok_or_else(|| {
                DoctorError::UnsupportedGraph {
                    path: path.display().to_string(),
                    group: group.name.clone(),
                }
            })?);
        }
    }
    Ok(graphs)
}

/// Where the graphs' shapes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeSource {
    /// The backbone's formula.
    BackboneFormula,
    /// Streams read from HEF files.
    Hef,
}

/// Cameras and the graphs they feed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rig {
    pub cameras: Vec<Camera>,
    pub graphs: Vec<GraphIo>,
    pub shapes: ShapeSource,
}

impl Rig {
    /// The demo rig: three body cameras at 288 and a face camera at 432, all
    /// at 120 fps, into the backbone.
    pub fn demo() -> Self {
        Self {
            graphs: vec![GraphIo::backbone(288), GraphIo::backbone(432)],
            cameras: Self::demo_cameras(),
            shapes: ShapeSource::BackboneFormula,
        }
    }

    /// The demo rig's cameras: 3x288@120 + 1x432@120.
    pub fn demo_cameras() -> Vec<Camera> {
        [288, 288, 288, 432]
            .map(|side| Camera { side, fps: 120 })
            .to_vec()
    }

    /// Cameras into the backbone, one graph per distinct side.
    ///
    /// # Errors
    /// [`DoctorError::EmptyRig`] without cameras.
    pub fn with_backbone(cameras: Vec<Camera>) -> Result<Self, DoctorError> {
        let mut sides: Vec<u32> = cameras.iter().map(|c| c.side).collect();
        sides.sort_unstable();
        sides.dedup();
        Self::with_graphs(
            cameras,
            sides.into_iter().map(GraphIo::backbone).collect(),
            ShapeSource::BackboneFormula,
        )
    }

    /// Cameras into the given graphs; each camera feeds the graph whose input
    /// side equals its own.
    ///
    /// # Errors
    /// [`DoctorError::EmptyRig`], or [`DoctorError::NoGraphForCamera`] naming
    /// a camera no graph takes.
    pub fn with_graphs(
        cameras: Vec<Camera>,
        graphs: Vec<GraphIo>,
        shapes: ShapeSource,
    ) -> Result<Self, DoctorError> {
        if cameras.is_empty() {
            return Err(DoctorError::EmptyRig);
        }
        if let Some(c) = cameras
            .iter()
            .find(|c| !graphs.iter().any(|g| g.input_side == c.side))
        {
            return Err(DoctorError::NoGraphForCamera { side: c.side });
        }
        Ok(Self {
            cameras,
            graphs,
            shapes,
        })
    }

    /// (bytes/s in, bytes/s out) of a camera, through the graph of its side;
    /// `None` when no graph of the rig takes it.
    pub fn camera_load(&self, c: &Camera) -> Option<(f64, f64)> {
        let g = self.graphs.iter().find(|g| g.input_side == c.side)?;
        let fps = f64::from(c.fps);
        Some((g.in_bytes as f64 * fps, g.out_bytes as f64 * fps))
    }

    /// (bytes/s in, bytes/s out) of the whole rig.
    pub fn load(&self) -> (f64, f64) {
        self.cameras
            .iter()
            .filter_map(|c| self.camera_load(c))
            .fold((0.0, 0.0), |(i, o), (ci, co)| (i + ci, o + co))
    }

    /// `3x288@120 + 1x432@120`.
    pub fn summary(&self) -> String {
        let mut groups: Vec<(Camera, usize)> = Vec::new();
        for c in &self.cameras {
            match groups.iter_mut().find(|(g, _)| g == c) {
                Some((_, n)) => *n += 1,
                None => groups.push((*c, 1)),
            }
        }
        groups
            .iter()
            .map(|(c, n)| format!("{n}x{}@{}", c.side, c.fps))
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// Share of a USB link's coded rate assumed usable for bulk transfers.
pub const USB_PRACTICAL_SHARE: f64 = 0.75;
/// Share of a PCIe link's coded rate assumed usable after TLP/DLLP overhead.
pub const PCIE_PRACTICAL_SHARE: f64 = 0.80;
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
    /// A USB link at `speed`.
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
        Self {
            name: speed.name().to_owned(),
            basis: basis.into(),
            raw_bits_per_s: raw,
            coded_bytes_per_s: coded,
            practical_bytes_per_s: practical,
            full_duplex,
            assumption: format!(
                "{assumption}; the hRPC-over-TCP path of the USB part is not measured yet"
            ),
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

/// Per-camera load, for reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CameraLoad {
    pub camera: Camera,
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
                        camera: *c,
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
        let fix = "fewer cameras or a lower fps, or a faster link (USB 3.1 Gen 2 port, PCIe)";
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
        writeln!(f, "  {:<10} {:>14} {:>14}", "camera", "in", "out")?;
        for c in &self.cameras {
            writeln!(
                f,
                "  {:<10} {:>14} {:>14}",
                format!("{}@{}", c.camera.side, c.camera.fps),
                mbs(c.in_bytes_per_s),
                mbs(c.out_bytes_per_s)
            )?;
        }
        writeln!(
            f,
            "  {:<10} {:>14} {:>14}",
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

    #[test]
    fn cameras_parse_and_reject() {
        assert_eq!(
            "288@120".parse::<Camera>().unwrap(),
            Camera {
                side: 288,
                fps: 120
            }
        );
        for bad in ["288", "x@120", "288@", "0@120", "290@30"] {
            let e = bad.parse::<Camera>().unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn demo_rig_load_by_hand() {
        let rig = Rig::demo();
        let (i, o) = rig.load();
        // in: 3 * 288*288*3 * 120 + 432*432*3 * 120
        assert_eq!(i, (3.0 * 248_832.0 + 559_872.0) * 120.0);
        // out: 4 maps of (g, g, 384), g = 24 and 36
        assert_eq!(o, (3.0 * 884_736.0 + 1_990_656.0) * 120.0);
        assert_eq!(rig.summary(), "3x288@120 + 1x432@120");
    }

    #[test]
    fn demo_rig_fits_gen2_not_gen1_nor_usb2() {
        let rig = Rig::demo();
        let gen2 = LinkBudget::new(&rig, Some(Link::usb(UsbSpeed::SuperPlus, "t")));
        assert_eq!(gen2.check().verdict, super::super::Verdict::Ok);
        let gen1 = LinkBudget::new(&rig, Some(Link::usb(UsbSpeed::Super, "t")));
        assert_eq!(gen1.check().verdict, super::super::Verdict::Fail);
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
    fn budget_warns_near_capacity() {
        // A 432 camera's features on Gen 1's 375 MB/s practical:
        // 120 fps 238.9 MB/s (64%), 170 fps 338.4 MB/s (90%), 240 fps 477.8 MB/s (127%).
        let gen1 = || Some(Link::usb(UsbSpeed::Super, "t"));
        let rig = |fps| Rig::with_backbone(vec![Camera { side: 432, fps }]).unwrap();
        assert_eq!(
            LinkBudget::new(&rig(120), gen1()).check().verdict,
            super::super::Verdict::Ok
        );
        assert_eq!(
            LinkBudget::new(&rig(170), gen1()).check().verdict,
            super::super::Verdict::Warn
        );
        assert_eq!(
            LinkBudget::new(&rig(240), gen1()).check().verdict,
            super::super::Verdict::Fail
        );
    }

    #[test]
    fn graphs_must_cover_cameras() {
        let err = Rig::with_graphs(
            vec![Camera { side: 432, fps: 30 }],
            vec![GraphIo::backbone(288)],
            ShapeSource::BackboneFormula,
        )
        .unwrap_err();
        assert!(err.to_string().contains("432x432"));
        assert!(matches!(
            Rig::with_backbone(vec![]),
            Err(DoctorError::EmptyRig)
        ));
    }

    fn stream(name: &str, dir: hef::Direction, h: u32, w: u32, f: u32) -> hef::StreamInfo {
        hef::StreamInfo {
            name: name.into(),
            network: "g/g".into(),
            direction: dir,
            shape: hef::StreamShape::Image {
                height: h,
                width: w,
                features: f,
            },
            device_order: hef::FormatOrder::Nhcw,
            host_order: hef::FormatOrder::Nhwc,
            data_type: hef::DataType::Uint8,
            transposed: false,
            quant: hef::Quantization::Uniform(hef::QuantInfo {
                zp: 0.0,
                scale: 1.0,
                limvals_min: 0.0,
                limvals_max: 255.0,
            }),
        }
    }

    fn group(inputs: Vec<hef::StreamInfo>, side: u32) -> hef::NetworkGroup {
        let g = side / 12;
        hef::NetworkGroup {
            name: format!("backbone_{side}"),
            networks: vec!["g/g".into()],
            contexts: 1,
            bottleneck_fps: None,
            ops_per_frame: None,
            inputs,
            outputs: (0..4)
                .map(|i| stream(&format!("out{i}"), hef::Direction::Output, g, g, 384))
                .collect(),
        }
    }

    #[test]
    fn hef_streams_give_the_same_bytes_as_the_formula() {
        for side in [288, 432] {
            let input = stream("in", hef::Direction::Input, side, side, 3);
            let io = GraphIo::from_network_group(&group(vec![input], side)).unwrap();
            let formula = GraphIo::backbone(side);
            assert_eq!(
                (io.input_side, io.in_bytes, io.out_bytes),
                (side, formula.in_bytes, formula.out_bytes)
            );
        }
        // Not one square input: no graph.
        let wide = stream("in", hef::Direction::Input, 288, 432, 3);
        assert!(GraphIo::from_network_group(&group(vec![wide], 288)).is_none());
        assert!(GraphIo::from_network_group(&group(vec![], 288)).is_none());
    }
}
