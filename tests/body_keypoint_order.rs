//! The decoder's keypoints are COCO-17 in the COCO order; the fit feeds them to
//! the body's first 17 keypoints, so those must be the same points in the same order.

use hailo_edge::body::Model;
use hailo_edge::decode::keypoints::{check_coco17_prefix, COCO17};

#[test]
fn the_body_s_first_17_keypoints_are_coco_17_in_order() {
    let model = Model::embedded().unwrap();
    let labels = model.keypoint_labels();
    assert_eq!(labels.len(), 23);
    assert_eq!(&labels[..17], &COCO17[..]);
}

#[test]
fn the_check_the_pipeline_makes_refuses_another_order() {
    let labels = Model::embedded().unwrap().keypoint_labels().to_vec();
    assert_eq!(check_coco17_prefix(&labels), Ok(()));
    // Negative controls: two points swapped, and too few points.
    let mut swapped = labels.clone();
    swapped.swap(1, 2);
    let err = check_coco17_prefix(&swapped).unwrap_err().to_string();
    assert!(err.contains("right_eye"), "{err}");
    assert!(check_coco17_prefix(&labels[..16]).is_err());
}
