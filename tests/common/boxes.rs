//! `hailo-edge run` processes publishing on Zenoh over loopback: the example's fusion boxes
//! (`examples/fuse/`) and the waits for their endpoints. Also compiled into
//! `benches/bench_fuse.rs`.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A TCP port free on loopback now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on loopback")
}

/// Waits until something listens on `port` (a rig opens its endpoint once it is built).
pub fn wait_for_port(port: u16, what: &str) {
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{what}: port {port} never opened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A file of the fusion example.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/fuse")
        .join(name)
}

/// The example's box `name` at `fps`, written into `dir` with its paths made absolute.
pub fn rig_file(dir: &Path, name: &str, fps: u32) -> PathBuf {
    let text = std::fs::read_to_string(example(&format!("box_{name}.toml"))).expect("example");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = text
        .replace("fps = 10", &format!("fps = {fps}"))
        .replace("\"../../", &format!("\"{}/", root.display()))
        .replace("\"b_", &format!("\"{}/b_", example("").display()));
    assert!(text.contains(&format!("fps = {fps}")));
    let path = dir.join(format!("box_{name}.toml"));
    std::fs::write(&path, text).expect("writing the rig file");
    path
}

/// Box `name` at `fps` on the wall clock, publishing on `port` for `seconds` with its
/// report at `report` (its folder holds the rig file), once its endpoint is open.
pub fn start_box(
    name: &str,
    fps: u32,
    port: u16,
    seconds: u32,
    extra: &[&str],
    report: &Path,
) -> Child {
    let dir = report.parent().expect("the report's folder");
    let child = Command::new(env!("CARGO_BIN_EXE_hailo-edge"))
        .args([
            "run",
            "-q",
            "--exit-zero",
            "--force",
            "--scene-clock",
            "wall",
        ])
        .arg("--config")
        .arg(rig_file(dir, name, fps))
        .args(["--duration", &seconds.to_string(), "--report"])
        .arg(report)
        .arg("--publish")
        .arg(format!("zenoh:tcp/127.0.0.1:{port}"))
        .args(["--publish-as", name])
        .args(extra)
        .stdout(Stdio::null())
        .spawn()
        .expect("hailo-edge run");
    wait_for_port(port, &format!("box {name}"));
    child
}
