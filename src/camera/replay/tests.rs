use super::*;
use crate::camera::frame::{PixelFormat, TimestampSource};
use crate::camera::pool::PooledBuffer;
use crate::camera::record::{RecordedCamera, Recorder};
use crate::geom::{Camera, Distortion};
use nalgebra::{Point3, Vector3};

struct Expect {
    camera: u32,
    format: PixelFormat,
    w: u32,
    h: u32,
}

const CAMS: [Expect; 4] = [
    Expect {
        camera: 0,
        format: PixelFormat::Yuyv,
        w: 64,
        h: 48,
    },
    Expect {
        camera: 1,
        format: PixelFormat::Nv12,
        w: 32,
        h: 16,
    },
    Expect {
        camera: 2,
        format: PixelFormat::Grey,
        w: 40,
        h: 30,
    },
    Expect {
        camera: 3,
        format: PixelFormat::Mjpeg,
        w: 16,
        h: 16,
    },
];

fn info(e: &Expect) -> SourceInfo {
    SourceInfo {
        camera: CameraId(e.camera),
        name: format!("test{}", e.camera),
        format: e.format,
        width: e.w,
        height: e.h,
        fps: 100.0,
        timestamp_source: TimestampSource::DriverStartOfExposure,
    }
}

/// Frames of all cameras, 10 ms apart, with a sequence gap, in capture order.
fn frames() -> Vec<Frame> {
    let mut out = Vec::new();
    for k in 0..12u64 {
        for e in &CAMS {
            if e.camera == 1 && k == 5 {
                continue; // a driver drop
            }
            let len = e.format.frame_len(e.w, e.h).unwrap_or(200 + k as usize);
            let data: Vec<u8> = (0..len)
                .map(|i| (i as u64 * 31 + k * 7 + u64::from(e.camera)) as u8)
                .collect();
            out.push(Frame {
                camera: CameraId(e.camera),
                format: e.format,
                width: e.w,
                height: e.h,
                capture_ns: 5_000_000_000 + k * 10_000_000 + u64::from(e.camera) * 1_234,
                sequence: 1000 + k,
                timestamp_source: TimestampSource::DriverStartOfExposure,
                data: PooledBuffer::detached(data),
                truth: None,
            });
        }
    }
    out
}

fn calibration() -> Camera {
    let mut c = Camera::look_at(
        Point3::new(2.0, 1.0, 1.5),
        Point3::new(0.0, 0.0, 1.0),
        Vector3::z(),
        70.0,
        (64, 48),
        Distortion::default(),
    )
    .unwrap();
    c.distortion.k1 = -0.1;
    c
}

fn record(path: &Path) -> Vec<Frame> {
    record_offset(path).0
}

/// Records the test frames in 16 KiB chunks (so a cut file keeps whole chunks);
/// returns them and the recorder's wall-clock offset.
fn record_offset(path: &Path) -> (Vec<Frame>, i128) {
    let cams: Vec<RecordedCamera> = CAMS
        .iter()
        .map(|e| RecordedCamera {
            info: info(e),
            calibration: (e.camera == 0).then(calibration),
        })
        .collect();
    let mut rec = Recorder::create_chunked(path, &cams, false, 16 << 10).unwrap();
    let offset = rec.wall_clock().offset_ns();
    let frames = frames();
    for f in &frames {
        rec.write(f).unwrap();
    }
    assert_eq!(rec.finish().unwrap(), frames.len() as u64);
    (frames, offset)
}

#[test]
fn record_then_replay_gives_identical_frames_and_stamps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("four.mcap");
    let (written, offset) = record_offset(&path);
    let rec = Recording::open(&path).unwrap();
    let infos: Vec<SourceInfo> = rec.cameras().cloned().collect();
    assert_eq!(infos, CAMS.iter().map(info).collect::<Vec<_>>());
    assert_eq!(rec.calibration(CameraId(0)), Some(calibration()));
    assert_eq!(rec.calibration(CameraId(1)), None);
    let mut replayed = Vec::new();
    for mut src in rec.sources(Pacing::AsFastAsPossible) {
        loop {
            match src.next_frame() {
                Ok(f) => replayed.push(f),
                Err(SourceError::EndOfStream) => break,
                Err(e) => panic!("{e}"),
            }
        }
    }
    replayed.sort_by_key(|f| (f.capture_ns, f.camera));
    assert_eq!(replayed.len(), written.len());
    for (a, b) in written.iter().zip(&replayed) {
        assert_eq!(
            (a.camera, a.format, a.width, a.height),
            (b.camera, b.format, b.width, b.height)
        );
        assert_eq!(
            (a.capture_ns, a.sequence, a.timestamp_source),
            (b.capture_ns, b.sequence, b.timestamp_source)
        );
        assert_eq!(&a.data[..], &b.data[..], "{} seq {}", a.camera, a.sequence);
    }
    check_with_python(&path, &written, offset);
}

#[test]
fn original_pacing_keeps_recorded_timing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("paced.mcap");
    record(&path);
    let rec = Recording::open(&path).unwrap();
    let mut src = rec.sources(Pacing::Original).remove(0);
    let t0 = Instant::now();
    let mut n = 0;
    while src.next_frame().is_ok() {
        n += 1;
    }
    let took = t0.elapsed();
    assert_eq!(n, 12);
    // 12 frames 10 ms apart: the last is due 110 ms after the first.
    assert!(took >= Duration::from_millis(105), "{took:?}");
    assert!(took < Duration::from_millis(1000), "{took:?}");
}

/// Every frame a source gives until it ends, and the error it ended with
/// besides the end of the stream.
fn drain_source(src: &mut ReplaySource) -> (usize, Option<SourceError>) {
    let mut frames = 0;
    let mut error = None;
    loop {
        match src.next_frame() {
            Ok(_) => frames += 1,
            Err(SourceError::EndOfStream) => return (frames, error),
            Err(e) => error = Some(e),
        }
    }
}

/// Records into `path`, then keeps the first `keep(len)` bytes of the file;
/// returns the frames written.
fn record_cut(path: &Path, keep: impl Fn(usize) -> usize) -> Vec<Frame> {
    let written = record(path);
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(path, &bytes[..keep(bytes.len())]).unwrap();
    written
}

#[test]
fn a_recording_missing_its_last_byte_replays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.mcap");
    let written = record_cut(&path, |len| len - 1);
    let rec = Recording::open(&path).unwrap();
    let replayed: usize = rec
        .sources(Pacing::AsFastAsPossible)
        .iter_mut()
        .map(|s| drain_source(s).0)
        .sum();
    assert_eq!(replayed, written.len());
}

#[test]
fn a_recording_cut_mid_record_replays_to_its_last_whole_message_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.mcap");
    // Cut inside the data, well before the summary.
    let written = record_cut(&path, |len| len * 6 / 10);
    let cut = std::fs::metadata(&path).unwrap().len();
    let rec = Recording::open(&path).unwrap();
    let t = rec
        .truncation()
        .expect("a cut file is reported as cut")
        .clone();
    assert!(
        t.bytes_discarded > 0 && t.bytes_discarded < cut as u64,
        "{t:?}"
    );
    let mut replayed = 0;
    for mut src in rec.sources(Pacing::AsFastAsPossible) {
        let (frames, error) = drain_source(&mut src);
        replayed += frames;
        let error = error.expect("each camera's end names the cut").to_string();
        assert!(
            error.contains("cut.mcap") && error.contains("bytes"),
            "{error}"
        );
    }
    assert!(replayed > 0 && replayed < written.len(), "{replayed}");
    // A whole file reports no cut.
    std::fs::remove_file(&path).unwrap();
    record(&path);
    assert!(Recording::open(&path).unwrap().truncation().is_none());
}

#[test]
fn a_damaged_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.mcap");
    std::fs::write(&path, b"not an mcap file at all").unwrap();
    let e = Recording::open(&path).err().unwrap().to_string();
    assert!(e.contains("bad.mcap"), "{e}");
}

/// Reads the file back with the Python `mcap` package (tools/check_mcap.py):
/// an independent reader. Skipped when python3 or the package is missing,
/// except under CI, where that is a failure.
fn check_with_python(path: &Path, written: &[Frame], wall_offset_ns: i128) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/check_mcap.py");
    let have = std::process::Command::new("python3")
        .args(["-c", "import mcap, mcap_protobuf"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        assert!(
            std::env::var("CI").is_err(),
            "CI: python3 with `mcap` and `mcap-protobuf-support` is required \
             (pip install mcap mcap-protobuf-support)"
        );
        eprintln!("skipping the Python MCAP check: python3 with `mcap-protobuf-support` not found");
        return;
    }
    let mut expect = std::collections::BTreeMap::<String, Vec<(u64, u64, usize)>>::new();
    for f in written {
        expect
            .entry(format!("/{}/image", f.camera))
            .or_default()
            .push((f.capture_ns, f.sequence, f.data.len()));
    }
    let expect_path = path.with_extension("expect.json");
    // Writes `expect` beside the recording and runs the script against it.
    let check = |frames: &std::collections::BTreeMap<String, Vec<(u64, u64, usize)>>,
                 offset: i128| {
        let expect = serde_json::json!({
            "frames": frames,
            "schemas": {
                "/cam0/image": "foxglove.RawImage",
                "/cam3/image": "foxglove.CompressedImage",
                "/cam0/calibration": "foxglove.CameraCalibration",
            },
            "wall_offset_ns": offset as i64,
            "wall_tolerance_ns": 0,
        });
        std::fs::write(&expect_path, serde_json::to_vec(&expect).unwrap()).unwrap();
        std::process::Command::new("python3")
            .arg(&script)
            .arg(path)
            .arg(&expect_path)
            .output()
            .unwrap()
    };
    let out = check(&expect, wall_offset_ns);
    assert!(
        out.status.success(),
        "check_mcap.py failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Negative controls: the script notices log times that are not the capture
    // times moved by the offset, and one missing frame.
    let out = check(&expect, wall_offset_ns + 1);
    assert!(
        !out.status.success(),
        "check_mcap.py accepted log times off by 1 ns"
    );
    if let Some(v) = expect.get_mut("/cam1/image") {
        v.pop();
    }
    let out = check(&expect, wall_offset_ns);
    assert!(
        !out.status.success(),
        "check_mcap.py accepted a wrong frame count"
    );
}

#[test]
fn the_calibrations_are_read_from_the_start_of_a_recording() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cal.mcap");
    record(&path);
    let cals = recorded_calibrations(&path).unwrap();
    assert_eq!(cals.len(), CAMS.len());
    assert_eq!(cals[&0], Some(calibration()));
    assert_eq!(cals[&1], None);
    // Negative control: a file that is MCAP but not a hailo-edge recording.
    let other = dir.path().join("other.mcap");
    let mut w = mcap::Writer::new(std::io::BufWriter::new(
        std::fs::File::create(&other).unwrap(),
    ))
    .unwrap();
    w.finish().unwrap();
    drop(w);
    let e = recorded_calibrations(&other).unwrap_err().to_string();
    assert!(
        e.contains("other.mcap") && e.contains("hailo-edge.rig"),
        "{e}"
    );
}

#[test]
fn sequences_unwrap_past_32_bits() {
    assert_eq!(unwrap_sequence(5, 6), 6);
    assert_eq!(unwrap_sequence(0xffff_fffe, 1), 0x1_0000_0001);
    assert_eq!(unwrap_sequence(0x1_0000_0001, 2), 0x1_0000_0002);
    // A small step back (reordering) is not a wrap.
    assert_eq!(unwrap_sequence(10, 8), 8);
}
