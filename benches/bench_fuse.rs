//! `hailo-edge fuse` holding two boxes of four cameras, against the rate each box sustains,
//! on this machine (a bench binary, not criterion: one timed run).
//!
//! ```sh
//! cargo bench --bench bench_fuse                          # 20 s
//! HAILO_EDGE_FUSE_SECS=60 cargo bench --bench bench_fuse
//! ```
//!
//! Two `hailo-edge run` processes of `examples/fuse/` (box a and box b: four synthetic
//! cameras each at 10 fps on the wall clock, reduced decoders) publish on loopback, and
//! `fuse` runs in this process over both for the set time. The peer is each box's own rate:
//! its fitted instants per second, from its report. `fuse` holds the boxes when, once their
//! clocks are judged (the first 2 s), it fuses as many instants per second as the faster box
//! fits (instants either box fitted count once) with no view late or dropped behind.

use std::path::Path;
use std::time::Duration;

use hailo_edge::camera::Stop;
use hailo_edge::fuse::{self, FuseOptions};

#[path = "../tests/common/boxes.rs"]
mod boxes;

use boxes::{free_port, start_box};

/// The example's rate: each box fits every instant on a quiet machine in a release build.
const FPS: u32 = 10;

/// Fitted instants per second of a box's report.
fn box_rate(report: &Path) -> anyhow::Result<f64> {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(report)?)?;
    let fits = json["fit"]["fits"].as_f64().unwrap_or(0.0);
    let seconds = json["duration_s"].as_f64().unwrap_or(f64::NAN);
    Ok(fits / seconds)
}

fn main() -> anyhow::Result<()> {
    let secs: f64 = std::env::var("HAILO_EDGE_FUSE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20.0);
    let dir = tempfile::tempdir()?;
    let (pa, pb) = (free_port(), free_port());
    let (ra, rb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    // The boxes run the fuse's time and a margin on either side.
    let box_secs = secs.ceil() as u32 + 6;
    let mut a = start_box("a", FPS, pa, box_secs, &[], &ra);
    let mut b = start_box("b", FPS, pb, box_secs, &[], &rb);
    let options = FuseOptions {
        connect: vec![format!("tcp/127.0.0.1:{pa}"), format!("tcp/127.0.0.1:{pb}")],
        duration: Some(Duration::from_secs_f64(secs)),
        truth_seed: Some(1),
        ..FuseOptions::default()
    };
    let report = fuse::run(&options, &Stop::new());
    // The boxes end by themselves; they are waited for whatever fuse did.
    let (ea, eb) = (a.wait(), b.wait());
    let report = report?;
    ea?;
    eb?;
    let (rate_a, rate_b) = (box_rate(&ra)?, box_rate(&rb)?);
    let peer = rate_a.max(rate_b);
    print!("{}", report.summary());
    // No instant is fused while the boxes' clocks are first judged.
    let fusing_s = report.seconds - fuse::boxes::SKEW_WINDOW_S;
    let rate = report.instants as f64 / fusing_s;
    let lost: u64 = report.rigs.iter().map(|r| r.stats.late).sum::<u64>() + report.overflow;
    println!(
        "box a fits {rate_a:.1} instants/s, box b {rate_b:.1}/s; fuse {rate:.1}/s over the {fusing_s:.1} s \
         after the clocks were judged: {:.2}x the faster box; {lost} views late or dropped behind",
        rate / peer
    );
    if let Some(cpu) = report.cpu_ms_per_instant {
        println!("fuse CPU {cpu:.2} ms per instant (three fits with --truth: all views, and each box alone)");
    }
    Ok(())
}
