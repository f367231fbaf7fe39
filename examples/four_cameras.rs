//! The whole chain on four cameras: capture, two graphs on one NPU, decoder,
//! sync, fit, report.
//!
//! ```sh
//! cargo run --release --example four_cameras                      # synthetic demo rig, 5 s
//! cargo run --release --example four_cameras -- /dev/video0 /dev/video2 /dev/video4 /dev/video6
//! ```
//!
//! With V4L2 devices the first three feed the 288 graph and the fourth the 432
//! graph; each needs a calibration `<device name>.yaml` (OpenCV FileStorage) in
//! the current folder, and the decoder's keypoints feed the fit.

use std::path::PathBuf;
use std::time::Duration;

use hailo_edge::rig::config::{CameraSource, KeypointsFrom};
use hailo_edge::rig::{run, RigConfig, RunOptions};

/// The whole chain on four cameras: the synthetic demo rig, or four V4L2 devices.
#[derive(clap::Parser)]
struct Args {
    /// Four V4L2 devices (three body cameras, then the face camera); none runs the demo rig.
    #[arg(num_args = 0..=4)]
    devices: Vec<String>,
}

fn main() -> std::process::ExitCode {
    env_logger::init();
    let args = <Args as clap::Parser>::parse();
    match run_rig(args.devices) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run_rig(devices: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let mut rig = RigConfig::demo(&RigConfig::demo_fixtures_dir()?);
    if !devices.is_empty() {
        if devices.len() != 4 {
            return Err(format!("give four V4L2 devices, got {}", devices.len()).into());
        }
        for (cam, dev) in rig.cameras.iter_mut().zip(&devices) {
            cam.source = CameraSource::V4l2(PathBuf::from(dev));
            let name = PathBuf::from(dev);
            let stem = name
                .file_name()
                .map_or("camera".into(), |n| n.to_string_lossy().into_owned());
            cam.calibration_file = Some(PathBuf::from(format!("{stem}.yaml")));
        }
        rig.body.keypoints = KeypointsFrom::Decoder;
        rig.validate(std::path::Path::new("four_cameras"))?;
    }
    let report = run(
        &rig,
        "four_cameras",
        &RunOptions {
            duration: Some(Duration::from_secs(5)),
            status: true,
            ..RunOptions::default()
        },
    )?;
    println!("{}", report.to_json());
    Ok(())
}
