//! Limb lengths from a stated stature: the scale of a body-only refinement when a single
//! camera is held ([`super::body::refine_from_body`] takes the lengths as [`Segment`]s).
//!
//! The lengths are the body model's own: its keypoints at rest, between the ends of each
//! limb, scaled from the model's stature to the stated one. The keypoints the refinement
//! sees are the model's keypoints (the decoder is trained to them and the fit solves for
//! them), so its proportions are the ones that match; a person's own limbs differ from the
//! model's by a few percent, and so does the scale.

use nalgebra::Point3;

use super::body::Segment;

/// The limbs whose lengths give the scale, by the keypoints at their ends (without the
/// side's prefix): the long bones, whose ends the keypoints mark well.
pub const LIMBS: [(&str, &str); 4] = [
    ("shoulder", "elbow"),
    ("elbow", "wrist"),
    ("hip", "knee"),
    ("knee", "ankle"),
];

/// Spread of a person's limb about the model's at their stature, as a share of its length:
/// what the refinement weighs the stated lengths by.
pub const LIMB_SPREAD: f64 = 0.03;

/// The body model a stature is read against: its keypoints' names, their rest positions and
/// its stature.
#[derive(Debug, Clone, Copy)]
pub struct ModelLimbs<'a> {
    /// The model's keypoint names, in its order.
    pub names: &'a [String],
    /// The keypoints at rest, in the same order (metres).
    pub rest: &'a [Point3<f64>],
    /// The model's stature at that rest state (metres).
    pub stature_m: f64,
}

/// The limbs of [`LIMBS`] on both sides for a subject of `stature_m` metres, as indices into
/// `keypoints` (the results' keypoint names), their lengths the model's scaled to the
/// stature. A limb whose ends either side does not name is left out.
pub fn limbs(keypoints: &[String], model: &ModelLimbs<'_>, stature_m: f64) -> Vec<Segment> {
    let scale = stature_m / model.stature_m;
    let find = |names: &[String], name: &str| names.iter().position(|k| k == name);
    let mut out = Vec::new();
    for side in ["left", "right"] {
        for (a, b) in LIMBS {
            let (a, b) = (format!("{side}_{a}"), format!("{side}_{b}"));
            let ends = (
                find(keypoints, &a),
                find(keypoints, &b),
                find(model.names, &a).and_then(|i| model.rest.get(i)),
                find(model.names, &b).and_then(|i| model.rest.get(i)),
            );
            if let (Some(a), Some(b), Some(pa), Some(pb)) = ends {
                out.push(Segment {
                    a,
                    b,
                    length_m: scale * (pa - pb).norm(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limbs_are_found_by_name_and_scaled_to_the_stature() {
        let model_names: Vec<String> = ["left_hip", "left_knee", "left_ankle", "right_hip"]
            .map(String::from)
            .to_vec();
        let rest = [
            Point3::new(0.1, 0.0, 0.9),
            Point3::new(0.1, 0.0, 0.5),
            Point3::new(0.1, 0.0, 0.1),
            Point3::new(-0.1, 0.0, 0.9),
        ];
        let model = ModelLimbs {
            names: &model_names,
            rest: &rest,
            stature_m: 1.6,
        };
        // The results name the keypoints in another order, and one the model lacks.
        let results: Vec<String> = ["nose", "left_ankle", "left_knee", "left_hip", "right_knee"]
            .map(String::from)
            .to_vec();
        let limbs = limbs(&results, &model, 2.0);
        assert_eq!(limbs.len(), 2, "{limbs:?}");
        let thigh = limbs.iter().find(|s| s.a == 3 && s.b == 2).unwrap();
        assert!((thigh.length_m - 0.4 * 2.0 / 1.6).abs() < 1e-12);
        assert!(super::limbs(&["nose".to_string()], &model, 1.7).is_empty());
    }
}
