//! The CPU decoder: the host part of the RF-DETR keypoint model, from backbone features to keypoints.
