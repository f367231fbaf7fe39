//! The device nodes as libhailort 5.2 sees them: `board_location` and
//! `accelerator_type` under `/sys/class/hailo_chardev`, the only class it
//! scans (HailoRT 5.2.0, `vdma/driver/os/posix/linux/driver_os_specific.cpp`),
//! and the mix of part types it refuses without a device id.

use crate::npu::probe::{Accelerator, ChardevNode, CHARDEV_CLASS, USB_CARD_IP};

use super::{Check, Transports};

/// `pcie.chardev`: every node is under [`CHARDEV_CLASS`] with both
/// attributes readable. A node only under another class is invisible to
/// libhailort 5.2, and an unreadable attribute fails its whole scan.
pub fn check(nodes: &[ChardevNode], t: &Transports) -> Check {
    const ID: &str = "pcie.chardev";
    if !t.pcie {
        return Check::skip(ID, "no PCIe part");
    }
    if nodes.is_empty() {
        return Check::skip(ID, "no device node (see pcie.nodes)");
    }
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for n in nodes {
        if n.class != CHARDEV_CLASS {
            problems.push(format!(
                "{} is only under {}: libhailort 5.2 reads {CHARDEV_CLASS} and does not see it",
                n.dev_path(),
                n.class
            ));
            continue;
        }
        match (&n.board_location, &n.accelerator) {
            (None, _) => problems.push(format!(
                "{}: board_location unreadable: libhailort's scan fails (HAILO_DRIVER_INVALID_RESPONSE)",
                n.dev_path()
            )),
            (_, Accelerator::Unreadable(text)) => problems.push(format!(
                "{}: accelerator_type {}: libhailort's scan fails (HAILO_DRIVER_INVALID_RESPONSE)",
                n.dev_path(),
                if text.is_empty() { "unreadable" } else { text }
            )),
            (Some(bdf), acc) => seen.push(format!(
                "{}: board_location {bdf}, accelerator_type {acc}",
                n.dev_path()
            )),
        }
    }
    if problems.is_empty() {
        Check::ok(ID, seen.join(", "))
    } else {
        Check::fail(
            ID,
            problems.join("; "),
            "install the hailort-drivers release equal to libhailort (the 5.2 driver registers \
             /sys/class/hailo_chardev), then `sudo modprobe -r hailo1x_pci && sudo modprobe hailo1x_pci`",
        )
    }
}

/// `hailort.device_types`: HailoRT refuses a VDevice without device ids when
/// the scan finds parts of both accelerator types (a Hailo-8 and a
/// Hailo-10H), with `HAILO_INVALID_ARGUMENT` (HailoRT 5.2.0,
/// `vdevice/vdevice.cpp`, `get_accelerator_type`).
pub fn types_check(nodes: &[ChardevNode], device_id: Option<&str>) -> Check {
    const ID: &str = "hailort.device_types";
    let visible: Vec<&ChardevNode> = nodes.iter().filter(|n| n.visible_to_hailort()).collect();
    let of = |acc: Accelerator| -> Vec<&str> {
        visible
            .iter()
            .filter(|n| n.accelerator == acc)
            .filter_map(|n| n.board_location.as_deref())
            .collect()
    };
    let (nnc, soc) = (of(Accelerator::Nnc), of(Accelerator::Soc));
    if let Some(id) = device_id {
        let known = soc
            .iter()
            .chain(&nnc)
            .any(|b| crate::npu::probe::same_bdf(b, id))
            || id == USB_CARD_IP.to_string();
        return if known {
            Check::ok(ID, format!("device id {id} configured"))
        } else {
            Check::fail(
                ID,
                format!(
                    "device id {id} is none of the parts HailoRT scans ({})",
                    list_or_none(&soc, &nnc)
                ),
                "set the rig's device.device_id (or --device) to a board_location listed by `hailo-edge doctor`",
            )
        };
    }
    match (nnc.is_empty(), soc.is_empty()) {
        (false, false) => Check::fail(
            ID,
            format!(
                "Hailo-8 class (NNC) at {} and Hailo-10H class (SOC) at {}, and no device id: \
                 HailoRT refuses the VDevice with HAILO_INVALID_ARGUMENT",
                nnc.join(", "),
                soc.join(", ")
            ),
            format!(
                "set `device_id = \"{}\"` under [device] in the rig file (or pass --device {})",
                soc[0], soc[0]
            ),
        ),
        (false, true) => Check::fail(
            ID,
            format!(
                "only NNC parts (Hailo-8 class) at {}: libhailort 5.x refuses them",
                nnc.join(", ")
            ),
            "a Hailo-10H needs libhailort 5.x; a Hailo-8 needs the 4.x line",
        ),
        (true, false) => Check::ok(ID, format!("Hailo-10H class (SOC) at {}", soc.join(", "))),
        (true, true) => Check::skip(ID, "no part HailoRT scans"),
    }
}

fn list_or_none(soc: &[&str], nnc: &[&str]) -> String {
    let all: Vec<&str> = soc.iter().chain(nnc).copied().collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Verdict;
    use crate::npu::probe::H1X_CLASS;

    fn node(class: &'static str, name: &str, bdf: Option<&str>, acc: Accelerator) -> ChardevNode {
        ChardevNode {
            class,
            name: name.into(),
            board_location: bdf.map(str::to_owned),
            accelerator: acc,
        }
    }

    const PCIE: Transports = Transports {
        pcie: true,
        usb: false,
        usb_enumerated: true,
    };

    #[test]
    fn node_under_another_class_fails() {
        let good = node(
            CHARDEV_CLASS,
            "hailo0",
            Some("0000:01:00.0"),
            Accelerator::Soc,
        );
        let c = check(std::slice::from_ref(&good), &PCIE);
        assert_eq!(c.verdict, Verdict::Ok);
        assert!(c
            .detail
            .contains("board_location 0000:01:00.0, accelerator_type SOC (1)"));
        let h1x = node(H1X_CLASS, "h1x-0", Some("0000:01:00.0"), Accelerator::Soc);
        let c = check(&[h1x], &PCIE);
        assert_eq!(c.verdict, Verdict::Fail, "{}", c.detail);
        assert!(c
            .detail
            .contains("/dev/h1x-0 is only under /sys/class/hailo1x"));
        let no_type = node(
            CHARDEV_CLASS,
            "hailo0",
            Some("0000:01:00.0"),
            Accelerator::Unreadable(String::new()),
        );
        assert_eq!(check(&[no_type], &PCIE).verdict, Verdict::Fail);
    }

    #[test]
    fn hailo8_and_hailo10h_without_a_device_id_fail() {
        let h8 = node(
            CHARDEV_CLASS,
            "hailo0",
            Some("0000:01:00.0"),
            Accelerator::Nnc,
        );
        let h10 = node(
            CHARDEV_CLASS,
            "hailo1",
            Some("0000:02:00.0"),
            Accelerator::Soc,
        );
        let both = [h8.clone(), h10.clone()];
        let c = types_check(&both, None);
        assert_eq!(c.verdict, Verdict::Fail);
        assert!(c.fix.unwrap().contains("device_id = \"0000:02:00.0\""));
        // Negative controls: a device id picks one; one type alone passes.
        assert_eq!(types_check(&both, Some("02:00.0")).verdict, Verdict::Ok);
        assert_eq!(
            types_check(&both, Some("0000:09:00.0")).verdict,
            Verdict::Fail
        );
        assert_eq!(types_check(&[h10], None).verdict, Verdict::Ok);
        assert_eq!(types_check(&[h8], None).verdict, Verdict::Fail);
    }
}
