//! A fake machine for the doctor: a sysfs/dev/etc tree in a temporary
//! directory, a USB device list, interface addresses and access(2) answers.

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hailo_edge::doctor::installed;
use hailo_edge::doctor::{
    DoctorError, Environment, Interfaces, Permissions, SysRoot, UsbBus, UsbDevice, UsbSpeed,
};

pub struct FakeBox {
    pub dir: tempfile::TempDir,
}

impl FakeBox {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn root(&self) -> SysRoot {
        SysRoot::new(self.dir.path())
    }

    pub fn path(&self, abs: &str) -> PathBuf {
        self.root().path(abs)
    }

    pub fn file(&self, abs: &str, contents: &str) {
        let p = self.path(abs);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, contents).unwrap();
    }

    pub fn remove(&self, abs: &str) {
        let p = self.path(abs);
        if p.is_dir() {
            fs::remove_dir_all(p).unwrap();
        } else {
            fs::remove_file(p).unwrap();
        }
    }

    /// A Hailo PCI function; `link` and `max` are (speed, width) attributes.
    pub fn pci(
        &self,
        bdf: &str,
        device: u16,
        driver: Option<&str>,
        link: Option<(&str, &str)>,
        max: Option<(&str, &str)>,
    ) {
        let dir = format!("/sys/bus/pci/devices/{bdf}");
        self.file(&format!("{dir}/vendor"), "0x1e60\n");
        self.file(&format!("{dir}/device"), &format!("0x{device:04x}\n"));
        if let Some(d) = driver {
            std::os::unix::fs::symlink(
                format!("../../../bus/pci/drivers/{d}"),
                self.path(&format!("{dir}/driver")),
            )
            .unwrap();
        }
        for (kind, l) in [("current", link), ("max", max)] {
            if let Some((speed, width)) = l {
                self.file(&format!("{dir}/{kind}_link_speed"), &format!("{speed}\n"));
                self.file(&format!("{dir}/{kind}_link_width"), &format!("{width}\n"));
            }
        }
    }

    /// A PCI function of another vendor, which the doctor must ignore.
    pub fn other_pci(&self, bdf: &str) {
        let dir = format!("/sys/bus/pci/devices/{bdf}");
        self.file(&format!("{dir}/vendor"), "0x8086\n");
        self.file(&format!("{dir}/device"), "0x45c4\n");
    }

    pub fn module(&self, name: &str, version: &str) {
        self.file(
            &format!("/sys/module/{name}/version"),
            &format!("{version}\n"),
        );
    }

    pub fn library(&self, dir: &str, version: &str) {
        self.file(&format!("{dir}/libhailort.so.{version}"), "ELF");
        // The soname links beside it must not count as versions.
        self.file(&format!("{dir}/libhailort.so"), "ELF");
    }

    /// A device node of a Hailo-10H at 0000:01:00.0: the class entry in
    /// sysfs with its attributes and the node in /dev with `mode`.
    pub fn node(&self, class: &str, name: &str, mode: u32) {
        self.node_of(class, name, mode, "0000:01:00.0", "1");
    }

    /// A device node with `board_location` and `accelerator_type`
    /// (0 = NNC, a Hailo-8; 1 = SOC, a Hailo-10H).
    pub fn node_of(&self, class: &str, name: &str, mode: u32, bdf: &str, acc: &str) {
        let dir = format!("/sys/class/{class}/{name}");
        self.file(&format!("{dir}/board_location"), &format!("{bdf}\n"));
        self.file(&format!("{dir}/accelerator_type"), &format!("{acc}\n"));
        let dev = format!("/dev/{name}");
        self.file(&dev, "");
        fs::set_permissions(self.path(&dev), fs::Permissions::from_mode(mode)).unwrap();
    }

    pub fn interface(&self, name: &str, operstate: &str) {
        self.file(
            &format!("/sys/class/net/{name}/operstate"),
            &format!("{operstate}\n"),
        );
    }

    /// What `udev/install.sh` installs.
    pub fn install_all(&self) {
        for f in installed::ALL {
            self.file(f.dest, f.contents);
        }
    }

    /// A USB device in /sys/bus/usb/devices, for the sysfs enumerator.
    pub fn sysfs_usb(&self, name: &str, vendor: &str, product: &str, speed: &str) {
        let dir = format!("/sys/bus/usb/devices/{name}");
        self.file(&format!("{dir}/idVendor"), &format!("{vendor}\n"));
        self.file(&format!("{dir}/idProduct"), &format!("{product}\n"));
        self.file(&format!("{dir}/speed"), &format!("{speed}\n"));
        self.file(&format!("{dir}/busnum"), "2\n");
        self.file(&format!("{dir}/devnum"), "7\n");
    }
}

/// access(2) that denies the listed paths.
#[derive(Default)]
pub struct FakeAccess {
    pub denied: HashSet<PathBuf>,
}

impl Permissions for FakeAccess {
    fn read_write(&self, path: &Path) -> io::Result<()> {
        if !path.exists() {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        if self.denied.contains(path) {
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        } else {
            Ok(())
        }
    }
}

/// Interface addresses by name.
#[derive(Default)]
pub struct FakeIfs(pub HashMap<String, Vec<IpAddr>>);

impl Interfaces for FakeIfs {
    fn addresses(&self, name: &str) -> Result<Vec<IpAddr>, DoctorError> {
        Ok(self.0.get(name).cloned().unwrap_or_default())
    }
}

/// A USB bus that cannot be listed.
pub struct BrokenUsb;

impl UsbBus for BrokenUsb {
    fn devices(&self) -> Result<Vec<UsbDevice>, DoctorError> {
        Err(DoctorError::Usb("libusb: no /dev/bus/usb".into()))
    }
}

/// A PCIe box as it should be, its node `name` under `/sys/class/<class>`:
/// Hailo-10H at 0000:01:00.0 on hailo1x_pci 5.2.0, libhailort 5.2.0, the
/// node group-rw, our files installed, Gen3 x4, and a non-Hailo function.
pub fn pcie_box(class: &str, name: &str) -> FakeBox {
    let gen3_x4 = Some(("8.0 GT/s PCIe", "4"));
    let f = FakeBox::new();
    f.other_pci("0000:00:02.0");
    f.pci(
        "0000:01:00.0",
        0x45c4,
        Some("hailo1x_pci"),
        gen3_x4,
        gen3_x4,
    );
    f.module("hailo1x_pci", "5.2.0");
    f.library("/usr/lib", "5.2.0");
    f.node(class, name, 0o660);
    f.install_all();
    f
}

pub fn gadget(speed: UsbSpeed) -> UsbDevice {
    UsbDevice {
        bus: 2,
        address: 5,
        vendor: 0x0525,
        product: 0xa4a1,
        speed,
    }
}

pub fn hub() -> UsbDevice {
    UsbDevice {
        bus: 2,
        address: 1,
        vendor: 0x1d6b,
        product: 0x0003,
        speed: UsbSpeed::SuperPlus,
    }
}

/// A loopback listener standing in for the card's hRPC port.
pub fn listening() -> (TcpListener, SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    (l, a)
}

/// A loopback port nobody listens on.
pub fn closed_port() -> SocketAddr {
    let (l, a) = listening();
    drop(l);
    a
}

pub fn env<'a>(
    fake: &FakeBox,
    usb: &'a dyn UsbBus,
    net: &'a dyn Interfaces,
    access: &'a dyn Permissions,
    card: SocketAddr,
) -> Environment<'a> {
    assert!(card.ip().is_loopback(), "tests only connect to loopback");
    Environment {
        root: fake.root(),
        usb,
        net,
        access,
        card,
        connect_timeout: Duration::from_secs(1),
        hailort_linked: false,
        device_id: None,
    }
}
