//! The process's allocator setting for decoders: keeping freed memory in the
//! process between frames.
//!
//! tract allocates each intermediate tensor of a run and frees it once its last
//! reader is done, so every frame allocates and frees the same few tens of
//! megabytes again. glibc's malloc hands large freed blocks back to the kernel
//! (blocks it mapped on their own at once, the heap's free top past its trim
//! threshold), and the next frame then touches fresh pages: about 2300 page
//! faults per run of the 432 decoder, 3–4 ms of its ~15. ONNX Runtime keeps an
//! arena for the same reason.
//!
//! [`retain_freed_memory`] raises glibc's mmap threshold to its maximum (32 MB)
//! and its trim threshold to 512 MB, once per process. Blocks up to 32 MB then
//! come from the heap and stay there: the process keeps about its decoders' peak
//! use, which it needs again on the next frame anyway. Other C libraries are left
//! as they are.
//!
//! The setting is the whole process's, so the library never makes it: a program
//! calls [`retain_freed_memory`] at start-up. `hailo-edge run` does so before the
//! rig starts unless the rig file says `[decoder] retain_memory = false`.

use std::sync::OnceLock;

/// Largest block glibc serves from the heap rather than mapping on its own
/// (glibc's ceiling for this setting on 64-bit targets).
pub const MMAP_THRESHOLD: usize = 32 << 20;

/// Free memory at the top of a heap that glibc keeps rather than returning.
pub const TRIM_THRESHOLD: usize = 512 << 20;

/// Sets glibc's malloc to keep freed blocks (see the module docs); the first
/// call does it, later calls do nothing. Returns whether glibc took both
/// settings (false on other C libraries).
pub fn retain_freed_memory() -> bool {
    static TAKEN: OnceLock<bool> = OnceLock::new();
    *TAKEN.get_or_init(|| {
        let taken = set_thresholds();
        if !taken {
            log::debug!("malloc thresholds unchanged: not glibc, or refused");
        }
        taken
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_thresholds() -> bool {
    // SAFETY: mallopt only changes malloc's parameters; both values are within
    // the ranges glibc documents (the mmap threshold at its 64-bit maximum).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_thresholds() -> bool {
    false
}
