//! The stub table answers HAILO_NOT_IMPLEMENTED from every entry, writes no
//! out-parameter, never calls a completion and never returns a NULL text.

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use hailort_sys::*;

/// Sentinel written into every out-parameter before a call.
const SENTINEL: usize = 0x5eed;

static CALLBACKS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_completion(_status: hes_status, _user: *mut c_void) {
    CALLBACKS.fetch_add(1, Ordering::SeqCst);
}

/// Non-NULL handles that no entry may dereference.
fn handle<T>() -> *mut T {
    ptr::without_provenance_mut(0x1000)
}

/// `p` as the out-handle parameter of any entry.
fn out<T>(p: &mut *mut c_void) -> *mut *mut T {
    (p as *mut *mut c_void).cast()
}

#[test]
fn not_implemented_is_hailort_status_7() {
    assert_eq!(HES_NOT_IMPLEMENTED, 7);
    assert_ne!(HES_NOT_IMPLEMENTED, HES_SUCCESS);
    assert_eq!(stub_api().abi_version, HES_ABI_VERSION);
}

#[test]
fn every_entry_answers_not_implemented_and_writes_nothing() {
    let api = *stub_api();
    let mut statuses: Vec<(&str, hes_status)> = Vec::new();
    let mut count = SENTINEL;
    let mut ptr_out: *mut c_void = ptr::without_provenance_mut(SENTINEL);
    let mut version = hes_version {
        major: 9,
        minor: 9,
        revision: 9,
    };
    let mut ids = [hes_device_id { id: [7; 32] }];
    let mut stats = hes_performance_stats {
        cpu_utilization: 1.5,
        ..Default::default()
    };
    let mut watts = 1.5f32;
    let mut temp = hes_chip_temperature {
        sample_count: 9,
        ..Default::default()
    };
    let mut identity = hes_identity {
        protocol_version: 9,
        ..Default::default()
    };
    let mut name = [7 as std::ffi::c_char; 8];
    let mut info = hes_stream_info {
        frame_size: 9,
        ..Default::default()
    };
    let mut quant = [hes_quant_info {
        scale: 1.5,
        ..Default::default()
    }];
    let mut ops = 9u64;
    let text = c"x".as_ptr();
    let (v, m, c, b, j) = (
        handle::<hes_vdevice>(),
        handle::<hes_infer_model>(),
        handle::<hes_configured_model>(),
        handle::<hes_bindings>(),
        handle::<hes_job>(),
    );

    macro_rules! call {
        ($entry:ident($($arg:expr),*)) => {{
            let f = api.$entry.expect(stringify!($entry));
            // SAFETY: the stub reads and writes no argument (its contract,
            // which this test checks through the sentinels).
            statuses.push((stringify!($entry), unsafe { f($($arg),*) }));
        }};
    }
    call!(get_library_version(&mut version));
    call!(scan_devices(ids.as_mut_ptr(), &mut count));
    call!(vdevice_create(ptr::null(), out(&mut ptr_out)));
    call!(vdevice_release(v));
    call!(vdevice_device_ids(v, ids.as_mut_ptr(), &mut count));
    call!(vdevice_performance_stats(v, 0, &mut stats));
    call!(vdevice_power(v, 0, &mut watts));
    call!(vdevice_chip_temperature(v, 0, &mut temp));
    call!(vdevice_identify(v, 0, &mut identity));
    call!(infer_model_create_from_file(v, text, out(&mut ptr_out)));
    call!(infer_model_create_from_memory(
        v,
        text.cast(),
        1,
        out(&mut ptr_out)
    ));
    call!(infer_model_release(m));
    call!(infer_model_name(m, name.as_mut_ptr(), name.len()));
    call!(infer_model_stream_count(m, 0, &mut count));
    call!(infer_model_stream_info(m, 0, 0, &mut info));
    call!(infer_model_stream_quant_infos(
        m,
        0,
        0,
        quant.as_mut_ptr(),
        &mut count
    ));
    call!(infer_model_set_batch_size(m, 1));
    call!(infer_model_set_format_type(m, 0, text, 1));
    call!(infer_model_set_format_order(m, 0, text, 1));
    call!(infer_model_set_power_mode(m, 1));
    call!(infer_model_computational_ops(m, &mut ops));
    call!(infer_model_configure(m, out(&mut ptr_out)));
    call!(configured_model_release(c));
    call!(configured_model_create_bindings(c, out(&mut ptr_out)));
    call!(configured_model_run(c, b, 10));
    call!(configured_model_run_async(
        c,
        b,
        Some(count_completion),
        ptr::null_mut(),
        out(&mut ptr_out)
    ));
    call!(configured_model_wait_for_async_ready(c, 10, 1));
    call!(configured_model_get_async_queue_size(c, &mut count));
    call!(configured_model_set_scheduler_priority(c, 1));
    call!(configured_model_set_scheduler_threshold(c, 1));
    call!(configured_model_set_scheduler_timeout(c, 1));
    call!(configured_model_activate(c));
    call!(configured_model_deactivate(c));
    call!(configured_model_shutdown(c));
    call!(bindings_set_buffer(b, 0, text, ptr::null_mut(), 0));
    call!(bindings_release(b));
    call!(job_wait(j, 10));
    call!(job_release(j));
    call!(infer_model_set_hw_latency_flags(m, 1));
    let mut latency = 9u64;
    call!(configured_model_hw_latency(c, &mut latency));
    call!(vdevice_dma_map(v, text.cast_mut().cast(), 1, 0));
    call!(vdevice_dma_unmap(v, text.cast_mut().cast(), 1, 0));

    // Every status-returning entry of the table was called (42 of them: the
    // 45 fields less abi_version, get_status_message and last_error).
    assert_eq!(statuses.len(), 42);
    assert_eq!(latency, 9);
    for (entry, status) in &statuses {
        assert_eq!(*status, HES_NOT_IMPLEMENTED, "{entry}");
    }
    assert_eq!(count, SENTINEL);
    assert_eq!(ptr_out.addr(), SENTINEL);
    assert_eq!((version.major, version.minor, version.revision), (9, 9, 9));
    assert_eq!(ids[0].id, [7; 32]);
    assert_eq!(stats.cpu_utilization, 1.5);
    assert_eq!(watts, 1.5);
    assert_eq!(temp.sample_count, 9);
    assert_eq!(identity.protocol_version, 9);
    assert_eq!(name, [7; 8]);
    assert_eq!(info.frame_size, 9);
    assert_eq!(quant[0].scale, 1.5);
    assert_eq!(ops, 9);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(CALLBACKS.load(Ordering::SeqCst), 0, "run_async completed");
}

#[test]
fn status_names_are_static_and_null_only_for_unknown_statuses() {
    let api = stub_api();
    let message = api.get_status_message.unwrap();
    let last_error = api.last_error.unwrap();
    for status in [2, 97, 98, u32::MAX] {
        // SAFETY: the entry takes any value and reads no memory.
        assert!(unsafe { message(status) }.is_null(), "status {status}");
    }
    // SAFETY: known statuses give a static NUL-terminated name.
    let seven = unsafe { CStr::from_ptr(message(HES_NOT_IMPLEMENTED)) };
    assert_eq!(seven, c"HAILO_NOT_IMPLEMENTED");
    // SAFETY: as above.
    let zero = unsafe { CStr::from_ptr(message(HES_SUCCESS)) };
    assert_eq!(zero, c"HAILO_SUCCESS");
    let from_thread = std::thread::spawn(move || {
        // SAFETY: the stub returns a static NUL-terminated text.
        unsafe { CStr::from_ptr(last_error()) }.to_owned()
    })
    .join()
    .unwrap();
    assert_eq!(from_thread.as_c_str(), hailort_sys::stub::LAST_ERROR);
}
