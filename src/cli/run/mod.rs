//! `hailo-edge run`: the rig, live.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use hailo_edge::metrics::utilisation_source::UtilisationSource;
use hailo_edge::output::printable;
use hailo_edge::rig::config::{BackendChoice, PublishTarget, RecordFrames};
use hailo_edge::rig::{run, Report, RigConfig, RunOptions};

mod summary;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Rig file (TOML): real cameras, real HEFs, the real decoder feeding the fit.
    /// Without it: the built-in demo rig on the simulator.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Stop by itself after this many seconds (else Ctrl-C stops, drains and reports): wall
    /// time, or on `device.clock = "virtual"` the cameras' time (each ends after that many
    /// seconds of frames, so the run is the same whatever the host's speed).
    #[arg(long)]
    duration: Option<f64>,
    /// Write the final report (JSON) here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Write per-frame results (JSON lines) here; `-` is standard output (the
    /// summary then goes to standard error).
    #[arg(long)]
    jsonl: Option<PathBuf>,
    /// Record frames and results into this MCAP file (Foxglove opens it as it is).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Which frames `--record` keeps: the frames the NPU stage takes, or every
    /// captured frame.
    #[arg(long, value_enum, value_name = "admitted|all")]
    record_frames: Option<RecordFrames>,
    /// Serve the recording's channels live over the Foxglove WebSocket protocol
    /// (default address 127.0.0.1:8765; 0.0.0.0:8765 for the LAN).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8765")]
    foxglove: Option<std::net::SocketAddr>,
    /// Publish each body and each view's keypoints on Zenoh (`zenoh`, or
    /// `zenoh:ENDPOINT` to listen on, e.g. `zenoh:tcp/0.0.0.0:7447`).
    #[arg(long, value_name = "zenoh[:ENDPOINT]")]
    publish: Option<PublishTarget>,
    /// The rig's name in the published keys (`hailo-edge/NAME/...`); default the host name.
    #[arg(long, value_name = "NAME", requires = "publish")]
    publish_as: Option<String>,
    /// Shift every wall-clock stamp `--publish` puts by this many milliseconds, as a box
    /// whose clock is off would: for testing a receiver's skew detection (`fuse`).
    #[arg(
        long,
        value_name = "MS",
        requires = "publish",
        allow_negative_numbers = true
    )]
    publish_skew_ms: Option<f64>,
    /// The clock synthetic cameras and their scene run on: `start` (time from zero, a
    /// repeatable run) or `wall` (frames on the wall clock's grid, the scene at wall time,
    /// so rigs in several processes or boxes see one scene at the same instants).
    #[arg(long, value_enum, value_name = "start|wall", default_value = "start")]
    scene_clock: hailo_edge::camera::synthetic::SceneClock,
    /// Run the demo rig on a recording (`--record`) instead of its synthetic
    /// cameras: the cameras, their calibrations and their timing come from the file.
    #[arg(long, value_name = "FILE.mcap", conflicts_with = "config")]
    replay: Option<PathBuf>,
    /// No live status display (as `-q` also does).
    #[arg(long)]
    no_status: bool,
    /// Exit 0 even when the rig's rate was not sustained (otherwise the exit status is 3).
    #[arg(long)]
    exit_zero: bool,
    /// Replace existing output files (never a symbolic link).
    #[arg(long)]
    force: bool,
    /// Seconds the drain after a stop may take before the run reports what is
    /// still in flight and ends.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    drain_timeout: f64,
    /// The simulator's utilisation, over the rig file's `device.utilisation`: `assumed`
    /// (0.30), a fraction, `published` (the model zoo's figures by batch) or a report file.
    #[arg(long, value_name = "assumed|FRACTION|published|FILE")]
    utilisation: Option<UtilisationSource>,
    /// A fault the simulator injects, `KIND@JOB` (repeatable): `timeout`, `unavailable`,
    /// `queue-full` at that job, or `closed`, the device dropping off there. A drill of what
    /// the run (and a service around it) does when the device fails; needs `device.backend
    /// = "sim"`.
    #[arg(long, value_name = "KIND@JOB")]
    sim_fault: Vec<String>,
    /// Serve the live dashboard (views, 3D body, figures) at this address;
    /// `--serve` alone: 127.0.0.1:8080; 0.0.0.0:8080 lets the LAN reach it.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8080")]
    serve: Option<std::net::SocketAddr>,
}

/// The exit status of a run stopped because the device is gone (docs/faults.md#recovery).
const DEVICE_LOST: u8 = 5;

pub fn run_cmd(args: RunArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let (mut rig, origin) = load_rig(&args)?;
    apply_overrides(&mut rig, &args);
    // Bound before anything slow, so an address in use ends the run at once.
    let server = args
        .serve
        .map(|addr| hailo_edge::serve::Server::start(addr, rig.cameras.len()))
        .transpose()?;
    if let Some(s) = &server {
        eprintln!("dashboard: http://{}/", s.address());
    }
    let options = run_options(
        &args,
        &rig,
        quiet,
        server.as_ref().map(hailo_edge::serve::Server::tap),
    )?;
    // With the JSON lines on standard output, the summary goes to standard
    // error. The summary is a courtesy: the report file is the record, so a
    // closed pipe ends the summary quietly instead of failing the run.
    let jsonl_on_stdout = rig
        .output
        .jsonl
        .as_deref()
        .is_some_and(hailo_edge::output::is_stdout);
    let mut out: Box<dyn Write> = if jsonl_on_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    // The allocator setting is the whole process's, so the program makes it,
    // before the first decoder loads.
    if rig.decoder.retain_memory {
        hailo_edge::rig::alloc::retain_freed_memory();
    }
    // What will run, before it runs: each graph's decoder and how the HEF feeds it.
    let choices = hailo_edge::rig::decoders::choose(&rig)?;
    let pairings = hailo_edge::rig::decoders::pairings(&rig, &choices)?;
    summary::print_decoders(&mut out, &rig, &choices, &pairings);
    // One handler for SIGINT, SIGTERM and SIGHUP (ctrlc's `termination`
    // feature): each requests the stop, and the run drains and reports.
    let stop = options.stop.clone();
    ctrlc::set_handler(move || stop.request())
        .context("installing the SIGINT/SIGTERM/SIGHUP handler")?;
    let report = run(&rig, &origin, &options);
    // The browsers see the stream end (and say so) whether the run succeeded or not.
    if let Some(s) = server {
        s.stop();
    }
    let report = report?;
    summary::print_summary(&mut out, &rig, &report);
    Ok(exit_status(&report, args.exit_zero))
}

/// The rig to run and where it came from: the rig file, a recording replayed into the demo
/// rig, or the demo rig itself.
fn load_rig(args: &RunArgs) -> anyhow::Result<(RigConfig, String)> {
    Ok(match (&args.config, &args.replay) {
        (Some(path), _) => (RigConfig::load(path)?, path.display().to_string()),
        (None, Some(file)) => {
            let dir = RigConfig::demo_fixtures_dir()?;
            let recording = hailo_edge::camera::replay::Recording::open(file)?;
            let cameras: Vec<_> = recording.cameras().cloned().collect();
            anyhow::ensure!(
                !cameras.is_empty(),
                "{}: the recording holds no camera",
                file.display()
            );
            eprintln!(
                "replay: {} cameras of {} at their recorded timing, calibrations from the file, \
                 on the simulated Hailo-10H; the fit takes the decoder's keypoints",
                cameras.len(),
                file.display()
            );
            (
                RigConfig::demo(&dir).replaying(file, &cameras),
                file.display().to_string(),
            )
        }
        (None, None) => {
            let dir = RigConfig::demo_fixtures_dir()?;
            eprintln!(
                "demo rig: 3 synthetic body cameras at 288x288 and a face camera at 432x432, 120 fps, \
                 on the simulated Hailo-10H (real-time clock), demo HEFs from {}, generated real-width decoders",
                dir.display()
            );
            eprintln!(
                "note: the decoder runs for real on the NPU features (its cost is real), but its weights \
                 are random, so the fit takes the synthetic scene's 2D keypoints with 2 px noise instead \
                 of the decoder's"
            );
            (RigConfig::demo(&dir), "demo".to_string())
        }
    })
}

/// The command line's settings over the rig file's.
fn apply_overrides(rig: &mut RigConfig, args: &RunArgs) {
    if let Some(u) = &args.utilisation {
        rig.device.utilisation = u.clone();
    }
    if args.report.is_some() {
        rig.output.report = args.report.clone();
    }
    if args.jsonl.is_some() {
        rig.output.jsonl = args.jsonl.clone();
    }
    if args.record.is_some() {
        rig.output.record = args.record.clone();
    }
    if let Some(f) = args.record_frames {
        rig.output.record_frames = f;
    }
    if args.foxglove.is_some() {
        rig.output.foxglove = args.foxglove;
    }
    if args.publish.is_some() {
        rig.output.publish = args.publish.clone();
    }
    if args.publish_as.is_some() {
        rig.output.publish_as = args.publish_as.clone();
    }
}

/// The run's options from the command line, each value checked and named by its flag.
fn run_options(
    args: &RunArgs,
    rig: &RigConfig,
    quiet: bool,
    live: Option<hailo_edge::rig::stage::live::LiveTap>,
) -> anyhow::Result<RunOptions> {
    let duration = args
        .duration
        .map(|d| hailo_edge::limits::duration("--duration", d, hailo_edge::limits::MAX_RUN))
        .transpose()?;
    if duration == Some(Duration::ZERO) {
        anyhow::bail!("--duration: 0 s is not a positive number of seconds");
    }
    anyhow::ensure!(
        args.drain_timeout.is_finite() && (0.0..=3600.0).contains(&args.drain_timeout),
        "--drain-timeout: {} is not between 0 and 3600 seconds",
        args.drain_timeout
    );
    let publish_skew_ns = match args.publish_skew_ms {
        Some(ms) if ms.is_finite() && ms.abs() <= 3.6e6 => (ms * 1e6).round() as i64,
        Some(ms) => anyhow::bail!("--publish-skew-ms: {ms} is not within an hour either way"),
        None => 0,
    };
    let mut npu_faults = hailo_edge::npu::sim::FaultPlan::none();
    for spec in &args.sim_fault {
        npu_faults = npu_faults
            .with_spec(spec)
            .map_err(|e| anyhow::anyhow!("--sim-fault {e}"))?;
    }
    anyhow::ensure!(
        args.sim_fault.is_empty() || rig.device.backend == BackendChoice::Sim,
        "--sim-fault: the faults are the simulator's, and the rig's device.backend is not \"sim\""
    );
    Ok(RunOptions {
        live,
        faults: hailo_edge::rig::inject::Faults {
            npu: npu_faults,
            ..Default::default()
        },
        scene_clock: args.scene_clock,
        publish_skew_ns,
        duration,
        status: !(args.no_status || quiet),
        overwrite: args.force,
        drain_timeout: Duration::from_secs_f64(args.drain_timeout),
        ..RunOptions::default()
    })
}

/// The exit status: 0 when the run stopped (duration, SIGINT, SIGTERM or SIGHUP), drained,
/// every frame is accounted for and the rate was sustained; 1 when a frame is unaccounted for
/// or an output failed; 5 when the device is gone; 3 when the rate was not sustained.
fn exit_status(report: &Report, exit_zero: bool) -> ExitCode {
    if !report.accounting_ok {
        eprintln!("error: frame accounting does not add up (see the report)");
        ExitCode::FAILURE
    } else if !report.output_failures.is_empty() {
        ExitCode::FAILURE
    } else if let Some(why) = &report.device_lost {
        eprintln!(
            "error: the device is gone ({}); the run stopped, drained and reported; run it \
             again once the device is back (the systemd unit restarts it); exit status {DEVICE_LOST}",
            printable(why)
        );
        ExitCode::from(DEVICE_LOST)
    } else if !report.verdict.sustained {
        super::falls_short(
            "the rig's rate was not sustained (see the verdict)",
            exit_zero,
        )
    } else {
        ExitCode::SUCCESS
    }
}
