//! The golden samples of the ANNY package's own torch forward (`tools/anny_golden.py`), read by
//! the body-model tests.

use std::collections::HashMap;

use safetensors::SafeTensors;

/// The bytes of `tests/data/anny_golden.safetensors`.
pub fn bytes() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/anny_golden.safetensors"
    ))
    .expect("tests/data/anny_golden.safetensors")
}

/// The file's string metadata: sample names, labels, strides and digests.
pub fn metadata(bytes: &[u8]) -> HashMap<String, String> {
    let (_, meta) = SafeTensors::read_metadata(bytes).expect("golden safetensors header");
    meta.metadata().clone().expect("golden metadata")
}
