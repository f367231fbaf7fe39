//! `hailo-edge run --record`: a recording Foxglove opens as it is (well-known schemas,
//! zstd chunks, wall-clock log times with the capture clock kept), every captured frame
//! when asked, and `run --replay` with the calibration read from the file.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::cli::{admitted, hailo_edge, read_json, succeed};
use foxglove::messages::{FrameTransforms, ImageAnnotations, SceneUpdate};
use hailo_edge::camera::record::{RecordedCamera, Recorder};
use hailo_edge::camera::{CameraId, Frame, PixelFormat, SourceInfo, TimestampSource};
use prost::Message as _;

/// Schema name and message encoding of every channel, by topic.
fn channels(bytes: &[u8]) -> BTreeMap<String, (String, String)> {
    let summary = mcap::Summary::read(bytes).unwrap().expect("a summary");
    summary
        .channels
        .values()
        .map(|c| {
            let schema = c.schema.as_ref().map_or(String::new(), |s| s.name.clone());
            (c.topic.clone(), (schema, c.message_encoding.clone()))
        })
        .collect()
}

/// Frames a run report's cameras captured.
fn captured(report: &serde_json::Value) -> u64 {
    report["cameras"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["frames"]["captured"].as_u64().unwrap())
        .sum()
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Runs the demo for 2 s with `--record` (and `extra`); returns the recording's path
/// and the report.
fn record_demo(dir: &Path, extra: &[&str]) -> (std::path::PathBuf, serde_json::Value) {
    let mcap_path = dir.join("run.mcap");
    let report = dir.join("report.json");
    succeed(
        hailo_edge()
            .args(["run", "--duration", "2", "-q", "--exit-zero", "--report"])
            .arg(&report)
            .arg("--record")
            .arg(&mcap_path)
            .args(extra),
    );
    (mcap_path, read_json(&report))
}

#[test]
fn a_demo_recording_carries_foxglove_schemas_on_the_calendar() {
    let dir = tempfile::tempdir().unwrap();
    let (mcap_path, json) = record_demo(dir.path(), &[]);
    let bytes = std::fs::read(&mcap_path).unwrap();
    let ch = channels(&bytes);
    let want = |topic: &str, schema: &str, encoding: &str| {
        assert_eq!(
            ch.get(topic),
            Some(&(schema.to_string(), encoding.to_string())),
            "{topic}: {ch:?}"
        );
    };
    for cam in 0..4 {
        want(&format!("/cam{cam}/image"), "foxglove.RawImage", "protobuf");
        want(
            &format!("/cam{cam}/calibration"),
            "foxglove.CameraCalibration",
            "protobuf",
        );
        want(
            &format!("/cam{cam}/keypoints"),
            "foxglove.ImageAnnotations",
            "protobuf",
        );
    }
    want("/body", "foxglove.SceneUpdate", "protobuf");
    want("/tf", "foxglove.FrameTransforms", "protobuf");
    want("/results", "hailo_edge.FrameResult", "json");
    assert_eq!(ch.len(), 4 * 3 + 3, "{ch:?}");
    let summary = mcap::Summary::read(&bytes).unwrap().unwrap();
    assert!(!summary.chunk_indexes.is_empty());
    assert!(summary
        .chunk_indexes
        .iter()
        .all(|c| c.compression == "zstd"));

    let (mut bodies, mut annotations, mut transforms, mut protobuf) = (0, 0, 0, 0u64);
    let now = now_ns();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        // Wall-clock log times (within a minute of now), the capture clock in
        // publish_time (CLOCK_MONOTONIC: the machine's uptime, far from the calendar).
        assert!(now.abs_diff(m.log_time) < 60_000_000_000, "{}", m.log_time);
        assert!(m.publish_time < m.log_time / 2, "{}", m.publish_time);
        if m.channel.message_encoding == "protobuf" {
            protobuf += 1;
        }
        match m.channel.topic.as_str() {
            "/body" => {
                let s = SceneUpdate::decode(&m.data[..]).unwrap();
                let e = &s.entities[0];
                assert_eq!((e.frame_id.as_str(), e.id.as_str()), ("world", "body"));
                assert_eq!(e.spheres.len(), 23);
                // Every bone of the named skeleton: ANNY names all 23 keypoints.
                assert_eq!(
                    e.lines[0].points.len(),
                    2 * hailo_edge::decode::keypoints::BONES.len()
                );
                bodies += 1;
            }
            "/tf" => {
                let t = FrameTransforms::decode(&m.data[..]).unwrap();
                assert_eq!(t.transforms.len(), 4);
                transforms += 1;
            }
            t if t.ends_with("/keypoints") => {
                let a = ImageAnnotations::decode(&m.data[..]).unwrap();
                // The keypoints the fit used: the demo's synthetic truth, all 23 of ANNY's.
                assert_eq!(a.points[0].points.len(), 23);
                annotations += 1;
            }
            _ => {}
        }
    }
    let fits = json["fit"]["fits"].as_u64().unwrap();
    assert!(bodies > 0 && bodies <= fits, "{bodies} bodies, {fits} fits");
    assert!(
        annotations >= bodies,
        "{annotations} annotations, {bodies} bodies"
    );
    assert!(transforms >= 1);
    python_decodes_every_message(&mcap_path, protobuf);
}

/// Every message decodes with the schema the file embeds, in the Python `mcap`
/// reader with `mcap-protobuf-support` (skipped without it, except under CI).
fn python_decodes_every_message(path: &Path, messages: u64) {
    let script = "import sys\n\
        from mcap.reader import make_reader\n\
        from mcap_protobuf.decoder import DecoderFactory\n\
        n = 0\n\
        with open(sys.argv[1], 'rb') as f:\n\
        \x20   r = make_reader(f, decoder_factories=[DecoderFactory()])\n\
        \x20   pb = [c.topic for c in r.get_summary().channels.values() if c.message_encoding == 'protobuf']\n\
        \x20   for _s, c, _m, d in r.iter_decoded_messages(topics=pb):\n\
        \x20       assert d is not None, c.topic\n\
        \x20       n += 1\n\
        print(n)\n";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output();
    let missing = |o: &std::process::Output| {
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("No module named")
    };
    let Some(out) = out.ok().filter(|o| !missing(o)) else {
        assert!(
            std::env::var("CI").is_err(),
            "CI: python3 with mcap-protobuf-support is required"
        );
        eprintln!("skipping the Python decode: python3 with mcap-protobuf-support not found");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let n: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(n, messages);
}

#[test]
fn recording_every_captured_frame_adds_up_with_what_was_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (mcap_path, json) = record_demo(dir.path(), &["--record-frames", "all"]);
    assert_eq!(json["accounting_ok"], true);
    let captured = captured(&json);
    let r = &json["recorded"];
    assert_eq!(r["which_frames"], "all");
    let (frames, not) = (
        r["frames"].as_u64().unwrap(),
        r["frames_not_recorded"].as_u64().unwrap(),
    );
    assert_eq!(frames + not, captured, "{r}");
    // More than the NPU stage takes: the demo's cameras drop at their queues.
    let admitted = admitted(&json);
    assert!(frames > admitted, "{frames} recorded, {admitted} admitted");
    let images = mcap::MessageStream::new(&std::fs::read(&mcap_path).unwrap())
        .unwrap()
        .filter(|m| m.as_ref().unwrap().channel.topic.ends_with("/image"))
        .count() as u64;
    assert_eq!(images, frames);
}

/// A recording of the demo's four cameras placed around `root` (not where the demo
/// puts them), `frames` instants at 120 fps.
fn recording_elsewhere(path: &Path, frames: u64) -> Vec<hailo_edge::geom::Camera> {
    let cams = hailo_edge::scene::demo_rig_at(nalgebra::Point3::new(1.0, 2.0, 0.0)).unwrap();
    let recorded: Vec<RecordedCamera> = cams
        .iter()
        .enumerate()
        .map(|(i, c)| RecordedCamera {
            info: SourceInfo {
                camera: CameraId(i as u32),
                name: format!("rec{i}"),
                format: PixelFormat::Yuyv,
                width: c.width,
                height: c.height,
                fps: 120.0,
                timestamp_source: TimestampSource::Synthetic,
            },
            calibration: Some(*c),
        })
        .collect();
    let mut rec = Recorder::create(path, &recorded).unwrap();
    for k in 0..frames {
        for (i, c) in cams.iter().enumerate() {
            let len = (c.width * c.height * 2) as usize;
            rec.write(&Frame {
                capture_ns: 1_000_000_000 + k * 8_333_333,
                sequence: k,
                ..Frame::still(
                    CameraId(i as u32),
                    PixelFormat::Yuyv,
                    c.width,
                    c.height,
                    vec![(k as u8).wrapping_mul(7); len],
                )
            })
            .unwrap();
        }
    }
    rec.finish().unwrap();
    cams.to_vec()
}

/// The calibrations of a recording's `hailo-edge.rig` record.
fn calibrations_of(path: &Path) -> BTreeMap<u32, Option<hailo_edge::geom::Camera>> {
    hailo_edge::camera::replay::recorded_calibrations(path).unwrap()
}

#[test]
fn a_recording_replays_through_run_with_its_own_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.mcap");
    let cams = recording_elsewhere(&input, 60);
    let output = dir.path().join("out.mcap");
    let report = dir.path().join("report.json");
    succeed(
        hailo_edge()
            .args(["run", "--duration", "3", "-q", "--exit-zero", "--replay"])
            .arg(&input)
            .arg("--report")
            .arg(&report)
            .arg("--record")
            .arg(&output),
    );
    let json = read_json(&report);
    assert_eq!(json["accounting_ok"], true);
    let names: Vec<&str> = json["cameras"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rec0", "rec1", "rec2", "rec3"]);
    let captured = captured(&json);
    assert_eq!(captured, 4 * 60, "every recorded frame replays");
    // The run used (and recorded again) the file's calibrations, not the demo's.
    let used = calibrations_of(&output);
    for (i, c) in cams.iter().enumerate() {
        let u = used[&(i as u32)].expect("a calibration");
        assert!(same_place(&u, c), "camera {i}: {u:?} vs {c:?}");
    }
    // Negative control: the demo's own placement is not the recording's.
    let demo = hailo_edge::scene::demo_rig();
    assert!(!same_place(&demo[0], &used[&0].unwrap()));
}

/// Whether two calibrations agree to a JSON round trip's rounding.
fn same_place(a: &hailo_edge::geom::Camera, b: &hailo_edge::geom::Camera) -> bool {
    (a.width, a.height) == (b.width, b.height)
        && (a.fx - b.fx).abs() < 1e-9
        && (a.cx - b.cx).abs() < 1e-9
        && (a.rotation - b.rotation).norm() < 1e-12
        && (a.translation - b.translation).norm() < 1e-12
}
