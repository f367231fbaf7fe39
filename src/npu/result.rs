//! Checked layer: one function per table entry, grouped by the handle it
//! works on, each turning the status into `Result<_, NpuError>`.
//!
//! Functions that take a raw handle are `unsafe`: the handle must be live and
//! come from the same [`Api`]. The safe types in this module's parent uphold
//! that through ownership.

use std::ffi::{c_void, CString};
use std::ptr::{self, NonNull};

use hailort_sys::*;

use super::api::{call, Api};
use super::error::NpuError;

/// A Rust string as a C string, or an error naming it.
pub fn c_string(value: &str) -> Result<CString, NpuError> {
    CString::new(value).map_err(|_| NpuError::InvalidName {
        value: value.to_string(),
        reason: "contains a NUL byte",
    })
}

/// Turns a NUL-terminated byte array into a `String`.
pub fn from_c_chars(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn non_null<T>(api: &Api, ptr: *mut T, call: &'static str) -> Result<NonNull<T>, NpuError> {
    NonNull::new(ptr).ok_or_else(|| NpuError::InternalFailure {
        call,
        detail: format!("{} table returned a NULL handle", api.backend()),
    })
}

/// Library-wide entries.
pub mod library {
    use super::*;

    /// `get_library_version`: HailoRT's (or the simulator's) version.
    pub fn version(api: &Api) -> Result<hes_version, NpuError> {
        let mut out = hes_version::default();
        // SAFETY: `out` is a valid, writable hes_version.
        unsafe { call!(api, get_library_version(&mut out))? };
        Ok(out)
    }

    /// `get_status_message`: the backend's text for a status.
    pub fn status_message(api: &Api, status: hes_status) -> String {
        match api.raw().get_status_message {
            // SAFETY: the entry returns a static NUL-terminated string.
            Some(f) => unsafe {
                let ptr = f(status);
                if ptr.is_null() {
                    String::new()
                } else {
                    std::ffi::CStr::from_ptr(ptr).to_string_lossy().into_owned()
                }
            },
            None => String::new(),
        }
    }

    /// `scan_devices`: ids of the devices present.
    pub fn scan(api: &Api) -> Result<Vec<String>, NpuError> {
        let mut ids = vec![hes_device_id::default(); 16];
        let mut count = ids.len();
        // SAFETY: `ids` has `count` writable elements.
        let first = unsafe { call!(api, scan_devices(ids.as_mut_ptr(), &mut count)) };
        if let Err(NpuError::InsufficientBuffer { .. }) = first {
            ids = vec![hes_device_id::default(); count];
            // SAFETY: as above, with the capacity the backend asked for.
            unsafe { call!(api, scan_devices(ids.as_mut_ptr(), &mut count))? };
        } else {
            first?;
        }
        Ok(ids[..count].iter().map(|d| from_c_chars(&d.id)).collect())
    }
}

/// `hes_vdevice` entries.
pub mod vdevice {
    use super::*;

    /// `vdevice_create`.
    pub fn create(
        api: &Api,
        device_ids: &[String],
        scheduling_algorithm: u32,
        group_id: Option<&str>,
    ) -> Result<NonNull<hes_vdevice>, NpuError> {
        let mut ids = Vec::with_capacity(device_ids.len());
        for id in device_ids {
            let mut raw = hes_device_id::default();
            if id.len() >= raw.id.len() || id.contains('\0') {
                return Err(NpuError::InvalidName {
                    value: id.clone(),
                    reason: "device ids have at most 31 bytes and no NUL",
                });
            }
            for (dst, src) in raw.id.iter_mut().zip(id.bytes()) {
                *dst = src as std::ffi::c_char;
            }
            ids.push(raw);
        }
        let group = group_id.map(c_string).transpose()?;
        let params = hes_vdevice_params {
            device_ids: if ids.is_empty() {
                ptr::null()
            } else {
                ids.as_ptr()
            },
            device_count: ids.len(),
            scheduling_algorithm,
            group_id: group.as_ref().map_or(ptr::null(), |g| g.as_ptr()),
        };
        let mut out = ptr::null_mut();
        // SAFETY: `params` and the arrays it points to outlive the call.
        unsafe { call!(api, vdevice_create(&params, &mut out))? };
        non_null(api, out, "vdevice_create")
    }

    /// `vdevice_release`.
    ///
    /// # Safety
    /// `v` is a live vdevice of `api`, not used afterwards.
    pub unsafe fn release(api: &Api, v: NonNull<hes_vdevice>) -> Result<(), NpuError> {
        // SAFETY: the caller guarantees `v` is live and unused afterwards.
        unsafe { call!(api, vdevice_release(v.as_ptr())) }
    }

    /// `vdevice_device_ids`.
    ///
    /// # Safety
    /// `v` is a live vdevice of `api`.
    pub unsafe fn device_ids(api: &Api, v: NonNull<hes_vdevice>) -> Result<Vec<String>, NpuError> {
        let mut ids = vec![hes_device_id::default(); 8];
        let mut count = ids.len();
        // SAFETY: `v` is live (caller); `ids` has `count` elements.
        unsafe {
            call!(
                api,
                vdevice_device_ids(v.as_ptr(), ids.as_mut_ptr(), &mut count)
            )?
        };
        Ok(ids[..count.min(ids.len())]
            .iter()
            .map(|d| from_c_chars(&d.id))
            .collect())
    }

    /// `vdevice_performance_stats`.
    ///
    /// # Safety
    /// `v` is a live vdevice of `api`.
    pub unsafe fn performance_stats(
        api: &Api,
        v: NonNull<hes_vdevice>,
        index: usize,
    ) -> Result<hes_performance_stats, NpuError> {
        let mut out = hes_performance_stats::default();
        // SAFETY: `v` is live (caller); `out` is writable.
        unsafe { call!(api, vdevice_performance_stats(v.as_ptr(), index, &mut out))? };
        Ok(out)
    }

    /// `vdevice_power`, watts.
    ///
    /// # Safety
    /// `v` is a live vdevice of `api`.
    pub unsafe fn power(api: &Api, v: NonNull<hes_vdevice>, index: usize) -> Result<f32, NpuError> {
        let mut watts = 0.0f32;
        // SAFETY: `v` is live (caller); `watts` is writable.
        unsafe { call!(api, vdevice_power(v.as_ptr(), index, &mut watts))? };
        Ok(watts)
    }

    /// `vdevice_chip_temperature`.
    ///
    /// # Safety
    /// `v` is a live vdevice of `api`.
    pub unsafe fn chip_temperature(
        api: &Api,
        v: NonNull<hes_vdevice>,
        index: usize,
    ) -> Result<hes_chip_temperature, NpuError> {
        let mut out = hes_chip_temperature::default();
        // SAFETY: `v` is live (caller); `out` is writable.
        unsafe { call!(api, vdevice_chip_temperature(v.as_ptr(), index, &mut out))? };
        Ok(out)
    }
}

/// `hes_infer_model` entries.
pub mod infer_model {
    use super::*;

    /// `infer_model_create_from_file`.
    ///
    /// # Safety
    /// `v` is a live vdevice of `api`.
    pub unsafe fn create_from_file(
        api: &Api,
        v: NonNull<hes_vdevice>,
        path: &str,
    ) -> Result<NonNull<hes_infer_model>, NpuError> {
        let path = c_string(path)?;
        let mut out = ptr::null_mut();
        // SAFETY: `v` is live (caller); `path` outlives the call.
        unsafe {
            call!(
                api,
                infer_model_create_from_file(v.as_ptr(), path.as_ptr(), &mut out)
            )?
        };
        non_null(api, out, "infer_model_create_from_file")
    }

    /// `infer_model_create_from_memory` (the backend copies the bytes).
    ///
    /// # Safety
    /// `v` is a live vdevice of `api`.
    pub unsafe fn create_from_memory(
        api: &Api,
        v: NonNull<hes_vdevice>,
        bytes: &[u8],
    ) -> Result<NonNull<hes_infer_model>, NpuError> {
        let mut out = ptr::null_mut();
        let data = bytes.as_ptr().cast::<c_void>();
        // SAFETY: `v` is live (caller); `bytes` outlives the call.
        unsafe {
            call!(
                api,
                infer_model_create_from_memory(v.as_ptr(), data, bytes.len(), &mut out)
            )?
        };
        non_null(api, out, "infer_model_create_from_memory")
    }

    /// `infer_model_release`.
    ///
    /// # Safety
    /// `m` is a live infer model of `api`, not used afterwards.
    pub unsafe fn release(api: &Api, m: NonNull<hes_infer_model>) -> Result<(), NpuError> {
        // SAFETY: the caller guarantees `m` is live and unused afterwards.
        unsafe { call!(api, infer_model_release(m.as_ptr())) }
    }

    /// `infer_model_name`.
    ///
    /// # Safety
    /// `m` is a live infer model of `api`.
    pub unsafe fn name(api: &Api, m: NonNull<hes_infer_model>) -> Result<String, NpuError> {
        let mut buf = [0 as std::ffi::c_char; HES_MAX_NAME as usize];
        // SAFETY: `m` is live (caller); `buf` has the stated capacity.
        unsafe {
            call!(
                api,
                infer_model_name(m.as_ptr(), buf.as_mut_ptr(), buf.len())
            )?
        };
        Ok(from_c_chars(&buf))
    }

    /// `infer_model_stream_count` then `infer_model_stream_info` and
    /// `infer_model_stream_quant_infos` for each stream of one direction.
    ///
    /// # Safety
    /// `m` is a live infer model of `api`.
    pub unsafe fn streams(
        api: &Api,
        m: NonNull<hes_infer_model>,
        direction: hes_direction,
    ) -> Result<Vec<(hes_stream_info, Vec<hes_quant_info>)>, NpuError> {
        let mut count = 0usize;
        // SAFETY: `m` is live (caller); `count` is writable.
        unsafe {
            call!(
                api,
                infer_model_stream_count(m.as_ptr(), direction, &mut count)
            )?
        };
        let mut out = Vec::with_capacity(count);
        for index in 0..count {
            let mut info = hes_stream_info::default();
            // SAFETY: `m` is live; `info` is writable.
            unsafe {
                call!(
                    api,
                    infer_model_stream_info(m.as_ptr(), direction, index, &mut info)
                )?
            };
            let mut quants = vec![hes_quant_info::default(); info.quant_count.max(1) as usize];
            let mut n = quants.len();
            // SAFETY: `quants` has `n` writable elements.
            unsafe {
                call!(
                    api,
                    infer_model_stream_quant_infos(
                        m.as_ptr(),
                        direction,
                        index,
                        quants.as_mut_ptr(),
                        &mut n
                    )
                )?
            };
            quants.truncate(n);
            out.push((info, quants));
        }
        Ok(out)
    }

    /// `infer_model_set_batch_size`.
    ///
    /// # Safety
    /// `m` is a live infer model of `api`.
    pub unsafe fn set_batch_size(
        api: &Api,
        m: NonNull<hes_infer_model>,
        batch: u16,
    ) -> Result<(), NpuError> {
        // SAFETY: `m` is live (caller).
        unsafe { call!(api, infer_model_set_batch_size(m.as_ptr(), batch)) }
    }

    /// `infer_model_set_format_type`.
    ///
    /// # Safety
    /// `m` is a live infer model of `api`.
    pub unsafe fn set_format_type(
        api: &Api,
        m: NonNull<hes_infer_model>,
        direction: hes_direction,
        stream: &str,
        format_type: u32,
    ) -> Result<(), NpuError> {
        let name = c_string(stream)?;
        // SAFETY: `m` is live (caller); `name` outlives the call.
        unsafe {
            call!(
                api,
                infer_model_set_format_type(m.as_ptr(), direction, name.as_ptr(), format_type)
            )
        }
    }

    /// `infer_model_set_format_order`.
    ///
    /// # Safety
    /// `m` is a live infer model of `api`.
    pub unsafe fn set_format_order(
        api: &Api,
        m: NonNull<hes_infer_model>,
        direction: hes_direction,
        stream: &str,
        order: u32,
    ) -> Result<(), NpuError> {
        let name = c_string(stream)?;
        // SAFETY: `m` is live (caller); `name` outlives the call.
        unsafe {
            call!(
                api,
                infer_model_set_format_order(m.as_ptr(), direction, name.as_ptr(), order)
            )
        }
    }

    /// `infer_model_set_power_mode`.
    ///
    /// # Safety
    /// `m` is a live infer model of `api`.
    pub unsafe fn set_power_mode(
        api: &Api,
        m: NonNull<hes_infer_model>,
        mode: u32,
    ) -> Result<(), NpuError> {
        // SAFETY: `m` is live (caller).
        unsafe { call!(api, infer_model_set_power_mode(m.as_ptr(), mode)) }
    }

    /// `infer_model_computational_ops`.
    ///
    /// # Safety
    /// `m` is a live infer model of `api`.
    pub unsafe fn computational_ops(
        api: &Api,
        m: NonNull<hes_infer_model>,
    ) -> Result<u64, NpuError> {
        let mut ops = 0u64;
        // SAFETY: `m` is live (caller); `ops` is writable.
        unsafe { call!(api, infer_model_computational_ops(m.as_ptr(), &mut ops))? };
        Ok(ops)
    }

    /// `infer_model_configure`.
    ///
    /// # Safety
    /// `m` is a live infer model of `api`.
    pub unsafe fn configure(
        api: &Api,
        m: NonNull<hes_infer_model>,
    ) -> Result<NonNull<hes_configured_model>, NpuError> {
        let mut out = ptr::null_mut();
        // SAFETY: `m` is live (caller); `out` is writable.
        unsafe { call!(api, infer_model_configure(m.as_ptr(), &mut out))? };
        non_null(api, out, "infer_model_configure")
    }
}

/// `hes_configured_model` entries.
pub mod configured_model {
    use super::*;

    /// `configured_model_release`.
    ///
    /// # Safety
    /// `c` is a live configured model of `api`, not used afterwards.
    pub unsafe fn release(api: &Api, c: NonNull<hes_configured_model>) -> Result<(), NpuError> {
        // SAFETY: the caller guarantees `c` is live and unused afterwards.
        unsafe { call!(api, configured_model_release(c.as_ptr())) }
    }

    /// `configured_model_create_bindings`.
    ///
    /// # Safety
    /// `c` is a live configured model of `api`.
    pub unsafe fn create_bindings(
        api: &Api,
        c: NonNull<hes_configured_model>,
    ) -> Result<NonNull<hes_bindings>, NpuError> {
        let mut out = ptr::null_mut();
        // SAFETY: `c` is live (caller); `out` is writable.
        unsafe { call!(api, configured_model_create_bindings(c.as_ptr(), &mut out))? };
        non_null(api, out, "configured_model_create_bindings")
    }

    /// `configured_model_run`: blocking inference.
    ///
    /// # Safety
    /// `c` and `b` are live handles of `api`; the buffers set on `b` are valid.
    pub unsafe fn run(
        api: &Api,
        c: NonNull<hes_configured_model>,
        b: NonNull<hes_bindings>,
        timeout_ms: u32,
    ) -> Result<(), NpuError> {
        // SAFETY: the caller guarantees live handles and valid buffers.
        unsafe {
            call!(
                api,
                configured_model_run(c.as_ptr(), b.as_ptr(), timeout_ms)
            )
        }
    }

    /// `configured_model_run_async`. On success the callback runs exactly
    /// once; the returned job handle may be absent when the job already ended.
    ///
    /// # Safety
    /// `c` and `b` are live handles of `api`; the buffers set on `b` stay valid
    /// and `user_data` stays valid until `callback` runs; `callback` never
    /// unwinds.
    pub unsafe fn run_async(
        api: &Api,
        c: NonNull<hes_configured_model>,
        b: NonNull<hes_bindings>,
        callback: hes_completion_cb,
        user_data: *mut c_void,
    ) -> Result<Option<NonNull<hes_job>>, NpuError> {
        let mut job = ptr::null_mut();
        // SAFETY: the caller guarantees the handles, buffers and user data.
        unsafe {
            call!(
                api,
                configured_model_run_async(c.as_ptr(), b.as_ptr(), callback, user_data, &mut job)
            )?
        };
        Ok(NonNull::new(job))
    }

    /// `configured_model_wait_for_async_ready`.
    ///
    /// # Safety
    /// `c` is a live configured model of `api`.
    pub unsafe fn wait_for_async_ready(
        api: &Api,
        c: NonNull<hes_configured_model>,
        timeout_ms: u32,
        frames: u32,
    ) -> Result<(), NpuError> {
        // SAFETY: `c` is live (caller).
        unsafe {
            call!(
                api,
                configured_model_wait_for_async_ready(c.as_ptr(), timeout_ms, frames)
            )
        }
    }

    /// `configured_model_set_scheduler_priority`.
    ///
    /// # Safety
    /// `c` is a live configured model of `api`.
    pub unsafe fn set_scheduler_priority(
        api: &Api,
        c: NonNull<hes_configured_model>,
        priority: u8,
    ) -> Result<(), NpuError> {
        // SAFETY: `c` is live (caller).
        unsafe {
            call!(
                api,
                configured_model_set_scheduler_priority(c.as_ptr(), priority)
            )
        }
    }

    /// `configured_model_set_scheduler_threshold`.
    ///
    /// # Safety
    /// `c` is a live configured model of `api`.
    pub unsafe fn set_scheduler_threshold(
        api: &Api,
        c: NonNull<hes_configured_model>,
        threshold: u32,
    ) -> Result<(), NpuError> {
        // SAFETY: `c` is live (caller).
        unsafe {
            call!(
                api,
                configured_model_set_scheduler_threshold(c.as_ptr(), threshold)
            )
        }
    }

    /// `configured_model_set_scheduler_timeout`.
    ///
    /// # Safety
    /// `c` is a live configured model of `api`.
    pub unsafe fn set_scheduler_timeout(
        api: &Api,
        c: NonNull<hes_configured_model>,
        timeout_ms: u32,
    ) -> Result<(), NpuError> {
        // SAFETY: `c` is live (caller).
        unsafe {
            call!(
                api,
                configured_model_set_scheduler_timeout(c.as_ptr(), timeout_ms)
            )
        }
    }

    /// `configured_model_activate`.
    ///
    /// # Safety
    /// `c` is a live configured model of `api`.
    pub unsafe fn activate(api: &Api, c: NonNull<hes_configured_model>) -> Result<(), NpuError> {
        // SAFETY: `c` is live (caller).
        unsafe { call!(api, configured_model_activate(c.as_ptr())) }
    }

    /// `configured_model_deactivate`.
    ///
    /// # Safety
    /// `c` is a live configured model of `api`.
    pub unsafe fn deactivate(api: &Api, c: NonNull<hes_configured_model>) -> Result<(), NpuError> {
        // SAFETY: `c` is live (caller).
        unsafe { call!(api, configured_model_deactivate(c.as_ptr())) }
    }

    /// `configured_model_shutdown`: aborts in-flight jobs.
    ///
    /// # Safety
    /// `c` is a live configured model of `api`.
    pub unsafe fn shutdown(api: &Api, c: NonNull<hes_configured_model>) -> Result<(), NpuError> {
        // SAFETY: `c` is live (caller).
        unsafe { call!(api, configured_model_shutdown(c.as_ptr())) }
    }
}

/// `hes_bindings` entries.
pub mod bindings {
    use super::*;

    /// `bindings_set_buffer`.
    ///
    /// # Safety
    /// `b` is a live bindings handle of `api`; `data..data+size` stays valid
    /// and unaliased for as long as the bindings may be run.
    pub unsafe fn set_buffer(
        api: &Api,
        b: NonNull<hes_bindings>,
        direction: hes_direction,
        stream: &str,
        data: *mut u8,
        size: usize,
    ) -> Result<(), NpuError> {
        let name = c_string(stream)?;
        // SAFETY: the caller guarantees the handle and the buffer.
        unsafe {
            call!(
                api,
                bindings_set_buffer(
                    b.as_ptr(),
                    direction,
                    name.as_ptr(),
                    data.cast::<c_void>(),
                    size
                )
            )
        }
    }

    /// `bindings_release`.
    ///
    /// # Safety
    /// `b` is a live bindings handle of `api`, not used afterwards.
    pub unsafe fn release(api: &Api, b: NonNull<hes_bindings>) -> Result<(), NpuError> {
        // SAFETY: the caller guarantees `b` is live and unused afterwards.
        unsafe { call!(api, bindings_release(b.as_ptr())) }
    }
}

/// `hes_job` entries.
pub mod job {
    use super::*;

    /// `job_wait`.
    ///
    /// # Safety
    /// `j` is a live job handle of `api`.
    pub unsafe fn wait(api: &Api, j: NonNull<hes_job>, timeout_ms: u32) -> Result<(), NpuError> {
        // SAFETY: `j` is live (caller).
        unsafe { call!(api, job_wait(j.as_ptr(), timeout_ms)) }
    }

    /// `job_release`: detaches the job; its callback still runs.
    ///
    /// # Safety
    /// `j` is a live job handle of `api`, not used afterwards.
    pub unsafe fn release(api: &Api, j: NonNull<hes_job>) -> Result<(), NpuError> {
        // SAFETY: the caller guarantees `j` is live and unused afterwards.
        unsafe { call!(api, job_release(j.as_ptr())) }
    }
}
