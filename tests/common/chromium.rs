//! Headless Chromium driven over its DevTools protocol (a WebSocket, so tungstenite): a page
//! loaded in real time, its DOM read back and a screenshot taken.
//!
//! `--dump-dom` with `--virtual-time-budget` does not suit a page fed by a WebSocket: virtual
//! time runs ahead while no resource load is pending, so the DOM is dumped before the stream
//! has drawn anything. Here the page runs on the wall clock and the test polls its DOM.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// Chromium on PATH, or why the browser test cannot run: it skips without one (saying so),
/// except under `CI=true`, where a missing browser fails.
pub fn find() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromium is not installed (CI installs Debian's chromium package)"
        );
        eprintln!("skipped: no chromium on PATH (apt-get install chromium)");
    }
    found
}

/// A headless browser with one page.
pub struct Browser {
    child: Child,
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts `chromium` headless and opens `url` in a page.
    pub fn open(chromium: &Path, url: &str) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-port=0",
                "--window-size=1280,1800",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("ws://") {
                    let _ = tx.send(line[at..].trim().to_string());
                }
            }
        });
        let endpoint = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium's DevTools address");
        let (mut ws, _) = tungstenite::connect(&endpoint).expect("connect to DevTools");
        if let MaybeTlsStream::Plain(s) = ws.get_mut() {
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
        }
        let mut b = Self {
            child,
            ws,
            session: String::new(),
            next_id: 1,
            _profile: profile,
        };
        let target = b.call(None, "Target.createTarget", json!({ "url": url }));
        let target = target["targetId"].as_str().expect("a target").to_string();
        let attached = b.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        );
        b.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        b
    }

    /// Sends one DevTools command and waits for its answer (events in between are skipped).
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.ws
            .send(Message::Text(msg.to_string().into()))
            .expect("send to DevTools");
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            let Ok(Message::Text(text)) = self.ws.read() else {
                continue;
            };
            let v: Value = serde_json::from_str(text.as_str()).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
        panic!("{method}: no answer from chromium");
    }

    /// The page's DOM now.
    pub fn dom(&mut self) -> String {
        let session = self.session.clone();
        let r = self.call(
            Some(&session),
            "Runtime.evaluate",
            json!({ "expression": "document.documentElement.outerHTML", "returnByValue": true }),
        );
        r["result"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Polls the DOM until `ok` holds or `limit` passes; returns the last DOM.
    pub fn dom_when(&mut self, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        loop {
            let dom = self.dom();
            if ok(&dom) || t.elapsed() > limit {
                return dom;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// A PNG screenshot of the whole page.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let session = self.session.clone();
        let r = self.call(
            Some(&session),
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": true }),
        );
        base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().expect("screenshot data"))
            .expect("base64 PNG")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
