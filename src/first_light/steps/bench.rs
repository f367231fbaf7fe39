//! The bench sweep and the switch-cost inference.

use std::collections::BTreeMap;
use std::time::Duration;

use super::write_json;
use crate::bench::measure::switch_cost::METHOD;
use crate::bench::measure::{infer_switch_cost, GraphRun, SwitchCostConfig};
use crate::bench::{self, plots, BenchError, GraphsMode, SweepConfig};
use crate::first_light::{Context, FigureEntry, Outcome, Step};

/// A short sweep: batch 1, 2, 4 and 8 with the scheduler's defaults, each HEF alone and the
/// first two at 3:1; writes `bench/report.json` (the plan's input), `sweep.json`, `report.csv`
/// and the plots.
pub struct BenchStep;

impl BenchStep {
    fn sweep(ctx: &Context) -> SweepConfig {
        SweepConfig {
            hefs: ctx.config.hefs.clone(),
            batches: vec![1, 2, 4, 8],
            thresholds: vec![0],
            timeouts: vec![Duration::ZERO],
            graphs: if ctx.config.hefs.len() >= 2 {
                GraphsMode::Both
            } else {
                GraphsMode::One
            },
            duration: Duration::from_secs_f64(ctx.config.bench_seconds),
            pair_ratio: (3, 1),
            ops_override: BTreeMap::new(),
        }
    }
}

fn bench_failed(e: &BenchError) -> Outcome {
    let fix = match e {
        BenchError::Open(_) => "hailo-edge doctor names what keeps the device from opening",
        BenchError::Point { .. } => {
            "rerun the failing point alone with hailo-edge bench --hef FILE --batch N and read its error"
        }
        _ => "see the error; hailo-edge bench --help lists the sweep's inputs",
    };
    Outcome::failed(e.to_string(), fix)
}

impl Step for BenchStep {
    fn name(&self) -> &'static str {
        "bench"
    }

    fn run(&mut self, ctx: &mut Context) -> Outcome {
        let seconds = ctx.config.bench_seconds;
        let max = crate::limits::MAX_RUN;
        if !crate::limits::duration("--bench-seconds", seconds, max).is_ok_and(|d| !d.is_zero()) {
            return Outcome::failed(
                format!(
                    "{} s per point, expected a positive time of at most {} s",
                    crate::limits::number(seconds),
                    max.as_secs()
                ),
                "give a positive --bench-seconds",
            );
        }
        let dir = ctx.config.out.join("bench");
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return Outcome::failed(
                format!("creating {}: {e}", dir.display()),
                "give an --out directory this user can write",
            );
        }
        let sweep = match bench::run_sweep(
            || ctx.open(),
            &Self::sweep(ctx),
            |_, label| log::info!("bench: {label}"),
        ) {
            Ok(s) => s,
            Err(e) => return bench_failed(&e),
        };
        let report = match bench::utilisation_report(&sweep) {
            Ok(r) => r,
            Err(e) => return bench_failed(&e),
        };
        if let Err(e) = bench::check_provenance(&report) {
            return Outcome::failed(
                format!("the bench report mislabels a figure: {e}"),
                "report this: a simulator figure must never be labelled measured",
            );
        }
        let mut out = Outcome::passed();
        for (name, text) in [
            ("report.json", report.to_json()),
            ("sweep.json", sweep.to_json()),
        ] {
            let path = dir.join(name);
            if let Err(e) = std::fs::write(&path, text) {
                return Outcome::failed(
                    format!("writing {}: {e}", path.display()),
                    "give an --out directory this user can write",
                );
            }
            out.files.push(path);
        }
        let csv = dir.join("report.csv");
        let written =
            bench::write_csv(&sweep, &csv).and_then(|()| plots::write_plots(&sweep, &dir));
        match written {
            Ok(plots) => {
                out.files.push(csv);
                out.files.extend(plots);
            }
            Err(e) => return bench_failed(&e),
        }
        ctx.bench_report = Some(dir.join("report.json"));
        out.notes.push(format!(
            "{} points on {}; per graph, its best point",
            sweep.points.len(),
            sweep.backend
        ));
        for g in &report.graphs {
            let at = g
                .batch
                .map_or_else(String::new, |b| format!(" (batch {b})"));
            out.figures
                .push(FigureEntry::of(format!("{} fps{at}", g.name), &g.fps));
            out.figures.push(FigureEntry::of(
                format!("{} share of the INT8 peak", g.name),
                &g.compute.of_int8_peak,
            ));
            out.figures.push(FigureEntry::of(
                format!("{} share of the INT4 peak", g.name),
                &g.compute.of_int4_peak,
            ));
            out.figures.push(FigureEntry::of(
                format!("{} ops per frame", g.name),
                &g.ops_per_frame,
            ));
            if let Some(b) = &g.busy {
                out.figures
                    .push(FigureEntry::of(format!("{} NN core busy", g.name), b));
            }
        }
        out
    }
}

/// The time per switch between the first two graphs under the scheduler, inferred from
/// completion times ([`crate::bench::measure::switch_cost`]).
pub struct SwitchCostStep;

impl Step for SwitchCostStep {
    fn name(&self) -> &'static str {
        "switch-cost"
    }

    fn run(&mut self, ctx: &mut Context) -> Outcome {
        let [a, b, ..] = ctx.config.hefs.as_slice() else {
            return Outcome::skipped("one HEF: no second graph to switch to");
        };
        let device = match ctx.open() {
            Ok(d) => d,
            Err(e) => {
                return Outcome::failed(
                    format!("opening the device: {e}"),
                    "hailo-edge doctor names what keeps the device from opening",
                )
            }
        };
        let config = SwitchCostConfig {
            cycles: ctx.config.switch_cycles,
            ..SwitchCostConfig::rig_ratio(GraphRun::new(a), GraphRun::new(b))
        };
        let cost =
            match infer_switch_cost(&device, &config) {
                Ok(c) => c,
                Err(e) => return Outcome::failed(
                    format!("switch cost: {e}"),
                    "run the two HEFs in bench (hailo-edge bench --graphs two) and read its error",
                ),
            };
        let mut out = Outcome::passed();
        out.notes.push(format!("method: {METHOD}"));
        out.notes.push(
            "HailoRT 5.2.0 traces each activation (HAILO_TRACE=scheduler), but on a Hailo-10H the \
             scheduler runs in hailort_server on the card and no library header exposes the trace, \
             so the cost is inferred on the client"
                .into(),
        );
        let pair = format!("{}+{}", cost.graphs[0], cost.graphs[1]);
        out.figures.push(
            FigureEntry::of(format!("{pair} time per switch"), &cost.per_switch)
                .with_method(METHOD),
        );
        out.figures.push(FigureEntry::of(
            format!(
                "{} burst of {} frames alone",
                cost.graphs[0], cost.burst_frames[0]
            ),
            &cost.first_burst,
        ));
        out.figures.push(FigureEntry::of(
            format!(
                "{} burst of {} frames alone",
                cost.graphs[1], cost.burst_frames[1]
            ),
            &cost.second_burst,
        ));
        out.figures.push(FigureEntry::of(
            format!("{pair} cycle of both"),
            &cost.pair_cycle,
        ));
        if let Some(assumed) = &cost.simulator_assumed {
            out.figures.push(
                FigureEntry::of("simulator's switch cost (its profile's input)", assumed).assumed(),
            );
        }
        write_json(ctx, "switch-cost.json", &cost, out)
    }
}
