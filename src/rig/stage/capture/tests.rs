use super::*;
use crate::camera::fault::{CameraFault, FaultySource};
use crate::camera::frame::PixelFormat;
use crate::camera::synthetic::{SyntheticCamera, SyntheticSource};
use crate::geom::{Camera, Distortion};
use crate::preprocess::{InputSpec, PreprocessConfig, Preprocessor};
use crate::scene::MarkerScene;
use nalgebra::{Point3, Vector3};

fn small_cam(i: u32) -> SyntheticCamera {
    SyntheticCamera {
        camera: CameraId(i),
        calibration: Camera::look_at(
            Point3::new(3.0, 0.0, 0.0),
            Point3::origin(),
            Vector3::z(),
            60.0,
            (64, 48),
            Distortion::default(),
        )
        .unwrap(),
        format: PixelFormat::Yuyv,
        fps: 200.0,
        offset_ns: 0,
    }
}

fn small_rig(n: u32) -> Vec<SyntheticSource> {
    let cams: Vec<SyntheticCamera> = (0..n).map(small_cam).collect();
    SyntheticSource::rig(Arc::new(MarkerScene::default()), &cams, true).unwrap()
}

fn fast_backoff() -> Backoff {
    Backoff {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(40),
        factor: 2.0,
    }
}

#[test]
fn backoff_grows_to_its_cap() {
    let b = Backoff::default();
    assert_eq!(b.delay(0), Duration::from_millis(100));
    assert_eq!(b.delay(3), Duration::from_millis(800));
    assert_eq!(b.delay(30), Duration::from_secs(5));
}

#[test]
fn an_unplugged_camera_retries_while_the_others_go_on() {
    let mut sources = small_rig(3).into_iter();
    let faulty = FaultySource::new(
        sources.next().unwrap(),
        vec![
            CameraFault::WrongSize { at: 3 },
            CameraFault::CorruptJpeg { at: 5 },
            CameraFault::Unplug {
                at: 10,
                failed_reconnects: 3,
            },
        ],
    );
    let mut all: Vec<Box<dyn Source>> = vec![Box::new(faulty)];
    all.extend(sources.map(|s| Box::new(s) as Box<dyn Source>));
    let (tx, rx) = crossbeam_channel::bounded(64);
    let threads: Vec<CaptureThread> = all
        .into_iter()
        .map(|s| CaptureThread::spawn(s, tx.clone(), rx.clone(), fast_backoff()).unwrap())
        .collect();
    let mut pre = Preprocessor::new(InputSpec::rgb(32, 32), PreprocessConfig::default()).unwrap();
    let mut per_cam = [0u64; 3];
    let mut saw_reconnecting = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    // Consume until camera 0 is back and has delivered 10 more frames.
    while std::time::Instant::now() < deadline {
        let Ok(frame) = rx.recv_timeout(Duration::from_millis(200)) else {
            continue;
        };
        let cam = frame.camera.0 as usize;
        if let Err(e) = pre.run(&frame) {
            threads[cam].status.record_bad_frame(&e);
            continue;
        }
        per_cam[cam] += 1;
        saw_reconnecting |= threads[0].status.snapshot().state == CameraState::Reconnecting;
        if threads[0].status.snapshot().reconnects == 1 && per_cam[0] >= 18 {
            break;
        }
    }
    let s0 = threads[0].status.snapshot();
    assert!(
        saw_reconnecting,
        "status never showed the camera reconnecting"
    );
    assert_eq!((s0.disconnects, s0.reconnects), (1, 1), "{s0:?}");
    // One wrong-size frame from the source, one corrupt MJPEG from decoding.
    assert_eq!(s0.bad_frames, 2, "{s0:?}");
    assert!(
        per_cam[0] >= 18,
        "camera 0 delivered {} good frames",
        per_cam[0]
    );
    // While camera 0 was away (>= 10+20+40+40 ms backoff) the others went on.
    assert!(
        per_cam[1] > per_cam[0] && per_cam[2] > per_cam[0],
        "{per_cam:?}"
    );
    for t in threads {
        let s = t.status.snapshot();
        assert!(s.last_error.is_none() || t.camera == CameraId(0), "{s:?}");
        t.stop();
    }
}

#[test]
fn a_slow_consumer_drops_oldest_and_counts_it() {
    let src = small_rig(1).remove(0);
    let (tx, rx) = crossbeam_channel::bounded(2);
    let t = CaptureThread::spawn(Box::new(src), tx, rx.clone(), fast_backoff()).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let status = Arc::clone(&t.status);
    t.stop();
    let s = status.snapshot();
    // 200 fps for 150 ms into a queue of 2 nobody reads.
    assert!(s.queue_drops >= 10, "{s:?}");
    assert_eq!(s.frames, s.queue_drops + rx.len() as u64, "{s:?}");
    // The newest frames are kept.
    let newest = rx.try_recv().unwrap().sequence;
    assert!(newest >= s.frames - 3, "kept {newest} of {}", s.frames);
}

#[test]
fn a_waiting_capture_loses_nothing_and_still_stops_at_once() {
    // A queue as above, but the capture waits for room: no frame is
    // dropped however slow the reader, frames arrive in order, and a stop while waiting
    // ends the thread at once with the frame it held counted as dropped.
    // A source paced by no clock, as on a virtual clock.
    let cams = [small_cam(0)];
    let src = SyntheticSource::rig(Arc::new(MarkerScene::default()), &cams, false)
        .unwrap()
        .remove(0);
    let (tx, rx) = crossbeam_channel::bounded(2);
    let t = CaptureThread::spawn_with(
        Box::new(src),
        tx,
        rx.clone(),
        fast_backoff(),
        QueuePolicy::Wait,
    )
    .unwrap();
    let mut seen = Vec::new();
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(20));
        seen.push(rx.recv_timeout(Duration::from_secs(5)).unwrap().sequence);
    }
    assert_eq!(seen, (0..6).collect::<Vec<_>>(), "frames skipped");
    std::thread::sleep(Duration::from_millis(50));
    let status = Arc::clone(&t.status);
    let took = time_stop(t, Duration::from_secs(5)).expect("the stop waited for room");
    assert!(took < Duration::from_secs(1), "the stop took {took:?}");
    let s = status.snapshot();
    assert!(s.queue_drops <= 1, "{s:?}");
    assert_eq!(s.frames, 6 + rx.len() as u64 + s.queue_drops, "{s:?}");
}

/// Stops `thread` from another thread and returns how long the stop took,
/// or `None` when it had not returned within `limit` (the capture thread is
/// then left behind, so the test fails instead of hanging).
fn time_stop(thread: CaptureThread, limit: Duration) -> Option<Duration> {
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let t = std::time::Instant::now();
        thread.stop();
        let _ = done_tx.send(t.elapsed());
    });
    done_rx.recv_timeout(limit).ok()
}

/// Captures from `source` until its first frame, then stops the capture
/// thread and asserts the stop took less than a second.
fn stop_after_the_first_frame(source: Box<dyn Source>) -> Arc<CameraStatus> {
    let (tx, rx) = crossbeam_channel::bounded(2);
    let t = CaptureThread::spawn(source, tx, rx, fast_backoff()).unwrap();
    let status = Arc::clone(&t.status);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while status.snapshot().frames < 1 {
        assert!(std::time::Instant::now() < deadline, "no frame captured");
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = time_stop(t, Duration::from_secs(5)).expect("the stop waited for the next frame");
    assert!(took < Duration::from_secs(1), "the stop took {took:?}");
    status
}

#[test]
fn a_camera_at_a_thousandth_of_a_frame_per_second_stops_at_once() {
    // The next frame is due 1000 s after the first.
    let cams = [SyntheticCamera {
        fps: 0.001,
        ..small_cam(0)
    }];
    let src = SyntheticSource::rig(Arc::new(MarkerScene::default()), &cams, true)
        .unwrap()
        .remove(0);
    let status = stop_after_the_first_frame(Box::new(src));
    assert_eq!(status.snapshot().state, CameraState::Stopped);
}

#[test]
fn a_replayed_frame_stamped_a_million_seconds_ahead_does_not_hold_the_stop() {
    use crate::camera::record::Recorder;
    use crate::camera::replay::{Pacing, Recording};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("far.mcap");
    let src = small_rig(1).remove(0);
    let info = src.info().clone();
    let mut src = src;
    let mut rec = Recorder::create(&path, &[info.into()]).unwrap();
    let first = src.next_frame().unwrap();
    let mut far = src.next_frame().unwrap();
    far.capture_ns = first.capture_ns + 1_000_000 * 1_000_000_000;
    rec.write(&first).unwrap();
    rec.write(&far).unwrap();
    rec.finish().unwrap();
    let replay = Recording::open(&path)
        .unwrap()
        .sources(Pacing::Original)
        .remove(0);
    let status = stop_after_the_first_frame(Box::new(replay));
    assert_eq!(status.snapshot().frames, 1);
}

#[test]
fn a_camera_state_reads_as_its_report_spelling() {
    let states = [
        CameraState::Streaming,
        CameraState::Reconnecting,
        CameraState::Ended,
        CameraState::Stopped,
    ];
    for state in states {
        let json = serde_json::to_value(state).unwrap();
        assert_eq!(json.as_str(), Some(state.to_string().as_str()));
    }
    assert_eq!(CameraState::Reconnecting.to_string(), "reconnecting");
}
