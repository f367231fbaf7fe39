//! Whether `udev/install.sh` has run: our files present in `/etc` with the
//! contents this build carries.

use std::io::ErrorKind;

use super::env::SysRoot;
use super::Check;

/// A file `udev/install.sh` installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstalledFile {
    /// Where it goes.
    pub dest: &'static str,
    /// What it holds (the file in `udev/`, embedded at build time).
    pub contents: &'static str,
    /// Its mode.
    pub mode: u32,
}

/// An installed file from its destination folder, its name there and in `udev/` (whose copy is
/// embedded at build time), and its mode.
macro_rules! installed {
    ($dir:literal, $file:literal, $mode:literal) => {
        InstalledFile {
            dest: concat!($dir, $file),
            contents: include_str!(concat!("../../udev/", $file)),
            mode: $mode,
        }
    };
}

/// The PCIe device-node rule.
pub const NODE_RULES: InstalledFile =
    installed!("/etc/udev/rules.d/", "60-hailo-edge.rules", 0o644);

/// The rule naming the USB gadget `usbnet0`.
pub const USBNET_RULES: InstalledFile =
    installed!("/etc/udev/rules.d/", "70-hailo-usbnet.rules", 0o644);

/// The systemd-networkd unit for `usbnet0`.
pub const NETWORKD_UNIT: InstalledFile =
    installed!("/etc/systemd/network/", "70-hailo-usbnet0.network", 0o644);

/// The NetworkManager keyfile for `usbnet0` (NetworkManager ignores keyfiles
/// that others can read).
pub const NM_KEYFILE: InstalledFile = installed!(
    "/etc/NetworkManager/system-connections/",
    "hailo-usbnet0.nmconnection",
    0o600
);

/// Everything `udev/install.sh` installs.
pub const ALL: [InstalledFile; 4] = [NODE_RULES, USBNET_RULES, NETWORKD_UNIT, NM_KEYFILE];

/// The state of one installed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    Missing,
    /// Present, same contents.
    Matches,
    /// Present, other contents (an older version, or edited).
    Differs,
    /// Present but this user cannot read it (the keyfile is root-only).
    Unreadable,
}

impl InstalledFile {
    /// How it stands under `root`.
    pub fn state(&self, root: &SysRoot) -> FileState {
        match std::fs::read_to_string(root.path(self.dest)) {
            Ok(s) if s == self.contents => FileState::Matches,
            Ok(s) if *self == USBNET_RULES && usbnet_serials(&s).is_some() => FileState::Matches,
            Ok(_) => FileState::Differs,
            Err(e) if e.kind() == ErrorKind::NotFound => FileState::Missing,
            Err(_) => FileState::Unreadable,
        }
    }
}

/// The serial numbers of a usbnet rule that `install.sh --serial` wrote: the
/// shipped file with its match line once per serial, `ATTRS{serial}=="S"`
/// before `NAME`. `None` for any other contents (the shipped rule included).
pub fn usbnet_serials(installed: &str) -> Option<Vec<String>> {
    let shipped = USBNET_RULES.contents;
    let is_rule = |l: &&str| !(l.is_empty() || l.starts_with('#'));
    let comments = |t: &'static str| t.lines().filter(|l| !is_rule(l));
    if !installed
        .lines()
        .filter(|l| !is_rule(l))
        .eq(comments(shipped))
    {
        return None;
    }
    let rule = shipped.lines().find(is_rule)?;
    let (head, tail) = rule.split_once(", NAME=")?;
    let serials: Option<Vec<String>> = installed
        .lines()
        .filter(is_rule)
        .map(|l| {
            let s = l
                .strip_prefix(head)?
                .strip_suffix(tail)?
                .strip_prefix(", ATTRS{serial}==\"")?
                .strip_suffix("\", NAME=")?;
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
                .then(|| s.to_owned())
        })
        .collect();
    serials.filter(|s| !s.is_empty())
}

const FIX: &str = "sudo udev/install.sh";

/// `installed.udev` and `installed.network`.
pub fn checks(root: &SysRoot) -> Vec<Check> {
    vec![udev_check(root), network_check(root)]
}

fn udev_check(root: &SysRoot) -> Check {
    const ID: &str = "installed.udev";
    let mut missing = Vec::new();
    let mut differs = Vec::new();
    for f in [NODE_RULES, USBNET_RULES] {
        match f.state(root) {
            FileState::Missing => missing.push(f.dest),
            FileState::Differs | FileState::Unreadable => differs.push(f.dest),
            FileState::Matches => {}
        }
    }
    if !missing.is_empty() {
        Check::fail(ID, format!("missing: {}", missing.join(", ")), FIX)
    } else if !differs.is_empty() {
        Check::warn(
            ID,
            format!("differs from this version's: {}", differs.join(", ")),
            FIX,
        )
    } else {
        let serials = std::fs::read_to_string(root.path(USBNET_RULES.dest))
            .ok()
            .and_then(|s| usbnet_serials(&s))
            .map_or_else(String::new, |s| {
                format!(" (usbnet0 only for serial {})", s.join(", "))
            });
        Check::ok(
            ID,
            format!("{} and {}{serials}", NODE_RULES.dest, USBNET_RULES.dest),
        )
    }
}

fn network_check(root: &SysRoot) -> Check {
    const ID: &str = "installed.network";
    let networkd = NETWORKD_UNIT.state(root);
    let nm = NM_KEYFILE.state(root);
    let mut found = Vec::new();
    if networkd == FileState::Matches {
        found.push(format!("{} (systemd-networkd)", NETWORKD_UNIT.dest));
    }
    match nm {
        FileState::Matches => found.push(format!("{} (NetworkManager)", NM_KEYFILE.dest)),
        FileState::Unreadable => found.push(format!(
            "{} (NetworkManager; root-only, contents not compared)",
            NM_KEYFILE.dest
        )),
        _ => {}
    }
    if !found.is_empty() {
        return Check::ok(ID, found.join(", "));
    }
    if networkd == FileState::Differs || nm == FileState::Differs {
        return Check::warn(ID, "the usbnet0 unit differs from this version's", FIX);
    }
    Check::fail(
        ID,
        format!(
            "no usbnet0 unit: neither {} nor {}",
            NETWORKD_UNIT.dest, NM_KEYFILE.dest
        ),
        FIX,
    )
}
