//! Raw FFI to HailoRT 5.x through a C table of functions (see `shim/`).
//!
//! The table, its types, the build against an installed HailoRT and the
//! committed bindings land with the NPU layer.
