//! The machine as the checks see it: everything they read goes through here,
//! so tests can stand a fake one in.

use std::fs;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::usb::UsbBus;
use super::DoctorError;

/// A prefix for the absolute paths the checks read (`/sys`, `/dev`, `/etc`,
/// `/usr/lib`): `/` on the real machine, a temporary tree in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot(PathBuf);

impl SysRoot {
    /// The real machine.
    pub fn host() -> Self {
        Self(PathBuf::from("/"))
    }

    /// A tree standing in for `/`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self(root.into())
    }

    /// The directory standing in for `/`.
    pub fn dir(&self) -> &Path {
        &self.0
    }

    /// Whether this is the real `/`.
    pub fn is_host(&self) -> bool {
        self.0 == Path::new("/")
    }

    /// `abs` (an absolute path on the target) under this root.
    pub fn path(&self, abs: impl AsRef<Path>) -> PathBuf {
        let abs = abs.as_ref();
        self.0.join(abs.strip_prefix("/").unwrap_or(abs))
    }

    /// A sysfs attribute (or any small text file), trimmed; `None` when it is
    /// absent or unreadable.
    pub fn read_attr(&self, abs: impl AsRef<Path>) -> Option<String> {
        fs::read_to_string(self.path(abs))
            .ok()
            .map(|s| s.trim().to_owned())
    }

    /// The file names in a directory, sorted; empty when it is absent.
    pub fn list(&self, abs: impl AsRef<Path>) -> Vec<String> {
        let mut names: Vec<String> = match fs::read_dir(self.path(abs)) {
            Ok(dir) => dir
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .collect(),
            Err(_) => Vec::new(),
        };
        names.sort();
        names
    }

    /// The last component of a symlink's target (e.g. the driver a PCI
    /// function is bound to).
    pub fn link_name(&self, abs: impl AsRef<Path>) -> Option<String> {
        let target = fs::read_link(self.path(abs)).ok()?;
        target.file_name()?.to_str().map(str::to_owned)
    }
}

/// Interface addresses, as getifaddrs(3) lists them.
pub trait Interfaces {
    /// The addresses of the interface `name` (empty when it has none).
    ///
    /// # Errors
    /// [`DoctorError::Interfaces`] when the list cannot be read.
    fn addresses(&self, name: &str) -> Result<Vec<IpAddr>, DoctorError>;
}

/// The real interface list through getifaddrs(3).
#[derive(Debug, Default, Clone, Copy)]
pub struct GetIfAddrs;

impl Interfaces for GetIfAddrs {
    fn addresses(&self, name: &str) -> Result<Vec<IpAddr>, DoctorError> {
        let addrs =
            nix::ifaddrs::getifaddrs().map_err(|e| DoctorError::Interfaces(e.to_string()))?;
        Ok(addrs
            .filter(|a| a.interface_name == name)
            .filter_map(|a| {
                let sa = a.address?;
                if let Some(v4) = sa.as_sockaddr_in() {
                    Some(IpAddr::V4(v4.ip()))
                } else {
                    sa.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
                }
            })
            .collect())
    }
}

/// Whether this process may read and write a device node.
pub trait Permissions {
    /// `Ok(())` when `path` can be opened for reading and writing.
    ///
    /// # Errors
    /// The error access(2) gives (e.g. `PermissionDenied`).
    fn read_write(&self, path: &Path) -> io::Result<()>;
}

/// access(2) with `R_OK | W_OK`, as this process (real uid and gids).
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessAccess;

impl Permissions for ProcessAccess {
    fn read_write(&self, path: &Path) -> io::Result<()> {
        use nix::unistd::{access, AccessFlags};
        access(path, AccessFlags::R_OK | AccessFlags::W_OK).map_err(io::Error::from)
    }
}

/// Everything a diagnosis reads.
pub struct Environment<'a> {
    /// Prefix of `/sys`, `/dev`, `/etc` and the library directories.
    pub root: SysRoot,
    /// The USB devices.
    pub usb: &'a dyn UsbBus,
    /// Interface addresses.
    pub net: &'a dyn Interfaces,
    /// access(2) for device nodes.
    pub access: &'a dyn Permissions,
    /// The card's hRPC endpoint ([`USB_CARD_ADDR`](crate::npu::probe::USB_CARD_ADDR) on a real box).
    pub card: SocketAddr,
    /// How long to wait for the card's TCP handshake.
    pub connect_timeout: Duration,
    /// Whether this build links HailoRT ([`super::hailort_compiled_in`]).
    pub hailort_linked: bool,
    /// The device id the runtime is configured with (the rig's
    /// `device.device_id`), if any.
    pub device_id: Option<String>,
}

impl std::fmt::Debug for Environment<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("root", &self.root)
            .field("card", &self.card)
            .field("connect_timeout", &self.connect_timeout)
            .field("hailort_linked", &self.hailort_linked)
            .field("device_id", &self.device_id)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_prefixes_absolute_paths() {
        let root = SysRoot::new("/tmp/x");
        assert_eq!(root.path("/sys/bus"), PathBuf::from("/tmp/x/sys/bus"));
        assert_eq!(
            SysRoot::host().path("/dev/h1x-0"),
            PathBuf::from("/dev/h1x-0")
        );
        assert!(SysRoot::host().is_host());
        assert!(!root.is_host());
    }

    #[test]
    fn access_answers_for_real_files() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("h1x-0");
        fs::write(&node, b"").unwrap();
        assert!(ProcessAccess.read_write(&node).is_ok());
        let err = ProcessAccess
            .read_write(&dir.path().join("h1x-9"))
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn getifaddrs_lists_loopback() {
        let addrs = GetIfAddrs.addresses("lo").unwrap();
        assert!(addrs.contains(&IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)));
        assert!(GetIfAddrs.addresses("no-such-if0").unwrap().is_empty());
    }
}
