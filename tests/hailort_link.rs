//! Link-level smoke test: the safe API (`hailo_edge::npu`) over hailort-sys's shim linked
//! against a real `libhailort.so` 5.2.0, on a machine with no Hailo device.
//!
//! Built only with `--features hailort`; `tools/hailort_link_proof.sh` builds libhailort from
//! its public source and runs it. Without a device, HailoRT 5.2.0's `VDevice::create` finds no
//! device id in its scan and fails with `HAILO_OUT_OF_PHYSICAL_DEVICES` (HailoRT 5.2.0,
//! libhailort/src/vdevice/vdevice.cpp, `VDeviceBase::create_devices`), and a device id that the
//! scan lacks with `HAILO_INVALID_ARGUMENT` (`VDeviceBase::get_accelerator_type`).
#![cfg(feature = "hailort")]

use std::path::Path;

use hailo_edge::npu::result::library;
use hailo_edge::npu::{scan_hailort, Api, Backend, BackendKind, Device, DeviceOptions, Status};

/// Where HailoRT 5.2.0 looks for devices on Linux: the driver's class (PCIe and the
/// integrated part) and the integrated part's node (vdma/driver/os/posix/linux/
/// driver_os_specific.cpp and vdma/driver/hailort_driver.cpp).
const DEVICE_PATHS: &[&str] = &["/sys/class/hailo_chardev", "/dev/hailo_integrated_nnc"];

/// HailoRT's table; fails when this build has the feature but did not link the library.
fn hailort() -> Api {
    Api::hailort().expect(
        "this build has the `hailort` feature but no HailoRT table: libhailort.so was not found \
         at build time (set HAILORT_LIB_DIR)",
    )
}

/// This test proves the no-device path: it refuses to run where a device is present.
fn assert_no_device() {
    for path in DEVICE_PATHS {
        assert!(
            !Path::new(path).exists(),
            "{path} exists: a Hailo device is present, and this smoke test expects none"
        );
    }
}

#[test]
fn the_linked_library_is_hailort_5_2_0() {
    let api = hailort();
    let v = library::version(&api).expect("get_library_version");
    assert_eq!((v.major, v.minor, v.revision), (5, 2, 0));
}

#[test]
fn status_text_is_hailort_s_status_name() {
    let api = hailort();
    // HailoRT 5.2.0's hailo_get_status_message returns the status's name (hailort.cpp).
    assert_eq!(
        library::status_name(&api, Status::OutOfPhysicalDevices.code()),
        "HAILO_OUT_OF_PHYSICAL_DEVICES (74)"
    );
    // HAILO_STATUS_COUNT (98) and beyond: HailoRT returns NULL, read as an unknown status.
    assert_eq!(library::status_name(&api, 98), "unknown HailoRT status 98");
}

#[test]
fn the_scan_finds_no_device() {
    assert_no_device();
    assert_eq!(scan_hailort().expect("Device::scan"), Vec::<String>::new());
}

#[test]
fn opening_hailort_without_a_device_is_out_of_physical_devices() {
    assert_no_device();
    let err = Device::open(Backend::HailoRt { device_id: None })
        .expect_err("no device is attached, yet HailoRT opened one");
    println!("Device::open(HailoRt): {err}");
    assert_eq!(err.status(), Some(Status::OutOfPhysicalDevices), "{err}");
    assert_eq!(err.call(), Some("vdevice_create"));
    let text = err.to_string();
    assert!(
        text.contains("HAILO_OUT_OF_PHYSICAL_DEVICES (74)"),
        "the error does not name the status: {text}"
    );
    assert!(
        err.detail().contains("VDevice::create"),
        "the shim's detail does not name the failing HailoRT call: {}",
        err.detail()
    );
}

#[test]
fn a_device_id_the_scan_lacks_is_invalid_argument() {
    assert_no_device();
    let err = Device::open(Backend::HailoRt {
        device_id: Some("0000:01:00.0".into()),
    })
    .expect_err("no device is attached, yet HailoRT opened 0000:01:00.0");
    println!("Device::open(HailoRt 0000:01:00.0): {err}");
    assert_eq!(err.status(), Some(Status::InvalidArgument), "{err}");
    assert!(
        err.to_string().contains("HAILO_INVALID_ARGUMENT (2)"),
        "{err}"
    );
}

#[test]
fn auto_opens_the_simulator_when_hailort_finds_no_device() {
    assert_no_device();
    let device = Device::open(Backend::Auto).expect("Backend::Auto");
    assert_eq!(device.backend(), BackendKind::Sim);
}

/// Negative control: the same open over the stub table is refused with another status, so
/// the assertions above tell HailoRT's answer from any other table's.
#[test]
fn negative_control_the_stub_table_answers_otherwise() {
    let err = Device::open_on_table(
        Api::stub(),
        Backend::HailoRt { device_id: None },
        DeviceOptions::default(),
    )
    .expect_err("the stub opened a device");
    assert_eq!(err.status(), Some(Status::NotImplemented), "{err}");
    assert!(!err.to_string().contains("HAILO_OUT_OF_PHYSICAL_DEVICES"));
}
