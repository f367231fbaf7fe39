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
        .map(|&c| c as u8)
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

pub mod bindings;
pub mod configured_model;
pub mod infer_model;
pub mod job;
pub mod library;
pub mod vdevice;
