//! `hailo-edge bench`: sweep batch size, scheduler threshold and timeout, one graph or two,
//! over HEFs; write report.json, sweep.json, report.csv and plots.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::backend::BackendArg;
use anyhow::Context;
use clap::{Args, ValueEnum};
use hailo_edge::bench::{self, plots, GraphsMode, Sweep, SweepConfig};
use hailo_edge::metrics::utilisation_report::UtilisationReport;
use hailo_edge::metrics::utilisation_source::UtilisationSource;
use hailo_edge::npu::sim::{SimProfile, TimeBase};
use hailo_edge::npu::{Device, DeviceOptions, GroupId, NpuError};
use hailo_edge::rig::config::SimProfileName;
use hailo_edge::rig::RigConfig;
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Graphs {
    One,
    Two,
    Both,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ClockArg {
    /// As fast as possible on modelled device time (deterministic figures).
    Virtual,
    /// The simulator sleeps until each modelled completion.
    Realtime,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// A HEF to run (repeatable); default the demo's backbone_288.hef and backbone_432.hef.
    #[arg(long = "hef", value_name = "FILE")]
    hefs: Vec<PathBuf>,
    /// Operations per frame of a HEF that carries none: FILE=GOPS, FILE as given to --hef
    /// (repeatable; GOPS = 2 x GMAC).
    #[arg(long = "ops", value_name = "FILE=GOPS")]
    ops: Vec<String>,
    /// Run time per point, seconds (device time on the virtual clock).
    #[arg(long, default_value_t = 2.0, value_name = "S")]
    duration_per_point: f64,
    /// Batch sizes.
    #[arg(long, value_delimiter = ',', default_values_t = [1u16, 2, 4, 8])]
    batch: Vec<u16>,
    /// Scheduler thresholds, frames.
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 8])]
    threshold: Vec<u32>,
    /// Scheduler timeouts, ms.
    #[arg(long = "timeout-ms", value_delimiter = ',', default_values_t = [0u64, 20])]
    timeout_ms: Vec<u64>,
    /// Each HEF alone, the first two together at 3:1, or both.
    #[arg(long, value_enum, default_value = "both")]
    graphs: Graphs,
    /// Which device (--profile and --clock apply to `sim` only).
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// Simulator profile, named as the rig file's `device.profile`.
    #[arg(long, value_enum, default_value = "hailo10h-pcie")]
    profile: SimProfileName,
    /// Simulator clock.
    #[arg(long, value_enum, default_value = "virtual")]
    clock: ClockArg,
    /// Simulator utilisation: `assumed` (0.30), a fraction, `published` (the model zoo's
    /// figures by batch) or a report file.
    #[arg(
        long,
        default_value = "assumed",
        value_name = "assumed|FRACTION|published|FILE"
    )]
    utilisation: UtilisationSource,
    /// HailoRT device id (PCIe BDF or IP address of the USB part).
    #[arg(long, value_name = "ID")]
    device: Option<String>,
    /// VDevice group id: HailoRT's default UNIQUE holds the device alone (another process
    /// waits 5 s, then gets HAILO_DEVICE_IN_USE); processes passing one other id, e.g.
    /// SHARED, share it.
    #[arg(long = "group-id", value_name = "ID", value_parser = parse_group_id)]
    group_id: Option<GroupId>,
    /// Map the pooled frame buffers for DMA once (as hailortcli run2 does) instead of per
    /// transfer.
    #[arg(long = "dma-map", value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    dma_map: bool,
    /// Output directory (created).
    #[arg(long, default_value = "bench-out", value_name = "DIR")]
    out: PathBuf,
}

fn parse_group_id(value: &str) -> Result<GroupId, String> {
    GroupId::parse(value).map_err(|e| e.to_string())
}

fn sim_profile(args: &BenchArgs) -> anyhow::Result<SimProfile> {
    let device = args.profile.device_profile();
    let clock = match args.clock {
        ClockArg::Virtual => TimeBase::Virtual,
        ClockArg::Realtime => TimeBase::RealTime,
    };
    let curve = args
        .utilisation
        .simulator_curve()
        .with_context(|| format!("--utilisation {}", args.utilisation))?;
    Ok(SimProfile::new(device.with_utilisation(curve)).with_clock(clock))
}

/// Runs the sweep the flags describe, writes its files to `--out` and prints the summary.
pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let config = sweep_config(&args)?;
    let points = config.points()?.len();
    let sim = sim_profile(&args)?;
    let backend = args.backend.backend(args.device.clone(), || sim);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("--out {}: cannot create the directory", args.out.display()))?;
    let options = DeviceOptions {
        group_id: args.group_id.clone(),
        dma_map: args.dma_map,
        ..DeviceOptions::default()
    };
    let sweep = sweep_with_progress(&config, points, || {
        Device::open_with(backend.clone(), options.clone())
    })?;

    let report = bench::utilisation_report(&sweep)?;
    if let Err(e) = bench::check_provenance(&report) {
        anyhow::bail!("the report mislabels a figure: {e}");
    }
    let files = write_files(&args.out, &sweep, &report)?;
    print_summary(&sweep, &report);
    println!();
    println!("wrote:");
    for f in &files {
        println!("  {}", f.display());
    }
    println!(
        "plan with it: hailo-edge plan --from {} --camera 288@120 ...",
        args.out.join("report.json").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The sweep the flags describe: the run time per point, the HEFs (the demo's two when none
/// is given), the grid of batch sizes, thresholds and timeouts, and the `--ops` overrides.
fn sweep_config(args: &BenchArgs) -> anyhow::Result<SweepConfig> {
    let duration = hailo_edge::limits::duration(
        "--duration-per-point",
        args.duration_per_point,
        hailo_edge::limits::MAX_RUN,
    )?;
    if duration.is_zero() {
        anyhow::bail!("--duration-per-point: 0 s is not a positive number of seconds");
    }
    let hefs = if args.hefs.is_empty() {
        let dir = RigConfig::demo_fixtures_dir()?;
        vec![dir.join("backbone_288.hef"), dir.join("backbone_432.hef")]
    } else {
        args.hefs.clone()
    };
    for h in &hefs {
        anyhow::ensure!(h.is_file(), "--hef {}: no such file", h.display());
    }
    Ok(SweepConfig {
        hefs,
        batches: args.batch.clone(),
        thresholds: args.threshold.clone(),
        timeouts: args
            .timeout_ms
            .iter()
            .map(|&ms| Duration::from_millis(ms))
            .collect(),
        graphs: match args.graphs {
            Graphs::One => GraphsMode::One,
            Graphs::Two => GraphsMode::Two,
            Graphs::Both => GraphsMode::Both,
        },
        duration,
        pair_ratio: (3, 1),
        ops_override: ops_overrides(&args.ops)?,
    })
}

/// The `--ops FILE=GOPS` flags, each checked to name a positive, finite figure.
fn ops_overrides(specs: &[String]) -> anyhow::Result<BTreeMap<PathBuf, f64>> {
    specs
        .iter()
        .map(|spec| {
            let (file, gops) = spec
                .split_once('=')
                .with_context(|| format!("--ops `{spec}`: expected FILE=GOPS"))?;
            let gops: f64 = gops
                .parse()
                .with_context(|| format!("--ops `{spec}`: `{gops}` is not a number"))?;
            anyhow::ensure!(
                gops.is_finite() && gops > 0.0,
                "--ops `{spec}`: expected a positive number of GOPS"
            );
            Ok((PathBuf::from(file), gops))
        })
        .collect()
}

/// Runs the `points` points of `config` on devices from `open`, with a progress bar that
/// indicatif hides when stderr is not a terminal.
fn sweep_with_progress(
    config: &SweepConfig,
    points: usize,
    open: impl Fn() -> Result<Device, NpuError>,
) -> anyhow::Result<Sweep> {
    let bar = hailo_edge::rig::status::terminal().add(ProgressBar::new(points as u64));
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let sweep = bench::run_sweep(open, config, |i, label| {
        bar.set_position(i as u64);
        bar.set_message(label.to_owned());
    })?;
    bar.finish_and_clear();
    Ok(sweep)
}

/// Writes report.json, sweep.json, report.csv and the plots into `out`; returns their paths.
fn write_files(
    out: &Path,
    sweep: &Sweep,
    report: &UtilisationReport,
) -> anyhow::Result<Vec<PathBuf>> {
    let write = |name: &str, text: String| -> anyhow::Result<PathBuf> {
        let path = out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    let mut files = vec![
        write("report.json", report.to_json())?,
        write("sweep.json", sweep.to_json())?,
    ];
    let csv = out.join("report.csv");
    bench::write_csv(sweep, &csv)?;
    files.push(csv);
    files.extend(plots::write_plots(sweep, out)?);
    Ok(files)
}

/// Prints what ran, the report's warnings, a table of every point's graphs and the first
/// point's provenance.
fn print_summary(sweep: &Sweep, report: &UtilisationReport) {
    println!("backend: {}", sweep.backend);
    for w in &report.warnings {
        eprintln!("WARNING: {w}");
    }
    println!("points: {}", sweep.points.len());
    println!();
    print_table(sweep);
    println!();
    print_provenance(sweep);
}

/// One row per point and graph: its fps, its share of the INT8 and INT4 peaks, and the
/// device's busy share, context switches and hardware latency (`n/a` where not reported).
fn print_table(sweep: &Sweep) {
    println!(
        "{:<46} {:<14} {:>9} {:>8} {:>8} {:>7} {:>9} {:>9} {:>8}",
        "point", "graph", "fps", "INT8 %", "INT4 %", "busy %", "sw/s", "ms/sw", "hw ms"
    );
    for p in &sweep.points {
        let d = &p.measurement.device;
        for g in &p.measurement.graphs {
            println!(
                "{:<46} {:<14} {:>9.1} {:>8.1} {:>8.1} {:>7} {:>9} {:>9} {:>8}",
                p.label,
                g.name,
                g.fps.value,
                100.0 * g.compute.of_int8_peak.value,
                100.0 * g.compute.of_int4_peak.value,
                d.busy
                    .as_ref()
                    .map_or("n/a".into(), |b| format!("{:.1}", 100.0 * b.value)),
                d.switches_per_s
                    .as_ref()
                    .map_or("n/a".into(), |s| format!("{:.1}", s.value)),
                d.time_per_switch
                    .as_ref()
                    .map_or("n/a".into(), |s| format!("{:.3}", s.value)),
                g.hw_latency
                    .as_ref()
                    .map_or("n/a".into(), |h| format!("{:.3}", h.value)),
            );
        }
    }
}

/// Where the first point's figures come from, what its device does not report, and the
/// precision of its first graph.
fn print_provenance(sweep: &Sweep) {
    let Some(first) = sweep.points.first() else {
        return;
    };
    let m = &first.measurement;
    for line in m.provenance_lines() {
        println!("{line}");
    }
    for note in &m.device.not_reported {
        println!("not reported: {note}");
    }
    if let Some(g) = m.graphs.first() {
        println!("precision: {} ({})", g.precision, g.precision_basis);
    }
}
