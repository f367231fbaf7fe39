//! The decoder's keypoints are COCO-17 in the COCO order; the fit feeds them to
//! the body's first 17 keypoints, so those must be the same points in the same order.

use hailo_edge::body::Model;
use hailo_edge::decode::keypoints::COCO17;

#[test]
fn the_body_s_first_17_keypoints_are_coco_17_in_order() {
    let model = Model::embedded().unwrap();
    let labels = model.keypoint_labels();
    assert_eq!(labels.len(), 23);
    assert_eq!(&labels[..17], &COCO17[..]);
}

#[test]
fn a_different_order_would_be_told_apart() {
    // Negative control: the comparison the pipeline makes at build time.
    let labels = Model::embedded().unwrap().keypoint_labels().to_vec();
    let mut swapped = labels.clone();
    swapped.swap(1, 2);
    assert_ne!(&swapped[..17], &COCO17[..]);
}
