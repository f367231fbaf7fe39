//! The safe NPU API over the stub table (`hailort_sys::stub`), whose every
//! entry answers `HAILO_NOT_IMPLEMENTED`.
//!
//! A table that refuses everything stops at the first call (opening the
//! device), so the whole API is driven per entry instead: the simulator's
//! table with exactly one entry replaced by the stub's. Each public entry
//! point then either succeeds (the entry is not its business) or fails with
//! `NpuError::NotImplemented` naming the replaced entry, and nothing panics.
//! The negative control is the same walk on the untouched simulator table,
//! which succeeds.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::Duration;

use common::{compute_only, fixture, tiny_hef};
use hailo_edge::npu::{
    result, Api, Backend, Device, DeviceOptions, Direction, FormatType, NpuError, Scheduling,
    Status,
};
use hailort_sys::hes_api;

const T: Duration = Duration::from_secs(10);

/// Declares the table entries once, each with how the safe API reports the stub's answer, and
/// derives from that one list [`ENTRIES`], the exhaustive destructuring of
/// [`every_field_is_listed`] (which fails to compile when the table gains an entry the list
/// lacks) and the swap by name of [`sim_with_stub`].
macro_rules! entries {
    ($($field:ident => $surfaced:ident,)*) => {
        const ENTRIES: &[(&str, Surfaced)] = &[$((stringify!($field), Surfaced::$surfaced),)*];

        #[test]
        fn every_field_is_listed() {
            let hes_api {
                abi_version: _,
                $($field: _,)*
            } = *hailort_sys::stub_api();
            assert_eq!(ENTRIES.len(), 44);
        }

        /// The simulator's table with `entry` taken from the stub.
        fn sim_with_stub(entry: &str) -> Api {
            let mut table = *Api::sim().raw();
            let stub = hailort_sys::stub_api();
            match entry {
                $(stringify!($field) => table.$field = stub.$field,)*
                other => panic!("no table entry {other}"),
            }
            Api::from_raw(Box::leak(Box::new(table)), "sim+stub")
        }
    };
}

entries! {
    get_library_version => Error,
    get_status_message => Text,
    last_error => Text,
    scan_devices => HailoRtOnly,
    vdevice_create => Error,
    vdevice_release => LoggedInDrop,
    vdevice_device_ids => FallsBack,
    vdevice_performance_stats => Error,
    vdevice_power => Error,
    vdevice_chip_temperature => Error,
    vdevice_identify => Error,
    infer_model_create_from_file => Error,
    infer_model_create_from_memory => Error,
    infer_model_release => LoggedInDrop,
    infer_model_name => Error,
    infer_model_stream_count => Error,
    infer_model_stream_info => Error,
    infer_model_stream_quant_infos => Error,
    infer_model_set_batch_size => Error,
    infer_model_set_format_type => Error,
    infer_model_set_format_order => Error,
    infer_model_set_power_mode => Error,
    infer_model_computational_ops => Error,
    infer_model_configure => Error,
    configured_model_release => LoggedInDrop,
    configured_model_create_bindings => Error,
    configured_model_run => Unused,
    configured_model_run_async => Error,
    configured_model_wait_for_async_ready => Error,
    configured_model_get_async_queue_size => Error,
    configured_model_set_scheduler_priority => Error,
    configured_model_set_scheduler_threshold => Error,
    configured_model_set_scheduler_timeout => Error,
    configured_model_activate => Error,
    configured_model_deactivate => Error,
    configured_model_shutdown => Error,
    bindings_set_buffer => Error,
    bindings_release => LoggedInDrop,
    job_wait => FallsBack,
    job_release => LoggedInDrop,
    infer_model_set_hw_latency_flags => Error,
    configured_model_hw_latency => Error,
    vdevice_dma_map => Logged,
    vdevice_dma_unmap => LoggedInDrop,
}

/// How a refusal of one entry reaches the user.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Surfaced {
    /// A public call returns `NotImplemented` naming the entry.
    Error,
    /// A release entry, called from `Drop`, which logs the error.
    LoggedInDrop,
    /// A failure the safe layer logs and works around (a buffer that could
    /// not be mapped for DMA is used unmapped).
    Logged,
    /// The safe layer has another source: `Device::open` falls back to the
    /// id it asked for, `Job::wait` to the completion channel.
    FallsBack,
    /// A text entry; the stub's static text is used as any other.
    Text,
    /// Only called on the HailoRT table (`scan_hailort`, `Backend::Auto`).
    HailoRtOnly,
    /// Not called by the safe API: a blocking run that times out leaves its
    /// buffers in use with nothing to say when they are free, so
    /// `ConfiguredModel::run` is a run_async and a wait.
    Unused,
}

/// The simulator cannot measure power or temperature: `NotSupported` is its
/// honest answer there, anything else is passed on.
fn unless_not_supported<T>(r: Result<T, NpuError>) -> Result<(), NpuError> {
    match r {
        Err(e) if e.status() == Some(Status::NotSupported) => Ok(()),
        other => other.map(drop),
    }
}

/// Every public NPU entry point that reaches the table, on `table`.
fn walk(table: Api) -> Result<(), NpuError> {
    let open = |scheduling| {
        Device::open_on_table(
            table,
            Backend::Sim(compute_only()),
            DeviceOptions {
                scheduling,
                group_id: None,
                ..DeviceOptions::default()
            },
        )
    };
    let device = open(Scheduling::RoundRobin)?;
    device.library_version()?;
    device.performance_stats()?;
    unless_not_supported(device.power())?;
    unless_not_supported(device.chip_temperature())?;
    device.identity()?;

    let from_file = device.load_model_file(fixture("backbone_288.hef"))?;
    from_file.computational_ops()?;
    drop(from_file);
    let mut model = device.load_model(&tiny_hef("stub_walk", 16, 4, Some(1_000_000)))?;
    model.set_batch_size(1)?;
    model.set_format_type(Direction::Output, "stub_walk/output", FormatType::Float32)?;
    let order = model.outputs()[0].format_order;
    model.set_format_order(Direction::Output, "stub_walk/output", order)?;
    model.set_ultra_performance(false)?;
    model.computational_ops()?;
    model.set_hw_latency_measurement(true)?;

    let cm = model.configure()?;
    cm.set_scheduler_priority(10)?;
    cm.set_scheduler_threshold(1)?;
    cm.set_scheduler_timeout(Duration::from_millis(1))?;
    cm.wait_for_async_ready(T, 1)?;
    cm.async_queue_size()?;
    let bindings = cm.run(cm.bindings()?, T)?;
    let mut job = cm.run_async(bindings)?;
    let done = job.wait(T)?;
    done.status?;
    drop(job);
    cm.hw_latency()?;
    cm.submit(done.bindings)?;
    let queued = cm
        .wait_next_complete(T)
        .ok_or(NpuError::CompletionLost { job: 0 })?;
    queued.status?;
    cm.shutdown()?;
    drop(cm);
    drop(model);

    let manual = open(Scheduling::None)?;
    let model = manual.load_model(&tiny_hef("stub_manual", 16, 4, Some(1_000_000)))?;
    let cm = model.configure()?;
    cm.activate()?;
    cm.run(cm.bindings()?, T)?;
    cm.deactivate()?;
    Ok(())
}

#[test]
fn the_walk_succeeds_on_the_simulator() {
    walk(Api::sim()).expect("the simulator answers every entry");
}

/// Keeps every log message, so the test can see what `Drop` reported.
struct Recorder(Mutex<Vec<String>>);

impl log::Log for Recorder {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        lines.push(record.args().to_string());
    }
    fn flush(&self) {}
}

static RECORDER: Recorder = Recorder(Mutex::new(Vec::new()));

fn logged(needle: &str) -> bool {
    let lines = RECORDER.0.lock().unwrap_or_else(|e| e.into_inner());
    lines.iter().any(|l| l.contains(needle))
}

#[test]
fn each_stubbed_entry_is_reported_by_name_and_nothing_panics() {
    log::set_logger(&RECORDER).expect("the only logger of this test binary");
    log::set_max_level(log::LevelFilter::Warn);
    let mut reported = Vec::new();
    for &(entry, surfaced) in ENTRIES {
        let outcome = catch_unwind(AssertUnwindSafe(|| walk(sim_with_stub(entry))));
        let outcome = outcome.unwrap_or_else(|_| panic!("stubbing {entry} panicked"));
        match (surfaced, outcome) {
            (Surfaced::Error, Err(NpuError::NotImplemented { call, .. })) => {
                assert_eq!(call, entry, "stubbing {entry} was reported as {call}");
                reported.push(entry);
            }
            (Surfaced::Error, other) => {
                panic!("stubbing {entry}: expected NotImplemented, got {other:?}")
            }
            (Surfaced::LoggedInDrop | Surfaced::Logged, Ok(())) => {
                let needle = format!("{entry}: HAILO_NOT_IMPLEMENTED (7)");
                assert!(
                    logged(&needle),
                    "stubbing {entry}: Drop logged no '{needle}'"
                );
            }
            (_, Ok(())) => {}
            (how, Err(err)) => panic!("stubbing {entry} ({how:?}) failed the walk: {err}"),
        }
    }
    let expected = ENTRIES
        .iter()
        .filter(|(_, s)| *s == Surfaced::Error)
        .count();
    assert_eq!(reported.len(), expected);
    assert!(expected >= 28, "only {expected} entries surface");
}

#[test]
fn the_whole_stub_refuses_at_the_first_call() {
    let api = Api::stub();
    assert_eq!(api.backend(), "stub");
    let err = Device::open_on_table(api, Backend::Sim(compute_only()), DeviceOptions::default())
        .unwrap_err();
    match &err {
        NpuError::NotImplemented { call, detail } => {
            assert_eq!(*call, "vdevice_create");
            assert_eq!(detail, "hailort-sys stub table: no entry is implemented");
        }
        other => panic!("expected NotImplemented, got {other:?}"),
    }
    assert_eq!(err.status(), Some(Status::NotImplemented));
    assert_eq!(
        Status::NotImplemented.code(),
        hailort_sys::HES_NOT_IMPLEMENTED
    );
    assert!(
        err.to_string().contains("HAILO_NOT_IMPLEMENTED (7)"),
        "{err}"
    );

    for (call, r) in [
        (
            "get_library_version",
            result::library::version(&api).map(drop),
        ),
        ("scan_devices", result::library::scan(&api).map(drop)),
    ] {
        assert!(
            matches!(r, Err(NpuError::NotImplemented { call: c, .. }) if c == call),
            "{call}: {r:?}"
        );
    }
    assert_eq!(
        result::library::status_name(&api, 7),
        "HAILO_NOT_IMPLEMENTED (7)"
    );
}

/// Negative control of the per-entry check: an entry the walk never reaches
/// on the simulator (the HailoRT scan) does not fail it, so "every entry
/// fails the walk" is not trivially true.
#[test]
fn a_stubbed_entry_outside_the_walk_changes_nothing() {
    walk(sim_with_stub("scan_devices")).expect("scan_devices is not used by the simulator path");
}
