//! Running the `hailo-edge` binary and reading what it writes, for the command-line tests.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

/// `plan` for a body camera at 288 and a face camera at 432, both at 120 fps, exiting 0
/// whether or not they fit one part.
pub const PLAN_BODY_AND_FACE: [&str; 6] = [
    "plan",
    "--camera",
    "288@120",
    "--camera",
    "432@120",
    "--exit-zero",
];

/// The binary, run from the crate root (so `fixtures/...` resolves) without `RUST_LOG`, so
/// stderr holds only what the command itself says.
pub fn hailo_edge() -> Command {
    let mut c = Command::cargo_bin("hailo-edge").expect("the hailo-edge binary");
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env_remove("RUST_LOG");
    c
}

/// Runs `cmd` and asserts it succeeded, showing what it wrote when it did not.
pub fn succeed(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run hailo-edge");
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `cmd`, asserts it succeeded and parses its stdout as JSON.
pub fn json(cmd: &mut Command) -> Value {
    json_of(&succeed(cmd).stdout)
}

/// Parses bytes a command wrote as JSON.
pub fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("JSON output")
}

/// Reads and parses a JSON file a command wrote.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    json_of(&text)
}

/// Frames of a run report's cameras that the NPU stage admitted: captured, less those
/// dropped at the camera queues and as older than their instant.
pub fn admitted(report: &Value) -> u64 {
    report["cameras"]
        .as_array()
        .expect("cameras")
        .iter()
        .map(|c| {
            let f = &c["frames"];
            let n = |v: &Value| v.as_u64().expect("a frame count");
            n(&f["captured"]) - n(&f["dropped"]["camera_queue"]) - n(&f["dropped"]["unaligned"])
        })
        .sum()
}

/// Writes `contents` to `name` in `dir` and returns the path.
pub fn write(dir: &tempfile::TempDir, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, contents).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// Places in `text` that look like Rust `Debug` output rather than words for a user: a struct
/// (`Pcie { generation: 3`), `Some(`/`None`/`Ok(`/`Err(`, a string quoted twice (`"\"...`), a
/// CamelCase variant as a JSON string value (`"HailoRt"`), or an escaped control character.
pub fn debug_patterns(text: &str) -> Vec<String> {
    static PATTERNS: std::sync::OnceLock<Vec<regex::Regex>> = std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        [
            r"\b[A-Z][A-Za-z0-9]* \{ [a-z_][a-z0-9_]*: ",
            r"\b(Some|Ok|Err)\(",
            r"\bNone\b",
            r#""\\""#,
            r#":\s*"[A-Z][a-z0-9]+([A-Z][A-Za-z0-9]*)?""#,
            r"\\u\{[0-9a-f]+\}",
        ]
        .iter()
        .map(|p| regex::Regex::new(p).expect("a valid pattern"))
        .collect()
    });
    patterns
        .iter()
        .flat_map(|p| p.find_iter(text).map(|m| m.as_str().to_string()))
        .collect()
}
