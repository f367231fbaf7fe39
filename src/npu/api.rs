//! The seam: one C table of functions per backend.
//!
//! [`Api`] wraps a `&'static hes_api`. The HailoRT table comes from the C++
//! shim (only in builds with `cfg(hailort_linked)`), the simulator's from
//! [`crate::npu::sim::table`], and the stub's, whose every entry answers
//! `HAILO_NOT_IMPLEMENTED`, from `hailort_sys::stub`. Everything above this
//! file runs unchanged on any of them.

use std::ffi::CStr;

use hailort_sys::hes_api;

use super::error::{NpuError, SUCCESS};

/// A backend's function table.
#[derive(Clone, Copy)]
pub struct Api {
    raw: &'static hes_api,
    backend: &'static str,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("backend", &self.backend)
            .field("abi_version", &self.raw.abi_version)
            .finish()
    }
}

impl Api {
    /// The table over libhailort, when this build links it.
    pub fn hailort() -> Option<Api> {
        hailort_sys::hailort_api().map(|raw| Api {
            raw,
            backend: "hailort",
        })
    }

    /// The simulator's table.
    pub fn sim() -> Api {
        Api {
            raw: super::sim::table::api(),
            backend: "sim",
        }
    }

    /// The stub table: every entry answers `HAILO_NOT_IMPLEMENTED`, so every
    /// call fails with [`NpuError::NotImplemented`] naming its entry. Present
    /// in every build; useful to check that callers handle a backend's
    /// refusal.
    pub fn stub() -> Api {
        Api {
            raw: hailort_sys::stub_api(),
            backend: "stub",
        }
    }

    /// Wraps any table (e.g. a test double).
    pub fn from_raw(raw: &'static hes_api, backend: &'static str) -> Api {
        Api { raw, backend }
    }

    /// The raw table.
    pub fn raw(&self) -> &'static hes_api {
        self.raw
    }

    /// Which backend this table belongs to ("hailort", "sim", "stub", ...).
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// The calling thread's last error text from the backend.
    pub fn last_error(&self) -> String {
        match self.raw.last_error {
            // SAFETY: the table contract: last_error returns a NUL-terminated
            // string owned by the backend, valid until the next call on this
            // thread; we copy it at once.
            Some(f) => unsafe {
                let ptr = f();
                if ptr.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(ptr).to_string_lossy().into_owned()
                }
            },
            None => String::new(),
        }
    }

    /// `Ok` for `HAILO_SUCCESS`, else the error for `status` naming `call`.
    pub fn check(&self, status: u32, call: &'static str) -> Result<(), NpuError> {
        if status == SUCCESS {
            Ok(())
        } else {
            Err(NpuError::from_status(status, call, self.last_error()))
        }
    }

    pub(crate) fn missing(&self, entry: &'static str) -> NpuError {
        NpuError::MissingEntry {
            backend: self.backend,
            entry,
        }
    }
}

/// Calls a table entry: `call!(api, entry(args...))` gives `Result<(), NpuError>`.
///
/// Must be used inside an `unsafe` block whose SAFETY comment covers the
/// arguments.
macro_rules! call {
    ($api:expr, $entry:ident($($arg:expr),* $(,)?)) => {{
        let api: &$crate::npu::api::Api = &$api;
        match api.raw().$entry {
            Some(f) => api.check(f($($arg),*), stringify!($entry)),
            None => Err(api.missing(stringify!($entry))),
        }
    }};
}
pub(crate) use call;
