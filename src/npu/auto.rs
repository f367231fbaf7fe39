//! `Backend::Auto`: the real part when HailoRT can open one, the USB card by
//! its address when `usbnet0` is up, else the simulator, with a loud warning
//! when a part is present but the simulator runs.
//!
//! HailoRT 5.2's scan lists PCIe and integrated parts only
//! (`device_common/device.cpp`, `Device::scan`); a VDevice reaches the USB
//! part only when its IPv4 address is among the device ids, which makes
//! `VDevice::create` take the hRPC client (`vdevice/vdevice.cpp`,
//! `do_device_ids_contain_eth`; one such id per VDevice).

use super::api::Api;
use super::device::{Backend, Device, DeviceOptions};
use super::error::NpuError;
use super::probe::{self, Attachment, Part, Probe, BUILD_WITH_HAILORT};
use super::result;
use super::sim::SimProfile;

/// The device ids to try on HailoRT, in order (`None`: any device HailoRT
/// scans), given the parts on the box and HailoRT's own scan.
pub(crate) fn attempts(parts: &[Part], hailort_scan: &[String]) -> Vec<Option<String>> {
    let mut out = Vec::new();
    if !hailort_scan.is_empty() {
        out.push(None);
    }
    for part in parts {
        if let (Attachment::Usb { link_up: true }, Some(id)) = (&part.attachment, &part.device_id) {
            if !hailort_scan.contains(id) {
                out.push(Some(id.clone()));
            }
        }
    }
    out
}

/// Opens what `Backend::Auto` picks on the machine `probe` reads, with
/// `hailort` the HailoRT table (`None` in builds that do not link it).
///
/// # Errors
/// Only the simulator's own failure to open; every HailoRT failure falls
/// back to the simulator with a warning ([`Device::backend_warning`]).
pub(crate) fn open(
    probe: &Probe,
    hailort: Option<Api>,
    options: DeviceOptions,
) -> Result<Device, NpuError> {
    let parts = probe.parts();
    let Some(api) = hailort else {
        let warning = (!parts.is_empty()).then(|| {
            format!(
                "a Hailo part is present ({}) but this build does not link HailoRT: \
                 running on the simulator, every device figure is modelled; \
                 rebuild with `{BUILD_WITH_HAILORT}`",
                probe::list(&parts)
            )
        });
        return open_sim(options, warning);
    };
    let scanned = match result::library::scan(&api) {
        Ok(ids) => ids,
        Err(e) => {
            log::warn!("HailoRT's device scan failed: {e}");
            Vec::new()
        }
    };
    let mut failures = Vec::new();
    for id in attempts(&parts, &scanned) {
        let backend = Backend::HailoRt {
            device_id: id.clone(),
        };
        match Device::open_on_table(api, backend, options.clone()) {
            Ok(device) => {
                log::info!("NPU backend: HailoRT, device {}", device.device_id());
                return Ok(device);
            }
            Err(e) => failures.push(format!("{}: {e}", id.as_deref().unwrap_or("any device"))),
        }
    }
    let warning = if !failures.is_empty() {
        Some(format!(
            "HailoRT could not open a Hailo part ({}): running on the simulator, \
             every device figure is modelled; run `hailo-edge doctor`",
            failures.join("; ")
        ))
    } else {
        (!parts.is_empty()).then(|| {
            format!(
                "a Hailo part is present ({}) but HailoRT scans none: running on the \
                 simulator, every device figure is modelled; run `hailo-edge doctor`",
                probe::list(&parts)
            )
        })
    };
    open_sim(options, warning)
}

/// The default simulator, carrying `warning`.
fn open_sim(options: DeviceOptions, warning: Option<String>) -> Result<Device, NpuError> {
    let device = Device::open_with(Backend::Sim(SimProfile::default()), options)?;
    match &warning {
        Some(w) => log::warn!("NPU backend: simulator. WARNING: {w}"),
        None => log::info!("NPU backend: simulator (no Hailo part on this box)"),
    }
    Ok(device.with_backend_warning(warning))
}

/// The refusal of `Backend::HailoRt` in a build without HailoRT: the exact
/// build command, and the parts present on `probe`'s machine.
pub(crate) fn not_linked(probe: &Probe) -> NpuError {
    let parts = probe.parts();
    let present = if parts.is_empty() {
        String::new()
    } else {
        format!(" (this box has {})", probe::list(&parts))
    };
    NpuError::BackendUnavailable {
        backend: "hailort",
        reason: format!(
            "this build does not link HailoRT{present}; rebuild with `{BUILD_WITH_HAILORT}`"
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;
    use std::sync::Mutex;

    use hailort_sys::{hes_api, hes_device_id, hes_status, hes_vdevice, hes_vdevice_params};

    use super::*;
    use crate::doctor::SysRoot;
    use crate::npu::probe::fake;
    use crate::npu::BackendKind;

    /// The device ids a test table was asked to open.
    static OPENED: Mutex<Vec<Vec<String>>> = Mutex::new(Vec::new());

    /// `vdevice_create` of a HailoRT stand-in with no device: records the ids
    /// and answers HAILO_OUT_OF_PHYSICAL_DEVICES (74).
    unsafe extern "C" fn refusing_create(
        params: *const hes_vdevice_params,
        _out: *mut *mut hes_vdevice,
    ) -> hes_status {
        // SAFETY: the caller passes valid params whose device_ids array has
        // device_count entries (the table contract).
        let ids = unsafe {
            let p = &*params;
            (0..p.device_count)
                .map(|i| {
                    let raw: &hes_device_id = &*p.device_ids.add(i);
                    CStr::from_ptr(raw.id.as_ptr())
                        .to_string_lossy()
                        .into_owned()
                })
                .collect()
        };
        OPENED.lock().unwrap_or_else(|e| e.into_inner()).push(ids);
        74
    }

    /// `scan_devices` of a stand-in that sees nothing (as HailoRT 5.2 on a
    /// box whose only part is the USB one).
    unsafe extern "C" fn empty_scan(_ids: *mut hes_device_id, count: *mut usize) -> hes_status {
        // SAFETY: `count` is a valid in/out pointer (the table contract).
        unsafe { *count = 0 };
        0
    }

    fn stand_in() -> Api {
        static TABLE: std::sync::OnceLock<hes_api> = std::sync::OnceLock::new();
        let raw = TABLE.get_or_init(|| hes_api {
            vdevice_create: Some(refusing_create),
            scan_devices: Some(empty_scan),
            ..*Api::stub().raw()
        });
        Api::from_raw(raw, "hailort-stand-in")
    }

    #[test]
    fn attempts_add_the_usb_card_only_when_its_link_is_up() {
        let usb = |up: bool| Part {
            device_id: up.then(|| "192.168.10.12".to_owned()),
            attachment: Attachment::Usb { link_up: up },
        };
        assert_eq!(
            attempts(&[usb(true)], &[]),
            vec![Some("192.168.10.12".to_owned())]
        );
        assert!(attempts(&[usb(false)], &[]).is_empty());
        assert_eq!(attempts(&[], &["0000:01:00.0".into()]), vec![None]);
    }

    #[test]
    fn auto_tries_the_card_address_and_falls_back_loudly() {
        let dir = tempfile::tempdir().unwrap();
        fake::usbnet(dir.path(), "up");
        let probe = Probe::new(SysRoot::new(dir.path()));
        let device = open(&probe, Some(stand_in()), DeviceOptions::default()).unwrap();
        assert!(OPENED
            .lock()
            .unwrap()
            .iter()
            .any(|ids| ids == &["192.168.10.12".to_owned()]));
        assert_eq!(device.backend(), BackendKind::Sim);
        let w = device.backend_warning().expect("a loud fallback");
        assert!(
            w.contains("192.168.10.12") && w.contains("simulator"),
            "{w}"
        );
    }

    #[test]
    fn unlinked_build_warns_only_when_a_part_is_present() {
        let dir = tempfile::tempdir().unwrap();
        let probe = Probe::new(SysRoot::new(dir.path()));
        let quiet = open(&probe, None, DeviceOptions::default()).unwrap();
        assert_eq!(quiet.backend_warning(), None, "no part, no warning");
        fake::node(
            dir.path(),
            "hailo_chardev",
            "hailo0",
            Some("0000:01:00.0"),
            Some("1"),
        );
        let loud = open(&probe, None, DeviceOptions::default()).unwrap();
        let w = loud.backend_warning().expect("a part is present");
        assert!(
            w.contains(BUILD_WITH_HAILORT) && w.contains("/dev/hailo0"),
            "{w}"
        );
    }

    #[test]
    fn refusal_names_the_build_command_and_the_part() {
        let dir = tempfile::tempdir().unwrap();
        fake::usbnet(dir.path(), "up");
        let e = not_linked(&Probe::new(SysRoot::new(dir.path()))).to_string();
        assert!(
            e.contains("`cargo build --release --features hailort`"),
            "{e}"
        );
        assert!(e.contains("192.168.10.12"), "{e}");
    }
}
