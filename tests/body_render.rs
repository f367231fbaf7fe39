//! Rendering: the body lands where the camera model projects it, and visibility follows the
//! z-buffer.

use hailo_edge::body::model::render::render;
use hailo_edge::body::{Model, Phenotype, Pose};
use hailo_edge::geom::{Camera, Distortion};
use hailo_edge::scene::demo_rig_at;
use nalgebra::{Point3, Vector3};

#[test]
fn keypoints_project_onto_the_rendered_body() {
    let model = Model::embedded().unwrap();
    let rest = model.rest(&Phenotype::default());
    let mut pose = Pose::identity(model.bone_count());
    pose.translation = Vector3::new(0.0, 0.0, 1.0);
    let cams = demo_rig_at(Point3::new(0.0, 0.0, 1.0)).unwrap();
    let view = render(model, &rest, &pose, &cams[0]).unwrap();
    let keypoints = model.keypoints(&rest, &pose).unwrap();
    let nose = model
        .keypoint_labels()
        .iter()
        .position(|l| l == "nose")
        .unwrap();
    let px = view.keypoints[nose].pixel.unwrap();
    let expected = cams[0].project(&keypoints[nose]).unwrap();
    assert!((px - expected).norm() < 1e-9);
    // The nose pixel is covered by the body and the nose is visible from the front.
    let at = px.y as usize * cams[0].width as usize + px.x as usize;
    assert!(view.depth[at].is_finite());
    assert!(view.keypoints[nose].visible);
    let visible = view.keypoints.iter().filter(|k| k.visible).count();
    assert!(
        visible >= 17,
        "only {visible} keypoints visible from the front"
    );

    // From behind, the head hides the nose.
    let back = Camera::look_at(
        Point3::new(0.0, 3.0, 1.3),
        Point3::new(0.0, 0.0, 1.2),
        Vector3::z(),
        50.0,
        (288, 288),
        Distortion::default(),
    )
    .unwrap();
    let view = render(model, &rest, &pose, &back).unwrap();
    assert!(view.keypoints[nose]
        .pixel
        .is_some_and(|p| back.contains(&p)));
    assert!(!view.keypoints[nose].visible, "nose seen through the head");

    // A body out of the field of view leaves the image empty and nothing visible.
    pose.translation = Vector3::new(30.0, 0.0, 1.0);
    let view = render(model, &rest, &pose, &cams[0]).unwrap();
    assert!(view.depth.iter().all(|d| d.is_infinite()));
    assert!(view.keypoints.iter().all(|k| !k.visible));
}

#[test]
fn invalid_cameras_are_refused() {
    let model = Model::embedded().unwrap();
    let rest = model.rest(&Phenotype::default());
    let pose = Pose::identity(model.bone_count());
    let mut cam = demo_rig_at(Point3::origin()).unwrap()[0];
    cam.width = 0;
    assert!(render(model, &rest, &pose, &cam).is_err());
    let short = Pose::identity(3);
    let cam = demo_rig_at(Point3::origin()).unwrap()[0];
    let err = render(model, &rest, &short, &cam).unwrap_err();
    assert!(err.to_string().contains("3 bone rotations"), "{err}");
}

#[test]
fn non_finite_sliders_are_refused() {
    let model = Model::embedded().unwrap();
    let bad = Phenotype {
        age: f64::NAN,
        ..Phenotype::default()
    };
    let err = model.try_rest(&bad).unwrap_err();
    assert!(err.to_string().contains("age"), "{err}");
    assert!(model.try_rest(&Phenotype::default()).is_ok());
}
