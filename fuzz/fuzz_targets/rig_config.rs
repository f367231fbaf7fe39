//! `RigConfig::parse` on arbitrary text: every input gives a rig or an error naming the key,
//! never a panic or an allocation the limits do not allow.
#![no_main]

use hailo_edge::rig::RigConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match RigConfig::parse(text, std::path::Path::new("fuzz.toml")) {
        Ok(rig) => {
            let _ = rig.cameras.len();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
