//! Accuracy of the pose fit on synthetic data, with the triangulation-only error beside it.
//!
//! Four cameras placed like the demo rig (three body cameras at 288x288, one face camera at
//! 432x432), ANNY posed at random within its joint limits, 2D keypoints projected with 2 px
//! Gaussian noise and 5% dropped (and those outside the image). The subject's phenotype is
//! calibrated once over eight frames, starting from the default body; then smooth sequences
//! between random poses are tracked with warm starts.
//!
//! ```sh
//! cargo run --release --example fit_accuracy -- [SEQUENCES] [FRAMES]
//! ```

use std::time::Instant;

use hailo_edge::body::fit::{anny, FitConfig};
use hailo_edge::body::triangulate::{triangulate, TriangulationConfig};
use hailo_edge::body::Model;
use hailo_edge::scene::demo_rig;
use hailo_edge::scene::{motion, observe};
use rand::{Rng, SeedableRng};

/// Accuracy of the pose fit on synthetic four-camera data (2 px noise, 5 % dropped).
#[derive(clap::Parser)]
struct Args {
    /// Smooth sequences between random poses to track.
    #[arg(default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    sequences: u32,
    /// Frames per sequence.
    #[arg(default_value_t = 60, value_parser = clap::value_parser!(u32).range(2..=100_000))]
    frames: u32,
}

fn main() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    let (sequences, frames) = (args.sequences as usize, args.frames as usize);
    let model = Model::embedded()?;
    let cameras = demo_rig().to_vec();
    let detections = observe::Detections {
        noise_px: 2.0,
        drop_rate: 0.05,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(2024);

    // The subject: a phenotype away from the default body.
    let truth_shape: Vec<f64> = (0..6).map(|_| rng.gen_range(0.3..0.7)).collect();
    let truth = anny::rig_from_rest(model, &model.rest(&anny::phenotype(&truth_shape)))?;
    let limits = anny::default_limits(&truth)?;
    let active = anny::active_bones(&truth)?;

    // Calibration over the subject's first frames, starting from the default body.
    let mut fitter = anny::fitter(
        model,
        &Default::default(),
        cameras.clone(),
        FitConfig::default(),
    )?;
    let calibration_frames: Vec<_> = (0..8)
        .map(|_| {
            let pose = motion::random_pose(&truth, &limits, &active, 0.6, 0.3, &mut rng);
            observe::observe(
                &cameras,
                &motion::keypoints(&truth, &pose),
                detections,
                &mut rng,
            )
        })
        .collect();
    let t = Instant::now();
    let cal = anny::calibrate(&mut fitter, model, &calibration_frames, 10)?;
    println!(
        "phenotype calibration over {} frames: {:.0} ms, mean reprojection error {:.2} -> {:.2} px",
        calibration_frames.len(),
        t.elapsed().as_secs_f64() * 1e3,
        cal.initial_error_px,
        cal.final_error_px
    );
    println!("  true phenotype       {truth_shape:.3?}");
    println!("  calibrated phenotype {:.3?}", cal.shape);

    let tri_config = TriangulationConfig::default();
    let (mut fit_sum, mut tri_sum, mut n_fit, mut n_tri) = (0.0, 0.0, 0usize, 0usize);
    let (mut cold_sum, mut warm_time) = (0.0, 0.0);
    let mut warm_iters = Vec::new();
    let mut converged = 0usize;
    for _ in 0..sequences {
        let a = motion::random_pose(&truth, &limits, &active, 0.6, 0.3, &mut rng);
        let b = motion::random_pose(&truth, &limits, &active, 0.6, 0.3, &mut rng);
        fitter.reset();
        for (i, pose) in motion::sequence(&a, &b, frames).iter().enumerate() {
            let kp = motion::keypoints(&truth, pose);
            let obs = observe::observe(&cameras, &kp, detections, &mut rng);
            let t = Instant::now();
            let out = fitter.fit(&obs)?;
            let dt = t.elapsed().as_secs_f64();
            let fitted: Vec<_> = out.keypoints.iter().map(|p| Some(*p)).collect();
            let e = observe::mpjpe(&fitted, &kp).unwrap_or(f64::NAN);
            if i == 0 {
                cold_sum += e;
            } else {
                warm_iters.push(out.report.iterations);
                converged += usize::from(out.report.was_successful());
                warm_time += dt;
            }
            fit_sum += e;
            n_fit += 1;
            let tri: Vec<_> = triangulate(&cameras, &obs, &tri_config)?
                .iter()
                .map(|t| t.map(|t| t.point))
                .collect();
            if let Some(e) = observe::mpjpe(&tri, &kp) {
                tri_sum += e;
                n_tri += 1;
            }
        }
    }
    let warm = warm_iters.len().max(1) as f64;
    let max_iters = warm_iters.iter().max().copied().unwrap_or(0);
    let mean_iters = warm_iters.iter().sum::<usize>() as f64 / warm;
    let within = warm_iters.iter().filter(|&&i| i <= 3).count() as f64 / warm;
    println!(
        "{sequences} sequences x {frames} frames at 120 fps, 2 px noise, 5% dropped, 4 cameras:"
    );
    println!(
        "  fit MPJPE (23 keypoints)   {:.1} mm",
        1e3 * fit_sum / n_fit as f64
    );
    println!(
        "  triangulation-only MPJPE   {:.1} mm (keypoints seen by >= 2 views)",
        1e3 * tri_sum / n_tri.max(1) as f64
    );
    println!(
        "  first frame (cold start)   {:.1} mm",
        1e3 * cold_sum / sequences.max(1) as f64
    );
    println!(
        "  warm iterations per frame  mean {mean_iters:.2}, max {max_iters}, {:.1}% <= 3, {:.1}% converged",
        100.0 * within,
        100.0 * converged as f64 / warm
    );
    println!(
        "  warm fit time per frame    {:.3} ms (wall clock, this machine)",
        1e3 * warm_time / warm
    );
    Ok(())
}
