//! The fault matrix on the simulator (docs/faults.md): the demo rig, pipeline only, on the
//! zero-time device, with one fault injected per run. Each cell checks what the report shows
//! and that nothing counted is lost: per camera, captured = processed + every counted drop +
//! in flight. The clean run is the negative control: every figure a cell asserts on is zero
//! (or even) there.

use std::sync::Mutex;
use std::time::Duration;

use hailo_edge::camera::fault::CameraFault;
use hailo_edge::npu::sim::{DeviceFault, DeviceProfile, FaultPlan};
use hailo_edge::rig::config::{SimProfileName, SwitchingConfig};
use hailo_edge::rig::inject::Faults;
use hailo_edge::rig::{run, Report, RigConfig, RunOptions};

/// One run at a time: each takes the machine's cores.
static ONE: Mutex<()> = Mutex::new(());

/// A run's length: some 1400 jobs at 480 frames/s, whatever the machine's load.
const RUN: Duration = Duration::from_secs(3);

/// The job at which the planned NPU faults start: well inside the run.
const AT: u64 = 300;

fn run_with(faults: Faults) -> Report {
    run_rig(faults, |_| {})
}

/// A run of the demo rig as `tweak` leaves it.
fn run_rig(faults: Faults, tweak: impl FnOnce(&mut RigConfig)) -> Report {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mut rig = RigConfig::demo(&RigConfig::demo_fixtures_dir().expect("the demo HEFs"));
    rig.device.profile = SimProfileName::ZeroTime;
    tweak(&mut rig);
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

/// The graph report of `name`.
fn graph<'a>(report: &'a Report, name: &str) -> &'a hailo_edge::rig::report::schema::GraphReport {
    report
        .graphs
        .iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("no graph {name} in the report"))
}

/// Frames captured by the cameras of `graph`.
fn captured(report: &Report, graph: &str) -> u64 {
    report
        .cameras
        .iter()
        .filter(|c| c.graph == graph)
        .map(|c| c.frames.captured)
        .sum()
}

#[test]
fn a_clean_run_drops_nothing_at_the_npu_and_every_camera_keeps_pace() {
    let r = run_with(Faults::default());
    assert_eq!(npu_drops(&r, None), 0, "{}", counts(&r));
    assert_eq!(r.device_lost, None);
    assert!(r.duration_s > 2.9, "ran {} s", r.duration_s);
    for g in &r.graphs {
        // The figures the fault cells assert on are empty here.
        assert_eq!(g.fault, None, "graph {}", g.name);
        assert_eq!((g.reconfigured, g.reconfigure_failed), (0, 0));
        assert_eq!(g.down_ms, 0.0);
    }
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
fn the_device_dropping_off_stops_the_run_drained_and_reported() {
    let r = npu_faults(FaultPlan::none().closed_from(AT));
    // Jobs before the drop were processed, and none after it.
    let done = processed(&r, None);
    assert!(done > 0 && done <= AT, "{done} processed: {}", counts(&r));
    // Configuring a graph again is refused with the same status: the device is gone, and
    // the run stops at once (job 300 comes some 0.6 s into the 3 s), drains and reports.
    let lost = r.device_lost.as_deref().unwrap_or_default();
    assert!(lost.contains("HAILO_COMMUNICATION_CLOSED"), "{lost}");
    assert!(r.duration_s < 2.0, "ran {} s", r.duration_s);
    assert!(r.drain.completed);
    // The first graph to meet the gone device stops the run; the other may not have
    // submitted since the drop, and then has no fault.
    let broken: Vec<_> = r.graphs.iter().filter(|g| g.fault.is_some()).collect();
    assert!(!broken.is_empty(), "{}", counts(&r));
    for g in &broken {
        let fault = g.fault.as_deref().unwrap_or_default();
        assert!(
            fault.contains("HAILO_COMMUNICATION_CLOSED"),
            "graph {}: {fault}",
            g.name
        );
    }
    for g in &r.graphs {
        assert_eq!(g.reconfigured, 0, "graph {}", g.name);
    }
    let attempts: u64 = r.graphs.iter().map(|g| g.reconfigure_failed).sum();
    assert!((1..=2).contains(&attempts), "{attempts} attempts");
}

#[test]
fn timed_out_jobs_drop_their_frames_and_the_run_goes_on() {
    let plan = [AT, AT + 1, AT + 50]
        .into_iter()
        .fold(FaultPlan::none(), |p, job| {
            p.at_job(job, DeviceFault::Timeout)
        });
    let r = npu_faults(plan);
    assert_eq!(npu_drops(&r, None), 3, "{}", counts(&r));
    assert!(processed(&r, None) > 4 * AT, "{}", counts(&r));
}

#[test]
fn a_full_queue_breaks_one_graph_which_is_configured_again_while_the_other_goes_on() {
    let r = npu_faults(FaultPlan::none().at_job(AT, DeviceFault::QueueFull));
    let (body, face) = (graph(&r, "body"), graph(&r, "face"));
    // The job's own model broke, and only that one.
    assert!(
        body.fault.is_some() != face.fault.is_some(),
        "body {:?}, face {:?}",
        body.fault,
        face.fault
    );
    let (down, up) = if body.fault.is_some() {
        ("body", "face")
    } else {
        ("face", "body")
    };
    let broken = graph(&r, down);
    let fault = broken.fault.as_deref().unwrap_or_default();
    assert!(fault.contains("HAILO_QUEUE_IS_FULL"), "{fault}");
    assert_eq!((broken.reconfigured, broken.reconfigure_failed), (1, 0));
    // It is configured again as soon as its aborted jobs report: the failed job and the
    // few frames in flight or arriving meanwhile are lost, counted; the rest are processed.
    let lost = npu_drops(&r, Some(down));
    assert!((1..=20).contains(&lost), "{lost} lost: {}", counts(&r));
    assert!(
        processed(&r, Some(down)) + lost + 20 >= captured(&r, down),
        "{}",
        counts(&r)
    );
    assert!(broken.down_ms < 500.0, "{} ms down", broken.down_ms);
    // The other graph never fails.
    assert_eq!(npu_drops(&r, Some(up)), 0, "{}", counts(&r));
    assert_eq!(graph(&r, up).reconfigured, 0);
}

#[test]
fn under_manual_switching_the_graph_configured_again_is_activated_again() {
    let faults = Faults {
        npu: FaultPlan::none().at_job(AT, DeviceFault::QueueFull),
        ..Faults::default()
    };
    let r = run_rig(faults, |rig| {
        rig.switching = SwitchingConfig::Manual {
            frames_per_switch: 8,
        }
    });
    let broken: Vec<_> = r.graphs.iter().filter(|g| g.fault.is_some()).collect();
    assert_eq!(broken.len(), 1, "{}", counts(&r));
    assert_eq!(broken[0].reconfigured, 1);
    // Both graphs get the device after the fault: far more frames processed than before it.
    let lost = npu_drops(&r, None);
    assert!((1..=20).contains(&lost), "{lost} lost: {}", counts(&r));
    for g in ["body", "face"] {
        assert!(
            processed(&r, Some(g)) + 40 >= captured(&r, g),
            "graph {g}: {}",
            counts(&r)
        );
    }
}

#[test]
fn a_device_briefly_unavailable_costs_a_frame_and_its_graph_is_configured_again() {
    let r = npu_faults(FaultPlan::none().at_job(AT, DeviceFault::DeviceTemporarilyUnavailable));
    let broken: Vec<_> = r.graphs.iter().filter(|g| g.fault.is_some()).collect();
    assert_eq!(broken.len(), 1, "{}", counts(&r));
    let g = broken[0];
    let fault = g.fault.as_deref().unwrap_or_default();
    assert!(
        fault.contains("HAILO_DEVICE_TEMPORARILY_UNAVAILABLE"),
        "{fault}"
    );
    assert_eq!((g.reconfigured, g.reconfigure_failed), (1, 0));
    let lost = npu_drops(&r, None);
    assert!((1..=20).contains(&lost), "{lost} lost: {}", counts(&r));
    assert!(processed(&r, None) > 4 * AT, "{}", counts(&r));
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
