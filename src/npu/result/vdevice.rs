//! `hes_vdevice` entries.

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

entries! {
    /// `vdevice_release`.
    release fn release = vdevice_release(v: hes_vdevice);
    /// `vdevice_performance_stats`.
    fn performance_stats = vdevice_performance_stats(v: hes_vdevice, index: usize)
        -> hes_performance_stats;
    /// `vdevice_power`, watts.
    fn power = vdevice_power(v: hes_vdevice, index: usize) -> f32;
    /// `vdevice_chip_temperature`.
    fn chip_temperature = vdevice_chip_temperature(v: hes_vdevice, index: usize)
        -> hes_chip_temperature;
    /// `vdevice_dma_map` of `size` bytes at `address` (direction 0 = H2D, 1 = D2H,
    /// 2 = BOTH). The memory must stay allocated until [`dma_unmap`] with the same
    /// arguments or the vdevice's release.
    fn dma_map = vdevice_dma_map(
        v: hes_vdevice,
        address: *mut c_void,
        size: usize,
        direction: u32
    );
    /// `vdevice_dma_unmap`: undoes [`dma_map`] with the same arguments.
    fn dma_unmap = vdevice_dma_unmap(
        v: hes_vdevice,
        address: *mut c_void,
        size: usize,
        direction: u32
    );
    /// `vdevice_identify`.
    fn identify = vdevice_identify(v: hes_vdevice, index: usize) -> hes_identity;
}
