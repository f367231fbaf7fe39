//! Operations per frame and precision of the graphs in a HEF.
//!
//! The compiler writes `computational_ops` (2 x MACs) into each network group; HailoRT returns
//! it from `Hef::get_computational_ops`, and the `hef` reader gives it as
//! [`hef::NetworkGroup::ops_per_frame`]. When a HEF carries it, measurements and the planner use
//! it instead of a count from the ONNX or the planning model.
//!
//! A HEF does not state its weight precision; its streams do state their element type. UINT8
//! streams mean an 8-bit graph, so INT8 is taken unless the caller states otherwise, and the
//! basis of that choice is kept so reports can name it.

use std::path::Path;

use serde::Serialize;

use crate::metrics::figure::{Assumption, Figure, Unit};
use crate::metrics::utilisation::Precision;

/// Errors reading op counts from a HEF.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HefOpsError {
    /// The HEF could not be read or is invalid (the reader's error names the file).
    #[error(transparent)]
    Hef(#[from] hef::HefError),
    /// The HEF has no network group.
    #[error("{path}: the HEF has no network group")]
    Empty {
        /// The file.
        path: String,
    },
}

/// One network group of a HEF, as measurement and planning see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HefGraph {
    /// The HEF file.
    pub file: String,
    /// Network group name.
    pub name: String,
    /// Square side of the first image input, which the planner matches cameras on.
    pub side: Option<u32>,
    /// `computational_ops` of the network group (2 x MACs), when the HEF carries it.
    pub ops_per_frame: Option<u64>,
    /// The precision compute % is quoted against first.
    pub precision: Precision,
    /// Why that precision: the stream types it rests on.
    pub precision_basis: String,
    /// Bytes of one frame's inputs and outputs on the link.
    pub bytes_in_per_frame: u64,
    /// Bytes of one frame's outputs.
    pub bytes_out_per_frame: u64,
}

impl HefGraph {
    /// Operations per frame as a figure in GOPS: the compiler's count, which is not an
    /// assumption about a run; `None` when the HEF has none.
    pub fn ops_figure(&self) -> Option<Figure> {
        self.ops_per_frame.map(|ops| {
            Figure::modelled(
                ops as f64 / 1e9,
                Unit::Gops,
                [Assumption::new(
                    "ops per frame",
                    format!("computational_ops of {} in {}", self.name, self.file),
                )],
            )
        })
    }

    /// GMAC per frame (ops / 2), when the HEF carries ops.
    pub fn gmac(&self) -> Option<f64> {
        self.ops_per_frame.map(|ops| ops as f64 / 2e9)
    }
}

/// Reads every network group of the HEF at `path`.
///
/// # Errors
/// [`HefOpsError::Hef`] when the file cannot be read or is invalid; [`HefOpsError::Empty`] when
/// it holds no network group.
pub fn read_hef(path: &Path) -> Result<Vec<HefGraph>, HefOpsError> {
    let file = path.display().to_string();
    let hef = hef::Hef::open(path)?;
    if hef.network_groups.is_empty() {
        return Err(HefOpsError::Empty { path: file });
    }
    Ok(hef
        .network_groups
        .iter()
        .map(|g| graph_of(&file, g))
        .collect())
}

fn graph_of(file: &str, g: &hef::NetworkGroup) -> HefGraph {
    let side = g.inputs.first().and_then(|s| match s.shape {
        hef::StreamShape::Image { height, width, .. } if height == width => Some(height),
        _ => None,
    });
    let mut types: Vec<&str> = g.streams().map(|s| s.data_type.name()).collect();
    types.sort_unstable();
    types.dedup();
    let precision_basis = if types.is_empty() {
        "no streams; INT8 taken (the HEF states no weight precision)".to_owned()
    } else {
        format!(
            "{} streams; INT8 taken (the HEF states no weight precision)",
            types.join("/")
        )
    };
    let bytes = |dir: hef::Direction| {
        g.streams()
            .filter(|s| s.direction == dir)
            .map(|s| s.frame_size())
            .sum()
    };
    HefGraph {
        file: file.to_owned(),
        name: g.name.clone(),
        side,
        ops_per_frame: g.ops_per_frame.filter(|&ops| ops > 0),
        precision: Precision::Int8,
        precision_basis,
        bytes_in_per_frame: bytes(hef::Direction::Input),
        bytes_out_per_frame: bytes(hef::Direction::Output),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn backbone_fixtures_carry_their_ops() {
        for (name, side, gops) in [
            ("backbone_288.hef", 288, 35.6),
            ("backbone_432.hef", 432, 97.4),
        ] {
            let graphs = read_hef(&fixture(name)).unwrap();
            assert_eq!(graphs.len(), 1);
            let g = &graphs[0];
            assert_eq!(g.side, Some(side));
            let ops = g.ops_figure().unwrap();
            assert!((ops.value - gops).abs() < 0.05, "{name}: {}", ops.value);
            assert!((g.gmac().unwrap() - gops / 2.0).abs() < 0.03);
            assert_eq!(g.precision, Precision::Int8);
            assert!(
                g.precision_basis.starts_with("UINT8"),
                "{}",
                g.precision_basis
            );
            assert!(g.bytes_in_per_frame >= u64::from(side * side * 3));
        }
    }

    #[test]
    fn a_hef_without_ops_says_so_and_a_bad_file_is_named() {
        let graphs = read_hef(&fixture("header_v0.hef")).unwrap();
        assert!(graphs
            .iter()
            .all(|g| g.ops_per_frame.is_none() || g.ops_figure().is_some()));
        let err = read_hef(&fixture("corrupt_bad_magic.hef")).unwrap_err();
        assert!(err.to_string().contains("corrupt_bad_magic.hef"), "{err}");
    }
}
