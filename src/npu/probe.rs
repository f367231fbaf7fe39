//! Which Hailo parts this box has, read from sysfs and `/dev` under an
//! injectable root, without HailoRT.
//!
//! HailoRT 5.2's own scan (`Device::scan`, `device_common/device.cpp`) lists
//! the integrated part and the PCIe parts of `/sys/class/hailo_chardev` only;
//! the USB part is a network device that HailoRT reaches only when its IPv4
//! address is given as the device id (`VDevice::create` takes the hRPC client
//! for an ETH id, `vdevice/vdevice.cpp`). This probe also finds what HailoRT
//! cannot see, so that `Backend::Auto` can try the USB card's address and say
//! loudly when it falls back to the simulator while a part is present.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::doctor::pcie::{self, PciFunction};
use crate::doctor::{SysRoot, SysfsUsb, UsbBus};

/// The one spelling of the build that links HailoRT (the root crate's
/// `hailort` feature), used by errors, warnings and `doctor`'s fixes.
pub const BUILD_WITH_HAILORT: &str = "cargo build --release --features hailort";

/// The class libhailort 5.2 scans for PCIe parts
/// (HailoRT 5.2.0, `vdma/driver/os/posix/linux/driver_os_specific.cpp`).
pub const CHARDEV_CLASS: &str = "/sys/class/hailo_chardev";

/// The class of the 5.3 drivers' nodes (`/dev/h1x-N`), which libhailort 5.2
/// does not read.
pub const H1X_CLASS: &str = "/sys/class/hailo1x";

/// The node of an integrated part (HailoRT 5.2.0, `hailort_driver.cpp`).
pub const INTEGRATED_NODE: &str = "/dev/hailo_integrated_nnc";

/// The interface the udev rule names the USB part's gadget.
pub const USB_INTERFACE: &str = "usbnet0";

/// The USB card's address on the gadget link (`hailort_server.sh` on the card).
pub const USB_CARD_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 10, 12);

/// `HAILORT_SERVER_PORT`, the hRPC port (HailoRT 5.2.0, `hrpc/rpc_connection.hpp`).
pub const HRPC_PORT: u16 = 12133;

/// The USB card's hRPC endpoint.
pub const USB_CARD_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(USB_CARD_IP), HRPC_PORT);

/// `accelerator_type` of a chardev node (`enum hailo_accelerator_type`,
/// HailoRT 5.2.0, `drivers/common/hailo_ioctl_common.h`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Accelerator {
    /// 0: a neural-network core driven by the host (Hailo-8 family).
    Nnc,
    /// 1: a system on chip that runs its own HailoRT server (Hailo-10H).
    Soc,
    /// Absent or not a known value (the text read, or empty).
    Unreadable(String),
}

impl Accelerator {
    fn parse(text: Option<String>) -> Self {
        match text.as_deref().map(str::trim) {
            Some("0") => Self::Nnc,
            Some("1") => Self::Soc,
            other => Self::Unreadable(other.unwrap_or_default().to_owned()),
        }
    }
}

impl fmt::Display for Accelerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nnc => f.write_str("NNC (0)"),
            Self::Soc => f.write_str("SOC (1)"),
            Self::Unreadable(t) if t.is_empty() => f.write_str("unreadable"),
            Self::Unreadable(t) => write!(f, "unknown ({t})"),
        }
    }
}

/// One entry of a device-node class.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChardevNode {
    /// `/sys/class/<class>`.
    pub class: &'static str,
    /// The node's name (`hailo0`), so `/dev/<name>`.
    pub name: String,
    /// `board_location`: the PCIe BDF HailoRT uses as the device id.
    pub board_location: Option<String>,
    /// `accelerator_type`.
    pub accelerator: Accelerator,
}

impl ChardevNode {
    /// `/dev/<name>`.
    pub fn dev_path(&self) -> String {
        format!("/dev/{}", self.name)
    }

    /// Whether libhailort 5.2 lists this node: it reads only
    /// [`CHARDEV_CLASS`], and fails its whole scan when either attribute is
    /// unreadable.
    pub fn visible_to_hailort(&self) -> bool {
        self.class == CHARDEV_CLASS
            && self.board_location.is_some()
            && !matches!(self.accelerator, Accelerator::Unreadable(_))
    }
}

/// How a part is attached.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Attachment {
    /// A chardev node.
    Node(ChardevNode),
    /// A Hailo function on the PCI bus with no node in either class.
    PciOnly { bdf: String, name: String },
    /// The integrated part's node.
    Integrated,
    /// The USB part: `usbnet0` up (`link_up`) or only its gadget on the bus.
    Usb { link_up: bool },
}

/// A Hailo part found on this box.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Part {
    /// The id HailoRT opens it by (BDF, IP address, `[integrated]`), when
    /// there is one.
    pub device_id: Option<String>,
    pub attachment: Attachment,
}

impl Part {
    /// Whether HailoRT 5.2 can open this part by itself or by its id.
    pub fn openable(&self) -> bool {
        match &self.attachment {
            Attachment::Node(n) => n.visible_to_hailort(),
            Attachment::Integrated => true,
            Attachment::Usb { link_up } => *link_up,
            Attachment::PciOnly { .. } => false,
        }
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.attachment {
            Attachment::Node(n) => write!(
                f,
                "{} ({}, {}, accelerator {})",
                n.dev_path(),
                n.class,
                n.board_location.as_deref().unwrap_or("no board_location"),
                n.accelerator
            ),
            Attachment::PciOnly { bdf, name } => write!(f, "{name} at {bdf} (no device node)"),
            Attachment::Integrated => f.write_str("integrated part"),
            Attachment::Usb { link_up: true } => {
                write!(f, "USB part at {USB_CARD_IP} ({USB_INTERFACE} up)")
            }
            Attachment::Usb { link_up: false } => {
                write!(f, "USB part on the bus ({USB_INTERFACE} not up)")
            }
        }
    }
}

/// Reads the machine under a root standing in for `/`.
#[derive(Debug, Clone)]
pub struct Probe {
    root: SysRoot,
}

impl Probe {
    /// The real machine.
    pub fn host() -> Self {
        Self::new(SysRoot::host())
    }

    /// A tree standing in for `/` (tests build fake ones).
    pub fn new(root: SysRoot) -> Self {
        Self { root }
    }

    /// The root read.
    pub fn root(&self) -> &SysRoot {
        &self.root
    }

    /// Every entry of [`CHARDEV_CLASS`] and [`H1X_CLASS`] with its attributes.
    pub fn chardev_nodes(&self) -> Vec<ChardevNode> {
        [CHARDEV_CLASS, H1X_CLASS]
            .into_iter()
            .flat_map(|class| {
                self.root.list(class).into_iter().map(move |name| {
                    let attr = |a: &str| self.root.read_attr(format!("{class}/{name}/{a}"));
                    ChardevNode {
                        class,
                        board_location: attr("board_location").filter(|s| !s.is_empty()),
                        accelerator: Accelerator::parse(attr("accelerator_type")),
                        name,
                    }
                })
            })
            .collect()
    }

    /// The Hailo functions on the PCI bus.
    pub fn pci_functions(&self) -> Vec<PciFunction> {
        pcie::scan(&self.root)
    }

    /// Whether `usbnet0` exists and its operstate is `up`.
    pub fn usbnet_up(&self) -> bool {
        self.root
            .read_attr(format!("/sys/class/net/{USB_INTERFACE}/operstate"))
            .is_some_and(|s| s == "up")
    }

    /// Whether the USB part's gadget (0525:a4a1) is on the bus, per sysfs.
    pub fn usb_gadget(&self) -> bool {
        SysfsUsb(self.root.clone())
            .devices()
            .is_ok_and(|list| crate::doctor::usb::find_gadget(&list).is_some())
    }

    /// Every part: nodes, PCI functions without a node, the integrated part,
    /// and the USB part.
    pub fn parts(&self) -> Vec<Part> {
        let nodes = self.chardev_nodes();
        let mut parts: Vec<Part> = Vec::new();
        for n in &nodes {
            parts.push(Part {
                device_id: n.board_location.clone(),
                attachment: Attachment::Node(n.clone()),
            });
        }
        for f in self.pci_functions() {
            let has_node = nodes.iter().any(|n| {
                n.board_location
                    .as_deref()
                    .is_some_and(|b| same_bdf(b, &f.bdf))
            });
            // A node without board_location may be this function: not counted twice.
            let unplaced_node = nodes.iter().any(|n| n.board_location.is_none());
            if !has_node && !unplaced_node {
                parts.push(Part {
                    device_id: Some(f.bdf.clone()),
                    attachment: Attachment::PciOnly {
                        name: f.name(),
                        bdf: f.bdf,
                    },
                });
            }
        }
        if self.root.path(INTEGRATED_NODE).exists() {
            parts.push(Part {
                device_id: Some("[integrated]".into()),
                attachment: Attachment::Integrated,
            });
        }
        let link_up = self.usbnet_up();
        if link_up || self.usb_gadget() {
            parts.push(Part {
                device_id: link_up.then(|| USB_CARD_IP.to_string()),
                attachment: Attachment::Usb { link_up },
            });
        }
        parts
    }
}

/// Whether two BDFs name the same function (HailoRT accepts the short form
/// without the domain, `01:00.0`).
pub fn same_bdf(a: &str, b: &str) -> bool {
    let full = |s: &str| {
        if s.matches(':').count() == 1 {
            format!("0000:{s}")
        } else {
            s.to_owned()
        }
    };
    full(a).eq_ignore_ascii_case(&full(b))
}

/// The parts as one line, for warnings.
pub fn list(parts: &[Part]) -> String {
    parts
        .iter()
        .map(Part::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
pub(crate) mod fake {
    //! Fake trees for probe and doctor tests.

    use std::fs;
    use std::path::Path;

    /// Writes `text` to `rel` under `root`, creating the directories.
    pub fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel.trim_start_matches('/'));
        fs::create_dir_all(path.parent().expect("a file path has a parent")).unwrap();
        fs::write(path, text).unwrap();
    }

    /// A chardev node `name` in `class` with its attributes (`None` leaves
    /// one out).
    pub fn node(root: &Path, class: &str, name: &str, bdf: Option<&str>, acc: Option<&str>) {
        fs::create_dir_all(root.join(format!("sys/class/{class}/{name}"))).unwrap();
        if let Some(b) = bdf {
            write(root, &format!("sys/class/{class}/{name}/board_location"), b);
        }
        if let Some(a) = acc {
            write(
                root,
                &format!("sys/class/{class}/{name}/accelerator_type"),
                a,
            );
        }
    }

    /// `usbnet0` with operstate `state`.
    pub fn usbnet(root: &Path, state: &str) {
        write(
            root,
            "sys/class/net/usbnet0/operstate",
            &format!("{state}\n"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::fake::*;
    use super::*;

    fn probe(dir: &tempfile::TempDir) -> Probe {
        Probe::new(SysRoot::new(dir.path()))
    }

    #[test]
    fn chardev_attributes_are_read() {
        let dir = tempfile::tempdir().unwrap();
        node(
            dir.path(),
            "hailo_chardev",
            "hailo0",
            Some("0000:01:00.0\n"),
            Some("1\n"),
        );
        node(
            dir.path(),
            "hailo1x",
            "h1x-0",
            Some("0000:02:00.0"),
            Some("1"),
        );
        node(
            dir.path(),
            "hailo_chardev",
            "hailo1",
            Some("0000:03:00.0"),
            None,
        );
        let nodes = probe(&dir).chardev_nodes();
        assert_eq!(nodes.len(), 3);
        let by = |n: &str| nodes.iter().find(|x| x.name == n).unwrap().clone();
        assert_eq!(by("hailo0").accelerator, Accelerator::Soc);
        assert_eq!(by("hailo0").board_location.as_deref(), Some("0000:01:00.0"));
        assert!(by("hailo0").visible_to_hailort());
        // Negative controls: the other class, and a missing attribute.
        assert!(!by("h1x-0").visible_to_hailort());
        assert!(!by("hailo1").visible_to_hailort());
        assert_eq!(by("hailo1").accelerator.to_string(), "unreadable");
    }

    #[test]
    fn usb_part_is_found_by_its_interface() {
        let dir = tempfile::tempdir().unwrap();
        assert!(probe(&dir).parts().is_empty());
        usbnet(dir.path(), "down");
        assert!(probe(&dir).parts().is_empty(), "a down link is no part");
        usbnet(dir.path(), "up");
        let parts = probe(&dir).parts();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].device_id.as_deref(), Some("192.168.10.12"));
        assert!(parts[0].openable());
    }

    #[test]
    fn pci_function_without_a_node_is_a_part_hailort_cannot_open() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "sys/bus/pci/devices/0000:01:00.0/vendor",
            "0x1e60",
        );
        write(
            dir.path(),
            "sys/bus/pci/devices/0000:01:00.0/device",
            "0x45c4",
        );
        let parts = probe(&dir).parts();
        assert_eq!(parts.len(), 1);
        assert!(!parts[0].openable());
        assert!(parts[0].to_string().contains("Hailo-10H"));
        node(
            dir.path(),
            "hailo_chardev",
            "hailo0",
            Some("01:00.0"),
            Some("1"),
        );
        let parts = probe(&dir).parts();
        assert_eq!(parts.len(), 1, "the node stands for its function");
        assert!(parts[0].openable());
    }

    #[test]
    fn bdfs_compare_in_short_and_long_form() {
        assert!(same_bdf("01:00.0", "0000:01:00.0"));
        assert!(same_bdf("0000:0A:00.0", "0000:0a:00.0"));
        assert!(!same_bdf("0000:01:00.0", "0000:02:00.0"));
    }
}
