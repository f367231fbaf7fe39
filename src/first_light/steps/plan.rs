//! `plan --from` the bench step's report: the rig's share of one part.

use super::write_json;
use crate::first_light::{Context, FigureEntry, Outcome, Step};
use crate::metrics::figure::{Figure, Unit};
use crate::metrics::plan::{self, CostModel, Utilisation};
use crate::metrics::utilisation_report::load_any;

/// Plans the chain's cameras with the utilisation of the bench report and the GMAC the HEFs
/// carry (the RF-DETR planning model for sides no HEF gives); writes `plan.json`.
pub struct PlanStep;

impl PlanStep {
    fn costs(ctx: &Context) -> (CostModel, Vec<String>) {
        let mut costs = CostModel::rfdetr_backbone();
        let notes = ctx
            .config
            .hefs
            .iter()
            .filter_map(|hef| costs.set_from_hef(hef, None).err())
            .map(|e| format!("{e}; its side uses the planning model"))
            .collect();
        (costs, notes)
    }
}

impl Step for PlanStep {
    fn name(&self) -> &'static str {
        "plan"
    }

    fn run(&mut self, ctx: &mut Context) -> Outcome {
        let Some(path) = ctx.bench_report.clone() else {
            return Outcome::failed(
                "no bench report to plan from",
                "run the bench step first (it writes bench/report.json)",
            );
        };
        let loaded = match load_any(&path) {
            Ok(l) => l,
            Err(e) => {
                return Outcome::failed(
                    e.to_string(),
                    "rerun first-light: the bench step rewrites the report",
                )
            }
        };
        let (costs, cost_notes) = Self::costs(ctx);
        let utilisation = Utilisation::from_report(&loaded.report);
        let rig = match plan::plan(&ctx.config.cameras, &costs, &utilisation) {
            Ok(r) => r,
            Err(e) => {
                return Outcome::failed(
                    e.to_string(),
                    "give cameras whose sides the HEFs take: --camera SIDE@FPS",
                )
            }
        };
        let mut out = Outcome::passed();
        out.notes.push(format!(
            "from {}: a {} ({})",
            path.display(),
            loaded.kind,
            loaded.note()
        ));
        out.notes.extend(cost_notes);
        for c in &rig.cameras {
            let (precision, fps) = c.max_fps[0];
            out.figures.push(FigureEntry::of(
                format!("camera {} utilisation planned", c.camera),
                &c.utilisation,
            ));
            out.figures.push(FigureEntry::of(
                format!("camera {} max fps alone ({precision})", c.camera),
                &Figure {
                    value: fps,
                    unit: Unit::Fps,
                    provenance: c.utilisation.provenance.clone(),
                },
            ));
        }
        for p in &rig.precisions {
            out.figures.push(FigureEntry::new(
                format!("rig share of one part ({})", p.precision),
                p.share,
                "parts",
                &rig.provenance,
            ));
            out.figures.push(FigureEntry::new(
                format!("rig fps headroom ({})", p.precision),
                p.fps_headroom,
                "x",
                &rig.provenance,
            ));
        }
        write_json(ctx, "plan.json", &rig, out)
    }
}
