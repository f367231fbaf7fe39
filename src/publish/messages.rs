//! The rig's results as Foxglove's well-known messages: each view's keypoints
//! `foxglove.ImageAnnotations`, the fitted body a `foxglove.SceneUpdate` and the camera
//! poses `foxglove.FrameTransforms` (frames and calibrations are the camera recorder's,
//! [`crate::camera::record::image`]). Every stamp in a message is wall-clock time.

use foxglove::messages::{
    line_primitive, points_annotation, Color, FrameTransform, FrameTransforms, ImageAnnotations,
    KeyValuePair, LinePrimitive, Point2, Point3, PointsAnnotation, Pose, Quaternion, SceneEntity,
    SceneUpdate, SpherePrimitive, Vector3,
};
use nalgebra::{Rotation3, UnitQuaternion};

use crate::camera::record::image::timestamp;
use crate::geom::Camera;

/// The frame every camera pose and the body are expressed in.
pub const WORLD_FRAME: &str = "world";

/// Keypoints below this visibility are drawn faded, not left out: a viewer sees what the
/// decoder doubted.
const VISIBLE: f32 = 0.5;

fn color(r: f64, g: f64, b: f64, a: f64) -> Color {
    Color { r, g, b, a }
}

fn pair(key: &str, value: String) -> KeyValuePair {
    KeyValuePair {
        key: key.to_owned(),
        value,
    }
}

/// One view's decoded keypoints over its image: the points (faded below visibility
/// 0.5) and the `bones` (index pairs, [`crate::decode::keypoints::bones`]) both ends of
/// which are visible. `keypoints` are camera pixels `[x, y, visibility, score]`, pixel
/// centres at +0.5.
pub fn keypoints(keypoints: &[[f32; 4]], bones: &[[usize; 2]], wall_ns: u64) -> ImageAnnotations {
    let ts = Some(timestamp(wall_ns));
    // Foxglove's pixel centres are on integers.
    let at = |k: &[f32; 4]| Point2 {
        x: f64::from(k[0]) - 0.5,
        y: f64::from(k[1]) - 0.5,
    };
    let visible = |i: usize| keypoints.get(i).is_some_and(|k| k[2] >= VISIBLE);
    let points = PointsAnnotation {
        timestamp: ts,
        r#type: points_annotation::Type::Points as i32,
        points: keypoints.iter().map(at).collect(),
        outline_colors: keypoints
            .iter()
            .map(|k| color(0.1, 0.9, 0.3, if k[2] >= VISIBLE { 1.0 } else { 0.3 }))
            .collect(),
        thickness: 4.0,
        ..PointsAnnotation::default()
    };
    let bones = PointsAnnotation {
        timestamp: ts,
        r#type: points_annotation::Type::LineList as i32,
        points: bones
            .iter()
            .filter(|&&[a, b]| visible(a) && visible(b))
            .flat_map(|&[a, b]| [at(&keypoints[a]), at(&keypoints[b])])
            .collect(),
        outline_color: Some(color(0.1, 0.6, 1.0, 0.9)),
        thickness: 2.0,
        ..PointsAnnotation::default()
    };
    ImageAnnotations {
        timestamp: ts,
        points: vec![points, bones],
        ..ImageAnnotations::default()
    }
}

/// The fitted body in the world frame: a sphere per 3D keypoint (metres) and the `bones`
/// between them, one entity that replaces the previous one.
pub fn body(
    keypoints_3d: &[[f64; 3]],
    bones: &[[usize; 2]],
    wall_ns: u64,
    residual_mm: Option<f64>,
) -> SceneUpdate {
    let p3 = |p: &[f64; 3]| Point3 {
        x: p[0],
        y: p[1],
        z: p[2],
    };
    let identity = Some(Quaternion {
        x: 0.0,
        y: 0.0,
        z: 0.0,
        w: 1.0,
    });
    let spheres = keypoints_3d
        .iter()
        .map(|p| SpherePrimitive {
            pose: Some(Pose {
                position: Some(Vector3 {
                    x: p[0],
                    y: p[1],
                    z: p[2],
                }),
                orientation: identity,
            }),
            size: Some(Vector3 {
                x: 0.05,
                y: 0.05,
                z: 0.05,
            }),
            color: Some(color(0.1, 0.9, 0.3, 1.0)),
        })
        .collect();
    let skeleton = LinePrimitive {
        r#type: line_primitive::Type::LineList as i32,
        pose: Some(Pose {
            position: Some(Vector3::default()),
            orientation: identity,
        }),
        thickness: 0.02,
        points: bones
            .iter()
            .filter(|&&[a, b]| a.max(b) < keypoints_3d.len())
            .flat_map(|&[a, b]| [p3(&keypoints_3d[a]), p3(&keypoints_3d[b])])
            .collect(),
        color: Some(color(0.1, 0.6, 1.0, 1.0)),
        ..LinePrimitive::default()
    };
    let mut metadata = vec![pair("keypoints", keypoints_3d.len().to_string())];
    if let Some(r) = residual_mm {
        metadata.push(pair("residual_mm", format!("{r:.1}")));
    }
    SceneUpdate {
        entities: vec![SceneEntity {
            timestamp: Some(timestamp(wall_ns)),
            frame_id: WORLD_FRAME.into(),
            id: "body".into(),
            metadata,
            spheres,
            lines: vec![skeleton],
            ..SceneEntity::default()
        }],
        ..SceneUpdate::default()
    }
}

/// Each camera's pose in the world frame: `world` → `frame_ids[i]`, the camera's optical
/// frame (x right, y down, z forward), as its calibration places it.
pub fn transforms(cameras: &[(String, Camera)], wall_ns: u64) -> FrameTransforms {
    let transforms = cameras
        .iter()
        .map(|(frame_id, c)| {
            // The calibration maps world to camera; the transform places the camera in
            // the world: rotation Rᵀ, origin -Rᵀ t.
            let to_world = Rotation3::from_matrix_unchecked(c.rotation.transpose());
            let origin = -(to_world * c.translation);
            let q = UnitQuaternion::from_rotation_matrix(&to_world);
            FrameTransform {
                timestamp: Some(timestamp(wall_ns)),
                parent_frame_id: WORLD_FRAME.into(),
                child_frame_id: frame_id.clone(),
                translation: Some(Vector3 {
                    x: origin.x,
                    y: origin.y,
                    z: origin.z,
                }),
                rotation: Some(Quaternion {
                    x: q.i,
                    y: q.j,
                    z: q.k,
                    w: q.w,
                }),
            }
        })
        .collect();
    FrameTransforms { transforms }
}

#[cfg(test)]
mod tests {
    use nalgebra::{Point3 as P3, Vector3 as V3};

    use super::*;
    use crate::decode::keypoints::{bones, COCO17};
    use crate::geom::Distortion;

    #[test]
    fn a_camera_transform_puts_the_camera_where_its_calibration_does() {
        let eye = P3::new(2.0, -1.0, 1.5);
        let c = Camera::look_at(
            eye,
            P3::origin(),
            V3::z(),
            60.0,
            (288, 288),
            Distortion::default(),
        )
        .unwrap();
        let t = &transforms(&[("cam0".into(), c)], 0).transforms[0];
        let at = t.translation.as_ref().unwrap();
        assert!((V3::new(at.x, at.y, at.z) - eye.coords).norm() < 1e-9);
        // The optical axis (+z of the camera frame) points at the origin.
        let r = t.rotation.as_ref().unwrap();
        let q = UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(r.w, r.x, r.y, r.z));
        let forward = q * V3::z();
        assert!((forward - (-eye.coords).normalize()).norm() < 1e-9);
        // Negative control: the calibration's own translation is not the camera's place.
        assert!((c.translation - eye.coords).norm() > 0.1);
    }

    #[test]
    fn hidden_keypoints_are_faded_and_leave_their_bones_out() {
        let mut kps = vec![[10.5f32, 20.5, 1.0, 0.9]; 17];
        kps[9][2] = 0.1; // left wrist hidden
        let coco = bones(&COCO17);
        let a = keypoints(&kps, &coco, 5);
        assert_eq!(a.points[0].points.len(), 17);
        assert_eq!(a.points[0].points[0].x, 10.0);
        assert_eq!(a.points[0].outline_colors[9].a, 0.3);
        let bones = a.points[1].points.len() / 2;
        let wrist_bones = coco.iter().filter(|b| b.contains(&9)).count();
        assert_eq!(bones, coco.len() - wrist_bones);
        assert!(wrist_bones > 0);
    }
}
