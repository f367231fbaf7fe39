//! With HailoRT headers present (feature `hailort`), the shim's plain types
//! must agree with HailoRT's: same limits, same layouts where the shim copies
//! a HailoRT struct field by field. Without headers this file checks nothing
//! and says so.

#[cfg(hailort_headers)]
#[test]
fn shim_types_agree_with_hailort_h() {
    use hailort_sys::*;
    use std::mem::{align_of, size_of};
    assert_eq!(HES_MAX_NAME, HAILO_MAX_NAME_SIZE);
    assert_eq!(HES_MAX_DEVICE_ID, HAILO_MAX_DEVICE_ID_LENGTH);
    assert_eq!(HES_INFINITE, HAILO_INFINITE);
    assert_eq!(size_of::<hes_device_id>(), size_of::<hailo_device_id_t>());
    assert_eq!(size_of::<hes_version>(), size_of::<hailo_version_t>());
    assert_eq!(size_of::<hes_quant_info>(), size_of::<hailo_quant_info_t>());
    assert_eq!(
        align_of::<hes_quant_info>(),
        align_of::<hailo_quant_info_t>()
    );
    assert_eq!(size_of::<hes_shape>(), size_of::<hailo_3d_image_shape_t>());
    assert_eq!(size_of::<hes_format>(), size_of::<hailo_format_t>());
    assert_eq!(
        size_of::<hes_chip_temperature>(),
        size_of::<hailo_chip_temperature_info_t>()
    );
    // Status numbers the runtime relies on.
    assert_eq!(hailo_status_HAILO_SUCCESS, 0);
    assert_eq!(hailo_status_HAILO_SUCCESS, HES_SUCCESS);
    assert_eq!(hailo_status_HAILO_NOT_IMPLEMENTED, 7);
    assert_eq!(hailo_status_HAILO_NOT_IMPLEMENTED, HES_NOT_IMPLEMENTED);
    assert_eq!(hailo_status_HAILO_INVALID_ARGUMENT, 2);
    assert_eq!(hailo_status_HAILO_NOT_FOUND, 61);
    assert_eq!(hailo_status_HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE, 93);
    assert_eq!(hailo_status_HAILO_DEVICE_TEMPORARILY_UNAVAILABLE, 97);
    assert_eq!(hailo_status_HAILO_STATUS_COUNT, 98);
}

#[cfg(not(hailort_headers))]
#[test]
fn shim_types_agree_with_hailort_h() {
    eprintln!(
        "SKIPPED: built without HailoRT headers (feature `hailort` off or headers not found)"
    );
}
