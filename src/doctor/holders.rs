//! Which processes hold a device node open, from the `/proc/*/fd` links.
//!
//! HailoRT's default VDevice group is "UNIQUE": a second client of a part
//! another process holds waits, then gets `HAILO_DEVICE_IN_USE`. Naming the
//! holder (pid and command) is what makes that error actionable.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::env::SysRoot;
use super::Check;

/// A process holding a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    pub pid: u32,
    /// `/proc/PID/comm`, or `?` when unreadable.
    pub command: String,
    /// The node it holds, as the machine names it (`/dev/hailo0`).
    pub node: String,
}

/// What a scan of `/proc` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HolderScan {
    /// Processes (other than `own_pid`) with an fd on one of the nodes.
    pub holders: Vec<Holder>,
    /// Processes whose fd table could not be read (other users' without
    /// root).
    pub unreadable: usize,
}

/// Scans `/proc` under `root` for fds linking to any of `nodes` (absolute
/// paths on the target; under a fake root the rooted path matches too),
/// leaving out `own_pid`.
pub fn scan(root: &SysRoot, nodes: &[String], own_pid: u32) -> HolderScan {
    let mut out = HolderScan::default();
    let targets: Vec<(PathBuf, &String)> = nodes
        .iter()
        .flat_map(|n| [(PathBuf::from(n), n), (root.path(n), n)])
        .collect();
    for entry in root.list("/proc") {
        let Ok(pid) = entry.parse::<u32>() else {
            continue;
        };
        if pid == own_pid {
            continue;
        }
        let fd_dir = root.path(format!("/proc/{pid}/fd"));
        let Ok(fds) = fs::read_dir(&fd_dir) else {
            out.unreadable += 1;
            continue;
        };
        let mut held: Vec<&String> = fds
            .filter_map(Result::ok)
            .filter_map(|fd| fs::read_link(fd.path()).ok())
            .filter_map(|target| node_of(&targets, &target))
            .collect();
        held.sort();
        held.dedup();
        let command = root
            .read_attr(format!("/proc/{pid}/comm"))
            .unwrap_or_else(|| "?".to_owned());
        out.holders.extend(held.into_iter().map(|node| Holder {
            pid,
            command: command.clone(),
            node: node.clone(),
        }));
    }
    out
}

fn node_of<'a>(targets: &[(PathBuf, &'a String)], link: &Path) -> Option<&'a String> {
    targets.iter().find(|(t, _)| t == link).map(|(_, n)| *n)
}

/// `pcie.holders`: no other process holds a node of the part.
pub fn check(root: &SysRoot, nodes: &[String]) -> Check {
    const ID: &str = "pcie.holders";
    if nodes.is_empty() {
        return Check::skip(ID, "no device node");
    }
    let scan = scan(root, nodes, std::process::id());
    let unread = match scan.unreadable {
        0 => String::new(),
        n => format!(" ({n} processes' fds unreadable: run as root to see them)"),
    };
    if scan.holders.is_empty() {
        return Check::ok(
            ID,
            format!("no other process holds {}{unread}", nodes.join(", ")),
        );
    }
    let list: Vec<String> = scan
        .holders
        .iter()
        .map(|h| format!("pid {} ({}) holds {}", h.pid, h.command, h.node))
        .collect();
    let pids: Vec<String> = scan.holders.iter().map(|h| h.pid.to_string()).collect();
    Check::fail(
        ID,
        format!("{}{unread}", list.join(", ")),
        format!(
            "stop it (`kill {}`), or open the part from both processes with the VDevice group id \"SHARED\"; \
             with HailoRT's default group \"UNIQUE\" a second client waits, then gets HAILO_DEVICE_IN_USE",
            pids.join(" ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::doctor::Verdict;

    /// A fake /proc whose process 4242 (`hailortcli`) has fd 7 on `target`.
    fn fake_proc(dir: &Path, pid: u32, comm: &str, target: &Path) {
        let fd = dir.join(format!("proc/{pid}/fd"));
        fs::create_dir_all(&fd).unwrap();
        fs::write(dir.join(format!("proc/{pid}/comm")), format!("{comm}\n")).unwrap();
        symlink(target, fd.join("7")).unwrap();
    }

    #[test]
    fn holder_of_a_fake_node_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::new(dir.path());
        fs::create_dir_all(dir.path().join("dev")).unwrap();
        let node = dir.path().join("dev/hailo0");
        fs::write(&node, b"").unwrap();
        // A real file held open, as the device node would be.
        let _held = fs::File::open(&node).unwrap();
        fake_proc(dir.path(), 4242, "hailortcli", &node);
        fake_proc(dir.path(), 4243, "bash", Path::new("/dev/null"));
        let nodes = vec!["/dev/hailo0".to_owned()];
        let c = check(&root, &nodes);
        assert_eq!(c.verdict, Verdict::Fail, "{c:?}");
        assert!(
            c.detail.contains("pid 4242 (hailortcli) holds /dev/hailo0"),
            "{}",
            c.detail
        );
        assert!(!c.detail.contains("4243"));
        assert!(c.fix.unwrap().contains("kill 4242"));
        // Negative control: the same tree, the holder not on the node.
        let other = vec!["/dev/hailo1".to_owned()];
        assert_eq!(check(&root, &other).verdict, Verdict::Ok);
    }

    #[test]
    fn holder_of_a_real_file_is_found_in_the_real_proc() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node");
        fs::write(&path, b"").unwrap();
        let node = vec![path.to_string_lossy().into_owned()];
        let held = fs::File::open(&path).unwrap();
        let me = std::process::id();
        let found = scan(&SysRoot::host(), &node, 0);
        assert!(
            found.holders.iter().any(|h| h.pid == me),
            "this process holds {} open",
            node[0]
        );
        assert!(scan(&SysRoot::host(), &node, me)
            .holders
            .iter()
            .all(|h| h.pid != me));
        drop(held);
        let after = scan(&SysRoot::host(), &node, 0);
        assert!(
            after.holders.iter().all(|h| h.pid != me),
            "closed: not held"
        );
    }
}
