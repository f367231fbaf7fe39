//! The fit's accuracy target on synthetic data: ANNY posed within its limits, the demo rig's
//! four cameras, 2 px noise and 5% dropped keypoints: MPJPE at most 20 mm over the 23
//! keypoints and at most 3 iterations per frame after the first on smooth sequences.
//!
//! The fitter starts from the default body and calibrates the subject's phenotype over eight
//! frames first, as the pipeline does.

use hailo_edge::body::fit::{anny, FitConfig};
use hailo_edge::body::triangulate::{triangulate, TriangulationConfig};
use hailo_edge::body::Model;
use hailo_edge::body::Pose;
use hailo_edge::scene::demo_rig;
use hailo_edge::scene::{motion, observe};
use rand::SeedableRng;

#[test]
fn fit_meets_the_accuracy_and_iteration_targets() {
    let model = Model::embedded().unwrap();
    let cameras = demo_rig().to_vec();
    let shape = [0.62, 0.45, 0.55, 0.4, 0.6, 0.5];
    let phenotype = anny::phenotype(&shape);
    let truth = anny::rig_from_rest(model, &model.rest(&phenotype)).unwrap();
    let limits = anny::default_limits(&truth).unwrap();
    let active = anny::active_bones(&truth).unwrap();
    let default = Default::default();
    let mut fitter = anny::fitter(model, &default, cameras.clone(), FitConfig::default()).unwrap();
    anny::enable_vertices(&mut fitter, model, &default);
    let detections = observe::Detections {
        noise_px: 2.0,
        drop_rate: 0.05,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(77);
    let calibration_frames: Vec<_> = (0..8)
        .map(|_| {
            let pose = motion::random_pose(&truth, &limits, &active, 0.6, 0.3, &mut rng);
            let kp = motion::keypoints(&truth, &pose);
            observe::observe(&cameras, &kp, detections, &mut rng)
        })
        .collect();
    let cal = anny::calibrate(&mut fitter, model, &calibration_frames, 4).unwrap();
    println!("calibration: {cal:?}");
    assert!(cal.final_error_px < cal.initial_error_px, "{cal:?}");
    let (mut fit, mut tri, mut reference, mut n, mut n_tri) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let mut max_warm_iterations = 0;
    for _ in 0..3 {
        let a = motion::random_pose(&truth, &limits, &active, 0.6, 0.3, &mut rng);
        let b = motion::random_pose(&truth, &limits, &active, 0.6, 0.3, &mut rng);
        fitter.reset();
        for (i, pose) in motion::sequence(&a, &b, 40).iter().enumerate() {
            let kp = motion::keypoints(&truth, pose);
            let obs = observe::observe(&cameras, &kp, detections, &mut rng);
            let out = fitter.fit(&obs).unwrap();
            assert_eq!(out.cold_start, i == 0);
            assert_eq!(
                out.vertices.as_ref().map(Vec::len),
                Some(model.vertex_count())
            );
            assert_eq!(out.residuals.len(), cameras.len());
            if i > 0 {
                max_warm_iterations = max_warm_iterations.max(out.report.iterations);
            }
            for (j, l) in limits.iter().enumerate() {
                if let Some(l) = l {
                    assert!(
                        l.contains(&out.pose.rotations[j]),
                        "bone {j} left its limit"
                    );
                }
            }
            let fitted: Vec<_> = out.keypoints.iter().map(|p| Some(*p)).collect();
            fit += observe::mpjpe(&fitted, &kp).unwrap();
            // Negative control for the gate: the reference pose at the true root position.
            let mut still = Pose::identity(truth.bones());
            still.translation = pose.translation;
            still.rotations[0] = pose.rotations[0];
            let still: Vec<_> = motion::keypoints(&truth, &still)
                .into_iter()
                .map(Some)
                .collect();
            reference += observe::mpjpe(&still, &kp).unwrap();
            n += 1.0;
            let t: Vec<_> = triangulate(&cameras, &obs, &TriangulationConfig::default())
                .unwrap()
                .iter()
                .map(|t| t.map(|t| t.point))
                .collect();
            if let Some(e) = observe::mpjpe(&t, &kp) {
                tri += e;
                n_tri += 1.0;
            }
        }
    }
    let (fit, tri, reference) = (1e3 * fit / n, 1e3 * tri / n_tri, 1e3 * reference / n);
    println!("fit MPJPE {fit:.1} mm, triangulation-only {tri:.1} mm, unfitted reference pose {reference:.1} mm, max warm iterations {max_warm_iterations}");
    assert!(fit <= 20.0, "fit MPJPE {fit:.1} mm");
    assert!(
        reference > 20.0,
        "the gate cannot say no: {reference:.1} mm"
    );
    assert!(
        max_warm_iterations <= 3,
        "{max_warm_iterations} iterations on a warm frame"
    );
}
