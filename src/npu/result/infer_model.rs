//! `hes_infer_model` entries.

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

/// `infer_model_stream_count`: streams of one direction.
///
/// # Safety
/// `m` is a live infer model of `api`.
pub unsafe fn stream_count(
    api: &Api,
    m: NonNull<hes_infer_model>,
    direction: hes_direction,
) -> Result<usize, NpuError> {
    let mut count = 0usize;
    // SAFETY: `m` is live (caller); `count` is writable.
    unsafe {
        call!(
            api,
            infer_model_stream_count(m.as_ptr(), direction, &mut count)
        )?
    };
    Ok(count)
}

/// `infer_model_stream_info`: one stream's name, shape, format, frame size.
///
/// # Safety
/// `m` is a live infer model of `api`.
pub unsafe fn stream_info(
    api: &Api,
    m: NonNull<hes_infer_model>,
    direction: hes_direction,
    index: usize,
) -> Result<hes_stream_info, NpuError> {
    let mut info = hes_stream_info::default();
    // SAFETY: `m` is live (caller); `info` is writable.
    unsafe {
        call!(
            api,
            infer_model_stream_info(m.as_ptr(), direction, index, &mut info)
        )?
    };
    Ok(info)
}

/// `infer_model_stream_quant_infos`: one stream's quant infos.
///
/// # Safety
/// `m` is a live infer model of `api`.
pub unsafe fn stream_quant_infos(
    api: &Api,
    m: NonNull<hes_infer_model>,
    direction: hes_direction,
    index: usize,
    capacity: usize,
) -> Result<Vec<hes_quant_info>, NpuError> {
    let mut quants = vec![hes_quant_info::default(); capacity.max(1)];
    let mut n = quants.len();
    // SAFETY: `m` is live (caller); `quants` has `n` writable elements.
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
    Ok(quants)
}

/// Every stream of one direction with its quant infos (the three entries
/// above in sequence).
///
/// # Safety
/// `m` is a live infer model of `api`.
pub unsafe fn streams(
    api: &Api,
    m: NonNull<hes_infer_model>,
    direction: hes_direction,
) -> Result<Vec<(hes_stream_info, Vec<hes_quant_info>)>, NpuError> {
    // SAFETY: `m` is live (caller) for all three calls.
    unsafe {
        (0..stream_count(api, m, direction)?)
            .map(|index| {
                let info = stream_info(api, m, direction, index)?;
                let quants =
                    stream_quant_infos(api, m, direction, index, info.quant_count as usize)?;
                Ok((info, quants))
            })
            .collect()
    }
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
pub unsafe fn computational_ops(api: &Api, m: NonNull<hes_infer_model>) -> Result<u64, NpuError> {
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
