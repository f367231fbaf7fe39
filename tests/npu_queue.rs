//! The async queue: the simulator refuses a job past it as HailoRT 5.2's card does, and the
//! safe API, the pipeline's lanes and `bench` never send one.

mod common;

use std::ffi::c_void;
use std::ptr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{compute_only, configured, configured_with_batch, fixture, open, tiny_hef};
use hailo_edge::bench::measure::{self, GraphRun, RunConfig};
use hailo_edge::npu::sim::{registry, table, ManualClock, SimProfile, TimeBase};
use hailo_edge::npu::{Api, Backend, Device, DeviceOptions, NpuError, Status};
use hailort_sys::*;

const T: Duration = Duration::from_secs(10);
const QUEUE_IS_FULL: u32 = 82;
const STREAM_ABORT: u32 = 63;

/// A compute-only device on a manual clock (nothing runs until it moves) whose models take
/// `queue` jobs in flight.
fn held(queue: usize) -> (ManualClock, SimProfile) {
    let clock = ManualClock::new();
    let profile = compute_only()
        .with_clock(TimeBase::Manual(clock.clone()))
        .with_async_queue_size(queue);
    (clock, profile)
}

#[test]
fn the_queue_size_follows_hailort_rule() {
    let device = open(compute_only());
    // Small frames: the upper clamp, 32.
    let small = configured(&device, &tiny_hef("q_small", 8, 4, Some(1_000_000)));
    assert_eq!(small.async_queue_size().unwrap(), 32);
    drop(small);
    // A batch of 20 raises the lower clamp to 2 x 20.
    let batched = configured_with_batch(&device, &tiny_hef("q_batch", 8, 4, Some(1)), 20);
    assert_eq!(batched.async_queue_size().unwrap(), 40);
    drop(batched);
    // 2048 x 2048 x 3 bytes: 32 MiB holds 2 of them.
    let big = configured(&device, &tiny_hef("q_big", 2048, 1, Some(1)));
    assert_eq!(big.async_queue_size().unwrap(), 2);
}

static STATUSES: Mutex<Vec<(usize, u32)>> = Mutex::new(Vec::new());

unsafe extern "C" fn record(status: hes_status, user_data: *mut c_void) {
    let mut statuses = STATUSES.lock().unwrap_or_else(|e| e.into_inner());
    statuses.push((user_data as usize, status));
}

fn statuses_of(first: usize, n: usize) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let got: Vec<(usize, u32)> = STATUSES
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| (first..first + n).contains(k))
            .copied()
            .collect();
        if got.len() == n || start.elapsed() > T {
            let mut got = got;
            got.sort_unstable();
            return got.into_iter().map(|(_, s)| s).collect();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The simulator's own table, below the safe API's cap: the job past the queue completes with
/// HAILO_QUEUE_IS_FULL, the queued jobs are aborted, and every later job of the model fails with
/// HAILO_STREAM_ABORT, as on the part.
#[test]
fn the_simulator_refuses_a_job_past_the_queue_as_the_card_does() {
    let (_clock, profile) = held(2);
    let id = registry::register(profile);
    let api = table::api();
    let hef = tiny_hef("q_raw", 8, 4, Some(1_000_000));
    let mut device_id = hes_device_id::default();
    for (d, s) in device_id.id.iter_mut().zip(id.bytes()) {
        *d = s as std::ffi::c_char;
    }
    let params = hes_vdevice_params {
        device_ids: &device_id,
        device_count: 1,
        scheduling_algorithm: 1,
        group_id: ptr::null(),
    };
    let (mut v, mut m, mut c) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    let mut buffers: Vec<Vec<u8>> = Vec::new();
    // SAFETY: every handle comes from this table and is used while live; the
    // buffers outlive the jobs (they are dropped after the last completion).
    unsafe {
        assert_eq!(api.vdevice_create.unwrap()(&params, &mut v), 0);
        let create = api.infer_model_create_from_memory.unwrap();
        assert_eq!(create(v, hef.as_ptr().cast(), hef.len(), &mut m), 0);
        assert_eq!(api.infer_model_configure.unwrap()(m, &mut c), 0);
        let mut size = 0usize;
        assert_eq!(
            api.configured_model_get_async_queue_size.unwrap()(c, &mut size),
            0
        );
        assert_eq!(size, 2);
        let launch = |key: usize, buffers: &mut Vec<Vec<u8>>| {
            let mut b = ptr::null_mut();
            assert_eq!(api.configured_model_create_bindings.unwrap()(c, &mut b), 0);
            for (direction, name, len) in [
                (0, c"q_raw/input", 8 * 8 * 3),
                (1, c"q_raw/output", 8 * 8 * 4),
            ] {
                let mut buf = vec![0u8; len];
                let set = api.bindings_set_buffer.unwrap();
                assert_eq!(
                    set(b, direction, name.as_ptr(), buf.as_mut_ptr().cast(), len),
                    0
                );
                buffers.push(buf);
            }
            let mut j = ptr::null_mut();
            let run = api.configured_model_run_async.unwrap();
            let status = run(c, b, Some(record), key as *mut c_void, &mut j);
            api.job_release.unwrap()(j);
            status
        };
        let base = 1000;
        for k in 0..3 {
            assert_eq!(
                launch(base + k, &mut buffers),
                0,
                "run_async itself succeeds"
            );
        }
        assert_eq!(
            statuses_of(base, 3),
            vec![STREAM_ABORT, STREAM_ABORT, QUEUE_IS_FULL],
            "the third job overflows a queue of two; the card aborts the queued ones"
        );
        assert_eq!(launch(base + 3, &mut buffers), 0);
        assert_eq!(
            statuses_of(base + 3, 1),
            vec![STREAM_ABORT],
            "the model stays down"
        );
        // HailoRT: frames_count above the queue size always times out.
        let ready = api.configured_model_wait_for_async_ready.unwrap();
        assert_eq!(ready(c, 10, 3), 4);
        assert_eq!(ready(c, 10, 2), 0);
        assert_eq!(api.configured_model_release.unwrap()(c), 0);
        assert_eq!(api.infer_model_release.unwrap()(m), 0);
        assert_eq!(api.vdevice_release.unwrap()(v), 0);
    }
    drop(buffers);
    registry::unregister(&id);
}

#[test]
fn the_safe_api_refuses_a_job_past_the_queue_and_stays_usable() {
    let (clock, profile) = held(2);
    let device = open(profile);
    let cm = configured(&device, &tiny_hef("q_safe", 8, 4, Some(1_000_000)));
    let mut a = cm.run_async(cm.bindings().unwrap()).unwrap();
    let mut b = cm.run_async(cm.bindings().unwrap()).unwrap();
    let err = cm.run_async(cm.bindings().unwrap()).unwrap_err();
    assert_eq!(err.status(), Some(Status::QueueIsFull), "{err}");
    assert!(
        err.to_string().contains("as many as its async queue holds"),
        "{err}"
    );
    let waited = cm.wait_for_async_ready(Duration::from_millis(20), 1);
    assert_eq!(waited.unwrap_err().status(), Some(Status::Timeout));
    assert!(
        !cm.needs_reconfigure(),
        "the refused job never reached the device"
    );
    clock.advance(Duration::from_secs(1));
    a.wait(T).unwrap().status.unwrap();
    b.wait(T).unwrap().status.unwrap();
    cm.wait_for_async_ready(T, 2).unwrap();
    let mut c = cm.run_async(cm.bindings().unwrap()).unwrap();
    clock.advance(Duration::from_secs(1));
    c.wait(T).unwrap().status.unwrap();
}

/// The simulator's table, but with a queue size larger than the one it enforces: the safe
/// API's cap lets a job past the real queue, as a wrong size would on the part.
unsafe extern "C" fn roomy(_c: *mut hes_configured_model, size: *mut usize) -> hes_status {
    // SAFETY: the safe layer passes a writable pointer.
    unsafe { *size = 1000 };
    0
}

#[test]
fn a_fatal_completion_marks_the_model_for_reconfiguring() {
    let mut raw = *Api::sim().raw();
    raw.configured_model_get_async_queue_size = Some(roomy);
    let api = Api::from_raw(Box::leak(Box::new(raw)), "sim+roomy");
    let (_clock, profile) = held(2);
    let device = Device::open_on_table(api, Backend::Sim(profile), DeviceOptions::default())
        .expect("open the simulator");
    let cm = configured(&device, &tiny_hef("q_fatal", 8, 4, Some(1_000_000)));
    let mut jobs: Vec<_> = (0..3)
        .map(|_| cm.run_async(cm.bindings().unwrap()).unwrap())
        .collect();
    let statuses: Vec<_> = jobs
        .iter_mut()
        .map(|j| j.wait(T).unwrap().status.unwrap_err().status())
        .collect();
    assert_eq!(
        statuses,
        vec![
            Some(Status::StreamAbort),
            Some(Status::StreamAbort),
            Some(Status::QueueIsFull)
        ]
    );
    assert!(cm.needs_reconfigure());
    match cm.run_async(cm.bindings().unwrap()) {
        Err(NpuError::NeedsReconfigure { cause, .. }) => {
            assert!(
                cause.contains("HAILO_STREAM_ABORT") || cause.contains("HAILO_QUEUE_IS_FULL"),
                "{cause}"
            );
        }
        other => panic!("expected NeedsReconfigure, got {}", describe(other)),
    }
}

fn describe(r: Result<hailo_edge::npu::Job, NpuError>) -> String {
    match r {
        Ok(job) => format!("job {}", job.id()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bench_keeps_its_frames_within_the_queue() {
    // Weight 2 at batch 8 wants 4 x 2 x 8 = 64 frames in flight; the queue holds 32.
    let device = open(compute_only());
    let config = RunConfig {
        graphs: vec![GraphRun::new(fixture("backbone_288.hef")).with_weight(2)],
        batch: 8,
        threshold: 0,
        timeout: Duration::ZERO,
        duration: Duration::from_secs(1),
    };
    let m = measure::measure(&device, &config).expect("no frame fails");
    assert!(m.graphs[0].frames > 64, "{} frames", m.graphs[0].frames);
}
