//! HailoRT: linked into this build or not, the installed library's version,
//! and the PCIe driver's version, which must equal it (HailoRT refuses a
//! mismatch with `HAILO_INVALID_DRIVER_VERSION`).

use std::fmt;

use serde::Serialize;

use super::env::{Environment, SysRoot};
use super::{Check, Transports};

/// Whether this build links HailoRT.
///
/// `hailort-sys` builds the real table (and sets `cfg(hailort_linked)` for
/// itself) when the `hailort` feature finds an installed HailoRT; without it
/// the runtime uses its simulator. Asking the crate, rather than reading a cfg
/// here, keeps the answer true in every crate that links it.
pub fn hailort_compiled_in() -> bool {
    hailort_sys::hailort_api().is_some()
}

/// Directories searched for `libhailort.so.X.Y.Z` when the library is not
/// linked in: the ones HailoRT's packages and `make install` use.
pub const LIB_DIRS: &[&str] = &[
    "/usr/lib",
    "/usr/local/lib",
    "/usr/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
];

/// Kernel modules of Hailo PCIe parts, 5.x first.
pub const DRIVERS: &[&str] = &["hailo1x_pci", "hailo_pci"];

/// A HailoRT release number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    /// Parses `X.Y.Z` (trailing text after the patch number is ignored, as in
    /// `5.2.0-rc1`).
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.trim().splitn(3, '.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let rest = parts.next()?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        Some(Self {
            major,
            minor,
            patch: digits.parse().ok()?,
        })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The installed libhailort versions, from `libhailort.so.X.Y.Z` file names
/// in [`LIB_DIRS`], with the path of each (first found).
pub fn library_versions(root: &SysRoot) -> Vec<(Version, String)> {
    let mut found: Vec<(Version, String)> = Vec::new();
    for dir in LIB_DIRS {
        for name in root.list(dir) {
            let Some(v) = name
                .strip_prefix("libhailort.so.")
                .and_then(|rest| (rest.matches('.').count() == 2).then_some(rest))
                .and_then(Version::parse)
            else {
                continue;
            };
            if !found.iter().any(|(f, _)| *f == v) {
                found.push((v, format!("{dir}/{name}")));
            }
        }
    }
    found.sort();
    found
}

/// The loaded Hailo PCIe driver and its version, from `/sys/module/*/version`.
pub fn driver_version(root: &SysRoot) -> Option<(&'static str, Option<Version>)> {
    DRIVERS.iter().find_map(|m| {
        let dir = format!("/sys/module/{m}");
        root.path(&dir).is_dir().then(|| {
            let v = root
                .read_attr(format!("{dir}/version"))
                .and_then(|s| Version::parse(&s));
            (*m, v)
        })
    })
}

/// `hailort.linked` and `hailort.library`.
pub fn checks(env: &Environment<'_>) -> Vec<Check> {
    let linked = if env.hailort_linked {
        Check::ok("hailort.linked", "HailoRT is linked into this build")
    } else {
        Check::warn(
            "hailort.linked",
            "HailoRT is not linked into this build: the runtime uses its simulator",
            format!(
                "install HailoRT 5.x, then rebuild: `{}`",
                crate::npu::probe::BUILD_WITH_HAILORT
            ),
        )
    };
    vec![linked, library_check(&library_versions(&env.root))]
}

fn library_check(found: &[(Version, String)]) -> Check {
    const INSTALL: &str =
        "install HailoRT 5.x: `sudo apt install h10-hailort` on Raspberry Pi OS, \
         else the hailort .deb from Hailo's Developer Zone";
    let Some((newest, path)) = found.last() else {
        return Check::fail(
            "hailort.library",
            format!("no libhailort.so.X.Y.Z in {}", LIB_DIRS.join(", ")),
            INSTALL,
        );
    };
    if newest.major < 5 {
        return Check::fail(
            "hailort.library",
            format!("libhailort {newest} ({path}) drives only Hailo-8/8L/8R; Hailo-10H needs 5.x"),
            INSTALL,
        );
    }
    if found.len() > 1 {
        let all: Vec<String> = found.iter().map(|(v, p)| format!("{v} ({p})")).collect();
        return Check::warn(
            "hailort.library",
            format!("several libhailort versions: {}", all.join(", ")),
            "remove the ones that do not match the driver (keep one release)",
        );
    }
    Check::ok("hailort.library", format!("libhailort {newest} ({path})"))
}

/// `backend.auto`: what `--backend auto` runs. The simulator while a part
/// is present is a loud warning: every figure would be modelled.
pub fn auto_check(env: &Environment<'_>, parts: &[crate::npu::probe::Part]) -> Check {
    const ID: &str = "backend.auto";
    let list = crate::npu::probe::list(parts);
    match (env.hailort_linked, parts.is_empty()) {
        (false, false) => Check::warn(
            ID,
            format!(
                "WARNING: a Hailo part is present ({list}) but this build does not link HailoRT: \
                 --backend auto runs the SIMULATOR and every device figure is modelled"
            ),
            format!(
                "install HailoRT 5.x, then `{}` (HAILORT_ROOT=DIR when it is not under /usr)",
                crate::npu::probe::BUILD_WITH_HAILORT
            ),
        ),
        (false, true) => Check::ok(ID, "no Hailo part: --backend auto runs the simulator"),
        (true, false) => Check::ok(ID, format!("--backend auto opens HailoRT on: {list}")),
        (true, true) => Check::warn(
            ID,
            "HailoRT is linked but no Hailo part is present: --backend auto runs the simulator",
            "see pcie.devices and usb.gadget",
        ),
    }
}

/// `hailort.driver`: the PCIe driver's version equals the library's.
pub fn driver_check(env: &Environment<'_>, t: &Transports) -> Check {
    const ID: &str = "hailort.driver";
    if !t.pcie && t.usb {
        return Check::skip(ID, "USB part: no kernel driver needed");
    }
    let lib = library_versions(&env.root).last().map(|(v, _)| *v);
    let Some((module, version)) = driver_version(&env.root) else {
        return Check::fail(
            ID,
            "no Hailo PCIe driver loaded (hailo1x_pci or hailo_pci)",
            "sudo modprobe hailo1x_pci (build it from hailo-ai/hailort-drivers, the tag equal to libhailort, if missing)",
        );
    };
    let Some(version) = version else {
        return Check::warn(
            ID,
            format!("{module} is loaded but /sys/module/{module}/version is unreadable"),
            format!("modinfo {module} | grep ^version"),
        );
    };
    match lib {
        None => Check::warn(
            ID,
            format!("{module} {version}; no libhailort to compare it with"),
            format!("install libhailort {version}"),
        ),
        Some(lib) if lib == version => {
            Check::ok(ID, format!("{module} {version} = libhailort {lib}"))
        }
        Some(lib) => Check::fail(
            ID,
            format!("{module} {version} != libhailort {lib}: HailoRT refuses with HAILO_INVALID_DRIVER_VERSION"),
            format!("install driver and library of one release (hailort-drivers v{lib}, then `sudo modprobe -r {module} && sudo modprobe {module}`)"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(
            Version::parse("5.2.0\n"),
            Some(Version {
                major: 5,
                minor: 2,
                patch: 0
            })
        );
        assert_eq!(Version::parse("4.23.0-rc1").unwrap().minor, 23);
        assert_eq!(Version::parse("5.2"), None);
        assert_eq!(Version::parse("x.2.0"), None);
    }

    #[test]
    #[cfg(not(feature = "hailort"))]
    fn not_linked_by_default() {
        assert!(!hailort_compiled_in());
    }

    #[test]
    fn library_of_the_4x_line_fails() {
        let v4 = (Version::parse("4.23.0").unwrap(), "/usr/lib/x".to_owned());
        let v5 = (Version::parse("5.2.0").unwrap(), "/usr/lib/y".to_owned());
        assert_eq!(
            library_check(std::slice::from_ref(&v4)).verdict,
            super::super::Verdict::Fail
        );
        assert_eq!(
            library_check(std::slice::from_ref(&v5)).verdict,
            super::super::Verdict::Ok
        );
        assert_eq!(
            library_check(&[v4, v5]).verdict,
            super::super::Verdict::Warn
        );
        assert_eq!(library_check(&[]).verdict, super::super::Verdict::Fail);
    }
}
