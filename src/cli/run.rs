//! `hailo-edge run`: the rig, live.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use hailo_edge::metrics::utilisation_source::UtilisationSource;
use hailo_edge::rig::{run, RigConfig, RunOptions};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Rig file (TOML): real cameras, real HEFs, the real decoder feeding the fit.
    /// Without it: the built-in demo rig on the simulator.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Stop by itself after this many seconds (else Ctrl-C stops, drains and reports).
    #[arg(long)]
    duration: Option<f64>,
    /// Write the final report (JSON) here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Write per-frame results (JSON lines) here.
    #[arg(long)]
    jsonl: Option<PathBuf>,
    /// Record frames and results into this MCAP file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// No live status line.
    #[arg(long)]
    quiet: bool,
    /// The simulator's utilisation, over the rig file's `device.utilisation`: `assumed`
    /// (0.30), a fraction, `published` (the model zoo's figures by batch) or a report file.
    #[arg(long, value_name = "assumed|FRACTION|published|FILE")]
    utilisation: Option<UtilisationSource>,
}

pub fn run_cmd(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (mut rig, origin) = match &args.config {
        Some(path) => (RigConfig::load(path)?, path.display().to_string()),
        None => {
            let dir = RigConfig::demo_fixtures_dir();
            eprintln!(
                "demo rig: 3 synthetic body cameras at 288x288 and a face camera at 432x432, 120 fps, \
                 on the simulated Hailo-10H (real-time clock), fixture HEFs from {}, generated real-width decoders",
                dir.display()
            );
            eprintln!(
                "note: the decoder runs for real on the NPU features (its cost is real), but its weights \
                 are random, so the fit takes the synthetic scene's 2D keypoints with 2 px noise instead \
                 of the decoder's"
            );
            (RigConfig::demo(&dir), "demo".to_string())
        }
    };
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
    let duration = args
        .duration
        .map(|d| hailo_edge::limits::duration("--duration", d, hailo_edge::limits::MAX_RUN))
        .transpose()?;
    if duration == Some(Duration::ZERO) {
        anyhow::bail!("--duration: 0 s is not a positive number of seconds");
    }
    let options = RunOptions {
        duration,
        status: !args.quiet,
        ..RunOptions::default()
    };
    // The allocator setting is the whole process's, so the program makes it,
    // before the first decoder loads.
    if rig.decoder.retain_memory {
        hailo_edge::rig::alloc::retain_freed_memory();
    }
    // What will run, before it runs: each graph's decoder and how the HEF feeds it.
    let choices = hailo_edge::rig::decoders::choose(&rig)?;
    let pairings = hailo_edge::rig::decoders::pairings(&rig, &choices)?;
    for ((g, pairing), choice) in rig.graphs.iter().zip(pairings).zip(&choices) {
        println!("graph {}: decoder {}", g.name, choice.describe());
        println!("  {}", pairing.split_text());
        for line in pairing.lines() {
            println!("  {line}");
        }
    }
    let stop = options.stop.clone();
    ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed))
        .context("installing the Ctrl-C handler")?;
    let report = run(&rig, &origin, &options)?;
    let w = &report.what_ran;
    println!("ran: {} on {} ({})", w.rig, w.ran_on.device, w.switching);
    if let Some(warning) = &w.ran_on.backend_warning {
        eprintln!("WARNING: {warning}");
    }
    println!(
        "decoder: {} x{} threads; fit keypoints: {}",
        w.decoder, w.decoder_threads, w.fit_keypoints
    );
    for c in &report.cameras {
        println!(
            "camera {:<6} captured {:>6} processed {:>6} dropped {:>6} ({:.1} fps in, {:.1} fps fitted){}",
            c.name,
            c.frames.captured,
            c.frames.processed,
            c.frames.dropped_total(),
            c.captured_fps,
            c.processed_fps,
            if c.accounting_ok { "" } else { "  ACCOUNTING MISMATCH" }
        );
    }
    for g in &report.graphs {
        println!(
            "graph {:<6} device {:.1} fps ({} frames in {} jobs)",
            g.name, g.device_fps.value, g.frames, g.jobs
        );
    }
    if let Some(s) = &report.switching.switches_per_s {
        println!("switches: {:.1}/s", s.value);
    }
    if let Some(e) = report.end_to_end() {
        // Frame periods of the slowest camera: the rate at which bodies are fitted.
        let fps = report
            .cameras
            .iter()
            .map(|c| c.nominal_fps)
            .fold(f64::INFINITY, f64::min);
        let periods = if fps.is_finite() && fps > 0.0 {
            format!(" = {:.1} frame periods", e.p99_ms * fps / 1e3)
        } else {
            String::new()
        };
        println!(
            "end to end: p50 {:.1} ms, p99 {:.1} ms{periods}",
            e.p50_ms, e.p99_ms
        );
    }
    let share = report
        .fit
        .residual_stature_pct
        .map_or_else(String::new, |s| {
            format!(
                ", residual p50 {:.2} % / p99 {:.2} % of stature",
                s.p50, s.p99
            )
        });
    if let Some(m) = report.fit.mpjpe_mm {
        println!("fit: {} groups, MPJPE {m:.1} mm{share}", report.fit.fits);
    } else if let Some(r) = report.fit.residual_px {
        println!("fit: {} groups, residual {r:.1} px{share}", report.fit.fits);
    }
    println!("{}", report.verdict.text);
    for n in &w.notes {
        println!("note: {n}");
    }
    if let Some(p) = &rig.output.report {
        println!("report: {}", p.display());
    }
    Ok(if report.accounting_ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: frame accounting does not add up (see the report)");
        ExitCode::FAILURE
    })
}
