//! `doctor` against fake machines: every check in a good and a broken state.
//! No hardware, and no network beyond loopback.

mod doctor_fake;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::PermissionsExt;

use doctor_fake::*;
use hailo_edge::doctor::budget::Rig;
use hailo_edge::doctor::{diagnose, Report, SysfsUsb, UsbBus, UsbSpeed, Verdict};
use hailo_edge::metrics::plan::CameraMode;

const HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 168, 10, 11));

fn verdict(r: &Report, id: &str) -> Verdict {
    r.check(id)
        .unwrap_or_else(|| panic!("no check {id} in\n{r}"))
        .verdict
}

fn detail<'r>(r: &'r Report, id: &str) -> &'r str {
    &r.check(id).unwrap().detail
}

fn fix<'r>(r: &'r Report, id: &str) -> &'r str {
    r.check(id).unwrap().fix.as_deref().unwrap_or("")
}

/// The sysfs link attributes (speed, width) of a Gen3 x4 and a Gen1 x1 link.
const GEN3_X4: Option<(&str, &str)> = Some(("8.0 GT/s PCIe", "4"));
const GEN1_X1: Option<(&str, &str)> = Some(("2.5 GT/s PCIe", "1"));

/// A PCIe box as it should be: Hailo-10H on hailo1x_pci 5.2.0, libhailort
/// 5.2.0, /dev/hailo0 group-rw, our files installed, Gen3 x4.
fn good_pcie_box() -> FakeBox {
    pcie_box("hailo_chardev", "hailo0")
}

fn run_pcie(f: &FakeBox, access: &FakeAccess) -> Report {
    let usb = vec![hub()];
    let ifs = FakeIfs::default();
    diagnose(&env(f, &usb, &ifs, access, closed_port()), &Rig::demo())
}

#[test]
fn pcie_box_good() {
    let f = good_pcie_box();
    let r = run_pcie(&f, &FakeAccess::default());
    for id in [
        "hailort.library",
        "hailort.driver",
        "pcie.devices",
        "pcie.driver",
        "pcie.nodes",
        "pcie.link",
        "pcie.chardev",
        "pcie.holders",
        "hailort.device_types",
        "installed.udev",
        "installed.network",
        "budget.link",
    ] {
        assert_eq!(verdict(&r, id), Verdict::Ok, "{id}\n{r}");
    }
    assert_eq!(verdict(&r, "hailort.linked"), Verdict::Warn);
    assert_eq!(verdict(&r, "backend.auto"), Verdict::Warn);
    for id in ["usb.gadget", "usb.speed", "net.usbnet0", "net.hrpc"] {
        assert_eq!(verdict(&r, id), Verdict::Skip, "{id}\n{r}");
    }
    assert!(!r.failed(), "{r}");
    assert!(detail(&r, "pcie.devices").contains("0000:01:00.0 Hailo-10H (1e60:45c4)"));
    assert!(!detail(&r, "pcie.devices").contains("0000:00:02.0"));
    assert!(detail(&r, "hailort.driver").contains("hailo1x_pci 5.2.0 = libhailort 5.2.0"));
    assert!(detail(&r, "pcie.nodes").contains("/dev/hailo0"));
    let link = r.budget.as_ref().unwrap().link.as_ref().unwrap();
    assert!(link.name.contains("Gen3 x4"), "{}", link.name);
}

#[test]
fn pcie_box_broken_driver_version_and_binding() {
    let f = FakeBox::new();
    f.pci("0000:01:00.0", 0x45c4, Some("hailo_pci"), GEN3_X4, None);
    f.module("hailo_pci", "4.23.0");
    f.library("/usr/local/lib", "5.2.0");
    f.node("hailo_chardev", "hailo0", 0o660);
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "hailort.driver"), Verdict::Fail, "{r}");
    assert!(detail(&r, "hailort.driver").contains("4.23.0 != libhailort 5.2.0"));
    assert!(detail(&r, "hailort.driver").contains("HAILO_INVALID_DRIVER_VERSION"));
    assert_eq!(verdict(&r, "pcie.driver"), Verdict::Warn);
    assert!(fix(&r, "pcie.driver").contains("modprobe hailo1x_pci"));
    assert_eq!(verdict(&r, "installed.udev"), Verdict::Fail);
    assert_eq!(fix(&r, "installed.udev"), "sudo udev/install.sh");
    assert_eq!(verdict(&r, "installed.network"), Verdict::Fail);
    assert!(r.failed());
}

#[test]
fn unbound_hailo10h_warns_and_driverless_box_fails() {
    let f = good_pcie_box();
    f.remove("/sys/bus/pci/devices/0000:01:00.0/driver");
    f.remove("/sys/module/hailo1x_pci");
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "pcie.driver"), Verdict::Warn);
    assert!(detail(&r, "pcie.driver").contains("no driver"));
    assert_eq!(verdict(&r, "hailort.driver"), Verdict::Fail);
    assert!(fix(&r, "hailort.driver").contains("modprobe hailo1x_pci"));
}

#[test]
fn nodes_denied_missing_absent_or_world_writable() {
    let f = good_pcie_box();
    let denied = FakeAccess {
        denied: [f.path("/dev/hailo0")].into(),
    };
    let r = run_pcie(&f, &denied);
    assert_eq!(verdict(&r, "pcie.nodes"), Verdict::Fail);
    assert!(detail(&r, "pcie.nodes").contains("not read/write"));
    assert!(fix(&r, "pcie.nodes").contains("usermod -aG hailo"));

    std::fs::set_permissions(
        f.path("/dev/hailo0"),
        std::fs::Permissions::from_mode(0o666),
    )
    .unwrap();
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "pcie.nodes"), Verdict::Warn);
    assert!(detail(&r, "pcie.nodes").contains("world-writable"));

    f.remove("/dev/hailo0");
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "pcie.nodes"), Verdict::Fail);
    assert!(detail(&r, "pcie.nodes").contains("/dev/hailo0 missing"));

    f.remove("/sys/class/hailo_chardev");
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "pcie.nodes"), Verdict::Fail);
    assert!(detail(&r, "pcie.nodes").contains("no device node"));
}

#[test]
fn degraded_link_warns_and_starves_the_budget() {
    let f = FakeBox::new();
    f.pci(
        "0000:03:00.0",
        0x45c4,
        Some("hailo1x_pci"),
        GEN1_X1,
        GEN3_X4,
    );
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "pcie.link"), Verdict::Warn);
    assert!(detail(&r, "pcie.link").contains("below its maximum Gen3 x4"));
    // Gen1 x1: 250 MB/s coded, 200 MB/s practical; the demo rig's features
    // need 185.8 MB/s (93%).
    assert_eq!(verdict(&r, "budget.link"), Verdict::Warn, "{r}");

    // No link attributes: the link is unknown and the budget is skipped.
    let f = FakeBox::new();
    f.pci("0000:03:00.0", 0x45c4, Some("hailo1x_pci"), None, None);
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "pcie.link"), Verdict::Warn);
    assert_eq!(verdict(&r, "budget.link"), Verdict::Skip);
}

#[test]
fn parts_are_named_and_unknown_ids_warn() {
    let f = FakeBox::new();
    f.pci("0000:01:00.0", 0x2864, Some("hailo_pci"), GEN3_X4, GEN3_X4);
    f.pci(
        "0000:02:00.0",
        0x43a2,
        Some("hailo1x_pci"),
        GEN3_X4,
        GEN3_X4,
    );
    f.pci(
        "0000:04:00.0",
        0x26a2,
        Some("hailo1x_pci"),
        GEN3_X4,
        GEN3_X4,
    );
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "pcie.devices"), Verdict::Ok);
    let d = detail(&r, "pcie.devices");
    assert!(d.contains("Hailo-8 ") && d.contains("Hailo-15L") && d.contains("MARS/Hailo-12L"));
    assert_eq!(verdict(&r, "pcie.driver"), Verdict::Ok, "{r}");

    f.pci("0000:05:00.0", 0x9999, None, GEN3_X4, GEN3_X4);
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "pcie.devices"), Verdict::Warn);
    assert!(detail(&r, "pcie.devices").contains("unknown Hailo device 0x9999"));
}

#[test]
fn library_versions_missing_old_or_several() {
    let f = good_pcie_box();
    f.remove("/usr/lib/libhailort.so.5.2.0");
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "hailort.library"), Verdict::Fail);
    assert_eq!(verdict(&r, "hailort.driver"), Verdict::Warn);

    f.library("/usr/lib/aarch64-linux-gnu", "4.23.0");
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "hailort.library"), Verdict::Fail);
    assert!(detail(&r, "hailort.library").contains("needs 5.x"));

    f.library("/usr/lib", "5.2.0");
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "hailort.library"), Verdict::Warn);
    assert!(
        detail(&r, "hailort.library").contains("4.23.0")
            && detail(&r, "hailort.library").contains("5.2.0")
    );
}

#[test]
fn installed_files_that_differ_warn_and_either_network_unit_will_do() {
    let f = good_pcie_box();
    f.file(
        "/etc/udev/rules.d/60-hailo-edge.rules",
        "SUBSYSTEM==\"hailo_chardev\", MODE=\"0666\"\n",
    );
    f.remove("/etc/systemd/network/70-hailo-usbnet0.network");
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "installed.udev"), Verdict::Warn);
    assert!(detail(&r, "installed.udev").contains("60-hailo-edge.rules"));
    assert_eq!(verdict(&r, "installed.network"), Verdict::Ok);
    assert!(detail(&r, "installed.network").contains("NetworkManager"));

    f.file(
        "/etc/NetworkManager/system-connections/hailo-usbnet0.nmconnection",
        "[connection]\n",
    );
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "installed.network"), Verdict::Warn);

    f.remove("/etc/NetworkManager/system-connections/hailo-usbnet0.nmconnection");
    f.remove("/etc/udev/rules.d/70-hailo-usbnet.rules");
    let r = run_pcie(&f, &FakeAccess::default());
    assert_eq!(verdict(&r, "installed.network"), Verdict::Fail);
    assert_eq!(verdict(&r, "installed.udev"), Verdict::Fail);
    assert!(detail(&r, "installed.udev").contains("70-hailo-usbnet.rules"));
}

/// A USB box as it should be: gadget at SuperSpeed+, usbnet0 up with
/// 192.168.10.11, our files installed; the card is a loopback listener.
fn good_usb_box() -> FakeBox {
    let f = FakeBox::new();
    f.interface("usbnet0", "up");
    f.install_all();
    f
}

/// usbnet0 with the host address, and the loopback address the tests'
/// "card" is reached from (a real box reaches 192.168.10.12 from
/// 192.168.10.11).
fn host_ifs() -> FakeIfs {
    FakeIfs(HashMap::from([(
        "usbnet0".to_owned(),
        vec![HOST, IpAddr::V4(Ipv4Addr::LOCALHOST)],
    )]))
}

#[test]
fn usb_box_good() {
    let f = good_usb_box();
    let (_listener, card) = listening();
    let usb = vec![hub(), gadget(UsbSpeed::SuperPlus)];
    let ifs = host_ifs();
    let access = FakeAccess::default();
    let r = diagnose(&env(&f, &usb, &ifs, &access, card), &Rig::demo());
    for id in [
        "usb.gadget",
        "usb.speed",
        "net.usbnet0",
        "net.hrpc",
        "installed.udev",
        "installed.network",
        "budget.link",
    ] {
        assert_eq!(verdict(&r, id), Verdict::Ok, "{id}\n{r}");
    }
    for id in [
        "hailort.driver",
        "pcie.devices",
        "pcie.driver",
        "pcie.nodes",
        "pcie.link",
    ] {
        assert_eq!(verdict(&r, id), Verdict::Skip, "{id}\n{r}");
    }
    assert!(detail(&r, "usb.gadget").contains("0525:a4a1 at bus 002 device 005"));
    assert!(detail(&r, "net.usbnet0").contains("192.168.10.11"));
    assert!(detail(&r, "net.hrpc").contains(&format!("{card} accepts TCP over usbnet0")));
    let link = r.budget.as_ref().unwrap().link.as_ref().unwrap();
    assert!(link.basis.contains("enumerated"), "{}", link.basis);
}

#[test]
fn usb_box_broken() {
    let f = FakeBox::new();
    f.interface("usbnet0", "down");
    let usb = vec![gadget(UsbSpeed::High)];
    let ifs = host_ifs();
    let access = FakeAccess::default();
    let r = diagnose(&env(&f, &usb, &ifs, &access, closed_port()), &Rig::demo());
    assert_eq!(verdict(&r, "usb.gadget"), Verdict::Ok);
    assert_eq!(verdict(&r, "usb.speed"), Verdict::Warn);
    assert!(detail(&r, "usb.speed").contains("480 Mbit/s"));
    assert!(detail(&r, "usb.speed").contains("35-40 MB/s"));
    assert_eq!(verdict(&r, "net.usbnet0"), Verdict::Fail);
    assert!(detail(&r, "net.usbnet0").contains("down"));
    assert_eq!(verdict(&r, "net.hrpc"), Verdict::Fail);
    assert!(fix(&r, "net.hrpc").contains("ping"));
    // 342.6 MB/s in + out on a shared 37.5 MB/s.
    assert_eq!(verdict(&r, "budget.link"), Verdict::Fail);
    assert!(r.failed());
}

#[test]
fn usbnet0_missing_or_without_the_host_address() {
    let f = good_usb_box();
    let usb = vec![gadget(UsbSpeed::Super)];
    let access = FakeAccess::default();
    let wrong = FakeIfs(HashMap::from([(
        "usbnet0".to_owned(),
        vec![IpAddr::V4(Ipv4Addr::new(169, 254, 3, 4))],
    )]));
    let (_l, card) = listening();
    let r = diagnose(&env(&f, &usb, &wrong, &access, card), &Rig::demo());
    assert_eq!(verdict(&r, "net.usbnet0"), Verdict::Fail);
    assert!(detail(&r, "net.usbnet0").contains("169.254.3.4, not 192.168.10.11/24"));
    // The card answered, but not over usbnet0: something else may have.
    assert_eq!(verdict(&r, "net.hrpc"), Verdict::Warn);
    assert!(detail(&r, "net.hrpc").contains("from local address 127.0.0.1"));
    assert!(fix(&r, "net.hrpc").contains("ip route get"));

    f.remove("/sys/class/net/usbnet0");
    let r = diagnose(&env(&f, &usb, &host_ifs(), &access, card), &Rig::demo());
    assert_eq!(verdict(&r, "net.usbnet0"), Verdict::Fail);
    assert!(fix(&r, "net.usbnet0").contains("udev/install.sh"));
}

#[test]
fn no_part_at_all_fails_both_transports() {
    let f = FakeBox::new();
    let usb = vec![hub()];
    let ifs = FakeIfs::default();
    let access = FakeAccess::default();
    let r = diagnose(&env(&f, &usb, &ifs, &access, closed_port()), &Rig::demo());
    assert_eq!(verdict(&r, "pcie.devices"), Verdict::Fail);
    assert_eq!(verdict(&r, "usb.gadget"), Verdict::Fail);
    assert!(fix(&r, "usb.gadget").contains("lsusb -d 0525:a4a1"));
    assert_eq!(verdict(&r, "net.hrpc"), Verdict::Skip);
    // The budget falls back to the USB part's nominal link, and says so.
    let link = r.budget.as_ref().unwrap().link.as_ref().unwrap();
    assert!(link.basis.starts_with("nominal"));
}

#[test]
fn unlistable_usb_warns_and_still_tries_the_network() {
    let f = good_usb_box();
    let (_l, card) = listening();
    let ifs = host_ifs();
    let access = FakeAccess::default();
    let r = diagnose(&env(&f, &BrokenUsb, &ifs, &access, card), &Rig::demo());
    assert_eq!(verdict(&r, "usb.gadget"), Verdict::Warn);
    assert!(detail(&r, "usb.gadget").contains("no /dev/bus/usb"));
    assert_eq!(verdict(&r, "net.usbnet0"), Verdict::Ok);
    assert_eq!(verdict(&r, "net.hrpc"), Verdict::Ok);
}

#[test]
fn sysfs_usb_enumeration() {
    let f = FakeBox::new();
    f.sysfs_usb("usb2", "1d6b", "0003", "10000");
    f.sysfs_usb("2-1", "0525", "a4a1", "5000");
    std::fs::create_dir_all(f.path("/sys/bus/usb/devices/2-1:1.0")).unwrap();
    let empty = FakeBox::new();
    let err = SysfsUsb(empty.root()).devices().unwrap_err().to_string();
    assert!(err.contains("sys/bus/usb/devices"), "{err}");
    let list = SysfsUsb(f.root()).devices().unwrap();
    assert_eq!(list.len(), 2);
    let g = list.iter().find(|d| d.product == 0xa4a1).unwrap();
    assert_eq!(
        (g.vendor, g.speed, g.bus, g.address),
        (0x0525, UsbSpeed::Super, 2, 7)
    );
}

#[test]
fn rig_from_flags_and_json() {
    let f = good_usb_box();
    let (_l, card) = listening();
    let usb = vec![gadget(UsbSpeed::Super)];
    let ifs = host_ifs();
    let access = FakeAccess::default();
    let cams: Vec<CameraMode> = ["288@30", "288@30"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let r = diagnose(
        &env(&f, &usb, &ifs, &access, card),
        &Rig::with_backbone(cams).unwrap(),
    );
    assert_eq!(verdict(&r, "budget.link"), Verdict::Ok, "{r}");
    let b = r.budget.as_ref().unwrap();
    assert_eq!(b.in_bytes_per_s, 2.0 * 248_832.0 * 30.0);
    // Two (24, 24, 256) maps a frame at the design split.
    assert_eq!(b.out_bytes_per_s, 2.0 * 294_912.0 * 30.0);

    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    let checks = json["checks"].as_array().unwrap();
    assert!(checks
        .iter()
        .any(|c| c["id"] == "usb.speed" && c["verdict"] == "ok"));
    assert_eq!(json["budget"]["rig"], "2x288@30");
    assert_eq!(json["budget"]["shapes"], "backbone_formula");
    // The table has a line per check and the tally.
    let table = r.to_string();
    assert_eq!(table.lines().filter(|l| l.contains("usb.speed")).count(), 1);
    assert!(table.lines().last().unwrap().ends_with("skip"));
}
