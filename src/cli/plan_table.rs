//! `hailo-edge plan`'s side-by-side table: the rig under the assumed, published and report
//! utilisation, with the share of one part and the fps headroom under each.

use std::path::Path;

use hailo_edge::metrics::plan::{cameras_per_burst, CameraMode, Comparison, RigPlan};
use hailo_edge::metrics::utilisation_report::LoadedReport;

/// The report read, its kind and what its figures mean.
pub(super) fn print_source(l: &LoadedReport, path: &Path) {
    println!("from: {} is a {}", path.display(), l.kind);
    println!("  ({})", l.note());
}

/// The fps every camera runs at, when they all run at one.
fn uniform_fps(cameras: &[CameraMode]) -> Option<f64> {
    let first = cameras.first()?.fps;
    cameras.iter().all(|c| c.fps == first).then_some(first)
}

/// `288: 8.8%  432: 5.1%`: the utilisation each side's graph is planned at.
fn by_side(plan: &RigPlan) -> String {
    let mut seen: Vec<u32> = Vec::new();
    let mut parts = Vec::new();
    for c in &plan.cameras {
        if !seen.contains(&c.camera.side) {
            seen.push(c.camera.side);
            parts.push(format!(
                "{}: {:.1}%",
                c.camera.side,
                100.0 * c.utilisation.value
            ));
        }
    }
    parts.join("  ")
}

/// Prints the comparison; `report_label` names the report's column.
pub(super) fn print_comparison(c: &Comparison, cameras: &[CameraMode], report_label: Option<&str>) {
    let fps = uniform_fps(cameras);
    println!();
    println!("utilisation sources side by side (share of one part; INT4 takes the same fraction of its peak):");
    println!(
        "{:<10} {:<26} {:>11} {:>10} {:>15} {:>11} {:>10}",
        "source",
        "utilisation by side",
        "share INT8",
        "headroom",
        "fps/cam fits",
        "share INT4",
        "headroom"
    );
    for s in &c.sources {
        let Some(plan) = &s.plan else {
            println!(
                "{:<10} unavailable: {}",
                s.source,
                s.unavailable.as_deref().unwrap_or("no plan")
            );
            continue;
        };
        let (int8, int4) = (&plan.precisions[0], &plan.precisions[1]);
        let fits = fps.map_or_else(
            || format!("x{:.2}", int8.fps_headroom),
            |f| format!("{:.1}", f * int8.fps_headroom),
        );
        println!(
            "{:<10} {:<26} {:>10.1}% {:>9.2}x {:>15} {:>10.1}% {:>9.2}x",
            s.source,
            by_side(plan),
            100.0 * int8.share,
            int8.fps_headroom,
            fits,
            100.0 * int4.share,
            int4.fps_headroom
        );
    }
    println!("  (fps/cam fits: the fps every camera can run at on one part at INT8)");
    if let Some(plan) = c.plan_of("published") {
        let bursts = cameras_per_burst(cameras);
        for cam in &plan.utilisation.per_side {
            let batch = bursts.get(&cam.0).copied().unwrap_or(0);
            println!(
                "  published at {} ({batch} camera(s) per burst): {}",
                cam.0, cam.1.provenance
            );
        }
    }
    if let (Some(label), Some(plan)) = (report_label, c.plan_of("report")) {
        println!("  {label}: {}", plan.utilisation.default.provenance);
    }
    if let Some(a) = &c.assumption {
        let band = format!(
            "{:.1}% ({}) .. {:.1}% ({})",
            100.0 * a.band.low.share,
            a.band.low.row,
            100.0 * a.band.high.share,
            a.band.high.row
        );
        if a.outside {
            println!(
                "FLAG: the assumed {:.1}% lies outside the published band {band}",
                100.0 * a.assumed.value
            );
        } else {
            println!(
                "the assumed {:.1}% lies inside the published band {band}",
                100.0 * a.assumed.value
            );
        }
    }
}
