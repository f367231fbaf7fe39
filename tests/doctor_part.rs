//! `doctor` for the part: the chardev attributes libhailort reads, a Hailo-8
//! beside a Hailo-10H, the holder of a node, the loud fallback to the
//! simulator, and the library call with its identify and smoke rows.

mod common;
mod doctor_fake;

use std::os::unix::fs::symlink;
use std::path::Path;

use common::fixture;
use doctor_fake::*;
use hailo_edge::doctor::budget::Rig;
use hailo_edge::doctor::{diagnose, run_checks, DoctorConfig, Report, Verdict};
use hailo_edge::npu::sim::SimProfile;
use hailo_edge::npu::Backend;

const GEN3_X4: Option<(&str, &str)> = Some(("8.0 GT/s PCIe", "4"));

fn run(f: &FakeBox, device_id: Option<&str>) -> Report {
    let usb = vec![hub()];
    let ifs = FakeIfs::default();
    let access = FakeAccess::default();
    let mut env = env(f, &usb, &ifs, &access, closed_port());
    env.device_id = device_id.map(str::to_owned);
    diagnose(&env, &Rig::demo())
}

fn row<'r>(r: &'r Report, id: &str) -> &'r hailo_edge::doctor::Check {
    r.check(id)
        .unwrap_or_else(|| panic!("no check {id} in\n{r}"))
}

#[test]
fn node_only_under_the_5_3_class_is_a_failure() {
    let good = run(&pcie_box("hailo_chardev", "hailo0"), None);
    assert_eq!(row(&good, "pcie.chardev").verdict, Verdict::Ok, "{good}");
    assert!(row(&good, "pcie.chardev")
        .detail
        .contains("board_location 0000:01:00.0, accelerator_type SOC (1)"));
    let r = run(&pcie_box("hailo1x", "h1x-0"), None);
    let c = row(&r, "pcie.chardev");
    assert_eq!(c.verdict, Verdict::Fail, "{r}");
    assert!(
        c.detail.contains("/sys/class/hailo_chardev"),
        "{}",
        c.detail
    );
    assert!(c.fix.as_deref().unwrap().contains("hailort-drivers"));
    assert!(r.failed());
}

#[test]
fn hailo8_beside_hailo10h_needs_a_device_id() {
    let f = pcie_box("hailo_chardev", "hailo0");
    f.pci("0000:02:00.0", 0x2864, Some("hailo_pci"), GEN3_X4, GEN3_X4);
    f.node_of("hailo_chardev", "hailo1", 0o660, "0000:02:00.0", "0");
    let r = run(&f, None);
    let c = row(&r, "hailort.device_types");
    assert_eq!(c.verdict, Verdict::Fail, "{r}");
    assert!(c.detail.contains("HAILO_INVALID_ARGUMENT"), "{}", c.detail);
    assert!(c.fix.as_deref().unwrap().contains("0000:01:00.0"));
    // Negative control: the same box with the Hailo-10H's id configured.
    let r = run(&f, Some("0000:01:00.0"));
    assert_eq!(row(&r, "hailort.device_types").verdict, Verdict::Ok, "{r}");
}

#[test]
fn holder_of_the_node_is_named() {
    let f = pcie_box("hailo_chardev", "hailo0");
    let node = f.path("/dev/hailo0");
    let _held = std::fs::File::open(&node).unwrap();
    f.file("/proc/777/comm", "hailortcli\n");
    std::fs::create_dir_all(f.path("/proc/777/fd")).unwrap();
    symlink(Path::new("/dev/hailo0"), f.path("/proc/777/fd/3")).unwrap();
    let r = run(&f, None);
    let c = row(&r, "pcie.holders");
    assert_eq!(c.verdict, Verdict::Fail, "{r}");
    assert!(
        c.detail.contains("pid 777 (hailortcli) holds /dev/hailo0"),
        "{}",
        c.detail
    );
    // Negative control: the link points elsewhere.
    std::fs::remove_file(f.path("/proc/777/fd/3")).unwrap();
    symlink(Path::new("/dev/null"), f.path("/proc/777/fd/3")).unwrap();
    assert_eq!(row(&run(&f, None), "pcie.holders").verdict, Verdict::Ok);
}

#[test]
fn simulator_beside_a_part_is_a_loud_warning_with_the_build_command() {
    let r = run(&pcie_box("hailo_chardev", "hailo0"), None);
    let c = row(&r, "backend.auto");
    assert_eq!(c.verdict, Verdict::Warn);
    assert!(
        c.detail.contains("WARNING") && c.detail.contains("SIMULATOR"),
        "{}",
        c.detail
    );
    assert!(c
        .fix
        .as_deref()
        .unwrap()
        .contains("`cargo build --release --features hailort`"));
    assert!(row(&r, "hailort.linked")
        .fix
        .as_deref()
        .unwrap()
        .contains("--features hailort"));
    // The USB part counts as a part when usbnet0 is up.
    let usb = FakeBox::new();
    usb.interface("usbnet0", "up");
    let c = row(&run(&usb, None), "backend.auto").clone();
    assert!(c.detail.contains("192.168.10.12"), "{}", c.detail);
    // Negative control: no part, no warning.
    let empty = FakeBox::new();
    assert_eq!(row(&run(&empty, None), "backend.auto").verdict, Verdict::Ok);
}

#[test]
fn library_call_identifies_and_smoke_tests_on_the_named_backend() {
    let f = pcie_box("hailo_chardev", "hailo0");
    let mut config = DoctorConfig::host(Rig::demo());
    config.root = f.root();
    config.card = closed_port();
    config.hefs = vec![fixture("backbone_288.hef")];
    // Auto on a box with a part, in a build without HailoRT: the smoke test
    // runs on the simulator and says so loudly.
    let r = run_checks(&config);
    let smoke = row(&r, "smoke");
    if !hailo_edge::doctor::hailort_compiled_in() {
        assert_eq!(smoke.verdict, Verdict::Warn, "{r}");
        assert!(smoke.detail.contains("NOT on the part"), "{}", smoke.detail);
        assert_eq!(row(&r, "device.identify").verdict, Verdict::Skip);
    }
    assert!(smoke.detail.contains("1 frame in"), "{}", smoke.detail);
    // The simulator asked for by name: identify and smoke pass.
    config.backend = Backend::Sim(SimProfile::default());
    let r = run_checks(&config);
    assert_eq!(row(&r, "smoke").verdict, Verdict::Ok, "{r}");
    assert_eq!(row(&r, "device.identify").verdict, Verdict::Ok, "{r}");
    assert!(row(&r, "device.identify")
        .detail
        .contains("= libhailort 5.2.0"));
    // Negative control: a HEF that is not there fails with its step.
    config.hefs = vec![fixture("missing.hef")];
    let r = run_checks(&config);
    assert_eq!(row(&r, "smoke").verdict, Verdict::Fail);
    assert!(!r.passed());
}
