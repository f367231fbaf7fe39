//! GMAC per frame of each graph: the RF-DETR backbone table, interpolation by tokens between
//! its rows, and figures given on the command line or counted from an ONNX file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::PlanError;
use crate::decode::{PATCH, SIDE_MULTIPLE};
use crate::metrics::ops::hef::read_hef;

/// GMAC per frame of the RF-DETR keypoint device half (ViT-S/12 + projectors, num_windows = 1)
/// that the chain was planned with, by input side.
pub const RFDETR_BACKBONE_GMAC: [(u32, f64); 3] = [(288, 17.8), (432, 48.7), (576, 107.9)];

/// Where a GMAC figure comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CostSource {
    /// The RF-DETR backbone planning model: `a N + b N^2` with N = (side/12)^2 + 1 tokens,
    /// fitted to the planning table (whose rows are its values rounded to 0.1 GMAC).
    PlanningModel,
    /// Given with `--gmac`.
    Given,
    /// Counted from an ONNX file with `hailo-edge ops`' rules.
    Counted {
        /// The file.
        file: String,
    },
    /// The `computational_ops` a HEF carries (what HailoRT's `get_computational_ops` returns),
    /// halved to MACs.
    Hef {
        /// The file.
        file: String,
        /// The network group.
        graph: String,
    },
}

/// The cost of the graph at one side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphCost {
    /// Input side.
    pub side: u32,
    /// GMAC per frame.
    pub gmac: f64,
    /// Where the figure comes from.
    pub source: CostSource,
}

/// GMAC per frame by side.
#[derive(Debug, Clone, PartialEq)]
pub struct CostModel {
    known: BTreeMap<u32, GraphCost>,
    /// Coefficients of `gmac = linear N + quadratic N^2`, fitted to the table.
    linear: f64,
    quadratic: f64,
}

fn tokens(side: u32) -> f64 {
    let g = f64::from(side / PATCH);
    g * g + 1.0
}

impl CostModel {
    /// The RF-DETR backbone planning model, for every side that is a multiple of 24.
    ///
    /// The planning figures (168 fps at 288 on INT8 at 30%, ...) were computed from unrounded
    /// GMAC (17.82 at 288 gives 168, 17.8 would give 169), so the model, not the rounded table,
    /// is what reproduces them. Attention grows with N^2 and everything else with N, so the table is fitted by least
    /// squares with `a N + b N^2`; the fit lands on b = 2 x 12 layers x 384 wide, the
    /// attention term of the ViT, which is what makes interpolating with it sound.
    pub fn rfdetr_backbone() -> Self {
        let (mut s11, mut s12, mut s22, mut y1, mut y2) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (side, gmac) in RFDETR_BACKBONE_GMAC {
            let n = tokens(side);
            s11 += n * n;
            s12 += n * n * n;
            s22 += n * n * n * n;
            y1 += gmac * n;
            y2 += gmac * n * n;
        }
        let det = s11 * s22 - s12 * s12;
        let linear = (y1 * s22 - y2 * s12) / det;
        let quadratic = (s11 * y2 - s12 * y1) / det;
        Self {
            known: BTreeMap::new(),
            linear,
            quadratic,
        }
    }

    /// Sets the cost of `side` (overrides the table).
    pub fn set(&mut self, side: u32, gmac: f64, source: CostSource) -> Result<(), PlanError> {
        if !(gmac.is_finite() && gmac > 0.0) {
            return Err(PlanError::NoCost {
                side,
                reason: format!("{gmac} GMAC is not a positive number"),
            });
        }
        self.known.insert(side, GraphCost { side, gmac, source });
        Ok(())
    }

    /// Sets the cost of a HEF's first network group from the computational ops it carries,
    /// at `side` or, when `None`, at the side of its square input; returns the side.
    ///
    /// # Errors
    /// [`PlanError::Hef`] when the HEF is unreadable or has no network group;
    /// [`PlanError::File`] naming it when it carries no computational ops, or (with no `side`)
    /// has no square input.
    pub fn set_from_hef(&mut self, path: &Path, side: Option<u32>) -> Result<u32, PlanError> {
        let file = |reason: String| PlanError::File {
            path: path.display().to_string(),
            reason,
        };
        let graphs = read_hef(path)?;
        let g = graphs
            .first()
            .ok_or_else(|| file("no network group".into()))?;
        let gmac = g.gmac().ok_or_else(|| {
            file(format!(
                "network group {} carries no computational ops; give --gmac SIDE=GMAC",
                g.name
            ))
        })?;
        let side = side
            .or(g.side)
            .ok_or_else(|| file("the HEF's input is not square; give SIDE=FILE".into()))?;
        let source = CostSource::Hef {
            file: path.display().to_string(),
            graph: g.name.clone(),
        };
        self.set(side, gmac, source)?;
        Ok(side)
    }

    /// The cost at `side`: a figure given or counted for it, or the planning model for sides
    /// that are a multiple of 24.
    pub fn cost(&self, side: u32) -> Result<GraphCost, PlanError> {
        if let Some(c) = self.known.get(&side) {
            return Ok(c.clone());
        }
        if side == 0 || !side.is_multiple_of(SIDE_MULTIPLE) {
            return Err(PlanError::NoCost {
                side,
                reason: format!(
                    "not given and not a multiple of {SIDE_MULTIPLE} (patch {PATCH} x 2 windows); \
                     give it with --gmac {side}=GMAC or --onnx {side}=FILE"
                ),
            });
        }
        let n = tokens(side);
        Ok(GraphCost {
            side,
            gmac: self.linear * n + self.quadratic * n * n,
            source: CostSource::PlanningModel,
        })
    }

    /// The fitted quadratic coefficient, in MAC per token^2.
    pub fn quadratic_mac_per_token2(&self) -> f64 {
        self.quadratic * 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_vit_attention_and_interpolates() {
        let m = CostModel::rfdetr_backbone();
        // 2 (QK^T and AV) x 12 layers x 384 wide MAC per token pair.
        let expected = 2.0 * 12.0 * 384.0;
        assert!((m.quadratic_mac_per_token2() / expected - 1.0).abs() < 0.01);
        for (side, table) in RFDETR_BACKBONE_GMAC {
            let c = m.cost(side).unwrap();
            assert!(
                (c.gmac / table - 1.0).abs() < 0.002,
                "{side}: {} vs {table}",
                c.gmac
            );
        }
        let c = m.cost(336).unwrap();
        assert_eq!(c.source, CostSource::PlanningModel);
        assert!((c.gmac - 25.8).abs() < 0.05, "{}", c.gmac);
        let mut m = m;
        m.set(432, 50.0, CostSource::Given).unwrap();
        assert_eq!(m.cost(432).unwrap().gmac, 50.0);
        let err = m.cost(300).unwrap_err().to_string();
        assert!(err.contains("300") && err.contains("--gmac"), "{err}");
    }
}
