//! A Zenoh payload on arbitrary bytes, as a subscriber receives it: decoded into a body, view
//! or skeleton message, or refused with an error naming the key it came on.
#![no_main]

use hailo_edge::publish::zenoh::Message;
use libfuzzer_sys::fuzz_target;

const KEY: &str = "hailo-edge/fuzz/body";

fuzz_target!(|data: &[u8]| {
    match Message::decode(KEY, data) {
        Ok(Message::Body(b)) => {
            let _ = (b.keypoints_3d.len(), b.rotations.len());
        }
        Ok(Message::View(v)) => {
            let _ = v.keypoints.len();
        }
        Ok(Message::Skeleton(s)) => {
            let _ = s.skeleton.is_object();
        }
        Err(e) => assert!(e.to_string().starts_with(KEY), "{e}"),
    }
});
