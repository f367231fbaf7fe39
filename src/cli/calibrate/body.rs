//! `hailo-edge calibrate --body`: the rig's camera poses refined from a run's keypoints of a
//! person moving, from the rig file's calibrations, some cameras held.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use serde_json::json;

use hailo_edge::body::Pose;
use hailo_edge::calibrate::body::Segment;
use hailo_edge::calibrate::body::{refine_from_body, BodySettings};
use hailo_edge::calibrate::results::{read_frames, read_keypoint_names};
use hailo_edge::calibrate::stature::{self, ModelLimbs};
use hailo_edge::calibrate::synthetic::errors;
use hailo_edge::output::printable;
use hailo_edge::rig::RigConfig;

use super::{CalibrateArgs, Outputs};

pub fn run(args: &CalibrateArgs, results: &Path) -> anyhow::Result<ExitCode> {
    let Some(config) = &args.config else {
        bail!("--body needs --config RIG.toml: the calibrations to start from");
    };
    let rig = RigConfig::load(config)?;
    let start = hailo_edge::rig::build::calibrations(&rig)?;
    let names: Vec<String> = rig.cameras.iter().map(|c| c.name.clone()).collect();
    let mut held = vec![false; names.len()];
    for h in &args.hold {
        let Some(i) = names.iter().position(|n| n == h) else {
            bail!(
                "--hold {}: no such camera in {}; its cameras are {}",
                printable(h),
                config.display(),
                printable(&names.join(", "))
            );
        };
        held[i] = true;
    }
    let frames = read_frames(results, names.len())?;
    let mut settings = BodySettings::default();
    let limbs = match args.stature {
        Some(m) if !(0.5..=2.5).contains(&m) => {
            bail!("--stature {m}: expected the subject's height in metres, 0.5 to 2.5")
        }
        Some(m) => {
            let limbs = stated_limbs(&rig, results, m)?;
            let mean = limbs.iter().map(|s| s.length_m).sum::<f64>() / limbs.len() as f64;
            settings.segment_sigma_m = stature::LIMB_SPREAD * mean;
            limbs
        }
        None => Vec::new(),
    };
    let outputs = Outputs::prepare(args, &names)?;
    let started = Instant::now();
    let got = refine_from_body(&start, &names, &held, &frames, &limbs, &settings)
        .with_context(|| format!("refining from {}", results.display()))?;
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "refined {} of {} cameras from {} frames ({} keypoint positions) of {} in {elapsed:.1} s",
        held.iter().filter(|h| !**h).count(),
        names.len(),
        got.frames,
        got.points,
        printable(&results.display().to_string())
    );
    println!(
        "{:<16} {:>6} {:>10} {:>10} {:>9}",
        "camera", "held", "moved mm", "moved deg", "rms px"
    );
    let mut cameras = Vec::with_capacity(names.len());
    for (i, n) in names.iter().enumerate() {
        // How far the refinement moved the camera from where the rig file had it.
        let moved = errors(&start[i], &got.cameras[i]);
        println!(
            "{:<16} {:>6} {:>10.2} {:>10.3} {:>9.3}",
            printable(n),
            if held[i] { "yes" } else { "no" },
            moved.position_mm,
            moved.rotation_deg,
            got.per_camera_px[i]
        );
        cameras.push(json!({
            "name": n,
            "held": held[i],
            "camera": got.cameras[i],
            "moved_mm": moved.position_mm,
            "moved_deg": moved.rotation_deg,
            "rms_px": got.per_camera_px[i],
        }));
    }
    let report = json!({
        "source": format!("body keypoints in {}", results.display()),
        "start": config.display().to_string(),
        "frames": got.frames,
        "points": got.points,
        "elapsed_s": elapsed,
        "stature_m": args.stature,
        "limbs": limbs.len(),
        "rms_px": got.rms_px,
        "cameras": cameras,
    });
    outputs.commit(args, &names, &got.cameras, &report)?;
    Ok(ExitCode::SUCCESS)
}

/// The limbs of the rig's body model at the stated stature, indexed by the keypoints the
/// results file names.
fn stated_limbs(rig: &RigConfig, results: &Path, stature_m: f64) -> anyhow::Result<Vec<Segment>> {
    let (body, _) = hailo_edge::rig::build::body(rig)?;
    let Some(model_stature) = body.stature_m else {
        bail!("--stature: the rig's body model has no mesh to measure its own stature on");
    };
    let rest = body.keypoints(&Pose::identity(body.rig.bones()));
    let model = ModelLimbs {
        names: &body.naming.keypoints,
        rest: &rest,
        stature_m: model_stature,
    };
    let limbs = stature::limbs(&read_keypoint_names(results)?, &model, stature_m);
    if limbs.is_empty() {
        bail!(
            "--stature: {} names no limbs of the body model (left_shoulder, left_elbow, left_hip, ...) among its keypoints",
            results.display()
        );
    }
    Ok(limbs)
}
