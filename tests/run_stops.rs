//! `hailo-edge run` stopped from outside and failing outputs: SIGTERM and
//! SIGHUP drain like Ctrl-C, the recording is finished on every exit, an
//! output that fails ends alone, and output paths are checked before the run.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::cli::{hailo_edge, read_json};

/// The drain bound the signalled runs are given, seconds.
const DRAIN_S: u64 = 5;

/// One demo run at a time: each takes the machine's cores, and a drain
/// bound is only meaningful when runs do not starve each other.
static DEMO: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn binary() -> PathBuf {
    assert_cmd::cargo::cargo_bin("hailo-edge")
}

/// The demo rig, quiet, with every output in `dir`, for at most a minute; `extra`
/// arguments after the outputs.
fn spawn_run(dir: &Path, prefix: &[&str], extra: &[&str]) -> Child {
    let mut cmd = if prefix.is_empty() {
        Command::new(binary())
    } else {
        let mut c = Command::new(prefix[0]);
        c.args(&prefix[1..]).arg(binary());
        c
    };
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_LOG")
        .args(["run", "--quiet", "--exit-zero", "--duration", "60"])
        .arg("--drain-timeout")
        .arg(DRAIN_S.to_string())
        .arg("--report")
        .arg(dir.join("report.json"))
        .arg("--jsonl")
        .arg(dir.join("run.jsonl"))
        .arg("--record")
        .arg(dir.join("run.mcap"))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.txt")).unwrap())
        .spawn()
        .expect("start hailo-edge run")
}

/// Waits until results are being written (the run is past its start-up).
fn wait_until_running(dir: &Path, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let jsonl = dir.join("run.jsonl");
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("run ended before the signal: {status}: {}", stderr(dir));
        }
        if std::fs::metadata(&jsonl).is_ok_and(|m| m.len() > 0) {
            return;
        }
        assert!(Instant::now() < deadline, "no result within 120 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits at most `limit` for `child` to end.
fn wait_at_most(child: &mut Child, limit: Duration) -> Option<(ExitStatus, Duration)> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some((status, t.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    None
}

fn stderr(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default()
}

/// Whether the Python `mcap` reader finds the file's summary and footer and
/// reads every message; `None` when python3 or the package is missing.
fn python_reads_whole(path: &Path) -> Option<Result<u64, String>> {
    let script = "import sys\n\
        from mcap.reader import make_reader\n\
        with open(sys.argv[1], 'rb') as f:\n\
        \x20   r = make_reader(f)\n\
        \x20   s = r.get_summary()\n\
        \x20   assert s is not None and s.statistics is not None, 'no summary'\n\
        \x20   n = sum(1 for _ in r.iter_messages())\n\
        \x20   assert n == s.statistics.message_count, (n, s.statistics.message_count)\n\
        \x20   print(n)\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("No module named 'mcap'") {
        return None;
    }
    Some(if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
    } else {
        Err(err.into_owned())
    })
}

fn signal_drains_and_reports(signal: &str) {
    let _one = DEMO.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_run(dir.path(), &[], &[]);
    wait_until_running(dir.path(), &mut child);
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    // One second for the stop, the drain bound, and two for the report and
    // the process exit on a loaded machine.
    let limit = Duration::from_secs(1 + DRAIN_S + 2);
    let (status, took) = wait_at_most(&mut child, Duration::from_secs(30))
        .unwrap_or_else(|| panic!("SIG{signal}: the run did not end in 30 s"));
    assert_eq!(
        status.code(),
        Some(0),
        "SIG{signal}: {status}: {}",
        stderr(dir.path())
    );
    assert!(took < limit, "SIG{signal}: the run took {took:?} to end");
    let report = read_json(&dir.path().join("report.json"));
    assert_eq!(report["accounting_ok"], true, "{report}");
    assert_eq!(report["drain"]["completed"], true, "{}", report["drain"]);
    assert_eq!(report["drain"]["frames_in_flight"], 0);
    let recorded = report["recorded"]["frames"].as_u64().unwrap();
    assert!(recorded > 0);
    // Finished: our reader and an independent one read it whole.
    let mcap = dir.path().join("run.mcap");
    let bytes = std::fs::read(&mcap).unwrap();
    let summary = mcap::Summary::read(&bytes).unwrap();
    assert!(summary.is_some_and(|s| s.stats.is_some()), "no summary");
    if let Some(read) = python_reads_whole(&mcap) {
        let messages = read.unwrap_or_else(|e| panic!("SIG{signal}: Python reader: {e}"));
        assert!(
            messages >= recorded,
            "{messages} messages, {recorded} frames"
        );
    }
}

#[test]
fn sigterm_drains_writes_the_report_and_finishes_the_recording() {
    signal_drains_and_reports("TERM");
}

#[test]
fn sighup_drains_writes_the_report_and_finishes_the_recording() {
    signal_drains_and_reports("HUP");
}

/// Runs the demo rig with its files limited to `fsize` bytes (RLIMIT_FSIZE: a full disk, for
/// the files that reach it), until the output `sink` (at `file` in the run's folder) fails; then
/// stops it. Checks what the user sees: exit 1, the failure named in the report and on
/// standard error, the run gone on past it with every frame accounted for.
fn an_output_at_its_file_limit_ends_alone(fsize: &str, extra: &[&str], sink: &str, file: &str) {
    let _one = DEMO.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_run(dir.path(), &["prlimit", &format!("--fsize={fsize}")], extra);
    let deadline = Instant::now() + Duration::from_secs(120);
    let ended = |text: String| {
        text.lines()
            .any(|l| l.contains(file) && l.contains("that output ends"))
    };
    while !ended(stderr(dir.path())) {
        assert!(Instant::now() < deadline, "{}", stderr(dir.path()));
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the run ended at the full file: {status}: {}",
                stderr(dir.path())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let (status, _) = wait_at_most(&mut child, Duration::from_secs(30)).expect("the run ended");
    // An output failed: exit 1, the report written and naming it.
    assert_eq!(status.code(), Some(1), "{}", stderr(dir.path()));
    let report = read_json(&dir.path().join("report.json"));
    let failures = report["output_failures"].as_array().unwrap();
    let failure = failures
        .iter()
        .find(|f| f["sink"] == sink)
        .unwrap_or_else(|| panic!("no {sink} failure: {failures:?}"));
    assert!(failure["path"].as_str().unwrap().ends_with(file));
    assert!(failure["items_lost"].as_u64().unwrap() > 0);
    // The run went on past the failure: every frame is accounted for.
    assert_eq!(report["accounting_ok"], true);
    assert!(
        report["cameras"][0]["frames"]["processed"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        failure["error"]
            .as_str()
            .unwrap()
            .contains("File too large"),
        "{}",
        failure["error"]
    );
    assert!(stderr(dir.path()).contains(&format!("error: output {sink}")));
}

#[test]
fn a_recording_that_fills_its_file_limit_ends_alone_and_the_report_names_it() {
    // The recording of every captured frame (zstd-compressed synthetic frames, some 170 KB a
    // second) reaches 1 MB within seconds, the report and the JSON lines do not.
    an_output_at_its_file_limit_ends_alone(
        "1000000",
        &["--record-frames", "all"],
        "record",
        "run.mcap",
    );
}

#[test]
fn json_lines_that_fill_their_file_limit_end_alone_and_the_report_names_them() {
    // The JSON lines (a fitted body a line) reach 40 KB within seconds; the report stays below.
    an_output_at_its_file_limit_ends_alone("40000", &[], "jsonl", "run.jsonl");
}

/// SIGTERM sent every 5 ms from the first until the process is gone: whatever the drain's
/// length, later signals land in it. They change nothing: the drain runs to its end within its
/// bound, and the report, the recording and the accounting are whole. A handler that ended the
/// process at a second signal (as many do) fails here with an exit by the signal.
#[test]
fn sigterm_during_the_drain_changes_nothing() {
    let _one = DEMO.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_run(dir.path(), &[], &[]);
    wait_until_running(dir.path(), &mut child);
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let t = Instant::now();
    let mut sent = 0u32;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no end in 30 s");
        // SAFETY: kill(2) on our own child's pid (not yet reaped, so not reused) with a
        // valid signal number has no memory-safety preconditions.
        if unsafe { libc::kill(pid, libc::SIGTERM) } == 0 {
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = t.elapsed();
    assert_eq!(status.code(), Some(0), "{status}: {}", stderr(dir.path()));
    assert!(
        took < Duration::from_secs(1 + DRAIN_S + 2),
        "the run took {took:?} to end"
    );
    let report = read_json(&dir.path().join("report.json"));
    let drain_s = report["drain_s"].as_f64().unwrap();
    // Signals kept coming through the drain (one every 5 ms of it, give or take the load).
    assert!(sent >= 2, "{sent} signals");
    assert_eq!(report["accounting_ok"], true, "{report}");
    assert_eq!(report["drain"]["completed"], true, "{}", report["drain"]);
    assert_eq!(report["drain"]["frames_in_flight"], 0);
    assert!(drain_s <= DRAIN_S as f64, "{drain_s}");
    let bytes = std::fs::read(dir.path().join("run.mcap")).unwrap();
    let summary = mcap::Summary::read(&bytes).unwrap();
    assert!(summary.is_some_and(|s| s.stats.is_some()), "no summary");
}

#[test]
fn output_paths_are_refused_before_the_run_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let precious = d.join("precious.txt");
    std::fs::write(&precious, b"keep").unwrap();
    let link = d.join("link.json");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    let existing = d.join("existing.json");
    std::fs::write(&existing, b"earlier").unwrap();
    let same = d.join("same.json");
    let cases: [(Vec<&str>, Vec<&Path>, &str); 5] = [
        (vec!["--report"], vec![&link], "symbolic link"),
        (vec!["--jsonl"], vec![&existing], "--force"),
        (vec!["--report", "--jsonl"], vec![&same, &same], "both name"),
        (
            vec!["--record"],
            vec![Path::new("/nonexistent-dir/run.mcap")],
            "/nonexistent-dir/run.mcap",
        ),
        (vec!["--report"], vec![Path::new("-")], "standard output"),
    ];
    for (flags, paths, wants) in cases {
        let mut cmd = hailo_edge();
        cmd.args(["run", "--quiet", "--duration", "0.5"]);
        for (f, p) in flags.iter().zip(&paths) {
            cmd.arg(f).arg(p);
        }
        let t = Instant::now();
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} ran");
        assert!(err.contains(wants), "{flags:?}: {err}");
        // Refused before the run (no frame captured, no report).
        assert!(!err.contains("captured"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(60));
    }
    assert_eq!(std::fs::read(&precious).unwrap(), b"keep");
    assert_eq!(std::fs::read(&existing).unwrap(), b"earlier");
    assert!(!same.exists());
}

#[test]
fn a_device_that_drops_off_ends_the_run_with_status_five_and_a_report() {
    let _one = DEMO.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let out = hailo_edge()
        .args([
            "run",
            "--quiet",
            "--duration",
            "30",
            "--sim-fault",
            "closed@200",
        ])
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("the device is gone"), "{err}");
    let r = read_json(&report);
    let lost = r["device_lost"].as_str().unwrap_or_default();
    assert!(lost.contains("HAILO_COMMUNICATION_CLOSED"), "{r}");
    assert_eq!(r["accounting_ok"], true, "{r}");
    assert_eq!(r["drain"]["completed"], true, "{r}");
    // Job 200 comes within the first seconds (a second at 480 frames/s, several on a loaded
    // host): the run stops there, where one that went on would last its 30 s.
    let ran = r["duration_s"].as_f64().unwrap();
    assert!(ran < 20.0, "ran {ran} s");
    // A spec that is not KIND@JOB is refused naming the flag, before the run.
    let bad = hailo_edge()
        .args(["run", "--quiet", "--duration", "1", "--sim-fault", "closed"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(err.contains("--sim-fault `closed`: no `@JOB`"), "{err}");
    assert!(!err.contains("captured"), "{err}");
}

#[test]
fn hef_verify_refuses_a_fifo_at_once_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("model.hef");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut child = Command::new(binary())
        .args(["hef", "verify"])
        .arg(&fifo)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (status, _) =
        wait_at_most(&mut child, Duration::from_secs(20)).expect("hef verify blocked on the FIFO");
    assert!(!status.success());
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.contains("model.hef") && err.contains("FIFO"), "{err}");
}

#[test]
fn a_name_with_terminal_escapes_is_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = dir.path().join("x\u{1b}[2J.hef");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/backbone_288.hef"),
        &hostile,
    )
    .unwrap();
    for cmd in ["verify", "inspect"] {
        let out = hailo_edge()
            .args(["hef", cmd])
            .arg(&hostile)
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}");
        assert!(!out.stdout.contains(&0x1b), "{cmd}: a raw ESC was printed");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("x\\u{1b}[2J.hef"), "{cmd}: {text}");
    }
}

#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    let hef = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/backbone_288.hef");
    let mut child = Command::new(binary())
        .args(["hef", "inspect"])
        .args(std::iter::repeat_n(&hef, 400))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away after the first bytes, as `| head -1` does.
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let (status, _) = wait_at_most(&mut child, Duration::from_secs(30)).expect("it ended");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
    // Ended by SIGPIPE, as `cat` is, not by an error exit.
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(13)
    );
}
