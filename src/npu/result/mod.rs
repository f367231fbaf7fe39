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
        // `c_char` is i8 on x86-64 and u8 on aarch64; its one byte either way.
        .map(|&c| c.to_ne_bytes()[0])
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

/// Declares checked wrappers of the entries that only pass a live handle and plain values on,
/// one form per way the entry answers. Each wrapper is `unsafe`: the handle must be live and
/// come from the same [`Api`].
///
/// - `fn f = entry(h: T, a: A, ..);` returns the status alone.
/// - `release fn f = entry(h: T);` also ends the handle, which is not used afterwards.
/// - `fn f = entry(h: T, ..) -> V;` returns the value the entry writes through its last
///   pointer, starting from `V::default()`.
/// - `fn f = entry(h: T, ..) -> handle U;` returns the handle the entry creates.
/// - `stream fn f = entry(h: T, a: A);` passes a direction and a stream name before `a`.
macro_rules! entries {
    () => {};
    ($(#[$doc:meta])* stream fn $name:ident = $entry:ident($h:ident: $handle:ty, $p:ident: $t:ty);
        $($rest:tt)*) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("`", stringify!($h), "` is a live `", stringify!($handle), "` of `api`.")]
        pub unsafe fn $name(
            api: &Api,
            $h: NonNull<$handle>,
            direction: hes_direction,
            stream: &str,
            $p: $t,
        ) -> Result<(), NpuError> {
            let name = c_string(stream)?;
            // SAFETY: the handle is live (caller); `name` outlives the call.
            unsafe { call!(api, $entry($h.as_ptr(), direction, name.as_ptr(), $p)) }
        }
        entries!($($rest)*);
    };
    ($(#[$doc:meta])* release fn $name:ident = $entry:ident($h:ident: $handle:ty); $($rest:tt)*) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("`", stringify!($h), "` is a live `", stringify!($handle),
            "` of `api`, not used afterwards.")]
        pub unsafe fn $name(api: &Api, $h: NonNull<$handle>) -> Result<(), NpuError> {
            // SAFETY: the caller guarantees the handle is live and unused afterwards.
            unsafe { call!(api, $entry($h.as_ptr())) }
        }
        entries!($($rest)*);
    };
    ($(#[$doc:meta])* fn $name:ident = $entry:ident($h:ident: $handle:ty $(, $p:ident: $t:ty)*)
        -> handle $out:ty; $($rest:tt)*) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("`", stringify!($h), "` is a live `", stringify!($handle), "` of `api`.")]
        pub unsafe fn $name(
            api: &Api,
            $h: NonNull<$handle>,
            $($p: $t),*
        ) -> Result<NonNull<$out>, NpuError> {
            let mut out = ptr::null_mut();
            // SAFETY: the handle is live (caller); `out` is writable.
            unsafe { call!(api, $entry($h.as_ptr(), $($p,)* &mut out))? };
            non_null(api, out, stringify!($entry))
        }
        entries!($($rest)*);
    };
    ($(#[$doc:meta])* fn $name:ident = $entry:ident($h:ident: $handle:ty $(, $p:ident: $t:ty)*)
        -> $out:ty; $($rest:tt)*) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("`", stringify!($h), "` is a live `", stringify!($handle), "` of `api`.")]
        pub unsafe fn $name(api: &Api, $h: NonNull<$handle>, $($p: $t),*) -> Result<$out, NpuError> {
            let mut out = <$out>::default();
            // SAFETY: the handle is live (caller); `out` is writable.
            unsafe { call!(api, $entry($h.as_ptr(), $($p,)* &mut out))? };
            Ok(out)
        }
        entries!($($rest)*);
    };
    ($(#[$doc:meta])* fn $name:ident = $entry:ident($h:ident: $handle:ty $(, $p:ident: $t:ty)*);
        $($rest:tt)*) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("`", stringify!($h), "` is a live `", stringify!($handle), "` of `api`.")]
        pub unsafe fn $name(api: &Api, $h: NonNull<$handle>, $($p: $t),*) -> Result<(), NpuError> {
            // SAFETY: the handle is live (caller).
            unsafe { call!(api, $entry($h.as_ptr() $(, $p)*)) }
        }
        entries!($($rest)*);
    };
}

pub mod bindings;
pub mod configured_model;
pub mod infer_model;
pub mod job;
pub mod library;
pub mod vdevice;
