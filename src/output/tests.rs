use std::os::unix::fs::PermissionsExt;

use super::*;

fn set<'a>(outputs: &[(&'static str, &'a Path)], overwrite: bool) -> OutputSet<'a> {
    OutputSet {
        outputs: outputs
            .iter()
            .map(|&(what, path)| Output {
                what,
                path,
                stdout_ok: what == "jsonl",
            })
            .collect(),
        overwrite,
    }
}

#[test]
fn one_path_for_two_outputs_is_refused_and_distinct_paths_pass() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x");
    let same = dir.path().join("sub/../x");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let e = set(&[("report", &x), ("jsonl", &same)], false)
        .check()
        .unwrap_err();
    assert!(matches!(e, OutputError::SamePath { .. }), "{e}");
    assert!(e.to_string().contains("report and jsonl"), "{e}");
    let y = dir.path().join("y");
    set(&[("report", &x), ("jsonl", &y)], false)
        .check()
        .unwrap();
    // Standard output is one stream, not a file: allowed for JSON lines alone.
    set(&[("jsonl", Path::new("-"))], false).check().unwrap();
    let e = set(&[("report", Path::new("-"))], false)
        .check()
        .unwrap_err();
    assert!(
        matches!(e, OutputError::NotStdout { what: "report" }),
        "{e}"
    );
}

#[test]
fn a_symlink_is_refused_even_with_overwrite_and_its_target_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("precious");
    std::fs::write(&target, b"keep me").unwrap();
    let link = dir.path().join("out.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for overwrite in [false, true] {
        let e = create("jsonl", &link, overwrite).unwrap_err();
        assert!(matches!(e, OutputError::Symlink { .. }), "{e}");
        let e = AtomicFile::prepare("report", &link, overwrite).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
}

#[test]
fn an_existing_file_is_kept_unless_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    std::fs::write(&path, b"earlier run").unwrap();
    let e = create("jsonl", &path, false).unwrap_err();
    assert!(e.to_string().contains("--force"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), b"earlier run");
    let e = AtomicFile::prepare("report", &path, false).unwrap_err();
    assert!(matches!(e, OutputError::Exists { .. }), "{e}");
    let mut f = create("jsonl", &path, true).unwrap();
    f.write_all(b"new").unwrap();
    drop(f);
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
}

#[test]
fn files_are_created_private_even_over_a_public_one() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh.mcap");
    drop(create("record", &fresh, false).unwrap());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&fresh), 0o600);
    let public = dir.path().join("public.mcap");
    std::fs::write(&public, b"x").unwrap();
    std::fs::set_permissions(&public, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(create("record", &public, true).unwrap());
    assert_eq!(mode(&public), 0o600);
    let report = dir.path().join("report.json");
    AtomicFile::prepare("report", &report, false)
        .unwrap()
        .commit(b"{}")
        .unwrap();
    assert_eq!(mode(&report), 0o600);
}

#[test]
fn a_report_appears_whole_and_only_when_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    std::fs::write(&path, b"old").unwrap();
    let pending = AtomicFile::prepare("report", &path, true).unwrap();
    // Until the commit the old report stands, and the temporary file is beside it.
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    pending.commit(b"{\"new\":true}").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"{\"new\":true}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // Without overwrite, a file that appears meanwhile is not replaced.
    let other = dir.path().join("other.json");
    let pending = AtomicFile::prepare("report", &other, false).unwrap();
    std::fs::write(&other, b"raced").unwrap();
    let e = pending.commit(b"{}").unwrap_err();
    assert!(matches!(e, OutputError::Exists { .. }), "{e}");
    assert_eq!(std::fs::read(&other).unwrap(), b"raced");
}

#[test]
fn a_missing_or_unwritable_directory_is_found_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/report.json");
    let e = set(&[("report", &missing)], false).check().unwrap_err();
    assert!(e.to_string().contains("no/such/dir"), "{e}");
    let e = AtomicFile::prepare("report", &missing, false).unwrap_err();
    assert!(matches!(e, OutputError::Io { what: "report", .. }), "{e}");
    let e = AtomicFile::prepare("report", Path::new("/proc/report.json"), false).unwrap_err();
    assert!(e.to_string().contains("/proc/report.json"), "{e}");
}

#[test]
fn control_characters_in_a_name_are_escaped_and_the_rest_kept() {
    let hostile = "cam\u{1b}[2J\u{1b}[Hé\n";
    let shown = printable(hostile);
    assert_eq!(shown, "cam\\u{1b}[2J\\u{1b}[Hé\\n");
    assert!(!shown.chars().any(char::is_control));
    // A plain name is passed through without a copy.
    assert!(matches!(
        printable("front-left é"),
        Cow::Borrowed("front-left é")
    ));
}

/// An error of this crate's kind: its message holds its cause's, and `source()` returns it.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
struct Holding {
    what: &'static str,
    source: Box<dyn std::error::Error + Send + Sync>,
}

/// An error that names only itself and leaves its cause to `source()`.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
struct Naming {
    what: &'static str,
    source: Box<dyn std::error::Error + Send + Sync>,
}

#[test]
fn each_cause_is_said_once_and_none_is_lost() {
    let os = || std::io::Error::from(std::io::ErrorKind::NotFound);
    // Two links whose messages hold their causes: the OS error once, not three times.
    let held = Holding {
        what: "rig file r.toml",
        source: Box::new(Holding {
            what: "reading",
            source: Box::new(os()),
        }),
    };
    let text = error_text(&held);
    assert_eq!(text, format!("rig file r.toml: reading: {}", os()));
    // Every link joined, as `{:#}` joins them, says the OS error three times.
    let mut every = held.to_string();
    let mut cause = std::error::Error::source(&held);
    while let Some(e) = cause {
        every = format!("{every}: {e}");
        cause = e.source();
    }
    assert_eq!(every.matches(&os().to_string()).count(), 3, "{every}");
    // Negative control: links that name only themselves are all kept, in order.
    let named = Naming {
        what: "rig file r.toml",
        source: Box::new(Naming {
            what: "reading",
            source: Box::new(os()),
        }),
    };
    assert_eq!(
        error_text(&named),
        format!("rig file r.toml: reading: {}", os())
    );
    // Mixed: a link that holds its cause after one that does not.
    let mixed = Naming {
        what: "run",
        source: Box::new(held),
    };
    assert_eq!(
        error_text(&mixed),
        format!("run: rig file r.toml: reading: {}", os())
    );
}
