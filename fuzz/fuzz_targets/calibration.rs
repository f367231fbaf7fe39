//! An OpenCV calibration file (YAML or JSON) on arbitrary text, with and without the
//! camera's image size to check against.
#![no_main]

use hailo_edge::camera::calib::from_opencv_str;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for size in [None, Some((288, 288))] {
        if let Err(e) = from_opencv_str(text, "fuzz.yaml", size) {
            let _ = e.to_string();
        }
    }
});
