//! `hes_bindings` entries.

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

entries! {
    /// `bindings_release`.
    release fn release = bindings_release(b: hes_bindings);
}
