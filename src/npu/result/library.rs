//! Library-wide entries.

use super::*;

/// `get_library_version`: HailoRT's (or the simulator's) version.
pub fn version(api: &Api) -> Result<hes_version, NpuError> {
    let mut out = hes_version::default();
    // SAFETY: `out` is a valid, writable hes_version.
    unsafe { call!(api, get_library_version(&mut out))? };
    Ok(out)
}

/// How a status reads in messages: `"HAILO_TIMEOUT (4)"` from the name the
/// backend gives, or `"unknown HailoRT status N"` when it gives none.
///
/// `hailo_get_status_message` returns the status *name*, not a description,
/// and NULL from `HAILO_STATUS_COUNT` (98) on (HailoRT 5.2.0, `hailort.cpp`).
pub fn status_text(status: hes_status, name: Option<&str>) -> String {
    match name.filter(|n| !n.is_empty()) {
        Some(name) => format!("{name} ({status})"),
        None => format!("unknown HailoRT status {status}"),
    }
}

/// `get_status_message`: the backend's name for a status, as
/// [`status_text`] formats it.
pub fn status_name(api: &Api, status: hes_status) -> String {
    let name = match api.raw().get_status_message {
        // SAFETY: the entry returns NULL or a static NUL-terminated string,
        // copied at once.
        Some(f) => unsafe {
            let ptr = f(status);
            (!ptr.is_null()).then(|| std::ffi::CStr::from_ptr(ptr).to_string_lossy().into_owned())
        },
        None => None,
    };
    status_text(status, name.as_deref())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_reads_as_its_name_and_number_or_as_unknown() {
        assert_eq!(status_text(4, Some("HAILO_TIMEOUT")), "HAILO_TIMEOUT (4)");
        assert_eq!(status_text(98, None), "unknown HailoRT status 98");
        assert_eq!(status_text(7, Some("")), "unknown HailoRT status 7");
    }

    #[test]
    fn the_simulator_names_statuses_as_hailort_does() {
        let sim = Api::sim();
        assert_eq!(status_name(&sim, 4), "HAILO_TIMEOUT (4)");
        assert_eq!(status_name(&sim, 73), "HAILO_DEVICE_IN_USE (73)");
        assert_eq!(status_name(&sim, 0), "HAILO_SUCCESS (0)");
        assert_eq!(status_name(&sim, 98), "unknown HailoRT status 98");
        assert_eq!(
            status_name(&sim, u32::MAX),
            format!("unknown HailoRT status {}", u32::MAX)
        );
        let stub = Api::stub();
        assert_eq!(status_name(&stub, 7), "HAILO_NOT_IMPLEMENTED (7)");
        assert_eq!(status_name(&stub, 2), "unknown HailoRT status 2");
    }

    #[test]
    fn an_unknown_status_error_says_so() {
        let err = NpuError::from_status(98, "vdevice_create", String::new());
        assert_eq!(err.to_string(), "vdevice_create: unknown HailoRT status 98");
    }
}
