//! Recordings written by hand to be hostile: a frame that does not decode, a
//! frame claiming a size whose byte count wraps 64 bits, a frame whose encoding
//! is not its channel's. Each is one bad frame, counted by the capture stage; the
//! camera goes on. A channel of another schema is refused at open, named.

use std::collections::BTreeMap;
use std::path::Path;

use foxglove::messages::RawImage;
use foxglove::Encode;

use super::*;

/// A one-camera recording of `format` at `width` x `height` (channel
/// metadata) whose messages are `bodies`, in order, on a channel of `schema`
/// (name, encoding).
fn write_as(
    path: &Path,
    format: &str,
    size: (&str, &str),
    bodies: &[Vec<u8>],
    schema: (&str, &str),
) {
    write_with(
        mcap::WriteOptions::new(),
        path,
        format,
        size,
        bodies,
        schema,
    );
}

/// [`write_as`], the file written with `options`.
fn write_with(
    options: mcap::WriteOptions,
    path: &Path,
    format: &str,
    size: (&str, &str),
    bodies: &[Vec<u8>],
    schema: (&str, &str),
) {
    let mut w = options
        .create(std::io::BufWriter::new(
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
    let data = RawImage::get_schema().unwrap().data;
    let id = w.add_schema(schema.0, "protobuf", &data).unwrap();
    let ch = w.add_channel(id, "/cam0/image", schema.1, &meta).unwrap();
    for (i, body) in bodies.iter().enumerate() {
        let header = mcap::records::MessageHeader {
            channel_id: ch,
            sequence: i as u32,
            log_time: i as u64,
            publish_time: i as u64,
        };
        w.write_to_known_channel(&header, body).unwrap();
    }
    w.finish().unwrap();
}

fn write(path: &Path, format: &str, size: (&str, &str), bodies: &[Vec<u8>]) {
    write_as(
        path,
        format,
        size,
        bodies,
        ("foxglove.RawImage", "protobuf"),
    );
}

/// A `foxglove.RawImage` of `width` x `height` in `encoding` holding `data`.
fn image(width: u32, height: u32, encoding: &str, data: &[u8]) -> Vec<u8> {
    let m = RawImage {
        width,
        height,
        encoding: encoding.into(),
        step: width,
        data: foxglove::bytes::Bytes::copy_from_slice(data),
        ..RawImage::default()
    };
    prost::Message::encode_to_vec(&m)
}

#[test]
fn hostile_frames_are_bad_frames_and_the_camera_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.mcap");
    let pixels = [0u8, 1, 2, 3, 4, 5, 6, 7];
    let good = image(4, 2, "mono8", &pixels);
    // 2^32 - 1 squared is 2^64 - 2^33 + 1: as usize it wraps nothing, but
    // times any channel count it wraps 64 bits, onto a small buffer.
    let wraps = image(u32::MAX, u32::MAX, "mono8", &pixels);
    let bodies = [
        vec![0xff, 0xff, 0xff, 0xff],
        wraps,
        image(100_000, 100_000, "mono8", &pixels),
        image(4, 2, "rgb8", &pixels),
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
    assert!(
        bad[3].contains("rgb8") && bad[3].contains("grey"),
        "{}",
        bad[3]
    );
    // The camera goes on with the next frame.
    let f = src
        .next_frame()
        .expect("the good frame after four bad ones");
    assert_eq!((f.width, f.height, &f.data[..]), (4, 2, &pixels[..]));
    assert!(matches!(src.next_frame(), Err(SourceError::EndOfStream)));
}

#[test]
fn a_channel_claiming_a_camera_past_the_bound_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.mcap");
    let huge = u32::MAX.to_string();
    write(
        &path,
        "rgb24",
        (&huge, &huge),
        &[image(4, 2, "rgb8", &[0; 24])],
    );
    let err = Recording::open(&path).err().expect("refused").to_string();
    assert!(
        err.contains("4294967295x4294967295") && err.contains("8192"),
        "{err}"
    );
}

#[test]
fn a_camera_channel_of_another_schema_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("json.mcap");
    let body = vec![image(4, 2, "mono8", &[0; 8])];
    write_as(
        &path,
        "grey",
        ("4", "2"),
        &body,
        ("foxglove.RawImage", "json"),
    );
    let err = Recording::open(&path).err().expect("refused").to_string();
    assert!(
        err.contains("json.mcap") && err.contains("/cam0/image") && err.contains("json messages"),
        "{err}"
    );
    // Negative control: the same message on a protobuf channel opens.
    write(&path, "grey", ("4", "2"), &body);
    assert!(Recording::open(&path).is_ok());
}

/// Found by the `mcap_replay` fuzz target: the header magic, then a record whose length is
/// 2^64 - 2. mcap's reader added it to its offset unchecked (a panic with overflow checks, a
/// wrapped offset without); the length is refused as too large, naming the file.
#[test]
fn a_record_claiming_a_length_near_two_to_the_64_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge_record.mcap");
    let bytes = [
        0x89, 0x4d, 0x43, 0x41, 0x50, 0x30, 0x0d, 0x0a, 0x86, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff,
    ];
    std::fs::write(&path, bytes).unwrap();
    let err = Recording::open(&path).err().expect("refused");
    assert!(err.to_string().contains("huge_record.mcap"), "{err}");
}

/// An attachment record too short to hold its CRC: mcap's `parse_record` indexes out of its
/// slice on it (found by the `mcap_replay` fuzz target). Records other than schemas,
/// channels and messages are skipped unparsed, so the file is read, not a panic.
#[test]
fn an_attachment_too_short_for_its_crc_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short_attachment.mcap");
    let mut bytes = vec![0x89, 0x4d, 0x43, 0x41, 0x50, 0x30, 0x0d, 0x0a];
    // Opcode 0x09 (attachment), a 32-byte body: two times, an empty name and media type,
    // a data length, and no room for the CRC.
    bytes.push(0x09);
    bytes.extend_from_slice(&32u64.to_le_bytes());
    bytes.extend_from_slice(&[0u8; 32]);
    std::fs::write(&path, &bytes).unwrap();
    let recording = Recording::open(&path).expect("read");
    assert_eq!(recording.cameras().count(), 0);
    let cut = recording.truncation().expect("the file has no footer");
    assert_eq!(cut.messages_read, 0);
}

/// Found by the `mcap_replay` fuzz target under overflow checks: a record inside an
/// uncompressed chunk claiming more bytes than the chunk has left. mcap's reader subtracts it
/// from the chunk's remaining count unchecked (a panic with overflow checks; without them it
/// reads on past the chunk). The file is read up to that chunk, and the rest is counted as cut.
#[test]
fn a_record_longer_than_its_chunk_cuts_the_recording_at_the_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overrun.mcap");
    let frame = image(4, 2, "mono8", &[7; 8]);
    let bodies = vec![frame; 3];
    // Uncompressed, a chunk a message.
    let options = mcap::WriteOptions::new()
        .compression(None)
        .chunk_size(Some(1));
    let schema = ("foxglove.RawImage", "protobuf");
    write_with(options, &path, "grey", ("4", "2"), &bodies, schema);
    // The control: written so, the file is whole.
    let whole = Recording::open(&path).expect("read");
    assert_eq!(whole.frame_count(CameraId(0)), 3);
    assert!(whole.truncation().is_none());
    assert!(super::framing::first_overrun_chunk(&std::fs::read(&path).unwrap()).is_none());
    // The last chunk's message claims its whole chunk, header and all.
    let mut bytes = std::fs::read(&path).unwrap();
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let chunk = super::framing::records(&bytes)
        .filter(|r| r.opcode == mcap::records::op::CHUNK)
        .last()
        .expect("a chunk")
        .at
        + 9;
    assert_eq!(&bytes[chunk + 28..chunk + 32], &[0; 4], "uncompressed");
    let records_len = u64_at(&bytes, chunk + 32);
    let message = chunk + 40;
    assert_eq!(bytes[message], mcap::records::op::MESSAGE);
    bytes[message + 1..message + 9].copy_from_slice(&records_len.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let recording = Recording::open(&path).expect("read up to the chunk");
    assert_eq!(recording.frame_count(CameraId(0)), 2);
    let cut = recording.truncation().expect("cut at the chunk");
    assert_eq!(cut.messages_read, 2);
    assert!(cut.error.contains("claims"), "{}", cut.error);
    assert!(cut.bytes_discarded >= records_len, "{cut:?}");
}

/// The fuzz target's own input, in short: a chunk the file ends inside, whose records are
/// 8 bytes, too few for one record's opcode and length. mcap's reader read a record header
/// past them and subtracted its 9 bytes from the 8.
#[test]
fn a_cut_chunk_whose_records_are_too_short_for_a_record_is_cut_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short_records.mcap");
    let mut bytes = vec![0x89, 0x4d, 0x43, 0x41, 0x50, 0x30, 0x0d, 0x0a];
    // A header record: an empty profile and library.
    bytes.push(mcap::records::op::HEADER);
    bytes.extend_from_slice(&8u64.to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    // A chunk claiming a megabyte: times, size and CRC, no compression, 8 bytes of records.
    bytes.push(mcap::records::op::CHUNK);
    bytes.extend_from_slice(&1_000_000u64.to_le_bytes());
    bytes.extend_from_slice(&[0; 28]);
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&8u64.to_le_bytes());
    bytes.extend_from_slice(&[mcap::records::op::MESSAGE, 1, 0, 0, 0, 0, 0, 0]);
    bytes.extend_from_slice(&[0; 40]);
    std::fs::write(&path, &bytes).unwrap();
    let recording = Recording::open(&path).expect("read up to the chunk");
    let cut = recording.truncation().expect("cut at the chunk");
    assert_eq!(cut.messages_read, 0);
    assert!(cut.error.contains("too few for a record"), "{}", cut.error);
}
