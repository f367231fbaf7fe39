//! Phenotype sliders and their blendshape coefficients (ANNY's default phenotype set).

use serde::{Deserialize, Serialize};

/// The phenotype variations in the package's order (26 in all): each slider interpolates
/// between its anchors; race weights are normalised instead.
pub const VARIATIONS: [(&str, &[&str]); 9] = [
    ("race", &["african", "asian", "caucasian"]),
    ("gender", &["male", "female"]),
    ("age", &["newborn", "baby", "child", "young", "old"]),
    ("muscle", &["minmuscle", "averagemuscle", "maxmuscle"]),
    ("weight", &["minweight", "averageweight", "maxweight"]),
    ("height", &["minheight", "maxheight"]),
    ("proportions", &["idealproportions", "uncommonproportions"]),
    ("cupsize", &["mincup", "averagecup", "maxcup"]),
    (
        "firmness",
        &["minfirmness", "averagefirmness", "maxfirmness"],
    ),
];

/// Number of phenotype variations (the width of the blendshape mask).
pub const VARIATION_COUNT: usize = 26;

/// Index of a variation name (e.g. `"young"`) in the 26-vector.
pub fn variation_index(name: &str) -> Option<usize> {
    VARIATIONS
        .iter()
        .flat_map(|(_, v)| v.iter())
        .position(|v| *v == name)
}

/// The six sliders of ANNY's default model, each in `[0, 1]` (values outside are clamped to
/// the anchor range, as the package does without `extrapolate_phenotypes`). `0.5` everywhere is
/// the package's default body.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Phenotype {
    pub gender: f64,
    pub age: f64,
    pub muscle: f64,
    pub weight: f64,
    pub height: f64,
    pub proportions: f64,
}

impl Default for Phenotype {
    fn default() -> Self {
        Self {
            gender: 0.5,
            age: 0.5,
            muscle: 0.5,
            weight: 0.5,
            height: 0.5,
            proportions: 0.5,
        }
    }
}

/// `torch.linspace(start, end, n)` as torch computes it (from both ends toward the middle).
fn linspace(start: f64, end: f64, n: usize) -> Vec<f64> {
    let step = (end - start) / (n - 1) as f64;
    let half = n / 2;
    (0..n)
        .map(|i| {
            if i < half {
                start + step * i as f64
            } else {
                end - step * (n - 1 - i) as f64
            }
        })
        .collect()
}

/// Linear interpolation weights of `value` over `anchors` (clamped to their range).
fn interpolation(value: f64, anchors: &[f64]) -> Vec<f64> {
    let n = anchors.len();
    let value = value.clamp(anchors[0], anchors[n - 1]);
    let idx = anchors.partition_point(|&a| a < value).clamp(1, n - 1);
    let (lo, hi) = (anchors[idx - 1], anchors[idx]);
    let alpha = (value - lo) / (hi - lo);
    let mut w = vec![0.0; n];
    w[idx - 1] = 1.0 - alpha;
    w[idx] = alpha;
    w
}

impl Phenotype {
    /// The slider values in the package's label order
    /// (gender, age, muscle, weight, height, proportions).
    pub fn to_array(&self) -> [f64; 6] {
        [
            self.gender,
            self.age,
            self.muscle,
            self.weight,
            self.height,
            self.proportions,
        ]
    }

    /// The sliders with their names.
    pub fn named(&self) -> [(&'static str, f64); 6] {
        [
            ("gender", self.gender),
            ("age", self.age),
            ("muscle", self.muscle),
            ("weight", self.weight),
            ("height", self.height),
            ("proportions", self.proportions),
        ]
    }

    /// Builds a phenotype from [`Phenotype::to_array`] order.
    pub fn from_array(v: [f64; 6]) -> Self {
        Self {
            gender: v[0],
            age: v[1],
            muscle: v[2],
            weight: v[3],
            height: v[4],
            proportions: v[5],
        }
    }

    /// The weight of each of the 26 variations: anchor interpolation per slider; cup size and
    /// firmness fixed at 0.5; race fixed at 1/3 each.
    pub fn variation_weights(&self) -> [f64; VARIATION_COUNT] {
        let value = |name: &str| match name {
            "gender" => self.gender,
            "age" => self.age,
            "muscle" => self.muscle,
            "weight" => self.weight,
            "height" => self.height,
            "proportions" => self.proportions,
            _ => 0.5,
        };
        let mut out = [0.0; VARIATION_COUNT];
        let mut at = 0;
        for (name, vars) in VARIATIONS {
            let w = if name == "race" {
                // Equal race values normalise to exactly 1/3 each.
                vec![0.5 / (0.5 + 0.5 + 0.5); 3]
            } else {
                let anchors = if name == "age" {
                    linspace(-1.0 / 3.0, 1.0, vars.len())
                } else {
                    linspace(0.0, 1.0, vars.len())
                };
                interpolation(value(name), &anchors)
            };
            out[at..at + vars.len()].copy_from_slice(&w);
            at += vars.len();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_body_weights() {
        let w = Phenotype::default().variation_weights();
        let get = |n: &str| w[variation_index(n).unwrap()];
        assert_eq!(get("averagecup"), 1.0);
        assert_eq!(get("mincup"), 0.0);
        assert_eq!(get("young"), 0.0 + get("young"));
        // Age 0.5 lies between child (1/3) and young (2/3), halfway.
        assert!((get("child") - 0.5).abs() < 1e-15 && (get("young") - 0.5).abs() < 1e-15);
        assert_eq!(get("male") + get("female"), 1.0);
        assert!((get("african") - 1.0 / 3.0).abs() < 1e-16);
    }

    #[test]
    fn sliders_clamp_to_the_anchor_range() {
        let p = Phenotype {
            age: -3.0,
            height: 7.0,
            ..Phenotype::default()
        };
        let w = p.variation_weights();
        assert_eq!(w[variation_index("newborn").unwrap()], 1.0);
        assert_eq!(w[variation_index("maxheight").unwrap()], 1.0);
        assert_eq!(variation_index("nothing"), None);
        assert_eq!(
            VARIATIONS.iter().map(|v| v.1.len()).sum::<usize>(),
            VARIATION_COUNT
        );
    }
}
