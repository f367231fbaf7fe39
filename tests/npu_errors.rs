//! Every HailoRT-like check of the simulator, each with a negative control
//! showing the same path succeeds when the condition is not met.

mod common;

use std::time::Duration;

use common::{
    compute_only, configured, configured_with_batch, fixture, open, open_manual_scheduling,
    tiny_hef,
};
use hailo_edge::npu::sim::{DeviceFault, DeviceProfile, FaultPlan, SimProfile};
use hailo_edge::npu::{result, Api, Direction, FormatType, NpuError, Status};

const T: Duration = Duration::from_secs(10);

fn status_of<T: std::fmt::Debug>(r: Result<T, NpuError>) -> Status {
    r.expect_err("expected an error")
        .status()
        .expect("a HailoRT status")
}

#[test]
fn wrong_buffer_size_is_invalid_argument() {
    let api = Api::sim();
    let device = open(compute_only());
    let cm = configured(&device, &tiny_hef("tiny", 4, 2, Some(1000)));
    let b = cm.bindings().unwrap();
    // Through the checked layer, with raw sizes.
    let raw_bindings = {
        let v = result::vdevice::create(&api, &[common::sim_id()], 1, None).unwrap();
        // SAFETY: `v` is live; released below.
        let m = unsafe {
            result::infer_model::create_from_memory(&api, v, &tiny_hef("raw", 4, 2, None))
        }
        .unwrap();
        // SAFETY: `m` is live.
        let c = unsafe { result::infer_model::configure(&api, m) }.unwrap();
        // SAFETY: `c` is live.
        let b = unsafe { result::configured_model::create_bindings(&api, c) }.unwrap();
        let mut buf = vec![0u8; 4 * 4 * 3];
        // SAFETY: `b` is live; `buf` outlives the bindings.
        let wrong =
            unsafe { result::bindings::set_buffer(&api, b, 0, "raw/input", buf.as_mut_ptr(), 47) };
        let err = wrong.unwrap_err();
        assert_eq!(err.status(), Some(Status::InvalidArgument));
        assert_eq!(err.call(), Some("bindings_set_buffer"));
        assert!(err.detail().contains("frame size is 48"), "{err}");
        // Negative control: the frame size is accepted.
        // SAFETY: as above.
        unsafe { result::bindings::set_buffer(&api, b, 0, "raw/input", buf.as_mut_ptr(), 48) }
            .unwrap();
        // Unknown stream: NOT_FOUND.
        // SAFETY: as above.
        let unknown =
            unsafe { result::bindings::set_buffer(&api, b, 0, "raw/nope", buf.as_mut_ptr(), 48) };
        assert_eq!(unknown.unwrap_err().status(), Some(Status::NotFound));
        // SAFETY: releasing in reverse order of creation; none used afterwards.
        unsafe {
            result::bindings::release(&api, b).unwrap();
            result::configured_model::release(&api, c).unwrap();
            result::infer_model::release(&api, m).unwrap();
            result::vdevice::release(&api, v).unwrap();
        }
        true
    };
    assert!(raw_bindings);
    // Through the safe layer: the wrapper's own size check.
    let mut b = b;
    let err = b.write_input("tiny/input", &[0u8; 5]).unwrap_err();
    assert!(
        matches!(
            err,
            NpuError::BufferSize {
                expected: 48,
                actual: 5,
                ..
            }
        ),
        "{err}"
    );
    b.write_input("tiny/input", &[0u8; 48]).unwrap();
}

#[test]
fn unknown_stream_is_not_found() {
    let api = Api::sim();
    let device = open(compute_only());
    let mut model = device.load_model(&tiny_hef("tiny", 4, 2, None)).unwrap();
    // Safe layer: caught before the table, named.
    let err = model
        .set_format_type(Direction::Output, "tiny/missing", FormatType::Float32)
        .unwrap_err();
    assert!(matches!(err, NpuError::NoSuchStream { .. }), "{err}");
    model
        .set_format_type(Direction::Output, "tiny/output", FormatType::Float32)
        .unwrap();
    // Checked layer: the table's own NOT_FOUND.
    let v = result::vdevice::create(&api, &[common::sim_id()], 1, None).unwrap();
    // SAFETY: `v` is live until released below.
    let m =
        unsafe { result::infer_model::create_from_memory(&api, v, &tiny_hef("t2", 4, 2, None)) }
            .unwrap();
    // SAFETY: `m` is live.
    let r = unsafe { result::infer_model::set_format_type(&api, m, 1, "t2/missing", 3) };
    assert_eq!(status_of(r), Status::NotFound);
    // SAFETY: `m` is live.
    unsafe { result::infer_model::set_format_type(&api, m, 1, "t2/output", 3) }.unwrap();
    // SAFETY: released once, not used afterwards.
    unsafe {
        result::infer_model::release(&api, m).unwrap();
        result::vdevice::release(&api, v).unwrap();
    }
}

#[test]
fn hef_for_another_chip_is_not_compatible() {
    let device = open(compute_only());
    let model = device
        .load_model_file(fixture("wrong_arch_hailo8.hef"))
        .unwrap();
    let err = model.configure().unwrap_err();
    assert_eq!(
        err.status(),
        Some(Status::HefNotCompatibleWithDevice),
        "{err}"
    );
    assert_eq!(err.code(), Some(93));
    // Negative control: the Hailo-10H backbone configures on the Hailo-10H.
    device
        .load_model_file(fixture("backbone_288.hef"))
        .unwrap()
        .configure()
        .unwrap();
    // And the same backbone is refused by a simulated Hailo-8.
    let hailo8 = open(SimProfile::new(DeviceProfile {
        chip: hef::Chip::Hailo8,
        ..DeviceProfile::hailo10h()
    }));
    let err = hailo8
        .load_model_file(fixture("backbone_288.hef"))
        .unwrap()
        .configure()
        .unwrap_err();
    assert_eq!(err.status(), Some(Status::HefNotCompatibleWithDevice));
}

#[test]
fn corrupt_hefs_get_hailort_statuses() {
    let device = open(compute_only());
    let cases = [
        ("corrupt_checksum_mismatch.hef", Status::HefFileCorrupted),
        ("corrupt_truncated.hef", Status::HefFileCorrupted),
        ("corrupt_unknown_version.hef", Status::HefNotSupported),
        ("corrupt_bad_magic.hef", Status::HefNotSupported),
    ];
    for (file, expected) in cases {
        assert_eq!(
            status_of(device.load_model_file(fixture(file))),
            expected,
            "{file}"
        );
    }
    assert_eq!(
        status_of(device.load_model_file(fixture("does_not_exist.hef"))),
        Status::OpenFileFailure
    );
}

#[test]
fn activate_under_the_scheduler_is_invalid_operation() {
    let hef = tiny_hef("tiny", 4, 2, Some(1000));
    let scheduled = open(compute_only());
    let cm = configured(&scheduled, &hef);
    assert_eq!(status_of(cm.activate()), Status::InvalidOperation);
    assert_eq!(status_of(cm.deactivate()), Status::InvalidOperation);
    // Negative control: with scheduling NONE activation works, and the
    // scheduler setters are the ones refused.
    let manual = open_manual_scheduling(compute_only());
    let a = configured(&manual, &hef);
    let b = configured(&manual, &hef);
    assert_eq!(
        status_of(a.set_scheduler_threshold(2)),
        Status::InvalidOperation
    );
    // Running before activation: NETWORK_GROUP_NOT_ACTIVATED, from run_async, which shuts
    // the model down as HailoRT's does: it is configured again.
    assert_eq!(
        status_of(b.run(b.bindings().unwrap(), T)),
        Status::NetworkGroupNotActivated
    );
    assert!(b.needs_reconfigure());
    drop(b);
    let b = configured(&manual, &hef);
    a.activate().unwrap();
    assert_eq!(
        status_of(b.activate()),
        Status::InvalidOperation,
        "one active group per device"
    );
    a.run(a.bindings().unwrap(), T).unwrap();
    a.deactivate().unwrap();
    b.activate().unwrap();
    b.run(b.bindings().unwrap(), T).unwrap();
    let stats = manual.sim_stats().unwrap();
    assert_eq!(stats.switches, 2, "each activation is a switch");
}

#[test]
fn unequal_batch_sizes_under_the_scheduler_are_refused() {
    let hef = tiny_hef("tiny", 4, 2, Some(1000));
    let device = open(compute_only());
    let _a = configured_with_batch(&device, &hef, 4);
    let mut b = device.load_model(&hef).unwrap();
    b.set_batch_size(2).unwrap();
    let err = b.configure().unwrap_err();
    assert_eq!(err.status(), Some(Status::InvalidOperation));
    assert!(err.detail().contains("same batch_size"), "{err}");
    // Negative controls: equal batch sizes configure; unequal ones do without a scheduler.
    b.set_batch_size(4).unwrap();
    let _b = b.configure().unwrap();
    let manual = open_manual_scheduling(compute_only());
    let _c = configured_with_batch(&manual, &hef, 4);
    let _d = configured_with_batch(&manual, &hef, 2);
}

#[test]
fn more_than_eight_network_groups_are_refused() {
    let hef = tiny_hef("tiny", 4, 2, Some(1000));
    let device = open(compute_only());
    let model = device.load_model(&hef).unwrap();
    let configured: Vec<_> = (0..8).map(|_| model.configure().unwrap()).collect();
    let err = model.configure().unwrap_err();
    assert_eq!(err.status(), Some(Status::InvalidOperation));
    assert!(err.detail().contains("HAILO_MAX_NETWORK_GROUPS"), "{err}");
    // Negative control: releasing one makes room again.
    drop(configured.into_iter().next());
    model.configure().unwrap();
}

#[test]
fn use_after_release_is_detected() {
    let api = Api::sim();
    let v = result::vdevice::create(&api, &[common::sim_id()], 1, None).unwrap();
    // SAFETY: `v` is live.
    let m = unsafe { result::infer_model::create_from_memory(&api, v, &tiny_hef("t", 4, 2, None)) }
        .unwrap();
    // SAFETY: `m` is live: the negative control.
    assert_eq!(unsafe { result::infer_model::name(&api, m) }.unwrap(), "t");
    // SAFETY: released once.
    unsafe { result::infer_model::release(&api, m) }.unwrap();
    // SAFETY: deliberately using a released handle: the simulator's registry
    // makes this a checked error instead of undefined behaviour.
    let err = unsafe { result::infer_model::name(&api, m) }.unwrap_err();
    assert_eq!(err.status(), Some(Status::InvalidOperation));
    assert!(err.detail().contains("not live"), "{err}");
    // SAFETY: as above, a second release.
    let again = unsafe { result::infer_model::release(&api, m) };
    assert_eq!(status_of(again), Status::InvalidOperation);
    // SAFETY: released once.
    unsafe { result::vdevice::release(&api, v) }.unwrap();
}

#[test]
fn injected_faults_surface_as_hailort_statuses() {
    let hef = tiny_hef("tiny", 4, 2, Some(1000));
    let faults = FaultPlan::none()
        .at_job(1, DeviceFault::Timeout)
        .at_job(3, DeviceFault::CommunicationClosed);
    let device = open(compute_only().with_faults(faults));
    let model = device.load_model(&hef).unwrap();
    let cm = model.configure().unwrap();
    let mut outcomes = vec![];
    for _ in 0..3 {
        let mut job = cm.run_async(cm.bindings().unwrap()).unwrap();
        outcomes.push(job.wait(T).unwrap().status.err().and_then(|e| e.status()));
    }
    assert_eq!(outcomes, vec![None, Some(Status::Timeout), None]);
    // Job 3: run_async fails, and the model needs reconfiguring, as in HailoRT.
    let err = cm.run_async(cm.bindings().unwrap()).unwrap_err();
    assert_eq!(err.status(), Some(Status::CommunicationClosed));
    assert!(cm.needs_reconfigure());
    assert!(matches!(
        cm.run_async(cm.bindings().unwrap()),
        Err(NpuError::NeedsReconfigure { .. })
    ));
    // Reconfiguring gives a working model again.
    let cm2 = model.configure().unwrap();
    assert!(!cm2.needs_reconfigure());
    cm2.run(cm2.bindings().unwrap(), T).unwrap();

    let unavailable = open(
        compute_only()
            .with_faults(FaultPlan::none().at_job(0, DeviceFault::DeviceTemporarilyUnavailable)),
    );
    let cm = configured(&unavailable, &hef);
    let err = cm.run_async(cm.bindings().unwrap()).unwrap_err();
    assert_eq!(err.status(), Some(Status::DeviceTemporarilyUnavailable));
    assert_eq!(err.code(), Some(97));
}

/// The statuses of `n` jobs run one after the other on `cm` (`None`: success).
fn job_statuses(cm: &hailo_edge::npu::ConfiguredModel, n: usize) -> Vec<Option<Status>> {
    (0..n)
        .map(|_| {
            let mut job = cm.run_async(cm.bindings().unwrap()).unwrap();
            job.wait(T).unwrap().status.err().and_then(|e| e.status())
        })
        .collect()
}

#[test]
fn a_full_queue_fails_the_completion_and_shuts_the_model_down() {
    let hef = tiny_hef("tiny", 4, 2, Some(1000));
    let device =
        open(compute_only().with_faults(FaultPlan::none().at_job(1, DeviceFault::QueueFull)));
    let model = device.load_model(&hef).unwrap();
    let cm = model.configure().unwrap();
    // As HailoRT: the job past the queue completes with HAILO_QUEUE_IS_FULL and the card
    // shuts the model down; the model needs reconfiguring.
    assert_eq!(job_statuses(&cm, 2), [None, Some(Status::QueueIsFull)]);
    assert!(cm.needs_reconfigure());
    assert!(matches!(
        cm.run_async(cm.bindings().unwrap()),
        Err(NpuError::NeedsReconfigure { .. })
    ));
    // Reconfiguring gives a working model again.
    let again = model.configure().unwrap();
    assert_eq!(job_statuses(&again, 2), [None, None]);
    // Negative control: the same jobs with no fault planned all succeed.
    let clean = open(compute_only());
    assert_eq!(job_statuses(&configured(&clean, &hef), 2), [None; 2]);
}

#[test]
fn a_device_that_drops_off_refuses_every_later_job() {
    let hef = tiny_hef("tiny", 4, 2, Some(1000));
    let device = open(compute_only().with_faults(FaultPlan::none().closed_from(2)));
    let model = device.load_model(&hef).unwrap();
    let cm = model.configure().unwrap();
    assert_eq!(job_statuses(&cm, 2), [None, None]);
    let err = cm.run_async(cm.bindings().unwrap()).unwrap_err();
    assert_eq!(err.status(), Some(Status::CommunicationClosed));
    // Reconfiguring does not bring a device back that is gone: the hRPC client answers
    // the configuration with the same status.
    let err = model.configure().unwrap_err();
    assert_eq!(err.status(), Some(Status::CommunicationClosed));
    assert!(err.detail().contains("dropped off at job 2"), "{err}");
    // Control: before the drop, configuring a second copy works.
    let fresh = open(compute_only().with_faults(FaultPlan::none().closed_from(2)));
    let model = fresh.load_model(&hef).unwrap();
    let _first = model.configure().unwrap();
    model.configure().unwrap();
}
