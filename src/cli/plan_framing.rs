//! `plan --config`: the framing precision of the rig's cameras, from their calibrations, the
//! side of each graph's HEF input and the body model's stature
//! (docs/calibration.md#framing-precision).

use std::path::Path;

use serde::Serialize;

use hailo_edge::camera::calib::framing::{self, Framing};
use hailo_edge::rig::{build, RigConfig};

/// The rig's framing, or why there is none (a camera whose calibration cannot be read here,
/// such as a V4L2 device this machine does not have, or no subject point).
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RigFraming {
    Cameras(Vec<Framing>),
    Unavailable(String),
}

impl RigFraming {
    /// The framing of `rig`, read from `path`.
    pub fn of(path: &Path, rig: &RigConfig) -> RigFraming {
        match framing_of(path, rig) {
            Ok(Some(f)) => RigFraming::Cameras(f),
            Ok(None) => RigFraming::Unavailable(
                "one camera and no [body] subject: no subject point to measure to".into(),
            ),
            Err(e) => RigFraming::Unavailable(hailo_edge::output::error_text(e.as_ref())),
        }
    }

    /// Prints the table, or why there is none.
    pub fn print(&self) {
        match self {
            RigFraming::Cameras(f) => print!("{}", framing::render(f)),
            RigFraming::Unavailable(why) => println!(
                "framing precision: not available: {}",
                hailo_edge::output::printable(why)
            ),
        }
    }
}

fn framing_of(path: &Path, rig: &RigConfig) -> anyhow::Result<Option<Vec<Framing>>> {
    let calibrations = build::calibrations(rig)?;
    let sides = super::doctor::graph_sides(path, rig)?;
    let side_of = |graph: &str| {
        sides
            .iter()
            .find(|(g, _, _)| g.name == graph)
            .map_or(0, |(_, side, _)| *side)
    };
    let per_camera: Vec<u32> = rig.cameras.iter().map(|c| side_of(&c.graph)).collect();
    let stature = build::body(rig)?.0.stature_m;
    Ok(build::framing(rig, &calibrations, &per_camera, stature))
}
