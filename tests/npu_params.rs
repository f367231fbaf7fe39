//! What a device is opened and configured with: the VDevice group id (two
//! clients of one simulated device), hardware latency measurement, and the
//! DMA mapping of pooled buffers.

mod common;

use std::ptr::NonNull;
use std::time::{Duration, Instant};

use common::{compute_only, tiny_hef};
use hailo_edge::npu::sim::{self, DeviceProfile, Link, SimProfile, TimeBase};
use hailo_edge::npu::{result, Api, Backend, Device, DeviceOptions, GroupId, NpuError, Status};
use hailort_sys::hes_vdevice;

const T: Duration = Duration::from_secs(10);

/// A second client of device `id`, opened through the simulator's table.
fn client(id: &str, group: Option<&str>) -> Result<NonNull<hes_vdevice>, NpuError> {
    result::vdevice::create(&Api::sim(), &[id.to_string()], 1, group)
}

fn release(v: NonNull<hes_vdevice>) {
    // SAFETY: `v` was created by the simulator's table and is not used again.
    unsafe { result::vdevice::release(&Api::sim(), v) }.unwrap();
}

fn open(profile: SimProfile, group: Option<GroupId>, dma_map: bool) -> Device {
    Device::open_with(
        Backend::Sim(profile),
        DeviceOptions {
            group_id: group,
            dma_map,
            ..DeviceOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn a_unique_device_refuses_a_second_client_and_a_shared_one_admits_it() {
    // The default group is "UNIQUE": a second client gets HAILO_DEVICE_IN_USE,
    // answered at once on the virtual clock, naming the modelled 5 s wait.
    let unique = open(compute_only(), None, true);
    let err = client(unique.device_id(), None).unwrap_err();
    assert_eq!(err.status(), Some(Status::DeviceInUse), "{err}");
    assert!(err.detail().contains("waits 5.0 s"), "{err}");
    let err = client(unique.device_id(), Some("SHARED")).unwrap_err();
    assert_eq!(err.status(), Some(Status::DeviceInUse), "{err}");

    // With "SHARED" on both sides, both clients use the one device.
    let shared = open(compute_only(), Some(GroupId::shared()), true);
    let second = client(shared.device_id(), Some("SHARED")).expect("a SHARED client shares");
    // A "UNIQUE" client is still refused, and so is another group.
    let err = client(shared.device_id(), Some("UNIQUE")).unwrap_err();
    assert_eq!(err.status(), Some(Status::DeviceInUse));
    let err = client(shared.device_id(), Some("OTHER")).unwrap_err();
    assert_eq!(err.status(), Some(Status::DeviceInUse));
    // The device stays open while one client remains.
    drop(shared);
    let stats = sim::registry::core(&second_id(second)).map(|c| c.stats());
    assert!(stats.is_some(), "the second client keeps the device open");
    release(second);
}

/// The device id behind a raw client.
fn second_id(v: NonNull<hes_vdevice>) -> String {
    // SAFETY: `v` is a live vdevice of the simulator's table.
    let ids = unsafe { result::vdevice::device_ids(&Api::sim(), v) }.unwrap();
    ids.into_iter().next().unwrap()
}

#[test]
fn a_client_that_names_no_device_finds_none_free() {
    // HailoRT's hRPC client skips a device in use when no id was given, and
    // answers HAILO_OUT_OF_PHYSICAL_DEVICES when none is left.
    let api = Api::sim();
    let first = result::vdevice::create(&api, &[], 1, None).unwrap();
    let err = result::vdevice::create(&api, &[], 1, None).unwrap_err();
    assert_eq!(err.status(), Some(Status::OutOfPhysicalDevices), "{err}");
    release(first);
    let again = result::vdevice::create(&api, &[], 1, None).expect("free again");
    release(again);
}

fn realtime_with_wait(seconds: f64) -> SimProfile {
    SimProfile::new(
        DeviceProfile::hailo10h()
            .with_link(Link::free())
            .with_vdevice_wait(seconds, "test: a short wait"),
    )
    .with_clock(TimeBase::RealTime)
}

#[test]
fn on_the_real_time_clock_a_unique_client_waits_for_the_holder() {
    // Nobody closes: the client waits the whole modelled time, then is refused.
    let held = open(realtime_with_wait(0.3), None, true);
    let start = Instant::now();
    let err = client(held.device_id(), None).unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(err.status(), Some(Status::DeviceInUse));

    // The holder closes during the wait: the client gets the device.
    let held = open(realtime_with_wait(5.0), None, true);
    let id = held.device_id().to_string();
    let waiter = std::thread::spawn(move || {
        let start = Instant::now();
        (
            client(&id, None).map(|v| v.as_ptr() as usize),
            start.elapsed(),
        )
    });
    std::thread::sleep(Duration::from_millis(100));
    drop(held);
    let (got, waited) = waiter.join().unwrap();
    let v = got.expect("the device is free after the holder closed");
    assert!(waited < Duration::from_secs(4), "{waited:?}");
    release(NonNull::new(v as *mut hes_vdevice).unwrap());
}

#[test]
fn the_group_id_key_is_checked() {
    for bad in ["", "a b", "\u{e9}"] {
        let err = GroupId::parse(bad).unwrap_err();
        assert!(err.to_string().contains("group id"), "{err}");
    }
    assert_eq!(GroupId::parse("SHARED").unwrap(), GroupId::shared());
}

fn run_frames(device: &Device, measure: bool, frames: usize) -> hailo_edge::npu::ConfiguredModel {
    let mut model = device
        .load_model(&tiny_hef("params", 16, 4, Some(50_000_000)))
        .unwrap();
    model.set_batch_size(1).unwrap();
    model.set_hw_latency_measurement(measure).unwrap();
    let cm = model.configure().unwrap();
    for _ in 0..frames {
        let mut job = cm.run_async(cm.bindings().unwrap()).unwrap();
        job.wait(T).unwrap().status.unwrap();
    }
    cm
}

#[test]
fn hardware_latency_is_reported_only_when_asked_for_before_configure() {
    let profile = SimProfile::new(DeviceProfile::hailo10h());
    let device = open(profile, None, true);
    let cm = run_frames(&device, true, 4);
    let latency = cm.hw_latency().unwrap().expect("measured");
    // One frame per burst, run one after another: every burst's device time
    // but the switch is hardware latency.
    let stats = device.sim_stats().unwrap();
    let switch: u64 = stats.switch_ns.iter().sum();
    let per_frame = (stats.busy_ns - switch) / 4;
    assert_eq!(latency, Duration::from_nanos(per_frame));
    assert!(latency > Duration::ZERO);
    drop(cm);

    // Negative control: without the flag HailoRT answers HAILO_NOT_AVAILABLE.
    let device = open(SimProfile::new(DeviceProfile::hailo10h()), None, true);
    let cm = run_frames(&device, false, 4);
    assert_eq!(cm.hw_latency().unwrap(), None);
}

#[test]
fn mapped_buffers_skip_the_per_transfer_mapping_and_are_unmapped_before_freeing() {
    let frames = 6u64;
    let mapped = open(compute_only(), None, true);
    assert!(mapped.dma_map());
    let cm = run_frames(&mapped, false, frames as usize);
    let stats = mapped.sim_stats().unwrap();
    assert_eq!(stats.transfer_maps, 0);
    assert_eq!(stats.bounce_copies, 0, "pool buffers are page-aligned");
    assert_eq!(
        stats.mapped_buffers, 2,
        "one input and one output buffer, reused"
    );
    drop(cm);
    assert_eq!(
        mapped.sim_stats().unwrap().mapped_buffers,
        0,
        "unmapped with the pool"
    );

    // Negative control: without dma_map every buffer is mapped per transfer.
    let unmapped = open(compute_only(), None, false);
    let _cm = run_frames(&unmapped, false, frames as usize);
    let stats = unmapped.sim_stats().unwrap();
    assert_eq!(stats.transfer_maps, 2 * frames);
    assert_eq!(stats.mapped_buffers, 0);
}
