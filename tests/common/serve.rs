//! Running `hailo-edge run --serve` on the demo rig and talking to it: the dashboard tests'
//! helpers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A demo run with the dashboard on.
pub struct Served {
    pub child: Child,
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// What the run wrote on stderr.
    pub stderr: Arc<Mutex<String>>,
}

/// `hailo-edge run` on the demo rig for `secs` seconds, its report to `report`, with `extra`
/// arguments (`--serve 127.0.0.1:0` for the dashboard).
pub fn run_demo(secs: f64, report: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_hailo-edge"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_LOG")
        .args(["run", "--quiet", "--exit-zero", "--force", "--duration"])
        .arg(secs.to_string())
        .arg("--report")
        .arg(report)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hailo-edge run")
}

/// Starts the demo with `--serve 127.0.0.1:0` and reads the address it printed.
pub fn serve_demo(secs: f64, report: &Path) -> Served {
    let mut child = run_demo(secs, report, &["--serve", "127.0.0.1:0"]);
    let stderr = child.stderr.take().expect("stderr");
    let text = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = Arc::clone(&text);
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stderr).lines();
        while let Some(Ok(line)) = lines.next() {
            if let Some(url) = line.strip_prefix("dashboard: http://") {
                let _ = tx.send(url.trim_end_matches('/').to_string());
            }
            let mut t = sink.lock().unwrap();
            t.push_str(&line);
            t.push('\n');
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("no dashboard address; stderr:\n{}", text.lock().unwrap()));
    Served {
        child,
        addr,
        stderr: text,
    }
}

impl Served {
    /// Waits for the run to end (at most `limit`) and returns its exit success.
    pub fn wait(&mut self, limit: Duration) -> bool {
        let t = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.success();
            }
            if t.elapsed() > limit {
                let _ = self.child.kill();
                panic!(
                    "the run did not end in {limit:?}; stderr:\n{}",
                    self.stderr.lock().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// GET `path` from `addr`: the status code, the headers and the body.
pub fn http_get(addr: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the dashboard");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read the response");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_string(), body.to_string())
}

/// Reads the WebSocket's JSON messages until `done` says so or `limit` passes.
pub fn read_messages(
    ws: &mut tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    limit: Duration,
    mut done: impl FnMut(&[Value]) -> bool,
) -> Vec<Value> {
    let t = Instant::now();
    let mut got = Vec::new();
    if let tungstenite::stream::MaybeTlsStream::Plain(s) = ws.get_mut() {
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
    }
    while t.elapsed() < limit && !done(&got) {
        match ws.read() {
            Ok(tungstenite::Message::Text(text)) => {
                got.push(serde_json::from_str(text.as_str()).expect("a JSON message"));
            }
            Ok(tungstenite::Message::Close(_)) => break,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    got
}

/// Frames processed over all cameras, from a report.
pub fn processed(report: &Value) -> u64 {
    report["cameras"]
        .as_array()
        .expect("cameras")
        .iter()
        .map(|c| c["frames"]["processed"].as_u64().unwrap())
        .sum()
}
