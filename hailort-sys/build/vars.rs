//! Every environment variable the build script reads, in one place.
//!
//! Reading one through [`get`] also tells cargo to rerun the script when it
//! changes.

/// Prefix of an installed HailoRT (`$HAILORT_ROOT/include/hailo/hailort.h`,
/// `$HAILORT_ROOT/lib/libhailort.so`).
pub const HAILORT_ROOT: &str = "HAILORT_ROOT";
/// Directory holding `hailo/hailort.h`; overrides `HAILORT_ROOT/include`.
pub const HAILORT_INCLUDE_DIR: &str = "HAILORT_INCLUDE_DIR";
/// Directory holding `libhailort.so`; overrides `HAILORT_ROOT/lib`.
pub const HAILORT_LIB_DIR: &str = "HAILORT_LIB_DIR";

/// The variable's value, if set and not empty.
pub fn get(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
