//! `hailo-edge fuse`: one body from the views of several boxes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use hailo_edge::camera::Stop;
use hailo_edge::fuse::{self, FuseOptions};
use hailo_edge::limits::{self, MAX_RUN};

#[derive(Debug, Args)]
pub struct FuseArgs {
    /// A box's endpoint (`tcp/HOST:PORT`, what it runs `--publish zenoh:ENDPOINT` with);
    /// repeat for each box. None: Zenoh's scouting finds them.
    #[arg(value_name = "ENDPOINT")]
    connect: Vec<String>,
    /// Fuse only these rigs (their `--publish-as` names, comma-separated); default: every
    /// rig heard.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    rigs: Vec<String>,
    /// Stop by itself after this many seconds (else Ctrl-C stops and reports).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Views at most this far apart in capture time are one instant.
    #[arg(long, value_name = "MS", default_value_t = 4.0)]
    window_ms: f64,
    /// Longest an instant waits for every box's views.
    #[arg(long, value_name = "MS", default_value_t = 300.0)]
    wait_ms: f64,
    /// A box silent this long is fused without until it is heard again.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    absent_after: f64,
    /// Clock skew between a box and this host past which the box is reported and not fused.
    #[arg(long, value_name = "MS", default_value_t = 2.0)]
    max_skew_ms: f64,
    /// Score every fit against the synthetic subject of `run`'s demo (boxes running
    /// synthetic cameras with `--scene-clock wall`), and fit each box alone to compare.
    #[arg(long)]
    truth: bool,
    /// Write one JSON line per fused instant here (`-`: standard output).
    #[arg(long)]
    jsonl: Option<PathBuf>,
    /// Write the report (JSON) here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Replace existing output files (never a symbolic link).
    #[arg(long)]
    force: bool,
}

/// `value` (in `per_s` units a second) as a positive duration within [`MAX_RUN`].
fn duration(flag: &str, value: f64, per_s: f64) -> anyhow::Result<Duration> {
    let d = limits::duration(flag, value / per_s, MAX_RUN)?;
    anyhow::ensure!(!d.is_zero(), "{flag}: {value} is not a positive time");
    Ok(d)
}

pub fn run(args: FuseArgs) -> anyhow::Result<ExitCode> {
    let options = FuseOptions {
        connect: args.connect,
        rigs: args.rigs,
        duration: args
            .duration
            .map(|s| duration("--duration", s, 1.0))
            .transpose()?,
        window: duration("--window-ms", args.window_ms, 1e3)?,
        wait: duration("--wait-ms", args.wait_ms, 1e3)?,
        absent_after: duration("--absent-after", args.absent_after, 1.0)?,
        max_skew: duration("--max-skew-ms", args.max_skew_ms, 1e3)?,
        truth_seed: args.truth.then_some(1),
        jsonl: args.jsonl,
        report: args.report,
        overwrite: args.force,
    };
    let stop = Stop::new();
    let on_signal = stop.clone();
    ctrlc::set_handler(move || on_signal.request())
        .context("installing the SIGINT/SIGTERM/SIGHUP handler")?;
    let report = fuse::run(&options, &stop)?;
    let text = report.summary();
    if options
        .jsonl
        .as_deref()
        .is_some_and(hailo_edge::output::is_stdout)
    {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}
