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

entries! {
    /// `infer_model_release`.
    release fn release = infer_model_release(m: hes_infer_model);
    /// `infer_model_stream_count`: streams of one direction.
    fn stream_count = infer_model_stream_count(m: hes_infer_model, direction: hes_direction)
        -> usize;
    /// `infer_model_stream_info`: one stream's name, shape, format, frame size.
    fn stream_info = infer_model_stream_info(
        m: hes_infer_model,
        direction: hes_direction,
        index: usize
    ) -> hes_stream_info;
    /// `infer_model_set_batch_size`.
    fn set_batch_size = infer_model_set_batch_size(m: hes_infer_model, batch: u16);
    /// `infer_model_set_format_type`.
    stream fn set_format_type = infer_model_set_format_type(m: hes_infer_model, format_type: u32);
    /// `infer_model_set_format_order`.
    stream fn set_format_order = infer_model_set_format_order(m: hes_infer_model, order: u32);
    /// `infer_model_set_power_mode`.
    fn set_power_mode = infer_model_set_power_mode(m: hes_infer_model, mode: u32);
    /// `infer_model_computational_ops`.
    fn computational_ops = infer_model_computational_ops(m: hes_infer_model) -> u64;
    /// `infer_model_set_hw_latency_flags` (`hailo_latency_measurement_flags_t`).
    fn set_hw_latency_flags = infer_model_set_hw_latency_flags(m: hes_infer_model, flags: u32);
    /// `infer_model_configure`.
    fn configure = infer_model_configure(m: hes_infer_model) -> handle hes_configured_model;
}
