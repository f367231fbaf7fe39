//! Buffers and jobs dropped early or late, and four threads at once: no
//! undefined behaviour, nothing leaks, completions arrive or are aborted.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{compute_only, configured, open, open_manual_clock, tiny_hef};
use hailo_edge::npu::sim::{self, registry, DeviceProfile, Link, SimProfile, TimeBase};
use hailo_edge::npu::{NpuError, Status};

const T: Duration = Duration::from_secs(10);

#[test]
fn job_dropped_before_completion_still_completes() {
    let (clock, device) = open_manual_clock();
    let cm = configured(&device, &tiny_hef("tiny", 8, 4, Some(1_000_000)));
    let job = cm.run_async(cm.bindings().unwrap()).unwrap();
    assert_eq!(cm.pending(), 1, "held by the manual clock");
    drop(job);
    clock.finish();
    let start = std::time::Instant::now();
    while cm.pending() > 0 && start.elapsed() < T {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(cm.pending(), 0);
    assert_eq!(device.sim_stats().unwrap().models["tiny"].frames, 1);
}

#[test]
fn dropping_the_configured_model_aborts_jobs_in_flight() {
    let (_clock, device) = open_manual_clock();
    let model = device
        .load_model(&tiny_hef("tiny", 8, 4, Some(1_000_000)))
        .unwrap();
    let cm = model.configure().unwrap();
    let mut jobs: Vec<_> = (0..3)
        .map(|_| cm.run_async(cm.bindings().unwrap()).unwrap())
        .collect();
    // The clock never moves: nothing runs. Dropping the model aborts them.
    drop(cm);
    for job in &mut jobs {
        let done = job.wait(T).unwrap();
        let err = done.status.unwrap_err();
        assert_eq!(err.status(), Some(Status::StreamAbort), "{err}");
        // The bindings came back even though their model is gone.
        assert_eq!(done.bindings.outputs().count(), 1);
    }
    assert_eq!(device.sim_stats().unwrap().models["tiny"].frames, 0);
}

#[test]
fn device_dropped_first_stays_open_for_its_models() {
    let device = open(compute_only());
    let model = device
        .load_model(&tiny_hef("tiny", 8, 4, Some(1_000_000)))
        .unwrap();
    let cm = model.configure().unwrap();
    let id = device.device_id().to_string();
    drop(device);
    drop(model);
    let mut job = cm.run_async(cm.bindings().unwrap()).unwrap();
    job.wait(T).unwrap().status.unwrap();
    assert!(hailo_edge::npu::sim::registry::core(&id).is_some());
    drop(job);
    drop(cm);
    // Everything released: the simulated device is closed.
    assert!(hailo_edge::npu::sim::registry::core(&id).is_none());
}

#[test]
fn bindings_and_completions_outlive_everything_else() {
    let device = open(compute_only());
    let cm = configured(&device, &tiny_hef("tiny", 8, 4, Some(1_000_000)));
    let unused = cm.bindings().unwrap();
    let mut job = cm.run_async(cm.bindings().unwrap()).unwrap();
    let done = job.wait(T).unwrap();
    drop(job);
    drop(cm);
    drop(device);
    // Late drops of a completion and idle bindings are fine.
    assert_eq!(done.bindings.outputs().next().unwrap().len(), 8 * 8 * 4);
    drop(done);
    drop(unused);
}

#[test]
fn waiting_on_a_held_job_times_out_then_succeeds() {
    let (clock, device) = open_manual_clock();
    let cm = configured(&device, &tiny_hef("tiny", 8, 4, Some(1_000_000)));
    let mut job = cm.run_async(cm.bindings().unwrap()).unwrap();
    let err = job.wait(Duration::from_millis(20)).unwrap_err();
    assert_eq!(err.status(), Some(Status::Timeout), "{err}");
    clock.finish();
    job.wait(T).unwrap().status.unwrap();
    assert!(matches!(
        job.wait(T),
        Err(NpuError::AlreadyCompleted { .. })
    ));
}

#[test]
fn four_threads_submit_at_once() {
    let device = open(compute_only());
    let cm = Arc::new(configured(
        &device,
        &tiny_hef("tiny", 8, 4, Some(1_000_000)),
    ));
    let per_thread = 100usize;
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let cm = Arc::clone(&cm);
            std::thread::spawn(move || {
                let mut ids = vec![];
                for i in 0..per_thread {
                    let mut b = cm.bindings().unwrap();
                    b.write_input("tiny/input", &[t.wrapping_add(i as u8); 8 * 8 * 3])
                        .unwrap();
                    let mut job = cm.run_async(b).unwrap();
                    let done = job.wait(T).unwrap();
                    done.status.unwrap();
                    ids.push(done.job);
                }
                ids
            })
        })
        .collect();
    let mut all: Vec<u64> = threads
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 4 * per_thread, "every job id is unique");
    assert_eq!(cm.pending(), 0);
    assert_eq!(
        device.sim_stats().unwrap().models["tiny"].frames,
        4 * per_thread as u64
    );
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < T, "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn dropping_with_completions_never_taken_frees_the_model_and_device() {
    let device = open(compute_only());
    let id = device.device_id().to_string();
    let cm = configured(&device, &tiny_hef("tiny", 8, 4, Some(1_000_000)));
    for _ in 0..3 {
        cm.submit(cm.bindings().unwrap()).unwrap();
    }
    wait_until("the jobs complete", || cm.pending() == 0);
    // Three completions wait in the model's queue, each holding the model.
    drop(cm);
    drop(device);
    assert!(
        registry::core(&id).is_none(),
        "the configured model and the device were released"
    );
}

#[test]
fn a_late_completion_releases_nothing_on_the_completion_thread() {
    // Real time and a frame of 300 ms (1.8e12 ops at 0.30 x 20 TOPS); dropping waits 20 ms.
    let profile = SimProfile::new(DeviceProfile::hailo10h().with_link(Link::free()))
        .with_clock(TimeBase::RealTime);
    let device = open(profile);
    let id = device.device_id().to_string();
    let cm = configured(&device, &tiny_hef("slow", 8, 4, Some(1_800_000_000_000)));
    cm.set_drop_timeout(Duration::from_millis(20));
    let job = cm.run_async(cm.bindings().unwrap()).unwrap();
    // On the device by now: shutting down cannot abort it.
    std::thread::sleep(Duration::from_millis(50));
    let before = sim::releases_in_completion();
    drop(job);
    drop(cm);
    drop(device);
    assert!(
        registry::core(&id).is_some(),
        "the job still holds the device"
    );
    wait_until("the late job releases the device", || {
        registry::core(&id).is_none()
    });
    assert_eq!(
        sim::releases_in_completion(),
        before,
        "the model or the device was released inside the completion callback"
    );
}

#[test]
fn a_timed_out_run_keeps_its_buffers_until_the_job_completes() {
    let (clock, device) = open_manual_clock();
    let cm = configured(&device, &tiny_hef("tiny", 8, 4, Some(1_000_000)));
    let bindings = cm.bindings().unwrap();
    let err = cm.run(bindings, Duration::from_millis(20)).unwrap_err();
    assert_eq!(err.status(), Some(Status::Timeout), "{err}");
    assert_eq!(cm.pending(), 1, "the job is still in flight");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(cm.idle_buffers(), 0, "its buffers did not come back");
    clock.finish();
    wait_until("the buffers return with the completion", || {
        cm.idle_buffers() == 2
    });
    assert_eq!(cm.pending(), 0);
    // Control: a run that finishes hands its bindings back.
    let device = open(compute_only());
    let cm = configured(&device, &tiny_hef("tiny", 8, 4, Some(1_000_000)));
    let done = cm.run(cm.bindings().unwrap(), T).unwrap();
    assert_eq!(done.outputs().count(), 1);
    assert_eq!(cm.idle_buffers(), 0, "the bindings came back to the caller");
}
