//! The JSON form of a pose (the README's `pose.json` schema), read strictly:
//! a bone named twice, an empty pose, an unknown bone, a value that is not
//! finite or a rotation past [`MAX_ROTATION_RAD`] is an error naming it, never
//! a silent default or a `null` keypoint downstream.

use std::collections::BTreeMap;
use std::fmt;

use nalgebra::{UnitQuaternion, Vector3};
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::kinematics::Pose;
use super::phenotype::Phenotype;
use super::Model;

/// The largest rotation-vector angle a pose may give a bone, radians. Any
/// angle is a rotation, but past this one f64 keeps the angle modulo a turn
/// to worse than 1e-10 rad, and past about 1e154 its norm overflows to
/// infinity and every keypoint after the bone is NaN.
pub const MAX_ROTATION_RAD: f64 = 1e6;

/// A pose as pose.json writes it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoseJson {
    /// Rotation vector (radians) per bone label; bones not named keep the
    /// identity. A label given twice is refused while the file is read.
    #[serde(default, deserialize_with = "unique_bones")]
    pub rotations: BTreeMap<String, [f64; 3]>,
    /// Root translation, metres.
    #[serde(default)]
    pub root_translation: Option<[f64; 3]>,
    /// Phenotype sliders; missing ones are 0.5.
    #[serde(default)]
    pub phenotype: Option<Phenotype>,
}

/// A pose.json that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PoseJsonError {
    /// Not JSON, or not the schema (a bone given twice is named here).
    #[error("not a valid pose.json: {0}")]
    Parse(String),
    /// No rotation, no root translation and no phenotype.
    #[error("an empty pose: it names no bone rotation, root translation or phenotype")]
    Empty,
    /// A bone the model does not have.
    #[error("rotations: unknown bone \"{0}\"")]
    UnknownBone(String),
    /// A value that is NaN or infinite.
    #[error("{field}: not finite")]
    NotFinite { field: String },
    /// A rotation vector longer than [`MAX_ROTATION_RAD`].
    #[error(
        "rotations.{bone}: an angle of {angle:e} rad exceeds the bound {MAX_ROTATION_RAD:e} rad"
    )]
    RotationTooLarge { bone: String, angle: f64 },
}

impl PoseJson {
    /// Parses pose.json text.
    ///
    /// # Errors
    /// [`PoseJsonError::Parse`] (naming a bone given twice) or
    /// [`PoseJsonError::Empty`].
    pub fn parse(text: &str) -> Result<Self, PoseJsonError> {
        let json: Self =
            serde_json::from_str(text).map_err(|e| PoseJsonError::Parse(e.to_string()))?;
        if json.rotations.is_empty() && json.root_translation.is_none() && json.phenotype.is_none()
        {
            return Err(PoseJsonError::Empty);
        }
        Ok(json)
    }

    /// The phenotype (the default body when none is given).
    pub fn phenotype(&self) -> Phenotype {
        self.phenotype.unwrap_or_default()
    }

    /// The model pose: each named bone's rotation, the root translation.
    ///
    /// # Errors
    /// [`PoseJsonError::UnknownBone`], [`PoseJsonError::NotFinite`] or
    /// [`PoseJsonError::RotationTooLarge`] naming the bone or field.
    pub fn pose(&self, model: &Model) -> Result<Pose, PoseJsonError> {
        let mut pose = Pose::identity(model.bone_count());
        for (label, v) in &self.rotations {
            let bone = model
                .bone_index(label)
                .ok_or_else(|| PoseJsonError::UnknownBone(label.clone()))?;
            if v.iter().any(|x| !x.is_finite()) {
                return Err(PoseJsonError::NotFinite {
                    field: format!("rotations.{label}"),
                });
            }
            let v = Vector3::from(*v);
            // The largest component is checked first: squaring a component
            // past 1e154 for the norm overflows to infinity.
            let angle = if v.amax() > MAX_ROTATION_RAD {
                v.amax()
            } else {
                v.norm()
            };
            if angle > MAX_ROTATION_RAD {
                return Err(PoseJsonError::RotationTooLarge {
                    bone: label.clone(),
                    angle,
                });
            }
            pose.rotations[bone] = UnitQuaternion::from_scaled_axis(v);
        }
        let t = self.root_translation.unwrap_or_default();
        if t.iter().any(|x| !x.is_finite()) {
            return Err(PoseJsonError::NotFinite {
                field: "root_translation".into(),
            });
        }
        pose.translation = Vector3::from(t);
        Ok(pose)
    }
}

/// A map of bone labels that refuses a label given twice (a JSON object
/// keeps the last of two equal keys; a pose never means that).
fn unique_bones<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, [f64; 3]>, D::Error> {
    struct Bones;
    impl<'de> Visitor<'de> for Bones {
        type Value = BTreeMap<String, [f64; 3]>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a map from bone label to a rotation vector [x, y, z]")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((label, v)) = map.next_entry::<String, [f64; 3]>()? {
                if out.contains_key(&label) {
                    return Err(serde::de::Error::custom(format!(
                        "rotations: bone \"{label}\" is given twice"
                    )));
                }
                out.insert(label, v);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Bones)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pose(text: &str) -> Result<Pose, PoseJsonError> {
        PoseJson::parse(text)?.pose(Model::embedded().unwrap())
    }

    #[test]
    fn a_valid_pose_reads() {
        let p =
            pose(r#"{"rotations": {"upperarm01.L": [0, 0.9, 0]}, "root_translation": [0, 0, 1]}"#)
                .unwrap();
        assert_eq!(p.translation, Vector3::new(0.0, 0.0, 1.0));
        pose(r#"{"root_translation": [0, 0, 1]}"#).expect("a translation alone is a pose");
    }

    #[test]
    fn empty_duplicate_unknown_non_finite_and_huge_poses_are_refused_by_name() {
        assert_eq!(pose("{}").unwrap_err(), PoseJsonError::Empty);
        assert_eq!(
            pose(r#"{"rotations": {}}"#).unwrap_err(),
            PoseJsonError::Empty
        );
        let twice =
            pose(r#"{"rotations": {"upperarm01.L": [0, 1, 0], "upperarm01.L": [1, 0, 0]}}"#)
                .unwrap_err()
                .to_string();
        assert!(twice.contains("\"upperarm01.L\" is given twice"), "{twice}");
        assert_eq!(
            pose(r#"{"rotations": {"tail": [0, 0, 1]}}"#).unwrap_err(),
            PoseJsonError::UnknownBone("tail".into())
        );
        for huge in ["1e154", "1e300", "1e7"] {
            let text = format!(r#"{{"rotations": {{"upperarm01.L": [{huge}, 0, 0]}}}}"#);
            let err = pose(&text).unwrap_err();
            assert!(
                matches!(&err, PoseJsonError::RotationTooLarge { bone, .. } if bone == "upperarm01.L"),
                "{err}"
            );
        }
        // JSON has no NaN; a number past f64 is a parse error, not infinity.
        assert!(matches!(
            pose(r#"{"rotations": {"upperarm01.L": [1e999, 0, 0]}}"#),
            Err(PoseJsonError::Parse(_))
        ));
    }
}
