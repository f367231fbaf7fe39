//! Camera sources (V4L2, synthetic, replay), frames, preprocessing into HEF inputs, multi-camera sync and recording.
