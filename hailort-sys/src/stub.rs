//! A table whose every entry answers `HAILO_NOT_IMPLEMENTED`.
//!
//! The third implementation of [`hes_api`], beside the C++ shim's
//! ([`crate::hailort_api`]) and the simulator's (in the `hailo-edge` crate).
//! It does nothing, on purpose: a caller gets a valid table in every build,
//! and each call fails with a status that names what is missing instead of
//! a NULL entry or a crash. Tests use it to show that every safe entry point
//! turns a backend's refusal into an error naming the call.
//!
//! Contract, beyond the header's:
//! - every status-returning entry returns [`HES_NOT_IMPLEMENTED`] and writes
//!   no out-parameter (counts, handles and buffers are left as given);
//! - [`hes_api::get_status_message`] names the two statuses this table
//!   produces (`HAILO_SUCCESS`, `HAILO_NOT_IMPLEMENTED`) and answers NULL for
//!   any other, as HailoRT does for a status it does not know;
//! - [`hes_api::last_error`] returns a static NUL-terminated text, never NULL;
//! - `configured_model_run_async` never calls its completion callback (the
//!   header says it runs iff the call succeeded, and the call never does).
//!
//! No entry reads a pointer it is given, so every entry is a safe
//! `extern "C" fn` and the table is sound to call with any arguments.

use std::ffi::{c_char, c_void, CStr};

use crate::*;

/// `hailo_status` HAILO_NOT_IMPLEMENTED (7 in `hailort.h`, HailoRT 4.x and 5.x).
pub const HES_NOT_IMPLEMENTED: hes_status = 7;

/// What [`hes_api::last_error`] of the stub says, on every thread.
pub const LAST_ERROR: &CStr = c"hailort-sys stub table: no entry is implemented";

/// Defines one `extern "C"` fn per listed entry that answers
/// HAILO_NOT_IMPLEMENTED without touching its arguments, and the table of
/// them. The struct literal lists every field, so a new table entry does not
/// compile until it is added here.
macro_rules! not_implemented {
    ($($entry:ident($($arg:ty),* $(,)?);)*) => {
        $(
            #[doc = concat!("`", stringify!($entry), "`: HAILO_NOT_IMPLEMENTED.")]
            extern "C" fn $entry($(_: $arg),*) -> hes_status {
                HES_NOT_IMPLEMENTED
            }
        )*

        static STUB: hes_api = hes_api {
            abi_version: HES_ABI_VERSION,
            get_status_message: Some(get_status_message),
            last_error: Some(last_error),
            $($entry: Some($entry),)*
        };
    };
}

not_implemented! {
    get_library_version(*mut hes_version);
    scan_devices(*mut hes_device_id, *mut usize);

    vdevice_create(*const hes_vdevice_params, *mut *mut hes_vdevice);
    vdevice_release(*mut hes_vdevice);
    vdevice_device_ids(*mut hes_vdevice, *mut hes_device_id, *mut usize);
    vdevice_performance_stats(*mut hes_vdevice, usize, *mut hes_performance_stats);
    vdevice_power(*mut hes_vdevice, usize, *mut f32);
    vdevice_chip_temperature(*mut hes_vdevice, usize, *mut hes_chip_temperature);
    vdevice_identify(*mut hes_vdevice, usize, *mut hes_identity);

    infer_model_create_from_file(*mut hes_vdevice, *const c_char, *mut *mut hes_infer_model);
    infer_model_create_from_memory(
        *mut hes_vdevice,
        *const c_void,
        usize,
        *mut *mut hes_infer_model,
    );
    infer_model_release(*mut hes_infer_model);
    infer_model_name(*mut hes_infer_model, *mut c_char, usize);
    infer_model_stream_count(*mut hes_infer_model, hes_direction, *mut usize);
    infer_model_stream_info(*mut hes_infer_model, hes_direction, usize, *mut hes_stream_info);
    infer_model_stream_quant_infos(
        *mut hes_infer_model,
        hes_direction,
        usize,
        *mut hes_quant_info,
        *mut usize,
    );
    infer_model_set_batch_size(*mut hes_infer_model, u16);
    infer_model_set_format_type(*mut hes_infer_model, hes_direction, *const c_char, u32);
    infer_model_set_format_order(*mut hes_infer_model, hes_direction, *const c_char, u32);
    infer_model_set_power_mode(*mut hes_infer_model, u32);
    infer_model_computational_ops(*mut hes_infer_model, *mut u64);
    infer_model_configure(*mut hes_infer_model, *mut *mut hes_configured_model);

    configured_model_release(*mut hes_configured_model);
    configured_model_create_bindings(*mut hes_configured_model, *mut *mut hes_bindings);
    configured_model_run(*mut hes_configured_model, *mut hes_bindings, u32);
    configured_model_run_async(
        *mut hes_configured_model,
        *mut hes_bindings,
        hes_completion_cb,
        *mut c_void,
        *mut *mut hes_job,
    );
    configured_model_wait_for_async_ready(*mut hes_configured_model, u32, u32);
    configured_model_get_async_queue_size(*mut hes_configured_model, *mut usize);
    configured_model_set_scheduler_priority(*mut hes_configured_model, u8);
    configured_model_set_scheduler_threshold(*mut hes_configured_model, u32);
    configured_model_set_scheduler_timeout(*mut hes_configured_model, u32);
    configured_model_activate(*mut hes_configured_model);
    configured_model_deactivate(*mut hes_configured_model);
    configured_model_shutdown(*mut hes_configured_model);

    bindings_set_buffer(*mut hes_bindings, hes_direction, *const c_char, *mut c_void, usize);
    bindings_release(*mut hes_bindings);

    job_wait(*mut hes_job, u32);
    job_release(*mut hes_job);

    infer_model_set_hw_latency_flags(*mut hes_infer_model, u32);
    configured_model_hw_latency(*mut hes_configured_model, *mut u64);
    vdevice_dma_map(*mut hes_vdevice, *mut c_void, usize, u32);
    vdevice_dma_unmap(*mut hes_vdevice, *mut c_void, usize, u32);
}

/// The name of the two statuses this table produces; NULL for any other.
extern "C" fn get_status_message(status: hes_status) -> *const c_char {
    match status {
        HES_SUCCESS => c"HAILO_SUCCESS".as_ptr(),
        HES_NOT_IMPLEMENTED => c"HAILO_NOT_IMPLEMENTED".as_ptr(),
        _ => std::ptr::null(),
    }
}

extern "C" fn last_error() -> *const c_char {
    LAST_ERROR.as_ptr()
}

/// The stub table: every entry answers [`HES_NOT_IMPLEMENTED`].
///
/// ```
/// let api = hailort_sys::stub_api();
/// let mut version = hailort_sys::hes_version::default();
/// let get = api.get_library_version.unwrap();
/// // SAFETY: the stub reads no argument.
/// let status = unsafe { get(&mut version) };
/// assert_eq!(status, hailort_sys::stub::HES_NOT_IMPLEMENTED);
/// assert_eq!(version.major, 0); // out-params are left as given
/// ```
pub fn api() -> &'static hes_api {
    &STUB
}
