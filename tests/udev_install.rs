//! `udev/install.sh` into a temporary root: install, re-install is a no-op,
//! dry runs change nothing, uninstall removes; and the doctor agrees.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hailo_edge::doctor::installed::{self, FileState};
use hailo_edge::doctor::{SysRoot, Verdict};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("udev/install.sh")
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A tree with an `etc/group`. Without root, groupadd cannot run, so the
/// group is there from the start.
fn tree(group: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("etc")).unwrap();
    let mut lines = "root:x:0:\n".to_owned();
    if !is_root() || !group.is_empty() {
        lines.push_str(if group.is_empty() {
            "hailo:x:990:\n"
        } else {
            group
        });
    }
    fs::write(dir.path().join("etc/group"), lines).unwrap();
    dir
}

fn run(root: &Path, args: &[&str]) -> (Output, String) {
    let out = Command::new("bash")
        .arg(script())
        .arg("--root")
        .arg(root)
        .args(args)
        .output()
        .expect("bash runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out, text)
}

/// Every file under `dir` with its contents and mode.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, u32)> {
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p.clone());
                all.push((p, Vec::new(), meta.permissions().mode()));
            } else {
                all.push((p.clone(), fs::read(&p).unwrap(), meta.permissions().mode()));
            }
        }
    }
    all.sort();
    all
}

fn group_line(root: &Path) -> Option<String> {
    fs::read_to_string(root.join("etc/group"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("hailo:"))
        .map(str::to_owned)
}

#[test]
fn install_reinstall_uninstall() {
    let dir = tree("");
    let root = dir.path();
    let sys = SysRoot::new(root);

    // Dry run: every action printed, nothing changed.
    let before = snapshot(root);
    let (out, text) = run(root, &["--dry-run"]);
    assert!(out.status.success(), "{text}");
    for f in installed::ALL {
        assert!(
            text.contains(&format!("would run: install -D -m {:o}", f.mode))
                && text.contains(f.dest),
            "{text}"
        );
    }
    if is_root() {
        assert!(text.contains("would run: groupadd"), "{text}");
    }
    assert_eq!(snapshot(root), before, "a dry run changed the tree");

    // Install.
    let (out, text) = run(root, &[]);
    assert!(out.status.success(), "{text}");
    for f in installed::ALL {
        assert_eq!(f.state(&sys), FileState::Matches, "{}", f.dest);
        let mode = fs::metadata(sys.path(f.dest)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, f.mode, "{}", f.dest);
    }
    assert!(group_line(root).is_some(), "no hailo group");
    for c in installed::checks(&sys) {
        assert_eq!(c.verdict, Verdict::Ok, "{c:?}");
    }

    // Re-install: nothing to do.
    let installed_tree = snapshot(root);
    let (out, text) = run(root, &[]);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("run:"), "re-install acted:\n{text}");
    assert!(text.contains("nothing changed"), "{text}");
    assert_eq!(
        text.matches("unchanged: /etc/").count(),
        installed::ALL.len()
    );
    assert_eq!(snapshot(root), installed_tree);

    // An edited file is put back, and only that one.
    fs::write(sys.path(installed::NODE_RULES.dest), "MODE=\"0666\"\n").unwrap();
    let (out, text) = run(root, &[]);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches("run: install").count(), 1, "{text}");
    assert_eq!(installed::NODE_RULES.state(&sys), FileState::Matches);

    // Uninstall dry run changes nothing; uninstall removes everything.
    let (out, text) = run(root, &["--uninstall", "--dry-run"]);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.matches("would run: rm -f").count(),
        installed::ALL.len()
    );
    assert_eq!(snapshot(root), installed_tree);

    let (out, text) = run(root, &["--uninstall"]);
    assert!(out.status.success(), "{text}");
    for f in installed::ALL {
        assert_eq!(f.state(&sys), FileState::Missing, "{}", f.dest);
    }
    if is_root() {
        assert_eq!(group_line(root), None, "{text}");
    }
    for c in installed::checks(&sys) {
        assert_eq!(c.verdict, Verdict::Fail, "{c:?}");
    }

    // Uninstall again: nothing to do.
    let (out, text) = run(root, &["--uninstall"]);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("run:"), "{text}");
}

#[test]
fn uninstall_keeps_a_group_with_members() {
    let dir = tree("hailo:x:990:alice\n");
    let (out, text) = run(dir.path(), &["--uninstall"]);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("kept: group hailo still has members (alice)"),
        "{text}"
    );
    assert_eq!(group_line(dir.path()).as_deref(), Some("hailo:x:990:alice"));
}

#[test]
fn bad_arguments_are_refused() {
    let dir = tree("");
    let (out, text) = run(dir.path(), &["--help"]);
    assert!(out.status.success());
    assert!(
        text.contains("--uninstall") && !text.contains("set -euo"),
        "{text}"
    );

    let (out, text) = run(dir.path(), &["--frobnicate"]);
    assert!(!out.status.success());
    assert!(text.contains("unknown argument '--frobnicate'"), "{text}");

    let out = Command::new("bash")
        .arg(script())
        .args(["--root", "/nonexistent/hailo-edge-test"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));

    // A root without etc/group cannot get the group (when it is needed).
    let bare = tempfile::tempdir().unwrap();
    if is_root() {
        let (out, text) = run(bare.path(), &[]);
        assert!(!out.status.success());
        assert!(text.contains("etc/group is missing"), "{text}");
    }
}

#[test]
fn a_symbolic_link_inside_the_root_is_refused() {
    let dir = tree("");
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("etc/udev")).unwrap();
    let (out, text) = run(dir.path(), &[]);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("etc/udev is a symbolic link"), "{text}");
    assert_eq!(
        fs::read_dir(outside.path()).unwrap().count(),
        0,
        "wrote through the link"
    );
    // Negative control: the same tree without the link installs.
    fs::remove_file(dir.path().join("etc/udev")).unwrap();
    let (out, text) = run(dir.path(), &[]);
    assert!(out.status.success(), "{text}");
}

#[test]
fn serial_numbers_restrict_the_usbnet_rule_and_the_doctor_reads_them() {
    let dir = tree("");
    let root = dir.path();
    let sys = SysRoot::new(root);
    let rules = sys.path(installed::USBNET_RULES.dest);
    let (out, text) = run(root, &["--serial", "ABC123", "--serial", "H10-7"]);
    assert!(out.status.success(), "{text}");
    let written = fs::read_to_string(&rules).unwrap();
    let matched: Vec<&str> = written.lines().filter(|l| l.contains("NAME=")).collect();
    assert_eq!(matched.len(), 2, "{written}");
    assert!(
        matched[0].contains("ATTRS{idVendor}==\"0525\""),
        "{written}"
    );
    assert!(matched[0].contains("ATTRS{serial}==\"ABC123\", NAME=\"usbnet0\""));
    assert!(matched[1].contains("ATTRS{serial}==\"H10-7\""));
    assert_eq!(
        installed::usbnet_serials(&written),
        Some(vec!["ABC123".to_owned(), "H10-7".to_owned()])
    );
    let udev = installed::checks(&sys).remove(0);
    assert_eq!(udev.verdict, Verdict::Ok, "{udev:?}");
    assert!(
        udev.detail.contains("only for serial ABC123, H10-7"),
        "{udev:?}"
    );

    // The same serials again: nothing to do. Without them: the shipped rule.
    let (_, text) = run(root, &["--serial", "ABC123", "--serial", "H10-7"]);
    assert!(
        text.contains("unchanged: /etc/udev/rules.d/70-hailo-usbnet.rules"),
        "{text}"
    );
    let (_, text) = run(root, &[]);
    assert!(text.contains("70-hailo-usbnet.rules"), "{text}");
    assert_eq!(
        fs::read_to_string(&rules).unwrap(),
        installed::USBNET_RULES.contents
    );
    assert_eq!(
        installed::usbnet_serials(installed::USBNET_RULES.contents),
        None
    );

    // Controls: a hand-edited serial line is not this form, and a serial
    // that would break out of the udev string is refused.
    let edited = written.replace("\"H10-7\"", "\"H10\\\"7\"");
    assert_eq!(installed::usbnet_serials(&edited), None);
    let (out, text) = run(root, &["--serial", "a\"b"]);
    assert!(!out.status.success());
    assert!(text.contains("--serial 'a\"b'"), "{text}");
}
