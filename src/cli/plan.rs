//! `hailo-edge plan`: the share of one Hailo-10H a rig of cameras needs, and the fps headroom.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use hailo_edge::metrics::figure::BackendKind;
use hailo_edge::metrics::ops;
use hailo_edge::metrics::plan::{
    self, CameraMode, CheckFile, Comparison, CostModel, CostSource, RigPlan, Utilisation,
};
use hailo_edge::metrics::published::PublishedTable;
use hailo_edge::metrics::utilisation::Precision;
use hailo_edge::metrics::utilisation_report::{self as report, LoadedReport};
use hailo_edge::metrics::utilisation_source::UtilisationSource;
use hailo_edge::rig::RigConfig;

use super::plan_framing::RigFraming;
use super::plan_table::{print_comparison, print_source};

/// Exit status when `--check` flags a row.
pub const EXIT_FLAGGED: u8 = 2;

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A camera: SIDE@FPS or SIDE@FPS:GRAPH (repeatable), e.g. --camera 288@120.
    #[arg(long = "camera", value_name = "SIDE@FPS[:GRAPH]")]
    cameras: Vec<String>,
    /// A TOML file of cameras: [[camera]] side = 288, fps = 120, graph = "body".
    #[arg(long = "cameras", value_name = "FILE")]
    cameras_file: Option<PathBuf>,
    /// A rig file (as for `hailo-edge run`): each camera at its rate into the side of its
    /// graph's HEF, each graph's cost from the ops its HEF carries, and the rig's
    /// `device.utilisation` unless --utilisation or --from say otherwise.
    #[arg(long, value_name = "RIG.toml", conflicts_with_all = ["cameras", "cameras_file"])]
    config: Option<PathBuf>,
    /// GMAC per frame of the graph at SIDE (repeatable), overriding the RF-DETR planning model.
    #[arg(long = "gmac", value_name = "SIDE=GMAC")]
    gmac: Vec<String>,
    /// Count the graph at SIDE from an ONNX file (repeatable); the count must be complete.
    #[arg(long = "onnx", value_name = "SIDE=FILE")]
    onnx: Vec<String>,
    /// Take the GMAC of a graph from the computational ops a HEF carries (repeatable): SIDE=FILE,
    /// or FILE to use the side of the HEF's input.
    #[arg(long = "hef", value_name = "[SIDE=]FILE")]
    hef: Vec<String>,
    /// Utilisation to plan with: `assumed` (0.30), a fraction (assumed), `published` (the
    /// model zoo's Hailo-10H fps of the nearest ViT at each graph's cameras per burst) or a
    /// report file. Default: the report of --from when given, else assumed.
    #[arg(long, value_name = "assumed|FRACTION|published|FILE")]
    utilisation: Option<UtilisationSource>,
    /// A report to set beside the assumed and published figures: bench's report.json (schema
    /// hailo-edge.utilisation/1) or the report `run --report` writes (hailo-edge.run-report/1).
    /// The plan uses it unless --utilisation says otherwise.
    #[arg(long, value_name = "REPORT")]
    from: Option<PathBuf>,
    /// Check a planning table (TOML [[row]] or CSV: side, gmac, fps_int8, fps_int4, utilisation): flag rows whose
    /// fps does not follow from their GMAC; exit 2 if any is flagged.
    #[arg(long, value_name = "FILE")]
    check: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Exit 0 even when the rig does not fit one part at INT8 (otherwise the exit status is 3).
    #[arg(long)]
    exit_zero: bool,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CamerasFile {
    camera: Vec<CameraMode>,
}

pub fn run(args: PlanArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.check {
        return run_check(path, args.json);
    }
    let mut costs = costs(&args)?;
    let mut cameras = cameras(&args)?;
    let mut rig_utilisation = None;
    let mut framing = None;
    if let Some(path) = &args.config {
        let rig = RigConfig::load(path)?;
        cameras.extend(cameras_of_rig(path, &rig, &mut costs)?);
        framing = Some(RigFraming::of(path, &rig));
        rig_utilisation = Some(rig.device.utilisation);
    }
    let chosen = Chosen::of(&args, rig_utilisation, &cameras)?;
    let rig = plan::plan(&cameras, &costs, &chosen.utilisation)?;
    let comparison = plan::compare(
        &cameras,
        &costs,
        &chosen.assumed,
        &chosen.table,
        chosen.from_report.as_ref(),
    );
    let report_label = chosen.loaded.as_ref().map(|(_, l)| report_label(l));
    if args.json {
        let from = chosen.loaded.as_ref().map(|(path, l)| FromReport {
            file: path.display().to_string(),
            kind: l.kind,
            note: l.note(),
        });
        let out = PlanJson {
            from,
            source: chosen.source.kind(),
            report_label,
            compare: &comparison,
            framing: framing.as_ref(),
            plan: &rig,
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        if let Some((path, l)) = &chosen.loaded {
            print_source(l, path);
        }
        print_plan(&rig, &chosen.source);
        print_comparison(&comparison, &cameras, report_label.as_deref());
        if let Some(f) = &framing {
            println!();
            f.print();
        }
    }
    Ok(fit_status(&rig, args.exit_zero))
}

/// The planning model with what the flags give: `--gmac` figures, `--onnx` counts (which
/// must be complete) and the ops `--hef` files carry.
fn costs(args: &PlanArgs) -> anyhow::Result<CostModel> {
    let mut costs = CostModel::rfdetr_backbone();
    for spec in &args.gmac {
        let (side, gmac) = split_pair(spec, "--gmac", "SIDE=GMAC")?;
        let gmac: f64 = gmac
            .parse()
            .with_context(|| format!("--gmac {spec}: `{gmac}` is not a number"))?;
        costs.set(side, gmac, CostSource::Given)?;
    }
    for spec in &args.onnx {
        let (side, file) = split_pair(spec, "--onnx", "SIDE=FILE")?;
        let report = ops::count_file(file.as_ref(), &[])?;
        if !report.is_complete() {
            let names: Vec<_> = report
                .unresolved
                .iter()
                .map(|u| format!("{} ({})", u.name, u.op_type))
                .collect();
            anyhow::bail!(
                "--onnx {spec}: the count of {file} is incomplete; unresolved: {}",
                names.join(", ")
            );
        }
        costs.set(
            side,
            report.total_macs() as f64 / 1e9,
            CostSource::Counted {
                file: file.to_owned(),
            },
        )?;
    }
    for spec in &args.hef {
        let (side, file) = match spec.split_once('=') {
            Some(_) => {
                let (side, file) = split_pair(spec, "--hef", "SIDE=FILE or FILE")?;
                (Some(side), file)
            }
            None => (None, spec.as_str()),
        };
        costs
            .set_from_hef(file.as_ref(), side)
            .with_context(|| format!("--hef {spec}"))?;
    }
    Ok(costs)
}

/// The cameras of `--camera` flags, then those of a `--cameras` file.
fn cameras(args: &PlanArgs) -> anyhow::Result<Vec<CameraMode>> {
    let mut cameras = args
        .cameras
        .iter()
        .map(|s| s.parse::<CameraMode>())
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(path) = &args.cameras_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let file: CamerasFile =
            toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
        cameras.extend(file.camera);
    }
    Ok(cameras)
}

/// The utilisation a plan uses and the figures it is set beside.
struct Chosen {
    /// `--utilisation`, else the report of `--from`, else the rig's, else assumed.
    source: UtilisationSource,
    /// The report read (`--from`, or `--utilisation FILE`) and its path.
    loaded: Option<(PathBuf, LoadedReport)>,
    /// The utilisation that report gives.
    from_report: Option<Utilisation>,
    /// The assumed utilisation (the source's fraction when assumed, else the default).
    assumed: Utilisation,
    /// The model zoo's published figures.
    table: PublishedTable,
    /// What the plan uses.
    utilisation: Utilisation,
}

impl Chosen {
    fn of(
        args: &PlanArgs,
        rig_utilisation: Option<UtilisationSource>,
        cameras: &[CameraMode],
    ) -> anyhow::Result<Self> {
        let source = match (&args.utilisation, &args.from) {
            (Some(s), _) => s.clone(),
            (None, Some(path)) => UtilisationSource::Report(path.clone()),
            (None, None) => rig_utilisation.unwrap_or_default(),
        };
        let report_path = match (&source, &args.from) {
            (_, Some(path)) => Some(path.clone()),
            (UtilisationSource::Report(path), None) => Some(path.clone()),
            _ => None,
        };
        let loaded = report_path
            .map(|path| report::load_any(&path).map(|l| (path, l)))
            .transpose()?;
        let from_report = loaded
            .as_ref()
            .map(|(_, l)| Utilisation::from_report(&l.report));
        let table = PublishedTable::embedded()?;
        let assumed = Utilisation::assumed(match source {
            UtilisationSource::Assumed(u) => u,
            _ => plan::DEFAULT_UTILISATION,
        })?;
        let utilisation = match (&source, &from_report) {
            (UtilisationSource::Assumed(_), _) => assumed.clone(),
            (UtilisationSource::Published, _) => Utilisation::published(&table, cameras)?,
            (UtilisationSource::Report(_), Some(r)) => r.clone(),
            (UtilisationSource::Report(p), None) => {
                anyhow::bail!("--utilisation {}: the report was not read", p.display())
            }
        };
        Ok(Self {
            source,
            loaded,
            from_report,
            assumed,
            table,
            utilisation,
        })
    }
}

/// The cameras of a rig file, each at the side of its graph's HEF input; each graph's cost is
/// the computational ops its HEF carries, or the planning model when it carries none.
fn cameras_of_rig(
    path: &Path,
    rig: &RigConfig,
    costs: &mut CostModel,
) -> anyhow::Result<Vec<CameraMode>> {
    let mut sides = std::collections::HashMap::new();
    for (graph, side, _) in super::doctor::graph_sides(path, rig)? {
        if let Err(e) = costs.set_from_hef(&graph.hef, Some(side)) {
            eprintln!(
                "note: {e}; graph `{}` is planned with the RF-DETR planning model",
                graph.name
            );
        }
        sides.insert(graph.name.as_str(), side);
    }
    rig.cameras
        .iter()
        .map(|c| {
            let side = sides.get(c.graph.as_str()).copied().with_context(|| {
                format!(
                    "{}: camera `{}`: no graph `{}`",
                    path.display(),
                    c.name,
                    c.graph
                )
            })?;
            Ok(CameraMode {
                side,
                fps: c.fps,
                graph: Some(c.graph.clone()),
            })
        })
        .collect()
}

/// Success when the rig fits one part at INT8 (the precision HEFs compile to by default), or
/// when `exit_zero`; else [`super::FALLS_SHORT`], saying why on stderr.
fn fit_status(rig: &RigPlan, exit_zero: bool) -> ExitCode {
    let int8 = rig
        .precisions
        .iter()
        .find(|p| p.precision == Precision::Int8);
    match int8 {
        Some(p) if p.share > 1.0 => {
            let int4 = rig
                .precisions
                .iter()
                .find(|p| p.precision == Precision::Int4)
                .filter(|p| p.share <= 1.0)
                .map_or(String::new(), |p| {
                    format!(" (at INT4 it needs {:.0} %)", 100.0 * p.share)
                });
            super::falls_short(
                &format!(
                    "the rig does not fit one Hailo-10H at INT8: it needs {:.0} % of one part \
                     at the planning utilisation{int4}",
                    100.0 * p.share
                ),
                exit_zero,
            )
        }
        _ => ExitCode::SUCCESS,
    }
}

/// How the report's column is labelled: measured on the part, or modelled by the simulator.
fn report_label(l: &LoadedReport) -> String {
    match &l.report.device {
        Some(device) if l.report.backend == BackendKind::HailoRt => {
            format!("report: measured on {device}")
        }
        _ => "report: modelled by the simulator".to_owned(),
    }
}

/// `plan --json`: the plan, the source it used, the report read and the three sources side by
/// side.
#[derive(serde::Serialize)]
struct PlanJson<'a> {
    /// The report given with `--from` or `--utilisation FILE`, and its kind.
    from: Option<FromReport>,
    /// The source of the plan's utilisation: `assumed`, `published` or `report`.
    source: &'static str,
    /// Whether the report's figures are measured on a part or modelled by the simulator.
    report_label: Option<String>,
    /// The rig under assumed, published and report utilisation.
    compare: &'a Comparison,
    /// With `--config`: millimetres per feature cell per camera, from the calibration.
    #[serde(skip_serializing_if = "Option::is_none")]
    framing: Option<&'a RigFraming>,
    #[serde(flatten)]
    plan: &'a RigPlan,
}

#[derive(serde::Serialize)]
struct FromReport {
    file: String,
    kind: report::ReportKind,
    note: &'static str,
}

fn split_pair<'a>(spec: &'a str, flag: &str, form: &str) -> anyhow::Result<(u32, &'a str)> {
    let (side, value) = spec
        .split_once('=')
        .with_context(|| format!("{flag} `{spec}`: expected {form}"))?;
    let side = side
        .parse()
        .with_context(|| format!("{flag} `{spec}`: side `{side}` is not a whole number"))?;
    Ok((side, value))
}

fn print_plan(rig: &RigPlan, source: &UtilisationSource) {
    let u = &rig.utilisation;
    println!("utilisation source: {}", source.kind());
    match source {
        UtilisationSource::Assumed(_) => {
            println!("utilisation: {}", u.default);
            println!(
                "  (replace the assumption with a measurement: hailo-edge plan --from report.json)"
            );
        }
        UtilisationSource::Published => {
            for (side, f) in &u.per_side {
                println!("utilisation at {side}: {f}");
            }
            println!(
                "  (published for INT8 HEFs; the INT4 rows assume the same fraction of its peak)"
            );
        }
        UtilisationSource::Report(_) => {
            println!(
                "utilisation: per graph side from the report; other sides use its lowest, {}",
                u.default
            );
            if let Some(p) = u.measured_precision {
                println!("  (measured on {p} HEFs; the other precision's rows assume the same fraction of its peak)");
            }
        }
    }
    println!();
    println!(
        "{:<18} {:>9}  {:<16} {:>7} {:>14} {:>14}",
        "camera", "GMAC", "GMAC source", "util", "max fps INT8", "max fps INT4"
    );
    for c in &rig.cameras {
        let source = match &c.cost.source {
            CostSource::PlanningModel => "planning model".to_owned(),
            CostSource::Given => "--gmac".to_owned(),
            CostSource::Counted { file } => format!("counted {file}"),
            CostSource::Hef { file, .. } => format!(
                "HEF {}",
                std::path::Path::new(file)
                    .file_name()
                    .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned())
            ),
            _ => "another source".to_owned(),
        };
        let util = format!(
            "{:.1}%{}",
            100.0 * c.utilisation.value,
            if c.utilisation_exact { "" } else { "*" }
        );
        println!(
            "{:<18} {:>9.2}  {:<16} {:>7} {:>14.1} {:>14.1}",
            c.camera.to_string(),
            c.cost.gmac,
            source,
            util,
            c.max_fps[0].1,
            c.max_fps[1].1
        );
    }
    if rig.cameras.iter().any(|c| !c.utilisation_exact) {
        println!("  * the report has no graph at this side: its lowest utilisation is used");
    }

    println!();
    println!(
        "rig demand: {:.2} TOPS (ops = 2 x MAC)",
        rig.precisions[0].demand_tops
    );
    println!(
        "{:<16} {:>22} {:>18} {:>14}",
        "precision", "share of one part", "at full peak", "fps headroom"
    );
    for p in &rig.precisions {
        let verdict = if p.share <= 1.0 {
            "fits"
        } else {
            "does not fit"
        };
        println!(
            "{:<16} {:>21.1}% {:>17.1}% {:>13.2}x  {verdict}",
            format!(
                "{} ({:.0} TOPS)",
                p.precision,
                p.precision.hailo10h_peak_tops()
            ),
            100.0 * p.share,
            100.0 * p.share_at_peak,
            p.fps_headroom
        );
    }
    println!();
    println!("shares and headroom: {}", rig.provenance);
}

fn run_check(path: &std::path::Path, json: bool) -> anyhow::Result<ExitCode> {
    let file = CheckFile::from_path(path)?;
    let outcomes = plan::check_rows(&path.display().to_string(), &file)?;
    let flagged = outcomes.iter().filter(|o| !o.ok).count();
    if json {
        println!("{}", serde_json::to_string_pretty(&outcomes)?);
    } else {
        println!(
            "{:>4} {:>6} {:>8} {:>5} {:>6} {:>10} {:>10} {:>8}",
            "row", "side", "GMAC", "prec", "util", "claimed", "follows", "error"
        );
        for o in &outcomes {
            println!(
                "{:>4} {:>6} {:>8.2} {:>5} {:>5.0}% {:>10.1} {:>10.1} {:>+7.1}%  {}",
                o.row,
                o.side,
                o.gmac,
                o.precision.to_string(),
                100.0 * o.utilisation,
                o.claimed_fps,
                o.computed_fps,
                100.0 * o.relative_error,
                if o.ok {
                    "ok"
                } else {
                    "FLAGGED: fps does not follow from GMAC"
                }
            );
        }
        println!("{flagged} of {} claims flagged", outcomes.len());
    }
    Ok(if flagged == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FLAGGED)
    })
}
