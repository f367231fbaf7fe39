//! `device.identify`: open the part, ask who it is, and compare its firmware
//! version with the library's. hRPC does no version handshake (see
//! [`crate::npu::Identity`]), so this row is where a card and a host of
//! different releases show up.

use crate::npu::{BackendKind, Device, Identity, NpuError};

use super::Check;

const ID: &str = "device.identify";

/// Opens a device with `open` and checks its identity.
pub fn check(open: impl FnOnce() -> Result<Device, NpuError>) -> Check {
    identify(open).unwrap_or_else(|failed| failed)
}

/// [`check`], with a step that fails giving its row as the error.
fn identify(open: impl FnOnce() -> Result<Device, NpuError>) -> Result<Check, Check> {
    let failed = |detail: String, fix: &str| Check::fail(ID, detail, fix);
    let device = open().map_err(|e| {
        failed(
            format!("opening the device: {e}"),
            "fix the failing rows above; a Hailo-10H over PCIe must have booted and started its HailoRT server",
        )
    })?;
    let identity = device.identity().map_err(|e| {
        failed(
            format!("Device::identify on {}: {e}", device.describe()),
            "`hailortcli fw-control identify` shows HailoRT's own answer",
        )
    })?;
    let library = device.library_version().map_err(|e| {
        failed(
            format!("library version on {}: {e}", device.describe()),
            "reinstall libhailort",
        )
    })?;
    let check = firmware_check(library, &identity, &device.describe());
    Ok(match (device.backend(), device.backend_warning()) {
        (BackendKind::Sim, Some(w)) => Check::warn(
            ID,
            format!("{}; NOT the part: {w}", check.detail),
            check
                .fix
                .unwrap_or_else(|| format!("`{}`", crate::npu::probe::BUILD_WITH_HAILORT)),
        ),
        _ => check,
    })
}

/// The identity as a row: ok when the firmware equals the library's
/// release, a failure naming both when not.
pub fn firmware_check(library: (u32, u32, u32), id: &Identity, ran_on: &str) -> Check {
    let v = |(a, b, c): (u32, u32, u32)| format!("{a}.{b}.{c}");
    let who = format!(
        "{} {} (serial {}, product {})",
        id.architecture_name(),
        id.board_name,
        if id.serial_number.is_empty() {
            "?"
        } else {
            &id.serial_number
        },
        if id.product_name.is_empty() {
            "?"
        } else {
            &id.product_name
        },
    );
    if id.firmware == library {
        Check::ok(
            ID,
            format!(
                "{who}, firmware {} = libhailort {}, on {ran_on}",
                v(id.firmware),
                v(library)
            ),
        )
    } else {
        Check::fail(
            ID,
            format!(
                "{who}: firmware {} != libhailort {}: hRPC does no version handshake, \
                 so the card's server and this library disagree silently",
                v(id.firmware),
                v(library)
            ),
            format!(
                "run one release on both sides: libhailort {} on the host, or the card's firmware {}",
                v(id.firmware),
                v(library)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Verdict;
    use crate::npu::sim::SimProfile;
    use crate::npu::Backend;

    fn identity(fw: (u32, u32, u32)) -> Identity {
        Identity {
            protocol_version: 2,
            firmware: fw,
            architecture: 6,
            is_release: true,
            board_name: "board".into(),
            serial_number: "S1".into(),
            product_name: "P".into(),
        }
    }

    #[test]
    fn firmware_must_equal_the_library() {
        let ok = firmware_check((5, 2, 0), &identity((5, 2, 0)), "x");
        assert_eq!(ok.verdict, Verdict::Ok);
        assert!(ok.detail.contains("HAILO10H board"), "{}", ok.detail);
        let bad = firmware_check((5, 2, 0), &identity((5, 1, 1)), "x");
        assert_eq!(bad.verdict, Verdict::Fail);
        assert!(
            bad.detail.contains("5.1.1 != libhailort 5.2.0"),
            "{}",
            bad.detail
        );
    }

    #[test]
    fn identify_runs_through_the_safe_api() {
        let sim = || Device::open(Backend::Sim(SimProfile::default()));
        let c = check(sim);
        assert_eq!(c.verdict, Verdict::Ok, "{}", c.detail);
        assert!(c.detail.contains("simulator"), "{}", c.detail);
        let stub = || {
            Device::open_on_table(
                crate::npu::Api::stub(),
                Backend::Sim(SimProfile::default()),
                Default::default(),
            )
        };
        assert_eq!(check(stub).verdict, Verdict::Fail);
    }
}
