//! `hailo-edge run --serve`: the dashboard's page and WebSocket against a running demo rig,
//! a browser that never reads, and the page in a real (headless) Chromium.

mod common;

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::chromium::{self, Browser};
use common::cli::read_json;
use common::serve::{http_get, processed, read_messages, run_demo, serve_demo};
use serde_json::Value;

/// The tests here each run the real-time demo rig: one at a time, so that one's load does not
/// change another's frame counts.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn of_type<'a>(messages: &'a [Value], kind: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["type"] == kind).collect()
}

/// Views with keypoints and the fitted body reprojected, from each of the four cameras.
fn cameras_with_keypoints(messages: &[Value]) -> BTreeSet<u64> {
    of_type(messages, "view")
        .into_iter()
        .filter(|v| v["keypoints"].is_array() && v["fit_2d"].is_array())
        .filter_map(|v| v["camera"].as_u64())
        .collect()
}

#[test]
fn the_page_and_its_stream_carry_four_views_keypoints_a_body_and_labelled_figures() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let mut served = serve_demo(12.0, &report);
    let addr = served.addr.clone();

    let (code, _, page) = http_get(&addr, "/");
    assert_eq!(code, 200);
    assert!(page.contains("<script src=\"app.js\">"), "{page}");
    let (code, head, script) = http_get(&addr, "/app.js");
    assert_eq!(code, 200);
    assert!(head.to_lowercase().contains("text/javascript"), "{head}");
    assert!(script.contains("new WebSocket("));
    // Everything comes from the binary: no page asset is fetched from elsewhere.
    for text in [&page, &script] {
        assert!(!text.contains("src=\"http"), "an external asset");
        assert!(!text.to_lowercase().contains("cdn"), "a CDN");
    }
    assert_eq!(http_get(&addr, "/style.css").0, 200);
    assert_eq!(http_get(&addr, "/no-such-page").0, 404);

    let (mut ws, _) = tungstenite::connect(format!("ws://{addr}/ws")).expect("open the WebSocket");
    let messages = read_messages(&mut ws, Duration::from_secs(120), |m| {
        cameras_with_keypoints(m).len() == 4
            && !of_type(m, "body").is_empty()
            && of_type(m, "figures").len() >= 2
    });
    let _ = ws.close(None);
    let kinds: Vec<&str> = messages.iter().filter_map(|m| m["type"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"hello"), "{kinds:?}");

    let hello = &messages[0];
    let cameras = hello["cameras"].as_array().unwrap();
    assert_eq!(cameras.len(), 4);
    for c in cameras {
        assert_eq!(c["calibration"]["rotation"].as_array().unwrap().len(), 3);
        assert!(c["width"].as_u64().unwrap() >= 288);
    }
    let names = hello["keypoints"].as_array().unwrap();
    assert_eq!(names.len(), 23);
    assert!(hello["bones"].as_array().unwrap().len() >= 19);
    assert_eq!(
        hello["device_figures"], "modelled",
        "the demo runs on the simulator"
    );

    assert_eq!(
        cameras_with_keypoints(&messages),
        BTreeSet::from([0, 1, 2, 3]),
        "{kinds:?}"
    );
    let view = of_type(&messages, "view")
        .into_iter()
        .find(|v| v["fit_2d"].is_array())
        .unwrap();
    assert!(view["image"]
        .as_str()
        .unwrap()
        .starts_with("data:image/jpeg;base64,/9j/"));
    assert_eq!(view["fit_2d"].as_array().unwrap().len(), 23);
    let body = of_type(&messages, "body")[0];
    let k3 = body["keypoints_3d"].as_array().unwrap();
    assert_eq!(k3.len(), 23);
    assert!(body["mpjpe_mm"].as_f64().unwrap() < 200.0, "{body}");

    // Each figure says where it comes from, as the report does: the camera rates and the
    // latencies are measured on this host, the simulated device's figures modelled.
    let figures = of_type(&messages, "figures");
    let f = figures.last().unwrap();
    assert_eq!(f["cameras"].as_array().unwrap().len(), 4);
    for c in f["cameras"].as_array().unwrap() {
        assert_eq!(c["fps"]["provenance"], "measured");
        assert_eq!(c["dropped"]["provenance"], "measured");
    }
    for g in f["graphs"].as_array().unwrap() {
        assert_eq!(g["device_fps"]["provenance"], "modelled");
    }
    assert_eq!(f["switches_per_s"]["provenance"], "modelled");
    assert_eq!(f["npu_busy"]["provenance"], "modelled");
    assert!(f["npu_busy"]["value"].as_f64().unwrap() > 0.0);
    let stages: Vec<&str> = f["latency"]
        .as_array()
        .unwrap()
        .iter()
        .inspect(|l| assert_eq!(l["provenance"], "measured"))
        .filter_map(|l| l["stage"].as_str())
        .collect();
    assert!(stages.contains(&"end_to_end"), "{stages:?}");

    assert!(served.wait(Duration::from_secs(120)));
    let json = read_json(&report);
    let s = &json["serve"];
    assert_eq!(s["address"], format!("http://{addr}/"));
    assert!(s["clients_served"].as_u64().unwrap() >= 1, "{s}");
    assert!(s["frames_tapped"].as_u64().unwrap() > 0, "{s}");
    // Negative control of the next test: a client that reads is not dropped.
    assert_eq!(s["clients_dropped_slow"], 0, "{s}");
    assert_eq!(json["accounting_ok"], true);
    let stderr = served.stderr.lock().unwrap().clone();
    assert!(stderr.contains("dashboard: "), "{stderr}");
}

#[test]
fn a_browser_that_never_reads_is_dropped_and_the_pipeline_keeps_its_pace() {
    let _one = one_at_a_time();
    const SECS: f64 = 15.0;
    let dir = tempfile::tempdir().unwrap();
    // The same demo without the dashboard: the pace to keep.
    let plain = dir.path().join("plain.json");
    let status = run_demo(SECS, &plain, &[]).wait().unwrap();
    assert!(status.success());
    let baseline = processed(&read_json(&plain));

    let stuck_report = dir.path().join("stuck.json");
    let mut served = serve_demo(SECS, &stuck_report);
    // Connects, and never reads a byte. Its receive buffer is small, so the server's sends
    // stall within the run (a browser's own buffer takes seconds more of the stream).
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let addr: std::net::SocketAddr = served.addr.parse().unwrap();
    socket.connect(&addr.into()).unwrap();
    let stream: TcpStream = socket.into();
    let (stuck, _) = tungstenite::client(format!("ws://{}/ws", served.addr), stream)
        .expect("the WebSocket handshake");
    assert!(served.wait(Duration::from_secs(120)));
    drop(stuck);
    let json = read_json(&stuck_report);
    let s = &json["serve"];
    assert_eq!(s["clients_served"], 1, "{s}");
    assert_eq!(s["clients_dropped_slow"], 1, "{s}");
    assert!(s["messages_dropped_slow"].as_u64().unwrap() > 0, "{s}");
    let with_stuck = processed(&json);
    eprintln!("processed: {baseline} without the dashboard, {with_stuck} with a stuck client");
    // Two runs of the real-time demo on a shared machine differ by a few percent; a
    // pipeline that waited for the stuck client would have stopped within seconds.
    assert!(
        with_stuck as f64 >= 0.85 * baseline as f64,
        "processed {with_stuck} with a stuck client against {baseline} without the dashboard"
    );
    assert_eq!(json["accounting_ok"], true);
}

#[test]
fn an_address_that_cannot_be_bound_is_named() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = common::cli::hailo_edge()
        .args(["run", "--duration", "1", "--quiet", "--serve", &addr])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot serve the dashboard on {addr}")),
        "{stderr}"
    );
    let bad = common::cli::hailo_edge()
        .args(["run", "--serve", "not-an-address"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

/// The value of `attr` on every element of the DOM that has it.
fn attribute_values(dom: &str, attr: &str) -> Vec<i64> {
    let re = regex::Regex::new(&format!(r#"{attr}="(-?\d+)""#)).unwrap();
    re.captures_iter(dom)
        .filter_map(|c| c[1].parse().ok())
        .collect()
}

/// The state the page shows for its link to the rig.
fn link_state(dom: &str) -> String {
    let re = regex::Regex::new(r#"id="link" data-state="([a-z]+)""#).unwrap();
    re.captures(dom)
        .map(|c| c[1].to_string())
        .unwrap_or_default()
}

/// Four views that have each drawn a frame, and a 3D view that drew the skeleton.
fn live(dom: &str) -> bool {
    let frames = attribute_values(dom, "data-frames");
    frames.len() == 4
        && frames.iter().all(|&n| n > 0)
        && attribute_values(dom, "data-drawn-segments")
            .first()
            .is_some_and(|&n| n > 0)
}

#[test]
fn a_real_browser_shows_four_live_views_and_the_body_and_a_stopped_stream_as_disconnected() {
    let _one = one_at_a_time();
    let Some(chromium) = chromium::find() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let mut served = serve_demo(120.0, &report);
    let url = format!("http://{}/", served.addr);

    let mut page = Browser::open(&chromium, &url);
    let dom = page.dom_when(Duration::from_secs(120), live);
    let frames = attribute_values(&dom, "data-frames");
    assert_eq!(frames.len(), 4, "four views: {dom}");
    assert!(frames.iter().all(|&n| n > 0), "every view live: {frames:?}");
    let segments = attribute_values(&dom, "data-drawn-segments");
    assert!(segments.first().is_some_and(|&n| n >= 19), "{segments:?}");
    assert_eq!(attribute_values(&dom, "data-frusta").first(), Some(&4));
    assert_eq!(link_state(&dom), "live");
    let dom = page.dom_when(Duration::from_secs(10), |d| {
        d.contains("class=\"prov modelled\"") && attribute_values(d, "data-updates")[0] > 1
    });
    assert!(
        dom.contains("class=\"prov modelled\""),
        "modelled figures labelled"
    );
    assert!(
        dom.contains("class=\"prov measured\""),
        "measured figures labelled"
    );

    // A screenshot, kept under the target directory for a person to look at.
    let png = page.screenshot();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 20_000, "{} bytes", png.len());
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    std::fs::write(&shot, &png).unwrap();
    eprintln!("screenshot: {}", shot.display());

    // Negative controls. A page whose stream points at a closed port shows the rig as
    // disconnected and draws no view.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut other = Browser::open(&chromium, &format!("{url}?ws=ws://127.0.0.1:{port}/ws"));
    let dom = other.dom_when(Duration::from_secs(10), |d| link_state(d) == "disconnected");
    assert_eq!(link_state(&dom), "disconnected", "{dom}");
    assert!(attribute_values(&dom, "data-frames").is_empty());
    assert_eq!(attribute_values(&dom, "data-drawn-segments"), vec![0]);
    drop(other);
    // When the run stops (SIGTERM: it drains, reports and closes the stream), the open page
    // says the rig is disconnected.
    let pid = served.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(served.wait(Duration::from_secs(60)));
    let cut = page.dom_when(Duration::from_secs(15), |d| link_state(d) != "live");
    assert_eq!(link_state(&cut), "disconnected", "{cut}");
    let json = read_json(&report);
    assert!(json["serve"]["clients_served"].as_u64().unwrap() >= 1);
}
