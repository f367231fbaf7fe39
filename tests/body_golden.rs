//! The embedded model against golden samples of the ANNY package's own torch forward
//! (`tools/anny_golden.py`, f64): bone poses, vertices and keypoints within 1e-9 m.

mod anny_golden;

use hailo_edge::body::{Model, Phenotype, Pose, KEYPOINT_COUNT};
use nalgebra::{Matrix3, Point3, Rotation3, UnitQuaternion, Vector3};
use safetensors::SafeTensors;

const TOLERANCE: f64 = 1e-9;

struct Sample {
    name: String,
    phenotype: Phenotype,
    pose: Pose,
    keypoints: Vec<f64>,
    bone_poses: Vec<f64>,
    vertices: Vec<f64>,
}

fn f64s(st: &SafeTensors, key: &str) -> Vec<f64> {
    let t = st
        .tensor(key)
        .unwrap_or_else(|_| panic!("golden tensor {key}"));
    t.data()
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn golden() -> (Vec<Sample>, usize, Vec<String>) {
    let bytes = anny_golden::bytes();
    let meta = anny_golden::metadata(&bytes);
    let names: Vec<String> = serde_json::from_str(&meta["samples"]).unwrap();
    let stride: usize = meta["vertex_stride"].parse().unwrap();
    let labels: Vec<String> = serde_json::from_str(&meta["keypoint_labels"]).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let samples = names
        .into_iter()
        .map(|name| {
            let p = f64s(&st, &format!("{name}.phenotype"));
            let r = f64s(&st, &format!("{name}.rotations"));
            let t = f64s(&st, &format!("{name}.translation"));
            let rotations = r
                .chunks_exact(9)
                .map(|m| {
                    UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(
                        Matrix3::from_row_slice(m),
                    ))
                })
                .collect();
            Sample {
                phenotype: Phenotype::from_array(p.try_into().unwrap()),
                pose: Pose {
                    rotations,
                    translation: Vector3::new(t[0], t[1], t[2]),
                },
                keypoints: f64s(&st, &format!("{name}.keypoints")),
                bone_poses: f64s(&st, &format!("{name}.bone_poses")),
                vertices: f64s(&st, &format!("{name}.vertices")),
                name,
            }
        })
        .collect();
    (samples, stride, labels)
}

fn max_error(points: &[Point3<f64>], golden: &[f64]) -> f64 {
    assert_eq!(points.len() * 3, golden.len());
    points
        .iter()
        .zip(golden.chunks_exact(3))
        .map(|(p, g)| (p - Point3::new(g[0], g[1], g[2])).norm())
        .fold(0.0, f64::max)
}

#[test]
fn forward_matches_the_package_within_1e_9_m() {
    let model = Model::embedded().unwrap();
    let (samples, stride, labels) = golden();
    assert_eq!(model.keypoint_labels(), labels.as_slice());
    assert!(samples.len() >= 5);
    for s in &samples {
        let rest = model.rest(&s.phenotype);
        let skeleton = model.skeleton(&rest, &s.pose).unwrap();
        let mut pose_error = 0.0f64;
        for (j, g) in s.bone_poses.chunks_exact(16).enumerate() {
            let w = skeleton.world_pose(&rest, j);
            for r in 0..3 {
                for c in 0..3 {
                    pose_error = pose_error.max((w.rotation[(r, c)] - g[4 * r + c]).abs());
                }
                pose_error = pose_error.max((w.translation[r] - g[4 * r + 3]).abs());
            }
        }
        let keypoints = model.keypoints(&rest, &s.pose).unwrap();
        let vertices = model.vertices(&rest, &s.pose).unwrap();
        let subset: Vec<Point3<f64>> = vertices.iter().step_by(stride).copied().collect();
        let kp_error = max_error(&keypoints, &s.keypoints);
        let v_error = max_error(&subset, &s.vertices);
        eprintln!(
            "{}: bone poses {pose_error:.2e}, keypoints {kp_error:.2e} m, vertices {v_error:.2e} m",
            s.name
        );
        assert!(
            pose_error < TOLERANCE,
            "{}: bone poses differ by {pose_error}",
            s.name
        );
        assert!(
            kp_error < TOLERANCE,
            "{}: keypoints differ by {kp_error} m",
            s.name
        );
        assert!(
            v_error < TOLERANCE,
            "{}: vertices differ by {v_error} m",
            s.name
        );
    }
}

#[test]
fn comparison_detects_small_departures() {
    // Negative controls: a 1e-6 rad change of one bone, or a 1e-6 change of one slider, must
    // move the result by more than the tolerance.
    let model = Model::embedded().unwrap();
    let (samples, _, _) = golden();
    let s = &samples[1];
    let rest = model.rest(&s.phenotype);
    let mut pose = s.pose.clone();
    let elbow = model.bone_index("upperarm01.L").unwrap();
    pose.rotations[elbow] =
        UnitQuaternion::from_scaled_axis(Vector3::new(1e-6, 0.0, 0.0)) * pose.rotations[elbow];
    let moved = model.keypoints(&rest, &pose).unwrap();
    assert!(max_error(&moved, &s.keypoints) > TOLERANCE);
    let mut phenotype = s.phenotype;
    phenotype.height += 1e-6;
    let moved = model.keypoints(&model.rest(&phenotype), &s.pose).unwrap();
    assert!(max_error(&moved, &s.keypoints) > TOLERANCE);
}

#[test]
fn folded_keypoints_equal_the_regressor_over_skinned_vertices() {
    let model = Model::embedded().unwrap();
    let (samples, _, _) = golden();
    for s in &samples {
        let rest = model.rest(&s.phenotype);
        let folded = model.keypoints(&rest, &s.pose).unwrap();
        let regressed = model.regress_keypoints(&model.vertices(&rest, &s.pose).unwrap());
        let error = (0..KEYPOINT_COUNT)
            .map(|k| (folded[k] - regressed[k]).norm())
            .fold(0.0, f64::max);
        assert!(error < 1e-12, "{}: folded vs regressed {error}", s.name);
        // Negative control: dropping one term must show.
        let mut broken = rest.keypoints.clone();
        broken.terms.remove(broken.terms.len() / 2);
        let skeleton = model.skeleton(&rest, &s.pose).unwrap();
        let off = broken.evaluate(&skeleton);
        let error = (0..KEYPOINT_COUNT)
            .map(|k| (off[k] - regressed[k]).norm())
            .fold(0.0, f64::max);
        assert!(error > 1e-6, "{}: a missing term went unnoticed", s.name);
    }
}

#[test]
fn keypoint_only_rest_equals_the_mesh_rest() {
    let model = Model::embedded().unwrap();
    let (samples, _, _) = golden();
    for s in &samples {
        let full = model.rest(&s.phenotype);
        let light = model.rest_keypoints_only(&s.phenotype);
        assert!(light.vertices.is_empty());
        assert_eq!(full.keypoints.terms.len(), light.keypoints.terms.len());
        let a = model.keypoints(&full, &s.pose).unwrap();
        let b = model.keypoints(&light, &s.pose).unwrap();
        let error = (0..KEYPOINT_COUNT)
            .map(|k| (a[k] - b[k]).norm())
            .fold(0.0, f64::max);
        assert!(
            error < 1e-12,
            "{}: keypoint-only rest differs by {error}",
            s.name
        );
        assert!(max_error(&b, &s.keypoints) < TOLERANCE);
        // It has no mesh: skinning it is an error, not silent garbage.
        assert!(model.vertices(&light, &s.pose).is_err());
    }
}
