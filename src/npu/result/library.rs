//! Library-wide entries.

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
