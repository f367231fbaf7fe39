//! Recordings written by hand to be hostile: a frame that does not decode, a
//! frame claiming a size whose byte count wraps 64 bits, a stamp past 2^64 ns.
//! Each is one bad frame, counted by the capture stage; the camera goes on.

use std::collections::BTreeMap;
use std::path::Path;

use super::*;

/// A one-camera recording of `format` at `width` x `height` (channel
/// metadata) whose messages are `bodies`, in order.
fn write(path: &Path, format: &str, size: (&str, &str), bodies: &[String]) {
    let mut w = mcap::Writer::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ))
    .unwrap();
    let meta = BTreeMap::from(
        [
            ("camera", "0"),
            ("name", "hostile"),
            ("format", format),
            ("width", size.0),
            ("height", size.1),
            ("fps", "30"),
            ("timestamp_source", "synthetic"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let schema = w
        .add_schema("foxglove.RawImage", "jsonschema", b"{}")
        .unwrap();
    let ch = w.add_channel(schema, "/cam0/image", "json", &meta).unwrap();
    for (i, body) in bodies.iter().enumerate() {
        let header = mcap::records::MessageHeader {
            channel_id: ch,
            sequence: i as u32,
            log_time: i as u64,
            publish_time: i as u64,
        };
        w.write_to_known_channel(&header, body.as_bytes()).unwrap();
    }
    w.finish().unwrap();
}

/// An image message of `width` x `height` with `data` (base64) stamped `sec`.
fn image(width: u64, height: u64, data: &str, sec: u64) -> String {
    format!(
        r#"{{"timestamp":{{"sec":{sec},"nsec":0}},"frame_id":"cam0","width":{width},"height":{height},"encoding":"mono8","step":{width},"data":"{data}","sequence":1,"timestamp_source":"synthetic"}}"#
    )
}

#[test]
fn hostile_frames_are_bad_frames_and_the_camera_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.mcap");
    let good = image(4, 2, "AAECAwQFBgc=", 1);
    // 2^32 - 1 squared is 2^64 - 2^33 + 1: as usize it wraps nothing, but
    // times any channel count it wraps 64 bits, onto a small buffer.
    let wraps = image(u64::from(u32::MAX), u64::from(u32::MAX), "AAECAwQFBgc=", 1);
    let bodies = [
        "{not json".to_string(),
        wraps,
        image(100_000, 100_000, "AAECAwQFBgc=", 1),
        image(4, 2, "AAECAwQFBgc=", u64::MAX),
        good,
    ];
    write(&path, "grey", ("4", "2"), &bodies);
    let rec = Recording::open(&path).unwrap();
    let mut src = rec.sources(Pacing::AsFastAsPossible).remove(0);
    let mut bad = Vec::new();
    for _ in 0..4 {
        match src.next_frame() {
            Err(e @ SourceError::BadFrame(_)) => {
                assert!(e.is_recoverable());
                bad.push(e.to_string());
            }
            other => panic!("expected a bad frame, got {:?}", other.map(|f| f.width)),
        }
    }
    assert!(
        bad[0].contains("frame 0 of") && bad[0].contains("hostile.mcap"),
        "{}",
        bad[0]
    );
    assert!(
        bad[1].contains("4294967295x4294967295") && bad[1].contains("8192"),
        "{}",
        bad[1]
    );
    assert!(bad[2].contains("100000x100000"), "{}", bad[2]);
    assert!(bad[3].contains("2^64"), "{}", bad[3]);
    // The camera goes on with the next frame.
    let f = src
        .next_frame()
        .expect("the good frame after four bad ones");
    assert_eq!(
        (f.width, f.height, &f.data[..]),
        (4, 2, &[0, 1, 2, 3, 4, 5, 6, 7][..])
    );
    assert!(matches!(src.next_frame(), Err(SourceError::EndOfStream)));
}

#[test]
fn a_channel_claiming_a_camera_past_the_bound_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.mcap");
    let huge = u32::MAX.to_string();
    write(&path, "rgb24", (&huge, &huge), &[image(4, 2, "AAAA", 0)]);
    let err = Recording::open(&path).err().expect("refused").to_string();
    assert!(
        err.contains("4294967295x4294967295") && err.contains("8192"),
        "{err}"
    );
}
