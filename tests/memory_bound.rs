//! Every command of the hostile-input campaign (docs/limits.md) runs under a 4 GB
//! address-space limit, and its peak resident memory is measured: the demo run, rig files
//! with sizes past their bounds, a duration that does not fit, a HEF whose streams no part
//! can carry, and the calibration's synthetic captures. A refusal names what it refused; a
//! run ends as it would without the limit. Run with `--nocapture` for the table
//! (docs/limits.md#memory).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The address-space limit every command runs under.
const LIMIT_BYTES: u64 = 4 << 30;

/// Most a refused command may reach: the binary's start-up and the parse (about 16 MB).
const REFUSAL_PEAK_MB: f64 = 64.0;

/// `hailo-edge ARGS` as a plain command (its pid is waited for by hand).
fn hailo_edge(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hailo-edge"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env_remove("RUST_LOG");
    c.args(args);
    c
}

/// One command's end.
struct Ended {
    code: Option<i32>,
    peak_mb: f64,
    /// What it wrote, stdout and stderr together.
    output: String,
}

/// Runs `cmd` under [`LIMIT_BYTES`] of address space and waits for it, reading its peak
/// resident set from the kernel's accounting of that child alone (`wait4`).
fn measured(mut cmd: Command, dir: &Path) -> Ended {
    let out_path = dir.join("output.txt");
    let out = std::fs::File::create(&out_path).expect("a file for the output");
    let err = out.try_clone().expect("the output file again");
    cmd.stdout(out).stderr(err);
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // setrlimit, which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: LIMIT_BYTES,
                rlim_max: LIMIT_BYTES,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which also reports its resource use"
    )]
    let child = cmd.spawn().expect("the command starts");
    let pid = i32::try_from(child.id()).expect("a pid");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for (the `Child` is never waited on);
    // both out-pointers are valid for writes.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ended {
        code,
        // ru_maxrss is in kilobytes on Linux.
        peak_mb: usage.ru_maxrss as f64 / 1024.0,
        output: std::fs::read_to_string(&out_path).unwrap_or_default(),
    }
}

/// The example rig with its paths made absolute, `edit` applied, written into `dir`.
fn rig(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("examples/rig.toml")).expect("the example rig");
    let text = text.replace("\"../fixtures/", &format!("\"{}/fixtures/", root.display()));
    let edited = edit(text.clone());
    assert!(
        name == "rig" || edited != text,
        "{name}: the edit changed nothing"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, edited).expect("writing the rig file");
    path
}

/// `hailo-edge run` for 3 s on `config`, with `extra` flags.
fn run(config: &Path, extra: &[&str]) -> Command {
    let config = config.display().to_string();
    let mut c = hailo_edge(&["run", "--config", &config, "--duration", "3"]);
    c.args(extra);
    c
}

/// `hailo-edge run` on the example rig as `edit` leaves it.
fn run_edited(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> Command {
    run(&rig(dir, name, edit), &[])
}

/// A HEF whose first input is 65535 x 65535 x 3: 12.9 GB a frame.
fn huge_hef(dir: &Path) -> PathBuf {
    let mut hef = hef::samples::backbone(288);
    hef.network_groups[0].inputs[0].shape = hef::StreamShape::Image {
        height: 65535,
        width: 65535,
        features: 3,
    };
    let bytes = hef::HefBuilder::new(&hef).build().expect("the HEF writes");
    let path = dir.join("huge.hef");
    std::fs::write(&path, bytes).expect("writing the HEF");
    path
}

/// What a case expects of its command.
enum Expect {
    /// It runs to its end: exit 0, or 3 when the rig's rate was not sustained (a loaded
    /// machine runs the debug build).
    Runs,
    /// It is refused (exit 1, or 2 for a flag clap refuses) with this text in its error.
    Refused(&'static str),
}

#[test]
fn every_hostile_command_stays_under_four_gigabytes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = rig(d, "rig", |t| t);
    let path = |p: &Path| p.display().to_string();
    // The demo recorded first: the replays below read it, whole and cut short.
    let recording = d.join("demo.mcap");
    let record = run(
        &plain,
        &["--record", &path(&recording), "--record-frames", "all"],
    );
    let mut table = Vec::new();
    check(
        "run: the demo rig for 3 s, every frame recorded",
        measured(record, d),
        &Expect::Runs,
        &mut table,
    );
    let bytes = std::fs::read(&recording).expect("the recording");
    let cut = d.join("cut.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 1000]).expect("the cut recording");
    let replay = |file: &Path| hailo_edge(&["run", "--replay", &path(file), "--duration", "3"]);
    let cases: Vec<(&str, Command, Expect)> = vec![
        (
            "run --replay: that recording",
            replay(&recording),
            Expect::Runs,
        ),
        (
            "run --replay: that recording without its last 1000 bytes",
            replay(&cut),
            Expect::Runs,
        ),
        (
            "run: decoder.in_flight = 2^64 - 1",
            run_edited(d, "in_flight", |t| {
                t.replace(
                    "threads = 2\n",
                    "threads = 2\nin_flight = 18446744073709551615\n",
                )
            }),
            Expect::Refused("in_flight"),
        ),
        (
            "run: a camera of 100000 x 100000",
            run_edited(d, "camera", |t| {
                t.replace("width = 432", "width = 100000")
                    .replace("height = 432", "height = 100000")
            }),
            Expect::Refused("100000"),
        ),
        (
            "run: decoder.threads = 2000",
            run_edited(d, "threads", |t| {
                t.replace("threads = 2\n", "threads = 2000\n")
            }),
            Expect::Refused("threads"),
        ),
        (
            "run: --duration 1e300",
            hailo_edge(&["run", "--config", &path(&plain), "--duration", "1e300"]),
            Expect::Refused("duration"),
        ),
        (
            "hef verify: a 65535 x 65535 x 3 input",
            hailo_edge(&["hef", "verify", &path(&huge_hef(d))]),
            Expect::Refused("268435456"),
        ),
        (
            "calibrate --synthetic",
            hailo_edge(&["calibrate", "--synthetic", "--out", &path(&d.join("cal"))]),
            Expect::Runs,
        ),
    ];
    for (what, cmd, expect) in cases {
        check(what, measured(cmd, d), &expect, &mut table);
    }
    eprintln!("| command | peak RSS |\n|---|---|\n{}", table.join("\n"));
}

/// Asserts that `ended` is what `expect` says, under the limit, and adds its row to `table`.
fn check(what: &str, ended: Ended, expect: &Expect, table: &mut Vec<String>) {
    let text = &ended.output;
    assert!(!text.contains("panicked"), "{what}: {text}");
    match expect {
        Expect::Runs => assert!(
            matches!(ended.code, Some(0 | 3)),
            "{what}: exit {:?}: {text}",
            ended.code
        ),
        Expect::Refused(named) => {
            assert!(matches!(ended.code, Some(1 | 2)), "{what}: {text}");
            assert!(text.contains(named), "{what}: no `{named}` in: {text}");
            // Refused before anything is allocated from the value: the process stays at
            // its start-up size.
            assert!(
                ended.peak_mb < REFUSAL_PEAK_MB,
                "{what}: {} MB",
                ended.peak_mb
            );
        }
    }
    table.push(format!("| {what} | {:.0} MB |", ended.peak_mb));
}

#[test]
fn the_limit_is_enforced() {
    // Negative control: a command that asks for more address space than the limit fails
    // (dd allocates its block buffer whole; without the limit it reads one 5 GB block).
    let dir = tempfile::tempdir().unwrap();
    let mut dd = Command::new("dd");
    dd.args(["if=/dev/zero", "of=/dev/null", "bs=5G", "count=1"]);
    let ended = measured(dd, dir.path());
    assert_ne!(ended.code, Some(0), "dd allocated 5 GB under the limit");
    assert!(
        ended.output.contains("memory"),
        "dd: {}",
        ended.output.trim()
    );
}
