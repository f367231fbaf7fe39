//! Body model speed, single thread: keypoint forward (target <= 5 us), full mesh forward
//! (target <= 0.5 ms), and the per-subject rest state. `tools/bench_anny_torch.py` runs this
//! and the package's torch forward in one go and prints the ratios.

use criterion::{criterion_group, criterion_main, Criterion};
use hailo_edge::body::{Model, Phenotype, Pose, Posed, Rest, Skeleton};
use nalgebra::{Point3, Vector3};
use std::hint::black_box;

fn test_pose(model: &Model) -> Pose {
    // Deterministic, moderately bent pose.
    let vectors: Vec<Vector3<f64>> = (0..model.bone_count())
        .map(|j| {
            let t = j as f64;
            Vector3::new(
                (t * 0.7).sin() * 0.3,
                (t * 1.3).cos() * 0.2,
                (t * 0.4).sin() * 0.25,
            )
        })
        .collect();
    Pose::from_rotation_vectors(&vectors, Vector3::new(0.1, -0.2, 1.0))
}

/// Poses the bones and skins the whole mesh into `vertices`.
fn mesh_forward(
    model: &Model,
    rest: &Rest,
    pose: &Pose,
    skeleton: &mut Skeleton,
    vertices: &mut [Point3<f64>],
) {
    model
        .skeleton_into(rest, black_box(pose), skeleton)
        .expect("pose fits");
    model
        .skin_into(rest, skeleton, vertices)
        .expect("mesh rest");
    black_box(vertices);
}

fn bench(c: &mut Criterion) {
    let model = Model::embedded().expect("embedded model");
    let phenotype = Phenotype {
        gender: 0.3,
        age: 0.6,
        muscle: 0.7,
        weight: 0.4,
        height: 0.55,
        proportions: 0.2,
    };
    let rest = model.rest(&phenotype);
    let pose = test_pose(model);
    let mut skeleton = Skeleton::default();
    let mut vertices = vec![Point3::origin(); model.vertex_count()];

    let mut posed = Posed::default();
    c.bench_function("body/keypoint_forward", |b| {
        b.iter(|| {
            model
                .keypoints_into(&rest, black_box(&pose), &mut posed)
                .expect("pose fits")
        })
    });
    c.bench_function("body/mesh_forward", |b| {
        b.iter(|| mesh_forward(model, &rest, &pose, &mut skeleton, &mut vertices))
    });
    c.bench_function("body/rest_from_phenotype", |b| {
        b.iter(|| black_box(model.rest(black_box(&phenotype))))
    });
    c.bench_function("body/rest_keypoints_only", |b| {
        b.iter(|| black_box(model.rest_keypoints_only(black_box(&phenotype))))
    });
    c.bench_function("body/full_forward_with_phenotype", |b| {
        b.iter(|| {
            let rest = model.rest(black_box(&phenotype));
            mesh_forward(model, &rest, &pose, &mut skeleton, &mut vertices)
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
