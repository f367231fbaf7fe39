//! The three utilisation sources side by side: the assumption, the model zoo's published
//! figures and a report, each planned for the same rig, and whether the assumption lies inside
//! the band the published rows span.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{plan, CameraMode, CostModel, PlanError, RigPlan, Utilisation};
use crate::metrics::figure::Figure;
use crate::metrics::published::{PublishedRow, PublishedTable};
use crate::metrics::utilisation::Precision;
use crate::metrics::utilisation_source::{BACKBONE_FAMILY, BACKBONE_WIDTH};

/// Cameras per scheduler burst of each graph: the cameras sharing its side, since the rig
/// batches the frames of one graph together.
pub fn cameras_per_burst(cameras: &[CameraMode]) -> BTreeMap<u32, u32> {
    let mut per_side = BTreeMap::new();
    for c in cameras {
        *per_side.entry(c.side).or_insert(0) += 1;
    }
    per_side
}

/// The published row each side's graph is matched to: the backbone's family, nearest width,
/// then nearest input side.
fn rows_for<'t>(
    table: &'t PublishedTable,
    cameras: &[CameraMode],
) -> Result<Vec<(u32, u32, &'t PublishedRow)>, PlanError> {
    cameras_per_burst(cameras)
        .into_iter()
        .map(|(side, batch)| {
            let row = table.nearest(BACKBONE_FAMILY, BACKBONE_WIDTH, side)?;
            Ok((side, batch, row))
        })
        .collect()
}

impl Utilisation {
    /// Published utilisation: for each side, the nearest ViT row's share at the side's cameras
    /// per burst, linear in batch between the published batches. Each figure's provenance
    /// names the row, the batch and the zoo file.
    ///
    /// # Errors
    /// [`PlanError::NoCameras`] for no camera; [`PlanError::Published`] when the table has no
    /// row of the family or a side's batch lies outside the published batches.
    pub fn published(table: &PublishedTable, cameras: &[CameraMode]) -> Result<Self, PlanError> {
        let mut per_side = Vec::new();
        for (side, batch, row) in rows_for(table, cameras)? {
            per_side.push((side, row.share(batch)?));
        }
        let default = per_side
            .iter()
            .map(|(_, f)| f)
            .min_by(|a, b| a.value.total_cmp(&b.value))
            .cloned()
            .ok_or(PlanError::NoCameras)?;
        Ok(Self {
            default,
            per_side,
            measured_precision: Some(Precision::Int8),
        })
    }
}

/// One end of the published band: a row at a published batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandEnd {
    /// `vit_small at batch 8`.
    pub row: String,
    /// Its share of the INT8 peak.
    pub share: f64,
}

/// The shares the rows used span over their published batches.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Band {
    /// The lowest.
    pub low: BandEnd,
    /// The highest.
    pub high: BandEnd,
}

impl Band {
    /// The band of `rows` over their published batches; `None` for no rows.
    pub fn of<'r>(rows: impl IntoIterator<Item = &'r PublishedRow>) -> Option<Self> {
        let ends: Vec<BandEnd> = rows
            .into_iter()
            .flat_map(|r| {
                r.points.iter().map(|p| BandEnd {
                    row: format!("{} at batch {}", r.model, p.batch),
                    share: r.share_at_fps(p.fps),
                })
            })
            .collect();
        let low = ends.iter().min_by(|a, b| a.share.total_cmp(&b.share))?;
        let high = ends.iter().max_by(|a, b| a.share.total_cmp(&b.share))?;
        Some(Self {
            low: low.clone(),
            high: high.clone(),
        })
    }

    /// Whether `share` lies inside the band.
    pub fn contains(&self, share: f64) -> bool {
        (self.low.share..=self.high.share).contains(&share)
    }
}

/// The rig planned under one source, or why it could not be.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourcePlan {
    /// `assumed`, `published` or `report`.
    pub source: &'static str,
    /// The plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<RigPlan>,
    /// Why there is no plan under this source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl SourcePlan {
    fn of(source: &'static str, planned: Result<RigPlan, PlanError>) -> Self {
        match planned {
            Ok(plan) => Self {
                source,
                plan: Some(plan),
                unavailable: None,
            },
            Err(e) => Self {
                source,
                plan: None,
                unavailable: Some(e.to_string()),
            },
        }
    }
}

/// The assumption against the published band.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssumptionCheck {
    /// The assumed utilisation.
    pub assumed: Figure,
    /// The band of the published rows used.
    pub band: Band,
    /// Whether the assumption lies outside the band.
    pub outside: bool,
}

/// The rig under assumed, published and (when a report is given) report utilisation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Assumed first, then published, then the report.
    pub sources: Vec<SourcePlan>,
    /// The assumption against the published band, when the published rows could be chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assumption: Option<AssumptionCheck>,
}

impl Comparison {
    /// The plan under `source`, when there is one.
    pub fn plan_of(&self, source: &str) -> Option<&RigPlan> {
        self.sources
            .iter()
            .find(|s| s.source == source)
            .and_then(|s| s.plan.as_ref())
    }
}

/// Plans `cameras` under the `assumed` utilisation, the published `table` and, when given, a
/// report's utilisation.
pub fn compare(
    cameras: &[CameraMode],
    costs: &CostModel,
    assumed: &Utilisation,
    table: &PublishedTable,
    report: Option<&Utilisation>,
) -> Comparison {
    let mut sources = vec![
        SourcePlan::of("assumed", plan(cameras, costs, assumed)),
        SourcePlan::of(
            "published",
            Utilisation::published(table, cameras).and_then(|u| plan(cameras, costs, &u)),
        ),
    ];
    if let Some(r) = report {
        sources.push(SourcePlan::of("report", plan(cameras, costs, r)));
    }
    let assumption = rows_for(table, cameras)
        .ok()
        .and_then(|rows| Band::of(rows.into_iter().map(|(_, _, r)| r)))
        .map(|band| AssumptionCheck {
            outside: !band.contains(assumed.default.value),
            assumed: assumed.default.clone(),
            band,
        });
    Comparison {
        sources,
        assumption,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cams(v: &[&str]) -> Vec<CameraMode> {
        v.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn published_utilisation_follows_cameras_per_burst() {
        let t = PublishedTable::embedded().unwrap();
        let rig = cams(&["288@120", "288@120", "288@120", "432@120"]);
        assert_eq!(
            cameras_per_burst(&rig).into_iter().collect::<Vec<_>>(),
            [(288, 3), (432, 1)]
        );
        let u = Utilisation::published(&t, &rig).unwrap();
        let (f288, exact) = u.for_side(288);
        assert!(exact);
        // vit_small: 119 fps at batch 1, 428 at 8; batch 3 is 119 + 309 x 2/7.
        let fps3 = 119.0 + 309.0 * 2.0 / 7.0;
        assert!((f288.value - 8.62 * fps3 / 20e3).abs() < 1e-12, "{f288}");
        assert!(f288.provenance.to_string().contains("vit_small"), "{f288}");
        assert!((u.for_side(432).0.value - 8.62 * 119.0 / 20e3).abs() < 1e-12);
        // Nine cameras of one graph: batch 9 is outside the published 1..=8.
        let nine = cams(&["288@30"; 9]);
        let err = Utilisation::published(&t, &nine).unwrap_err().to_string();
        assert!(
            err.contains("batch 9") && err.contains("vit_small"),
            "{err}"
        );
    }

    #[test]
    fn the_assumption_is_flagged_outside_the_band_and_not_inside() {
        let t = PublishedTable::embedded().unwrap();
        let rig = cams(&["432@120"; 4]);
        let costs = CostModel::rfdetr_backbone();
        let assumed = Utilisation::assumed(0.30).unwrap();
        let c = compare(&rig, &costs, &assumed, &t, None);
        assert_eq!(c.sources.len(), 2);
        let check = c.assumption.as_ref().unwrap();
        assert!(check.outside, "30% is above vit_small's 5%..18%");
        assert_eq!(check.band.low.row, "vit_small at batch 1");
        assert_eq!(check.band.high.row, "vit_small at batch 8");
        // At batch 4 vit_small reaches 10.8%, so the rig needs 30 / 10.8 times the share.
        let a = c.plan_of("assumed").unwrap().precisions[0].share;
        let p = c.plan_of("published").unwrap().precisions[0].share;
        let u4 = 8.62 * (119.0 + 309.0 * 3.0 / 7.0) / 20e3;
        assert!((p / a - 0.30 / u4).abs() < 1e-9, "{p} vs {a}");
        // Negative control: an assumption inside the band is not flagged.
        let inside = Utilisation::assumed(0.10).unwrap();
        let c = compare(&rig, &costs, &inside, &t, None);
        assert!(!c.assumption.unwrap().outside);
    }

    #[test]
    fn the_design_rigs_under_assumed_and_published_utilisation() {
        // The verdict docs/planning.md quotes: share of one part at INT8 (percent) and the fps
        // every camera can run at on one part, assumed then published.
        let t = PublishedTable::embedded().unwrap();
        let costs = CostModel::rfdetr_backbone();
        let assumed = Utilisation::assumed(0.30).unwrap();
        for (rig, shares, fits) in [
            (cams(&["432@120"; 4]), [778.8, 2156.1], [15.4, 5.6]),
            (
                cams(&["288@120", "288@120", "288@120", "432@120"]),
                [408.7, 1857.3],
                [29.4, 6.5],
            ),
        ] {
            let c = compare(&rig, &costs, &assumed, &t, None);
            for (i, source) in ["assumed", "published"].into_iter().enumerate() {
                let int8 = &c.plan_of(source).unwrap().precisions[0];
                let share = (1000.0 * int8.share).round() / 10.0;
                let fps = (1200.0 * int8.fps_headroom).round() / 10.0;
                assert_eq!((share, fps), (shares[i], fits[i]), "{source}");
            }
        }
    }

    #[test]
    fn a_source_that_cannot_plan_says_why() {
        let t = PublishedTable::embedded().unwrap();
        let rig = cams(&["288@30"; 9]);
        let costs = CostModel::rfdetr_backbone();
        let c = compare(&rig, &costs, &Utilisation::assumed(0.3).unwrap(), &t, None);
        assert!(c.plan_of("assumed").is_some());
        let published = &c.sources[1];
        assert!(published.plan.is_none());
        assert!(published.unavailable.as_ref().unwrap().contains("batch 9"));
    }
}
