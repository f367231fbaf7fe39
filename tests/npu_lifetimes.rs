//! Buffers and jobs dropped early or late, and four threads at once: no
//! undefined behaviour, nothing leaks, completions arrive or are aborted.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{compute_only, configured, open, open_manual_clock, tiny_hef};
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
