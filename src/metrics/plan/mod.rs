//! The rig planner: how much of one Hailo-10H a set of cameras needs, and the fps headroom.
//!
//! A camera running a graph of `G` GMAC per frame at `f` fps needs `2 G f` ops per second
//! (ops = 2 x MACs). At a utilisation `u` of a peak `P` (20 TOPS INT8, 40 TOPS INT4), one graph
//! alone reaches `u P / 2G` fps, and a rig needs a share `sum_i 2 G_i f_i / (u_i P)` of one part.
//! `u` comes from one of three sources ([`super::utilisation_source`]): the assumed 0.30,
//! labelled as such; the model zoo's published Hailo-10H fps of the nearest ViT at the graph's
//! cameras per burst ([`Utilisation::published`]); or a report
//! (`--from report.json`, see [`super::utilisation_report`]) that replaces it per graph.
//! [`compare`] plans one rig under all three.

mod check;
mod compare;
mod cost;
mod mode;

use serde::Serialize;

pub use check::{check_rows, CheckFile, CheckOutcome, CheckRow};
pub use compare::{
    cameras_per_burst, compare, AssumptionCheck, Band, BandEnd, Comparison, SourcePlan,
};
pub use cost::{CostModel, CostSource, GraphCost, RFDETR_BACKBONE_GMAC};
pub use mode::{CameraMode, CameraModeError, ModeFault};

use super::figure::{Assumption, Figure, Provenance, Unit};
use super::published::PublishedError;
use super::utilisation::Precision;
use super::utilisation_report::UtilisationReport;
use super::utilisation_source::UtilisationCurve;

/// The utilisation the chain was planned with before any measurement.
pub const DEFAULT_UTILISATION: f64 = 0.30;

/// Errors of planning.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A `--camera` value is not `SIDE@FPS[:GRAPH]`.
    #[error(transparent)]
    BadCamera(#[from] CameraModeError),
    /// No cost is known for a side and none can be interpolated.
    #[error("no GMAC figure for side {side}: {reason}")]
    NoCost {
        /// The side.
        side: u32,
        /// Why.
        reason: String,
    },
    /// A utilisation outside (0, 1].
    #[error("utilisation {value}: expected a fraction in (0, 1]")]
    BadUtilisation {
        /// The value given.
        value: f64,
    },
    /// A planning or camera file is unreadable or malformed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A HEF could not be read (its error names the file).
    #[error(transparent)]
    Hef(#[from] crate::metrics::ops::hef::HefOpsError),
    /// No camera was given.
    #[error("no cameras: give --camera SIDE@FPS (repeatable) or --cameras FILE")]
    NoCameras,
    /// The published table, or a batch it does not cover.
    #[error("published utilisation: {0}")]
    Published(#[from] PublishedError),
}

/// Utilisation per graph side: an assumed default, published figures by side, or measured
/// figures from a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Utilisation {
    /// Used for sides the report does not cover (or for all, when assumed).
    pub default: Figure,
    /// Figures for the sides a report or the published rows cover.
    pub per_side: Vec<(u32, Figure)>,
    /// Precision of the HEFs the figures come from: a report's, or INT8 for the zoo's.
    pub measured_precision: Option<Precision>,
}

impl Utilisation {
    /// The assumed utilisation `fraction`, labelled as an assumption.
    pub fn assumed(fraction: f64) -> Result<Self, PlanError> {
        let curve = UtilisationCurve::assumed(fraction)
            .map_err(|_| PlanError::BadUtilisation { value: fraction })?;
        Ok(Self {
            default: curve.at(1)?,
            per_side: Vec::new(),
            measured_precision: None,
        })
    }

    /// Utilisation from a report: each graph's compute share of its own precision's peak, by
    /// side; sides the report lacks use the lowest share in the report (the cautious choice).
    pub fn from_report(report: &UtilisationReport) -> Self {
        let mut per_side = Vec::new();
        let mut lowest: Option<&Figure> = None;
        for g in &report.graphs {
            let fig = g.compute.of_own_peak();
            if let Some(side) = g.side {
                per_side.push((side, fig.clone()));
            }
            if lowest.is_none_or(|l| fig.value < l.value) {
                lowest = Some(fig);
            }
        }
        let default = lowest.cloned().unwrap_or_else(|| {
            Figure::modelled(
                DEFAULT_UTILISATION,
                Unit::Fraction,
                [Assumption::new("utilisation", "0.30")],
            )
        });
        Self {
            default,
            per_side,
            measured_precision: report.graphs.first().map(|g| g.hef_precision),
        }
    }

    /// The figure for `side`, and whether the report covered that side.
    pub fn for_side(&self, side: u32) -> (&Figure, bool) {
        match self.per_side.iter().find(|(s, _)| *s == side) {
            Some((_, f)) => (f, true),
            None => (&self.default, self.per_side.is_empty()),
        }
    }
}

/// Fps one graph of `gmac` reaches alone on one part at `utilisation` of the `precision` peak.
pub fn max_fps(gmac: f64, utilisation: f64, precision: Precision) -> f64 {
    utilisation * precision.hailo10h_peak_tops() * 1e12 / (2.0 * gmac * 1e9)
}

/// The plan of one camera.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CameraPlan {
    /// The camera.
    pub camera: CameraMode,
    /// Its graph's cost.
    pub cost: GraphCost,
    /// The utilisation used for it.
    pub utilisation: Figure,
    /// Whether a report covered this side (false: the default or lowest measured was used).
    pub utilisation_exact: bool,
    /// Fps its graph reaches alone on one part, INT8 then INT4.
    pub max_fps: [(Precision, f64); 2],
}

/// The rig's needs at one precision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrecisionPlan {
    /// The precision.
    pub precision: Precision,
    /// Ops per second the rig asks for, in TOPS.
    pub demand_tops: f64,
    /// Share of one part at the planning utilisation (above 1: does not fit).
    pub share: f64,
    /// Share of one part if the part ran at its full peak.
    pub share_at_peak: f64,
    /// Factor by which every camera's fps could grow and still fit (1 / share).
    pub fps_headroom: f64,
}

/// A rig plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RigPlan {
    /// Per camera.
    pub cameras: Vec<CameraPlan>,
    /// INT8 and INT4.
    pub precisions: Vec<PrecisionPlan>,
    /// Where the utilisation figures came from.
    pub utilisation: Utilisation,
    /// Provenance of the shares and headroom: measured only when every camera's utilisation
    /// was measured on one device and every GMAC figure was counted or given; otherwise
    /// modelled, with the assumptions listed.
    pub provenance: Provenance,
}

/// Plans `cameras` with `costs` and `utilisation`.
pub fn plan(
    cameras: &[CameraMode],
    costs: &CostModel,
    utilisation: &Utilisation,
) -> Result<RigPlan, PlanError> {
    if cameras.is_empty() {
        return Err(PlanError::NoCameras);
    }
    let mut plans = Vec::with_capacity(cameras.len());
    for cam in cameras {
        let cost = costs.cost(cam.side)?;
        let (u, exact) = utilisation.for_side(cam.side);
        let max = Precision::ALL.map(|p| (p, max_fps(cost.gmac, u.value, p)));
        plans.push(CameraPlan {
            camera: cam.clone(),
            cost,
            utilisation: u.clone(),
            utilisation_exact: exact,
            max_fps: max,
        });
    }
    let precisions = Precision::ALL
        .iter()
        .map(|&p| {
            let peak_ops = p.hailo10h_peak_tops() * 1e12;
            let demand: f64 = plans
                .iter()
                .map(|c| 2.0 * c.cost.gmac * 1e9 * c.camera.fps)
                .sum();
            let share: f64 = plans
                .iter()
                .map(|c| 2.0 * c.cost.gmac * 1e9 * c.camera.fps / (c.utilisation.value * peak_ops))
                .sum();
            PrecisionPlan {
                precision: p,
                demand_tops: demand / 1e12,
                share,
                share_at_peak: demand / peak_ops,
                fps_headroom: 1.0 / share,
            }
        })
        .collect();
    let mut provenance = plans[0].utilisation.provenance.clone();
    for c in &plans {
        provenance = provenance.combine(&c.utilisation.provenance);
        if c.cost.source == CostSource::PlanningModel {
            let gmac = format!("{:.2} (RF-DETR planning model)", c.cost.gmac);
            provenance = provenance.combine(&Provenance::modelled([Assumption::new(
                format!("GMAC at {}", c.camera.side),
                gmac,
            )]));
        }
    }
    Ok(RigPlan {
        provenance,
        cameras: plans,
        precisions,
        utilisation: utilisation.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(x: f64) -> i64 {
        x.round() as i64
    }

    #[test]
    fn single_graph_fps_reproduces_the_planning_table() {
        let costs = CostModel::rfdetr_backbone();
        for (side, int8, int4) in [
            (288, 168, 337),
            (384, 84, 167),
            (432, 62, 123),
            (576, 28, 56),
        ] {
            let g = costs.cost(side).unwrap().gmac;
            assert_eq!(
                round(max_fps(g, 0.30, Precision::Int8)),
                int8,
                "{side} INT8"
            );
            assert_eq!(
                round(max_fps(g, 0.30, Precision::Int4)),
                int4,
                "{side} INT4"
            );
        }
        // Negative control: at 40% the same table is not reproduced.
        let g = costs.cost(288).unwrap().gmac;
        assert_ne!(round(max_fps(g, 0.40, Precision::Int8)), 168);
    }

    #[test]
    fn rig_shares_reproduce_the_planning_figures() {
        let costs = CostModel::rfdetr_backbone();
        let u = Utilisation::assumed(0.30).unwrap();
        let cams = |v: &[&str]| {
            v.iter()
                .map(|s| s.parse().unwrap())
                .collect::<Vec<CameraMode>>()
        };
        let four_face = plan(&cams(&["432@120"; 4]), &costs, &u).unwrap();
        assert_eq!(round(100.0 * four_face.precisions[1].share_at_peak), 117);
        let rig = plan(
            &cams(&["288@120", "288@120", "288@120", "432@120"]),
            &costs,
            &u,
        )
        .unwrap();
        assert_eq!(round(100.0 * rig.precisions[1].share_at_peak), 61);
        // At the assumed 30% the same rig needs 2.04 parts of INT4 and 4.08 of INT8.
        assert!((rig.precisions[1].share - 0.6126 / 0.3).abs() < 0.01);
        assert!((rig.precisions[0].share - 2.0 * rig.precisions[1].share).abs() < 1e-9);
        assert!(rig.precisions[1].fps_headroom < 1.0);
        let Provenance::Modelled { assumed } = &rig.provenance else {
            panic!("assumed 30% is not measured")
        };
        assert!(assumed.iter().any(|a| a.name == "utilisation"));
        assert!(assumed.iter().any(|a| a.name == "GMAC at 432"));
    }

    #[test]
    fn camera_parsing_errors_name_the_value() {
        assert_eq!(
            "288@120:body"
                .parse::<CameraMode>()
                .unwrap()
                .graph
                .as_deref(),
            Some("body")
        );
        let err = "288x120".parse::<CameraMode>().unwrap_err().to_string();
        assert!(err.contains("288x120"), "{err}");
        assert!("0@120".parse::<CameraMode>().is_err());
        assert!(Utilisation::assumed(1.5).is_err());
    }
}
