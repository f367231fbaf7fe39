//! `hailo-edge run --foxglove`: the recording's channels, live, over the Foxglove
//! WebSocket protocol, read by a plain WebSocket client speaking that protocol.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use foxglove::messages::{RawImage, SceneUpdate};
use prost::Message as _;
use serde_json::Value;
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

/// `hailo-edge run --foxglove 127.0.0.1:0` on the demo for `seconds`; returns the child
/// and the port it reports.
fn start(seconds: &str) -> (Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hailo-edge"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_LOG", "info")
        .args(["run", "--no-status", "--exit-zero", "--duration", seconds])
        .args(["--foxglove", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if let Some(rest) = line.split("ws://127.0.0.1:").nth(1) {
                let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let _ = tx.send(port.parse::<u16>().unwrap());
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the run names its Foxglove port");
    (child, port)
}

fn connect(port: u16) -> WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>> {
    let mut req = format!("ws://127.0.0.1:{port}")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("sec-websocket-protocol", "foxglove.sdk.v1".parse().unwrap());
    let (ws, _) = tungstenite::connect(req).unwrap();
    ws
}

/// Reads text messages until the channels are advertised; returns them.
fn advertised(ws: &mut WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>) -> Vec<Value> {
    let mut channels = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        let msg = ws
            .read()
            .unwrap_or_else(|e| panic!("{e} after advertisements of {channels:?}"));
        if let Message::Text(t) = msg {
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["op"] == "advertise" {
                channels.extend(v["channels"].as_array().unwrap().iter().cloned());
                if channels.len() >= 4 * 3 + 2 {
                    break;
                }
            }
        }
    }
    channels
}

#[test]
fn a_client_sees_the_channels_with_foxglove_schemas_and_gets_images_and_bodies() {
    // Long enough for a loaded machine; the child is stopped once the client has seen enough.
    let (mut child, port) = start("60");
    let mut ws = connect(port);
    let channels = advertised(&mut ws);
    let find = |topic: &str| {
        channels
            .iter()
            .find(|c| c["topic"] == topic)
            .unwrap_or_else(|| panic!("{topic} not advertised: {channels:?}"))
    };
    for (topic, schema) in [
        ("/cam0/image", "foxglove.RawImage"),
        ("/cam3/calibration", "foxglove.CameraCalibration"),
        ("/cam2/keypoints", "foxglove.ImageAnnotations"),
        ("/body", "foxglove.SceneUpdate"),
        ("/tf", "foxglove.FrameTransforms"),
    ] {
        let c = find(topic);
        assert_eq!(
            (c["schemaName"].as_str(), c["encoding"].as_str()),
            (Some(schema), Some("protobuf")),
            "{c}"
        );
    }
    let sub = serde_json::json!({"op": "subscribe", "subscriptions": [
        {"id": 1, "channelId": find("/cam3/image")["id"]},
        {"id": 2, "channelId": find("/body")["id"]},
    ]});
    ws.send(Message::Text(sub.to_string().into())).unwrap();
    let (mut images, mut bodies) = (Vec::new(), 0);
    let t0 = Instant::now();
    while (images.len() < 3 || bodies < 3) && t0.elapsed() < Duration::from_secs(30) {
        let msg = ws
            .read()
            .unwrap_or_else(|e| panic!("{e} after {} images and {bodies} bodies", images.len()));
        let Message::Binary(b) = msg else {
            continue;
        };
        assert_eq!(b[0], 1, "message data");
        let sub = u32::from_le_bytes(b[1..5].try_into().unwrap());
        let log_time = u64::from_le_bytes(b[5..13].try_into().unwrap());
        match sub {
            1 => {
                let m = RawImage::decode(&b[13..]).unwrap();
                assert_eq!((m.width, m.height, m.encoding.as_str()), (432, 432, "yuyv"));
                assert_eq!(m.data.len(), 432 * 432 * 2);
                images.push(log_time);
            }
            2 => {
                let s = SceneUpdate::decode(&b[13..]).unwrap();
                assert_eq!(s.entities[0].spheres.len(), 23);
                bodies += 1;
            }
            other => panic!("subscription {other}"),
        }
    }
    assert!(
        images.len() >= 3 && bodies >= 3,
        "{} images, {bodies} bodies",
        images.len()
    );
    // Images are paced at 10 a second per camera, not the camera's 120 fps.
    let gaps: Vec<u64> = images.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|&g| g >= 90_000_000), "{gaps:?}");
    // Wall-clock times.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    assert!(now.abs_diff(images[0]) < 60_000_000_000);
    drop(ws);
    // SIGINT drains and reports, as Ctrl-C does.
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_client_that_never_reads_does_not_hold_the_run() {
    let (mut child, port) = start("4");
    let mut ws = connect(port);
    let channels = advertised(&mut ws);
    // Subscribes to every channel, then never reads again.
    let subs: Vec<Value> = channels
        .iter()
        .enumerate()
        .map(|(i, c)| serde_json::json!({"id": i, "channelId": c["id"]}))
        .collect();
    ws.send(Message::Text(
        serde_json::json!({"op": "subscribe", "subscriptions": subs})
            .to_string()
            .into(),
    ))
    .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the run did not end with a stuck client"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success());
    drop(ws);
}
