//! `hailo-edge doctor` end to end against fake trees (`--root`), with the
//! card's address on loopback.

mod doctor_fake;

use assert_cmd::Command;
use doctor_fake::*;
use predicates::str::contains;

fn pcie_box() -> FakeBox {
    let f = FakeBox::new();
    let gen3 = Some(("8.0 GT/s PCIe", "4"));
    f.pci("0000:01:00.0", 0x45c4, Some("hailo1x_pci"), gen3, gen3);
    f.module("hailo1x_pci", "5.2.0");
    f.library("/usr/lib", "5.2.0");
    f.node("hailo_chardev", "hailo0", 0o660);
    f.install_all();
    f
}

fn doctor(f: &FakeBox) -> Command {
    let mut cmd = Command::cargo_bin("hailo-edge").unwrap();
    cmd.env("RUST_LOG", "error")
        .arg("doctor")
        .arg("--root")
        .arg(f.dir.path())
        .arg("--card")
        .arg(closed_port().to_string())
        .arg("--timeout-ms")
        .arg("300");
    cmd
}

#[test]
fn good_pcie_box_passes_with_json() {
    let f = pcie_box();
    let out = doctor(&f).arg("--json").assert().success();
    let json: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let verdict = |id: &str| {
        json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .map(|c| c["verdict"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(verdict("pcie.devices"), "ok");
    assert_eq!(verdict("pcie.nodes"), "ok");
    assert_eq!(verdict("hailort.driver"), "ok");
    assert_eq!(verdict("net.hrpc"), "skip");
    assert_eq!(json["budget"]["rig"], "3x288@120 + 1x432@120");
}

#[test]
fn broken_pcie_box_fails_with_the_fix() {
    let f = pcie_box();
    f.module("hailo1x_pci", "5.1.0");
    doctor(&f)
        .assert()
        .failure()
        .stdout(contains("fail  hailort.driver"))
        .stdout(contains("hailo1x_pci 5.1.0 != libhailort 5.2.0"))
        .stdout(contains("fix: install driver and library of one release"))
        .stdout(contains("link budget of 3x288@120 + 1x432@120"));
}

#[test]
fn usb_box_from_sysfs_with_cameras_from_flags() {
    let f = FakeBox::new();
    f.install_all();
    f.sysfs_usb("2-1", "0525", "a4a1", "5000");
    f.interface("usbnet0", "up");
    let out = doctor(&f)
        .args(["--json", "--camera", "432@600"])
        .assert()
        .failure();
    let json: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let checks = json["checks"].as_array().unwrap();
    let get = |id: &str| checks.iter().find(|c| c["id"] == id).unwrap();
    assert_eq!(get("usb.gadget")["verdict"], "ok");
    assert_eq!(get("usb.speed")["verdict"], "ok");
    assert_eq!(get("net.hrpc")["verdict"], "fail");
    // 432@600: 398.1 MB/s of features; hRPC over Gen 1's gadget carries 350 MB/s.
    assert_eq!(get("budget.link")["verdict"], "fail");
    assert_eq!(json["budget"]["rig"], "1x432@600");
}

fn fixture(name: &str) -> String {
    format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The `budget` object of `doctor --json` on `f` with `extra` arguments.
fn budget(f: &FakeBox, extra: &[&str]) -> serde_json::Value {
    let out = doctor(f).arg("--json").args(extra).assert().success();
    let json: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    json["budget"].clone()
}

/// [`budget`] with `--hef` for the 288 and the 432 backbone fixtures.
fn budget_of_both_backbones(f: &FakeBox) -> serde_json::Value {
    let (a, b) = (fixture("backbone_288.hef"), fixture("backbone_432.hef"));
    budget(f, &["--hef", &a, "--hef", &b])
}

#[test]
fn budget_from_hef_files_matches_the_formula() {
    let f = pcie_box();
    let formula = budget(&f, &[]);
    let hefs = budget_of_both_backbones(&f);
    assert_eq!(hefs["shapes"], "hef");
    assert_eq!(formula["shapes"], "backbone_formula");
    assert_eq!(hefs["in_bytes_per_s"], formula["in_bytes_per_s"]);
    assert_eq!(hefs["out_bytes_per_s"], formula["out_bytes_per_s"]);
}

#[test]
fn budget_from_a_rig_file_matches_its_cameras_and_hefs() {
    let f = pcie_box();
    let rig = format!("{}/examples/rig.toml", env!("CARGO_MANIFEST_DIR"));
    let from_rig = budget(&f, &["--config", &rig]);
    let from_flags = budget_of_both_backbones(&f);
    assert_eq!(from_rig["rig"], "3x288@120 + 1x432@120");
    assert_eq!(from_rig["shapes"], "hef");
    assert_eq!(from_rig["in_bytes_per_s"], from_flags["in_bytes_per_s"]);
    assert_eq!(from_rig["out_bytes_per_s"], from_flags["out_bytes_per_s"]);
    // Negative control: a rig file naming a missing HEF is an error naming it.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("rig.toml");
    let text = std::fs::read_to_string(&rig)
        .unwrap()
        .replace("../fixtures/backbone_288.hef", &fixture("backbone_288.hef"))
        .replace("../fixtures/backbone_432.hef", "missing_432.hef");
    std::fs::write(&broken, text).unwrap();
    doctor(&f)
        .args(["--config", broken.to_str().unwrap()])
        .assert()
        .failure()
        .stderr(contains("missing_432.hef"));
}

#[test]
fn bad_flags_name_the_value() {
    let f = pcie_box();
    doctor(&f)
        .args(["--camera", "290@30"])
        .assert()
        .failure()
        .stderr(contains("290@30"))
        .stderr(contains("divisible by 12"));
    doctor(&f)
        .args(["--hef", "graph.hef"])
        .assert()
        .failure()
        .stderr(contains("HEF graph.hef"));
    // The 288 HEF alone has no graph for the demo rig's 432 camera.
    doctor(&f)
        .args(["--hef", &fixture("backbone_288.hef")])
        .assert()
        .failure()
        .stderr(contains("camera 432x432: no graph"));
    doctor(&f)
        .args(["--root", "/nonexistent/hailo-edge"])
        .assert()
        .failure();
}
