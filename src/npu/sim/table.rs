//! The simulator's `hes_api` table: Rust `extern "C"` functions with the
//! same contract and the same status codes as the C++ shim over HailoRT.
//!
//! Handles are ids in a process-wide registry, never reused, so a released
//! handle is detected (`HAILO_INVALID_OPERATION`) instead of being undefined
//! behaviour. Every entry runs under `catch_unwind`; a panic becomes
//! `HAILO_INTERNAL_FAILURE` and never crosses the C boundary.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use hailort_sys::*;

use super::completion::{RawBuf, SimJob};
use super::core::{Core, Fail};
use super::jobs;
use super::measure;
use super::model_entries;
use super::model_spec::ModelSpec;
use super::registry;
use super::status::*;
use super::vdevice::{SimInferModel, SimVDevice};

pub(crate) struct SimConfigured {
    pub core: Arc<Core>,
    pub model_id: u64,
    pub spec: Arc<ModelSpec>,
    pub shut_down: AtomicBool,
}

pub(super) struct SimBindings {
    pub cm: Arc<SimConfigured>,
    /// Inputs then outputs.
    pub buffers: Mutex<Vec<Option<RawBuf>>>,
}

pub(super) enum Obj {
    VDevice(Arc<SimVDevice>),
    Model(Arc<SimInferModel>),
    Configured(Arc<SimConfigured>),
    Bindings(Arc<SimBindings>),
    Job(Arc<SimJob>),
}

static HANDLES: LazyLock<Mutex<HashMap<usize, Obj>>> = LazyLock::new(Default::default);
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

pub(super) fn handles() -> MutexGuard<'static, HashMap<usize, Obj>> {
    HANDLES.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn insert<T>(obj: Obj) -> *mut T {
    let id = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed) * 16;
    handles().insert(id, obj);
    std::ptr::without_provenance_mut(id)
}

pub(super) fn released(kind: &str) -> Fail {
    (
        HAILO_INVALID_OPERATION,
        format!("{kind} handle is not live: it was released or never created"),
    )
}

macro_rules! lookup {
    ($ptr:expr, $variant:ident, $kind:literal) => {
        match $crate::npu::sim::table::handles().get(&($ptr as usize)) {
            Some($crate::npu::sim::table::Obj::$variant(obj)) => std::sync::Arc::clone(obj),
            _ => return Err($crate::npu::sim::table::released($kind)),
        }
    };
}
pub(super) use lookup;

pub(super) fn remove(ptr: usize, kind: &str) -> Result<Obj, Fail> {
    handles().remove(&ptr).ok_or_else(|| released(kind))
}

/// Declares entry runners: `on_x(handle, body)` runs `body` on the live object behind the
/// handle, under [`guard`]. The lookup is bound before `body` runs, because the handle table
/// stays locked while the lookup's temporaries live.
macro_rules! runners {
    ($($name:ident($handle:ty) => $variant:ident($obj:ty), $kind:literal;)*) => {
        $(
            pub(super) fn $name(
                handle: *mut $handle,
                body: impl FnOnce(Arc<$obj>) -> Result<(), Fail>,
            ) -> hes_status {
                guard(|| {
                    let obj = lookup!(handle, $variant, $kind);
                    body(obj)
                })
            }
        )*
    };
}

runners! {
    on_configured(hes_configured_model) => Configured(SimConfigured), "configured model";
    on_model(hes_infer_model) => Model(SimInferModel), "infer model";
}

/// Runs an entry: catches panics, records the last error, returns the status.
pub(super) fn guard(body: impl FnOnce() -> Result<(), Fail>) -> hes_status {
    let outcome = catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| Err((HAILO_INTERNAL_FAILURE, "simulator panicked".into())));
    let (status, message) = match outcome {
        Ok(()) => (HAILO_SUCCESS, String::new()),
        Err(fail) => fail,
    };
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
    status
}

pub(super) fn out<T>(ptr: *mut T) -> Result<*mut T, Fail> {
    if ptr.is_null() {
        Err((HAILO_INVALID_ARGUMENT, "output pointer is NULL".into()))
    } else {
        Ok(ptr)
    }
}

/// # Safety
/// `s` is NULL or a NUL-terminated string.
pub(super) unsafe fn str_arg<'a>(s: *const c_char, what: &str) -> Result<&'a str, Fail> {
    if s.is_null() {
        return Err((HAILO_INVALID_ARGUMENT, format!("{what} is NULL")));
    }
    // SAFETY: the caller passes a NUL-terminated string.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| (HAILO_INVALID_ARGUMENT, format!("{what} is not UTF-8")))
}

fn device_id(id: &str) -> hes_device_id {
    let mut dst = hes_device_id::default();
    for (d, s) in dst
        .id
        .iter_mut()
        .zip(id.bytes().take(HES_MAX_DEVICE_ID as usize - 1))
    {
        *d = s as c_char;
    }
    dst
}

/// Writes `items` into the caller's array `dst` of `*count` elements and
/// sets `*count` to how many there are. When they do not fit (or `dst` is
/// NULL) the count is still set, so the caller can retry with room:
/// `HAILO_INSUFFICIENT_BUFFER` saying "`n` `what`".
///
/// # Safety
/// `count` is non-NULL and writable; `dst` is NULL or holds `*count`
/// writable elements.
pub(super) unsafe fn write_list<T>(
    dst: *mut T,
    count: *mut usize,
    items: impl ExactSizeIterator<Item = T>,
    what: &str,
) -> Result<(), Fail> {
    let n = items.len();
    // SAFETY: `count` is non-NULL and writable (caller).
    let capacity = unsafe { count.replace(n) };
    if n > capacity || (dst.is_null() && n > 0) {
        return Err((HAILO_INSUFFICIENT_BUFFER, format!("{n} {what}")));
    }
    for (i, item) in items.enumerate() {
        // SAFETY: `dst` holds `capacity` >= n elements (checked above).
        unsafe { dst.add(i).write(item) };
    }
    Ok(())
}

unsafe extern "C" fn get_library_version(v: *mut hes_version) -> hes_status {
    guard(|| {
        let v = out(v)?;
        // SAFETY: `v` is non-NULL and points to a writable hes_version (contract).
        unsafe {
            *v = hes_version {
                major: 5,
                minor: 2,
                revision: 0,
            }
        };
        Ok(())
    })
}

/// As HailoRT: the status name, and NULL for a status it does not know.
unsafe extern "C" fn get_status_message(status: hes_status) -> *const c_char {
    match crate::npu::error::Status::from_code(status) {
        Some(known) => super::status_name_c(known),
        None if status == HAILO_SUCCESS => c"HAILO_SUCCESS".as_ptr(),
        None => std::ptr::null(),
    }
}

unsafe extern "C" fn last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

unsafe extern "C" fn scan_devices(ids: *mut hes_device_id, count: *mut usize) -> hes_status {
    guard(|| {
        let count = out(count)?;
        let found = registry::scan();
        let found = found.iter().map(|id| device_id(id));
        // SAFETY: `count` is non-NULL (checked) and writable, `ids` NULL or
        // `*count` long (contract).
        unsafe { write_list(ids, count, found, "device ids found") }
    })
}

unsafe extern "C" fn vdevice_create(
    params: *const hes_vdevice_params,
    v: *mut *mut hes_vdevice,
) -> hes_status {
    guard(|| {
        let v = out(v)?;
        // SAFETY: `params` is NULL or a valid hes_vdevice_params (contract).
        let params = unsafe { params.as_ref() };
        let mut ids = Vec::new();
        let mut round_robin = true;
        let mut group = None;
        if let Some(p) = params {
            round_robin = p.scheduling_algorithm != 0;
            for i in 0..p.device_count {
                // SAFETY: `device_ids` has `device_count` elements (contract).
                let raw = unsafe { &*p.device_ids.add(i) };
                ids.push(crate::npu::result::from_c_chars(&raw.id));
            }
            if !p.group_id.is_null() {
                // SAFETY: a non-NULL group id is NUL-terminated (contract).
                group = Some(unsafe { str_arg(p.group_id, "group id") }?);
            }
        }
        let device = SimVDevice::open(&ids, round_robin, group)?;
        // SAFETY: `v` is non-NULL and writable.
        unsafe { *v = insert(Obj::VDevice(Arc::new(device))) };
        Ok(())
    })
}

unsafe extern "C" fn vdevice_release(v: *mut hes_vdevice) -> hes_status {
    guard(|| {
        if let Obj::VDevice(dev) = remove(v as usize, "vdevice")? {
            dev.core.dma.forget(v as usize);
        }
        Ok(())
    })
}

unsafe extern "C" fn vdevice_device_ids(
    v: *mut hes_vdevice,
    ids: *mut hes_device_id,
    count: *mut usize,
) -> hes_status {
    guard(|| {
        let dev = lookup!(v, VDevice, "vdevice");
        let count = out(count)?;
        let id = std::iter::once(device_id(&dev.core.id));
        // SAFETY: `count` is non-NULL (checked) and writable, `ids` NULL or
        // `*count` long (contract).
        unsafe { write_list(ids, count, id, "device id") }
    })
}

fn only_device(index: usize) -> Result<(), Fail> {
    if index == 0 {
        Ok(())
    } else {
        Err((
            HAILO_NOT_FOUND,
            format!("physical device index {index} out of range (1 device)"),
        ))
    }
}

unsafe extern "C" fn vdevice_performance_stats(
    v: *mut hes_vdevice,
    index: usize,
    s: *mut hes_performance_stats,
) -> hes_status {
    guard(|| {
        let dev = lookup!(v, VDevice, "vdevice");
        only_device(index)?;
        let s = out(s)?;
        let stats = dev.core.stats();
        let nnc = if stats.now_ns == 0 {
            0.0
        } else {
            (100.0 * stats.busy_ns as f64 / stats.now_ns as f64) as f32
        };
        let total_kib = (dev.core.profile.memory_bytes.value / 1024.0) as i64;
        // SAFETY: `s` is non-NULL and writable. CPU and DSP are not simulated: -1
        // is HailoRT's "could not read".
        unsafe {
            *s = hes_performance_stats {
                cpu_utilization: -1.0,
                ram_size_total_kib: total_kib,
                ram_size_used_kib: -1,
                nnc_utilization: nnc,
                dsp_utilization: -1,
            }
        };
        Ok(())
    })
}

unsafe extern "C" fn vdevice_power(
    v: *mut hes_vdevice,
    index: usize,
    _watts: *mut f32,
) -> hes_status {
    not_modelled(v, index, "power")
}

unsafe extern "C" fn vdevice_chip_temperature(
    v: *mut hes_vdevice,
    index: usize,
    _t: *mut hes_chip_temperature,
) -> hes_status {
    not_modelled(v, index, "temperature")
}

/// The simulated part's identity: a Hailo-10H whose firmware is the
/// simulator's library version, as a card matched to its host would be.
unsafe extern "C" fn vdevice_identify(
    v: *mut hes_vdevice,
    index: usize,
    id: *mut hes_identity,
) -> hes_status {
    guard(|| {
        let dev = lookup!(v, VDevice, "vdevice");
        only_device(index)?;
        let id = out(id)?;
        let mut identity = hes_identity {
            protocol_version: 2,
            fw_version: hes_version {
                major: 5,
                minor: 2,
                revision: 0,
            },
            device_architecture: 6,
            is_release: true,
            ..Default::default()
        };
        let text = |dst: &mut [c_char], src: &str| {
            let room = dst.len().saturating_sub(1);
            for (d, s) in dst.iter_mut().zip(src.bytes().take(room)) {
                *d = s as c_char;
            }
        };
        text(&mut identity.board_name, "hailo-edge simulator");
        text(&mut identity.serial_number, "SIM");
        text(&mut identity.product_name, &dev.core.profile.name);
        // SAFETY: `id` is non-NULL and points to a writable hes_identity (contract).
        unsafe { *id = identity };
        Ok(())
    })
}

/// A device reading the simulator has no model of: `HAILO_NOT_SUPPORTED`
/// once the handle and device index check out.
fn not_modelled(v: *mut hes_vdevice, index: usize, what: &str) -> hes_status {
    guard(|| {
        let _ = lookup!(v, VDevice, "vdevice");
        only_device(index)?;
        Err((
            HAILO_NOT_SUPPORTED,
            format!("the simulator does not model {what}"),
        ))
    })
}

unsafe extern "C" fn configured_model_release(c: *mut hes_configured_model) -> hes_status {
    guard(|| match remove(c as usize, "configured model")? {
        Obj::Configured(cm) => {
            cm.core.shutdown_model(cm.model_id, true);
            Ok(())
        }
        _ => Err(released("configured model")),
    })
}

unsafe extern "C" fn configured_model_create_bindings(
    c: *mut hes_configured_model,
    b: *mut *mut hes_bindings,
) -> hes_status {
    guard(|| {
        let cm = lookup!(c, Configured, "configured model");
        let b = out(b)?;
        let n = cm.spec.inputs.len() + cm.spec.outputs.len();
        let bindings = SimBindings {
            cm,
            buffers: Mutex::new(vec![None; n]),
        };
        // SAFETY: `b` is non-NULL and writable.
        unsafe { *b = insert(Obj::Bindings(Arc::new(bindings))) };
        Ok(())
    })
}

static API: hes_api = hes_api {
    abi_version: HES_ABI_VERSION,
    get_library_version: Some(get_library_version),
    get_status_message: Some(get_status_message),
    last_error: Some(last_error),
    scan_devices: Some(scan_devices),
    vdevice_create: Some(vdevice_create),
    vdevice_release: Some(vdevice_release),
    vdevice_device_ids: Some(vdevice_device_ids),
    vdevice_performance_stats: Some(vdevice_performance_stats),
    vdevice_power: Some(vdevice_power),
    vdevice_chip_temperature: Some(vdevice_chip_temperature),
    vdevice_identify: Some(vdevice_identify),
    infer_model_create_from_file: Some(model_entries::infer_model_create_from_file),
    infer_model_create_from_memory: Some(model_entries::infer_model_create_from_memory),
    infer_model_release: Some(model_entries::infer_model_release),
    infer_model_name: Some(model_entries::infer_model_name),
    infer_model_stream_count: Some(model_entries::infer_model_stream_count),
    infer_model_stream_info: Some(model_entries::infer_model_stream_info),
    infer_model_stream_quant_infos: Some(model_entries::infer_model_stream_quant_infos),
    infer_model_set_batch_size: Some(model_entries::infer_model_set_batch_size),
    infer_model_set_format_type: Some(model_entries::infer_model_set_format_type),
    infer_model_set_format_order: Some(model_entries::infer_model_set_format_order),
    infer_model_set_power_mode: Some(model_entries::infer_model_set_power_mode),
    infer_model_computational_ops: Some(model_entries::infer_model_computational_ops),
    infer_model_configure: Some(model_entries::infer_model_configure),
    configured_model_release: Some(configured_model_release),
    configured_model_create_bindings: Some(configured_model_create_bindings),
    configured_model_run: Some(jobs::configured_model_run),
    configured_model_run_async: Some(jobs::configured_model_run_async),
    configured_model_wait_for_async_ready: Some(jobs::configured_model_wait_for_async_ready),
    configured_model_get_async_queue_size: Some(jobs::configured_model_get_async_queue_size),
    configured_model_set_scheduler_priority: Some(jobs::configured_model_set_scheduler_priority),
    configured_model_set_scheduler_threshold: Some(jobs::configured_model_set_scheduler_threshold),
    configured_model_set_scheduler_timeout: Some(jobs::configured_model_set_scheduler_timeout),
    configured_model_activate: Some(jobs::configured_model_activate),
    configured_model_deactivate: Some(jobs::configured_model_deactivate),
    configured_model_shutdown: Some(jobs::configured_model_shutdown),
    bindings_set_buffer: Some(jobs::bindings_set_buffer),
    bindings_release: Some(jobs::bindings_release),
    job_wait: Some(jobs::job_wait),
    job_release: Some(jobs::job_release),
    infer_model_set_hw_latency_flags: Some(measure::infer_model_set_hw_latency_flags),
    configured_model_hw_latency: Some(measure::configured_model_hw_latency),
    vdevice_dma_map: Some(measure::vdevice_dma_map),
    vdevice_dma_unmap: Some(measure::vdevice_dma_unmap),
};

/// The simulator's table.
pub fn api() -> &'static hes_api {
    &API
}
