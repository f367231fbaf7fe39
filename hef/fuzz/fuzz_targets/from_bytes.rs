//! `Hef::from_bytes` on arbitrary bytes, with and without hashing, then the
//! same bytes as the protobuf of a valid v2 file so the input reaches the
//! decoder and the listing past the checksum. Never unwraps: every input
//! must give a model or an error.
#![no_main]

use hef::{HeaderVersion, Hef, HefBuilder, ReaderOptions};
use libfuzzer_sys::fuzz_target;

fn walk(result: Result<Hef, hef::HefError>) {
    match result {
        Ok(hef) => {
            for group in &hef.network_groups {
                for stream in group.streams() {
                    let _ = stream.frame_size();
                }
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    walk(Hef::from_bytes(data));
    walk(ReaderOptions::new().verify_checksum(false).read_bytes(data));
    let carrier = hef::samples::tiny(HeaderVersion::V2);
    if let Ok(file) = HefBuilder::new(&carrier).build_around(data.to_vec()) {
        walk(Hef::from_bytes(&file));
    }
});
