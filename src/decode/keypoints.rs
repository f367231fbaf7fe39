//! Keypoint post-processing: the top detections and their keypoints in camera pixels.
//!
//! What the RF-DETR keypoint export emits (rf-detr 1.8+, `PostProcess` in
//! `models/postprocess.py`; the graph already applies the box reparameterisation and
//! adds the keypoint class term to the logits):
//!
//! - `dets` (1, Q, 4): box centre x, centre y, width, height, normalised to the model
//!   input (0..1).
//! - `labels` (1, Q, C): raw class logits; the score is `sigmoid(logit)`. The keypoint
//!   schema is per class; the preview model has one keypoint class (index 0, the person)
//!   with 17 COCO keypoints.
//! - `keypoints` (1, S, K, 8) for the first S ≤ Q query slots (the keypoint slots:
//!   S = Q upstream, S = 1 by default here, see [`KeypointSlots`](super::KeypointSlots)),
//!   per keypoint:
//!
//! | field | meaning | how it is read here |
//! |---|---|---|
//! | 0, 1 | x, y normalised to the model input | × input width/height, then the camera mapping |
//! | 2 | "findable" logit (upstream's keypoint confidence) | `score = sigmoid` |
//! | 3 | "visible" logit | `visibility = sigmoid` |
//! | 4, 5, 6 | precision Cholesky (log l11, l21, log l22) | kept raw in [`Keypoint::precision_cholesky`] |
//! | 7 | class-logit contribution (already summed into `labels`) | not used |

use super::RawOutput;

/// Fields per keypoint in the export.
pub const FIELDS: usize = 8;

/// The keypoint head's 17 points, in the order of the COCO keypoint annotation
/// that RF-DETR's keypoint models are trained on.
pub const COCO17: [&str; 17] = [
    "nose",
    "left_eye",
    "right_eye",
    "left_ear",
    "right_ear",
    "left_shoulder",
    "right_shoulder",
    "left_elbow",
    "right_elbow",
    "left_wrist",
    "right_wrist",
    "left_hip",
    "right_hip",
    "left_knee",
    "right_knee",
    "left_ankle",
    "right_ankle",
];

/// Bones drawn between keypoints, by name: the COCO keypoint skeleton (as
/// the COCO annotation and most pose viewers draw it) plus the feet of
/// COCO-WholeBody. A bone whose ends the body does not name is left out.
pub const BONES: [(&str, &str); 25] = [
    ("nose", "left_eye"),
    ("nose", "right_eye"),
    ("left_eye", "right_eye"),
    ("left_eye", "left_ear"),
    ("right_eye", "right_ear"),
    ("left_ear", "left_shoulder"),
    ("right_ear", "right_shoulder"),
    ("left_shoulder", "right_shoulder"),
    ("left_shoulder", "left_elbow"),
    ("left_elbow", "left_wrist"),
    ("right_shoulder", "right_elbow"),
    ("right_elbow", "right_wrist"),
    ("left_shoulder", "left_hip"),
    ("right_shoulder", "right_hip"),
    ("left_hip", "right_hip"),
    ("left_hip", "left_knee"),
    ("left_knee", "left_ankle"),
    ("right_hip", "right_knee"),
    ("right_knee", "right_ankle"),
    ("left_ankle", "left_heel"),
    ("left_ankle", "left_big_toe"),
    ("left_big_toe", "left_small_toe"),
    ("right_ankle", "right_heel"),
    ("right_ankle", "right_big_toe"),
    ("right_big_toe", "right_small_toe"),
];

/// The bones of a body whose keypoints are `names`, as index pairs.
pub fn bones<S: AsRef<str>>(names: &[S]) -> Vec<[usize; 2]> {
    let at = |n: &str| names.iter().position(|k| k.as_ref() == n);
    BONES
        .iter()
        .filter_map(|(a, b)| Some([at(a)?, at(b)?]))
        .collect()
}

/// A body whose keypoints do not start with [`COCO17`] in order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "its first keypoints are {}, the decoder gives COCO-17 in order {}",
    .found.join(", "),
    COCO17.join(", ")
)]
pub struct KeypointOrderError {
    /// The body's first keypoints (up to 17).
    pub found: Vec<String>,
}

/// Checks that a body's keypoints start with [`COCO17`] in order, so the
/// decoder's keypoint `i` can feed the body's keypoint `i`.
///
/// # Errors
/// [`KeypointOrderError`] with the body's first keypoints.
pub fn check_coco17_prefix(labels: &[String]) -> Result<(), KeypointOrderError> {
    let n = COCO17.len();
    if labels.len() >= n && labels[..n] == COCO17 {
        Ok(())
    } else {
        Err(KeypointOrderError {
            found: labels[..labels.len().min(n)].to_vec(),
        })
    }
}

/// Maps a model-input pixel (x, y) to a camera pixel: the inverse of the preprocessing
/// (crop, resize, letterbox) that made the model input from the camera frame.
pub trait KeypointMapping {
    /// The camera pixel of model-input pixel `(x, y)`.
    fn to_camera(&self, x: f32, y: f32) -> (f32, f32);
}

impl<F: Fn(f32, f32) -> (f32, f32)> KeypointMapping for F {
    fn to_camera(&self, x: f32, y: f32) -> (f32, f32) {
        self(x, y)
    }
}

/// An axis-aligned scale and offset: `camera = input * scale + offset` per axis, the
/// inverse of a crop plus resize (letterboxing is a negative offset).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AffineMapping {
    pub scale: [f32; 2],
    pub offset: [f32; 2],
}

impl AffineMapping {
    /// The identity: model input pixels are camera pixels.
    pub const IDENTITY: Self = Self {
        scale: [1.0, 1.0],
        offset: [0.0, 0.0],
    };
}

impl KeypointMapping for AffineMapping {
    fn to_camera(&self, x: f32, y: f32) -> (f32, f32) {
        (
            x * self.scale[0] + self.offset[0],
            y * self.scale[1] + self.offset[1],
        )
    }
}

/// One keypoint in camera pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Keypoint {
    pub x: f32,
    pub y: f32,
    /// Probability that the keypoint is visible (sigmoid of field 3).
    pub visibility: f32,
    /// Probability that the keypoint is findable, upstream's keypoint confidence
    /// (sigmoid of field 2).
    pub score: f32,
    /// Raw precision Cholesky parameters (log l11, l21, log l22) in normalised units.
    pub precision_cholesky: [f32; 3],
}

/// One detection with its keypoints, in camera pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// Query index in the decoder output.
    pub query: usize,
    /// Class score, `sigmoid(logit)` of the selected class.
    pub score: f32,
    /// Box corners (x0, y0, x1, y1) in camera pixels.
    pub bbox: [f32; 4],
    pub keypoints: Vec<Keypoint>,
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The `count` best detections of `class` (by class score, best first), their boxes
/// and keypoints mapped to camera pixels.
///
/// Only the keypoint slots ([`RawOutput::keypoint_slots`]) are ranked: a detection
/// without keypoints has nothing to give the body fit. `input_size` is the model input
/// (width, height) in pixels. A class index beyond the logits gives no detections.
pub fn top_detections(
    out: &RawOutput,
    class: usize,
    count: usize,
    input_size: (f32, f32),
    mapping: &impl KeypointMapping,
) -> Vec<Detection> {
    if class >= out.classes() {
        return Vec::new();
    }
    let mut order: Vec<(usize, f32)> = (0..out.keypoint_slots())
        .map(|q| (q, sigmoid(out.logits(q)[class])))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (w, h) = input_size;
    order
        .into_iter()
        .take(count)
        .map(|(q, score)| {
            let b = out.dets.row(q);
            let (cx, cy, bw, bh) = (b[0], b[1], b[2], b[3]);
            let (x0, y0) = mapping.to_camera((cx - bw / 2.0) * w, (cy - bh / 2.0) * h);
            let (x1, y1) = mapping.to_camera((cx + bw / 2.0) * w, (cy + bh / 2.0) * h);
            let keypoints = (0..out.keypoints_per_query())
                .map(|k| {
                    let f = out.keypoint(q, k);
                    let (x, y) = mapping.to_camera(f[0] * w, f[1] * h);
                    Keypoint {
                        x,
                        y,
                        visibility: sigmoid(f[3]),
                        score: sigmoid(f[2]),
                        precision_cholesky: [f[4], f[5], f[6]],
                    }
                })
                .collect();
            Detection {
                query: q,
                score,
                bbox: [x0.min(x1), y0.min(y1), x0.max(x1), y0.max(y1)],
                keypoints,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Array3};

    fn output() -> RawOutput {
        let (q, c, k) = (3, 2, 17);
        let mut out = RawOutput {
            dets: ndarray::array![[0.5, 0.5, 0.2, 0.4], [0.25, 0.75, 0.1, 0.1], [0.0; 4]],
            labels: Array2::from_elem((q, c), -5.0),
            keypoints: Array3::zeros((q, k, FIELDS)),
        };
        out.labels[[1, 0]] = 3.0; // query 1, class 0: best
        out.labels[[0, 0]] = 1.0; // query 0, class 0: second
        out.labels[[2, 1]] = 9.0; // query 2, class 1: best of another class
        out.keypoints
            .slice_mut(ndarray::s![1, 5, ..]) // query 1, keypoint 5
            .assign(&ndarray::arr1(&[0.5, 0.25, 2.0, -1.0, 0.1, 0.2, 0.3, 7.0]));
        out
    }

    #[test]
    fn picks_best_of_the_class_and_maps_to_camera() {
        let out = output();
        // Model input 288x288 made from a 1920x1080 frame: centre crop 1080x1080, scaled by 1080/288.
        let s = 1080.0 / 288.0;
        let map = AffineMapping {
            scale: [s, s],
            offset: [420.0, 0.0],
        };
        let dets = top_detections(&out, 0, 2, (288.0, 288.0), &map);
        assert_eq!(dets.iter().map(|d| d.query).collect::<Vec<_>>(), vec![1, 0]);
        assert!((dets[0].score - sigmoid(3.0)).abs() < 1e-6);
        let kp = dets[0].keypoints[5];
        assert!((kp.x - (0.5 * 288.0 * s + 420.0)).abs() < 1e-3, "{kp:?}");
        assert!((kp.y - (0.25 * 288.0 * s)).abs() < 1e-3, "{kp:?}");
        assert!((kp.score - sigmoid(2.0)).abs() < 1e-6);
        assert!((kp.visibility - sigmoid(-1.0)).abs() < 1e-6);
        assert_eq!(kp.precision_cholesky, [0.1, 0.2, 0.3]);
        // Box of query 1: centre (0.25, 0.75), size 0.1 -> x 0.2..0.3, y 0.7..0.8 of 288 px.
        let b = dets[0].bbox;
        let want = [
            0.2 * 288.0 * s + 420.0,
            0.7 * 288.0 * s,
            0.3 * 288.0 * s + 420.0,
            0.8 * 288.0 * s,
        ];
        for (a, w) in b.iter().zip(want) {
            assert!((a - w).abs() < 1e-2, "{b:?} vs {want:?}");
        }
        // Negative control: another class ranks differently, and the identity mapping
        // gives other pixels.
        assert_eq!(top_detections(&out, 1, 1, (288.0, 288.0), &map)[0].query, 2);
        let ident = top_detections(&out, 0, 1, (288.0, 288.0), &AffineMapping::IDENTITY);
        assert!((ident[0].keypoints[5].x - kp.x).abs() > 100.0);
    }

    #[test]
    fn closures_are_mappings_and_bad_class_is_empty() {
        let out = output();
        let flip = |x: f32, y: f32| (288.0 - x, y);
        let d = top_detections(&out, 0, 1, (288.0, 288.0), &flip);
        assert!((d[0].keypoints[5].x - 144.0).abs() < 1e-4);
        assert!(top_detections(&out, 7, 3, (288.0, 288.0), &flip).is_empty());
        assert_eq!(top_detections(&out, 0, 10, (288.0, 288.0), &flip).len(), 3);
    }

    #[test]
    fn only_keypoint_slots_are_ranked() {
        let mut out = output();
        // Two keypoint slots: query 1 (the best of class 0) still wins.
        out.keypoints = out.keypoints.slice(ndarray::s![..2, .., ..]).to_owned();
        let d = top_detections(&out, 0, 5, (288.0, 288.0), &AffineMapping::IDENTITY);
        assert_eq!(d.iter().map(|d| d.query).collect::<Vec<_>>(), vec![1, 0]);
        // One keypoint slot: query 0 is the only candidate, although query 1 scores more.
        out.keypoints = out.keypoints.slice(ndarray::s![..1, .., ..]).to_owned();
        let d = top_detections(&out, 0, 5, (288.0, 288.0), &AffineMapping::IDENTITY);
        assert_eq!(d.iter().map(|d| d.query).collect::<Vec<_>>(), vec![0]);
        assert_eq!(d[0].keypoints.len(), 17);
    }
}
