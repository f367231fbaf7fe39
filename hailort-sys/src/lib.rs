//! Raw FFI to HailoRT 5.x through one C table of functions.
//!
//! HailoRT's C API cannot run a network on a Hailo-10H (its `configure`
//! answers `HAILO_NOT_IMPLEMENTED` there); only the C++ `InferModel` API can.
//! So this crate does not bind `hailort.h` function by function. Instead our
//! own header, `shim/hailo_edge_shim.h`, declares [`hes_api`], a struct of C
//! function pointers, and `shim/hailo_edge_shim.cpp` fills it over the C++ API,
//! catching every exception into a status and a thread-local message.
//!
//! | build | bindings | table |
//! |---|---|---|
//! | default | committed `src/bindings.rs` of the shim header | none ([`hailort_api`] is `None`) |
//! | feature `hailort`, headers found | bindgen over `hailort.h` + shim header | none unless the library is found |
//! | feature `hailort`, headers and `libhailort.so` found | as above | the C++ shim's, `cfg(hailort_linked)` |
//!
//! Status values are HailoRT's `hailo_status` numbers; the safe crate maps
//! them. Three tables implement [`hes_api`]:
//!
//! | table | where | answers |
//! |---|---|---|
//! | HailoRT | `shim/hailo_edge_shim.cpp`, [`hailort_api`] | the device, through the C++ `InferModel` API |
//! | simulator | `hailo-edge`'s `npu::sim::table` (Rust `extern "C"`) | a modelled Hailo-10H |
//! | stub | [`stub`], [`stub_api`] | `HAILO_NOT_IMPLEMENTED` from every entry |
//!
//! `UNWRAPPED.md` lists the table entries the safe crate has no checked
//! wrapper for; a test in `hailo-edge` keeps it current.

#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

#[cfg(not(hailort_headers))]
#[allow(clippy::all, clippy::undocumented_unsafe_blocks, missing_docs)]
mod bindings {
    include!("bindings.rs");
}

#[cfg(hailort_headers)]
#[allow(clippy::all, clippy::undocumented_unsafe_blocks, missing_docs)]
mod bindings {
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}

pub use bindings::*;

pub mod stub;

/// `hailo_status` HAILO_SUCCESS.
pub const HES_SUCCESS: hes_status = 0;

pub use stub::HES_NOT_IMPLEMENTED;

/// The stub table, present in every build: each entry answers
/// [`HES_NOT_IMPLEMENTED`] (see [`stub`]).
pub fn stub_api() -> &'static hes_api {
    stub::api()
}

#[cfg(hailort_linked)]
extern "C" {
    /// The table over libhailort, defined by the C++ shim.
    fn hes_hailort_api() -> *const hes_api;
}

/// Whether this build links libhailort and carries the C++ shim's table.
pub const HAILORT_LINKED: bool = cfg!(hailort_linked);

/// The HailoRT-backed table, when this build links libhailort.
pub fn hailort_api() -> Option<&'static hes_api> {
    #[cfg(hailort_linked)]
    {
        // SAFETY: the shim returns a pointer to a static table that lives for
        // the whole program and is never written after initialisation.
        unsafe { hes_hailort_api().as_ref() }
    }
    #[cfg(not(hailort_linked))]
    {
        None
    }
}
