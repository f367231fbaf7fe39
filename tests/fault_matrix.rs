//! The fault matrix on the simulator (docs/faults.md): the demo rig, pipeline only, on the
//! zero-time device, with one fault injected per run. Each cell checks what the report shows
//! and that nothing counted is lost: per camera, captured = processed + every counted drop +
//! in flight. The clean run is the negative control: every figure a cell asserts on is zero
//! (or even) there.

use std::sync::Mutex;
use std::time::Duration;

use hailo_edge::camera::fault::Fault as CameraFault;
use hailo_edge::npu::sim::{DeviceProfile, Fault, FaultPlan};
use hailo_edge::rig::config::SimProfileName;
use hailo_edge::rig::inject::Faults;
use hailo_edge::rig::{run, Report, RigConfig, RunOptions};

/// One run at a time: each takes the machine's cores.
static ONE: Mutex<()> = Mutex::new(());

/// A run's length: some 1400 jobs at 480 frames/s, whatever the machine's load.
const RUN: Duration = Duration::from_secs(3);

/// The job at which the planned NPU faults start: well inside the run.
const AT: u64 = 300;

fn run_with(faults: Faults) -> Report {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mut rig = RigConfig::demo(&RigConfig::demo_fixtures_dir().expect("the demo HEFs"));
    rig.device.profile = SimProfileName::ZeroTime;
    let options = RunOptions {
        duration: Some(RUN),
        pipeline_only: true,
        profile: Some(DeviceProfile::zero_time()),
        faults,
        ..RunOptions::default()
    };
    let report = run(&rig, "fault matrix", &options).expect("the run reports");
    // Nothing counted is lost, whatever failed.
    assert!(report.accounting_ok, "{}", counts(&report));
    for c in &report.cameras {
        let f = &c.frames;
        assert_eq!(
            f.captured,
            f.processed + f.dropped_total() + f.in_flight,
            "camera {}: {}",
            c.name,
            counts(&report)
        );
    }
    report
}

fn npu_faults(plan: FaultPlan) -> Report {
    run_with(Faults {
        npu: plan,
        ..Faults::default()
    })
}

/// Per camera: captured = processed + dropped by stage + in flight, for failure messages.
fn counts(report: &Report) -> String {
    let parts: Vec<String> = report
        .cameras
        .iter()
        .map(|c| {
            format!(
                "{} ({}) {} = {} + {:?} + {}",
                c.name,
                c.graph,
                c.frames.captured,
                c.frames.processed,
                c.frames.dropped,
                c.frames.in_flight
            )
        })
        .collect();
    parts.join("; ")
}

/// Frames of the cameras of `graph` (all graphs when `None`) the NPU stage dropped.
fn npu_drops(report: &Report, graph: Option<&str>) -> u64 {
    report
        .cameras
        .iter()
        .filter(|c| graph.is_none_or(|g| c.graph == g))
        .map(|c| c.frames.dropped.get("npu").copied().unwrap_or(0))
        .sum()
}

fn processed(report: &Report, graph: Option<&str>) -> u64 {
    report
        .cameras
        .iter()
        .filter(|c| graph.is_none_or(|g| c.graph == g))
        .map(|c| c.frames.processed)
        .sum()
}

#[test]
fn a_clean_run_drops_nothing_at_the_npu_and_every_camera_keeps_pace() {
    let r = run_with(Faults::default());
    assert_eq!(npu_drops(&r, None), 0, "{}", counts(&r));
    assert!(processed(&r, None) > 4 * AT, "{}", counts(&r));
    let body0 = &r.cameras[0];
    let body1 = &r.cameras[1];
    assert!(body0.last_error.is_none(), "{:?}", body0.last_error);
    assert!(
        body0.frames.captured + 20 >= body1.frames.captured,
        "{}",
        counts(&r)
    );
}

#[test]
fn the_device_dropping_off_mid_run_drops_every_later_frame_counted() {
    let r = npu_faults(FaultPlan::none().closed_from(AT));
    // Jobs before the drop were processed, and none after it.
    let done = processed(&r, None);
    assert!(done > 0 && done <= AT, "{done} processed: {}", counts(&r));
    let captured: u64 = r.cameras.iter().map(|c| c.frames.captured).sum();
    assert!(
        npu_drops(&r, None) >= captured - AT - r.cameras.len() as u64 * 4,
        "{}",
        counts(&r)
    );
    for g in ["body", "face"] {
        assert!(npu_drops(&r, Some(g)) > 0, "graph {g}: {}", counts(&r));
    }
}

#[test]
fn timed_out_jobs_drop_their_frames_and_the_run_goes_on() {
    let plan = [AT, AT + 1, AT + 50]
        .into_iter()
        .fold(FaultPlan::none(), |p, job| p.at_job(job, Fault::Timeout));
    let r = npu_faults(plan);
    assert_eq!(npu_drops(&r, None), 3, "{}", counts(&r));
    assert!(processed(&r, None) > 4 * AT, "{}", counts(&r));
}

#[test]
fn a_full_queue_shuts_one_graph_down_and_the_other_goes_on() {
    let r = npu_faults(FaultPlan::none().at_job(AT, Fault::QueueFull));
    let (body, face) = (npu_drops(&r, Some("body")), npu_drops(&r, Some("face")));
    // The job's own model is down from then on; the other model never fails.
    let (down, up) = if body > 0 {
        ("body", "face")
    } else {
        ("face", "body")
    };
    assert!(
        (body > 0) != (face > 0),
        "body {body}, face {face}: {}",
        counts(&r)
    );
    assert!(npu_drops(&r, Some(down)) > 50, "{}", counts(&r));
    assert!(processed(&r, Some(down)) <= AT, "{}", counts(&r));
    // The other graph's frames pass the NPU; with no view of the downed graph, no instant
    // forms a whole group at the sync, which counts them there.
    let up_cameras: Vec<_> = r.cameras.iter().filter(|c| c.graph == up).collect();
    for c in &up_cameras {
        let sync = c.frames.dropped.get("sync").copied().unwrap_or(0);
        assert!(c.frames.processed + sync > 200, "{}", counts(&r));
    }
    assert_eq!(npu_drops(&r, Some(up)), 0, "{}", counts(&r));
}

#[test]
fn an_unplugged_camera_comes_back_and_the_others_never_stop() {
    let r = run_with(Faults {
        cameras: vec![(
            0,
            vec![CameraFault::Unplug {
                at: 120,
                failed_reconnects: 2,
            }],
        )],
        ..Faults::default()
    });
    let (gone, other) = (&r.cameras[0], &r.cameras[1]);
    let error = gone.last_error.as_deref().unwrap_or_default();
    assert!(error.contains("disconnected"), "{error}");
    // Three reconnect attempts (100, 200, 400 ms apart) kept it away some 0.7 s
    // (84 frames at 120 fps); it captured again after that.
    assert!(
        gone.frames.captured + 40 < other.frames.captured,
        "{}",
        counts(&r)
    );
    assert!(gone.frames.captured > 120 + 60, "{}", counts(&r));
    assert!(gone.frames.processed > 120 + 60, "{}", counts(&r));
    assert!(other.last_error.is_none(), "{:?}", other.last_error);
}
