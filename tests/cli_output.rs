//! What commands print and write reads as words for a user: no Rust `Debug` output anywhere,
//! shell completions and man pages generated from the CLI itself.

mod common;

use common::cli::{debug_patterns, hailo_edge, succeed, PLAN_BODY_AND_FACE};

/// Everything a user sees from one command: stdout, stderr and the files it wrote.
fn seen(args: &[&str], files: &[&std::path::Path]) -> String {
    let out = succeed(hailo_edge().args(args));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text += &String::from_utf8_lossy(&out.stderr);
    for f in files {
        text += &std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    text
}

#[test]
fn the_scan_finds_debug_output() {
    #[derive(Debug)]
    #[allow(dead_code)]
    enum Link {
        Pcie { generation: u8, lanes: u8 },
    }
    let debug = format!(
        "link {:?}, npu_outputs {:?}, backend {:?}",
        Link::Pcie {
            generation: 3,
            lanes: 4
        },
        format!("{:?}", "simulator: synthetic"),
        Some(2)
    );
    let found = debug_patterns(&debug);
    assert!(found.iter().any(|f| f.starts_with("Pcie {")), "{found:?}");
    assert!(found.iter().any(|f| f == "Some("), "{found:?}");
    assert!(found.iter().any(|f| f.contains(r#""\""#)), "{found:?}");
    assert!(!debug_patterns(r#"{"backend": "HailoRt"}"#).is_empty());
    assert!(!debug_patterns(r#"{"backend": "Sim"}"#).is_empty());
    // Negative control: plain words and documented JSON names pass.
    let clean = r#"link PCIe Gen 3 x4, backend "simulator", "unit": "ms", none dropped"#;
    assert_eq!(debug_patterns(clean), Vec::<String>::new());
}

#[test]
fn run_report_json_lines_and_terminal_have_no_debug_output() {
    let dir = tempfile::tempdir().unwrap();
    let (report, jsonl) = (dir.path().join("report.json"), dir.path().join("out.jsonl"));
    let text = seen(
        &[
            "run",
            "--duration",
            "1",
            "--exit-zero",
            "--report",
            report.to_str().unwrap(),
            "--jsonl",
            jsonl.to_str().unwrap(),
        ],
        &[&report, &jsonl],
    );
    assert!(text.contains("\"backend\""), "the report was read");
    assert_eq!(debug_patterns(&text), Vec::<String>::new(), "{text}");
}

#[test]
fn plan_and_hef_have_no_debug_output() {
    for args in [
        &PLAN_BODY_AND_FACE[..],
        &[
            "plan",
            "--camera",
            "288@120",
            "--camera",
            "432@120",
            "--json",
            "--exit-zero",
        ][..],
        &["hef", "inspect", "fixtures/backbone_288.hef"][..],
        &["hef", "inspect", "--json", "fixtures/backbone_288.hef"][..],
        &[
            "hef",
            "verify",
            "fixtures/backbone_288.hef",
            "fixtures/backbone_432.hef",
        ][..],
    ] {
        let text = seen(args, &[]);
        assert_eq!(
            debug_patterns(&text),
            Vec::<String>::new(),
            "{args:?}:\n{text}"
        );
    }
}

#[test]
fn completions_name_every_subcommand_and_unknown_shells_are_refused() {
    let out = succeed(hailo_edge().args(["completions", "bash"]));
    let script = String::from_utf8(out.stdout).unwrap();
    for sub in [
        "run",
        "plan",
        "bench",
        "doctor",
        "first-light",
        "completions",
        "man",
    ] {
        assert!(script.contains(sub), "bash completions lack {sub}");
    }
    let out = succeed(hailo_edge().args(["completions", "zsh"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("#compdef hailo-edge"));
    hailo_edge()
        .args(["completions", "tcsh"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("invalid value 'tcsh'"));
}

#[test]
fn man_writes_one_page_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    succeed(hailo_edge().args(["man", "--out"]).arg(dir.path()));
    for page in [
        "hailo-edge.1",
        "hailo-edge-run.1",
        "hailo-edge-plan.1",
        "hailo-edge-hef-verify.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(
            text.starts_with(".ie") || text.contains(".TH"),
            "{page} is not roff"
        );
    }
    let run = std::fs::read_to_string(dir.path().join("hailo-edge-run.1")).unwrap();
    assert!(run.contains("duration"), "the run page lists its flags");
}

#[test]
fn verbosity_flags_are_global_and_exclusive() {
    succeed(hailo_edge().args(["-q", "plan", "--camera", "288@30"]));
    succeed(hailo_edge().args(["plan", "-v", "--camera", "288@30"]));
    hailo_edge()
        .args(["-q", "-v", "plan", "--camera", "288@30"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("cannot be used with"));
}

/// An error names what failed and why, and says each cause once: the OS error of a missing
/// rig file stands once on the line, not once per link of the error's chain.
#[test]
fn an_error_says_each_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let out = hailo_edge()
        .args(["run", "--config"])
        .arg(&missing)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in {err}"));
    assert!(line.contains("missing.toml"), "{line}");
    // ENOENT's text; printed once per link, it stood here twice.
    assert_eq!(
        line.matches("No such file or directory").count(),
        1,
        "{line}"
    );
}
