//! A pose.json on arbitrary text: parsed, turned into a pose of the embedded ANNY model and
//! posed through its forward kinematics. Every input gives keypoints or an error naming the
//! field or bone.
#![no_main]

use std::sync::OnceLock;

use hailo_edge::body::{Model, Phenotype, PoseJson, Rest};
use libfuzzer_sys::fuzz_target;

fn model() -> Option<&'static Model> {
    static MODEL: OnceLock<Option<&'static Model>> = OnceLock::new();
    *MODEL.get_or_init(|| Model::embedded().ok())
}

fn rest(model: &'static Model) -> &'static Rest {
    static REST: OnceLock<Rest> = OnceLock::new();
    REST.get_or_init(|| model.rest(&Phenotype::default()))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let json = match PoseJson::parse(text) {
        Ok(j) => j,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let Some(model) = model() else {
        return;
    };
    match json.pose(model) {
        Ok(pose) => {
            let owned;
            let rest = match &json.phenotype {
                Some(p) => {
                    owned = model.rest(p);
                    &owned
                }
                None => rest(model),
            };
            if let Err(e) = model.skeleton(rest, &pose) {
                let _ = e.to_string();
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
