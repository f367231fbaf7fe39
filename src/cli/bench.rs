//! `hailo-edge bench`: sweep batch size, scheduler threshold and timeout, one graph or two,
//! over HEFs; write report.json, sweep.json, report.csv and plots.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::backend::BackendArg;
use anyhow::Context;
use clap::{Args, ValueEnum};
use hailo_edge::bench::{self, plots, GraphsMode, SweepConfig};
use hailo_edge::metrics::utilisation_source::UtilisationSource;
use hailo_edge::npu::sim::{SimProfile, TimeBase};
use hailo_edge::npu::{Device, DeviceOptions, GroupId};
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

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
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
    let config = SweepConfig {
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
        ops_override: args
            .ops
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
            .collect::<anyhow::Result<_>>()?,
    };
    let n = config.points()?.len();
    let sim = sim_profile(&args)?;
    let backend = args.backend.backend(args.device.clone(), || sim);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("--out {}: cannot create the directory", args.out.display()))?;
    // indicatif hides the bar when stderr is not a terminal.
    let bar = hailo_edge::rig::status::terminal().add(ProgressBar::new(n as u64));
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let options = DeviceOptions {
        group_id: args.group_id.clone(),
        dma_map: args.dma_map,
        ..DeviceOptions::default()
    };
    let sweep = bench::run_sweep(
        || Device::open_with(backend.clone(), options.clone()),
        &config,
        |i, label| {
            bar.set_position(i as u64);
            bar.set_message(label.to_owned());
        },
    )?;
    bar.finish_and_clear();

    let report = bench::utilisation_report(&sweep)?;
    if let Err(e) = bench::check_provenance(&report) {
        anyhow::bail!("the report mislabels a figure: {e}");
    }
    let write = |name: &str, text: String| -> anyhow::Result<PathBuf> {
        let path = args.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    let mut files = vec![
        write("report.json", report.to_json())?,
        write("sweep.json", sweep.to_json())?,
    ];
    let csv = args.out.join("report.csv");
    bench::write_csv(&sweep, &csv)?;
    files.push(csv);
    files.extend(plots::write_plots(&sweep, &args.out)?);

    println!("backend: {}", sweep.backend);
    for w in &report.warnings {
        eprintln!("WARNING: {w}");
    }
    println!("points: {}", sweep.points.len());
    println!();
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
    println!();
    if let Some(first) = sweep.points.first() {
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
