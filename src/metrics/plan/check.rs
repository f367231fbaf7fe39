//! Checking a planning table: does each row's fps follow from its GMAC?

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{max_fps, PlanError, DEFAULT_UTILISATION};
use crate::metrics::utilisation::Precision;

/// Default relative tolerance of a claimed fps.
pub const DEFAULT_TOLERANCE: f64 = 0.02;
/// Claims are usually rounded to whole fps; a difference below this is never flagged.
const ROUNDING_FPS: f64 = 0.5;

/// A planning table (TOML):
///
/// ```toml
/// utilisation = 0.30   # default for rows without their own
/// tolerance = 0.02     # relative
/// [[row]]
/// side = 336
/// gmac = 25.8
/// fps_int8 = 116
/// fps_int4 = 233
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckFile {
    /// Utilisation of rows without their own.
    pub utilisation: Option<f64>,
    /// Relative tolerance.
    pub tolerance: Option<f64>,
    /// The rows.
    #[serde(rename = "row", default)]
    pub rows: Vec<CheckRow>,
}

/// One planning row.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRow {
    /// Input side.
    pub side: u32,
    /// GMAC per frame.
    pub gmac: f64,
    /// Claimed fps on INT8.
    pub fps_int8: Option<f64>,
    /// Claimed fps on INT4.
    pub fps_int4: Option<f64>,
    /// Utilisation of this row.
    pub utilisation: Option<f64>,
}

impl CheckFile {
    /// Reads a planning table: TOML as above, or CSV (`.csv`) with a header naming the row
    /// fields (`side,gmac,fps_int8,fps_int4,utilisation`; empty cells are absent values).
    pub fn from_path(path: &Path) -> Result<Self, PlanError> {
        let p = path.display().to_string();
        let err = |reason: String| PlanError::File {
            path: p.clone(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            let mut reader = csv::ReaderBuilder::new()
                .trim(csv::Trim::All)
                .from_reader(text.as_bytes());
            let rows = reader
                .deserialize::<CheckRow>()
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| err(e.to_string()))?;
            return Ok(Self {
                utilisation: None,
                tolerance: None,
                rows,
            });
        }
        toml::from_str(&text).map_err(|e| err(e.to_string()))
    }
}

/// The verdict on one claimed fps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckOutcome {
    /// Row index (0-based).
    pub row: usize,
    /// Input side.
    pub side: u32,
    /// GMAC of the row.
    pub gmac: f64,
    /// Precision of the claim.
    pub precision: Precision,
    /// Utilisation used.
    pub utilisation: f64,
    /// The fps the row claims.
    pub claimed_fps: f64,
    /// The fps that follows from its GMAC.
    pub computed_fps: f64,
    /// claimed / computed - 1.
    pub relative_error: f64,
    /// Whether the claim is within tolerance.
    pub ok: bool,
}

/// Checks every claim of `file`; `path` names it in errors.
pub fn check_rows(path: &str, file: &CheckFile) -> Result<Vec<CheckOutcome>, PlanError> {
    let tol = file.tolerance.unwrap_or(DEFAULT_TOLERANCE);
    let bad = |reason: String| PlanError::File {
        path: path.to_owned(),
        reason,
    };
    if !(tol.is_finite() && tol >= 0.0) {
        return Err(bad(format!(
            "tolerance {tol}: expected a non-negative fraction"
        )));
    }
    if file.rows.is_empty() {
        return Err(bad("no [[row]] entries".into()));
    }
    let mut out = Vec::new();
    for (i, r) in file.rows.iter().enumerate() {
        let u = r
            .utilisation
            .or(file.utilisation)
            .unwrap_or(DEFAULT_UTILISATION);
        if !(u > 0.0 && u <= 1.0) {
            return Err(bad(format!(
                "row {i}: utilisation {u}: expected a fraction in (0, 1]"
            )));
        }
        if !(r.gmac.is_finite() && r.gmac > 0.0) {
            return Err(bad(format!(
                "row {i}: gmac {}: expected a positive number",
                r.gmac
            )));
        }
        if r.fps_int8.is_none() && r.fps_int4.is_none() {
            return Err(bad(format!(
                "row {i}: neither fps_int8 nor fps_int4 is given"
            )));
        }
        for (p, claim) in [(Precision::Int8, r.fps_int8), (Precision::Int4, r.fps_int4)] {
            let Some(claimed) = claim else { continue };
            let computed = max_fps(r.gmac, u, p);
            let diff = (claimed - computed).abs();
            out.push(CheckOutcome {
                row: i,
                side: r.side,
                gmac: r.gmac,
                precision: p,
                utilisation: u,
                claimed_fps: claimed,
                computed_fps: computed,
                relative_error: claimed / computed - 1.0,
                ok: diff <= ROUNDING_FPS || diff <= tol * computed,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_fps_that_does_not_follow_from_gmac() {
        let file: CheckFile = toml::from_str(
            "[[row]]\nside = 336\ngmac = 25.8\nfps_int8 = 139\n\
             [[row]]\nside = 336\ngmac = 25.8\nfps_int8 = 116\nfps_int4 = 233\n",
        )
        .unwrap();
        let out = check_rows("t.toml", &file).unwrap();
        assert_eq!(out.len(), 3);
        assert!(!out[0].ok, "139 fps is flagged");
        assert_eq!(out[0].computed_fps.round(), 116.0);
        assert!(out[1].ok && out[2].ok, "{out:?}");
    }

    #[test]
    fn csv_tables_read_like_toml() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        std::fs::write(
            &path,
            "side,gmac,fps_int8,fps_int4\n336,25.8,139,\n288,17.8,168,337\n",
        )
        .unwrap();
        let file = CheckFile::from_path(&path).unwrap();
        assert_eq!(file.rows.len(), 2);
        assert_eq!(file.rows[0].fps_int4, None);
        let out = check_rows("t.csv", &file).unwrap();
        assert_eq!(out.iter().filter(|o| !o.ok).count(), 1);
        std::fs::write(&path, "side,gmac,fps\n336,25.8,139\n").unwrap();
        let err = CheckFile::from_path(&path).unwrap_err().to_string();
        assert!(err.contains("t.csv"), "{err}");
    }

    #[test]
    fn unknown_keys_are_errors() {
        assert!(toml::from_str::<CheckFile>("[[row]]\nside = 1\ngmac = 1\nfps = 3\n").is_err());
    }
}
