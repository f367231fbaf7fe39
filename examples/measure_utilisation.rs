//! Measure one HEF from the library API: fps, busy %, compute % against the INT8 and INT4
//! peaks, latency p50/p99, and which figures are measured and which modelled.
//!
//! ```sh
//! cargo run --release --example measure_utilisation -- [HEF] [SECONDS] [BATCH]
//! ```
//!
//! Runs on the real part when this build
//! links HailoRT and a device is present, else on the simulated Hailo-10H (virtual clock).

use std::time::Duration;

use hailo_edge::bench::measure::{self, RunConfig};
use hailo_edge::npu::{Backend, Device};

/// Measures one HEF: fps, busy %, compute % of the peaks, latency, and what was measured.
#[derive(clap::Parser)]
struct Args {
    /// The HEF to run.
    #[arg(default_value = "fixtures/backbone_288.hef")]
    hef: String,
    /// Seconds to measure (device time on the simulator, wall time on a device).
    #[arg(default_value_t = 2.0, value_parser = seconds)]
    seconds: f64,
    /// Frames per batch.
    #[arg(default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    batch: u16,
}

fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(format!("expected seconds in (0, 3600], got {text}")),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let Args {
        hef,
        seconds,
        batch,
    } = <Args as clap::Parser>::parse();

    let device = Device::open(Backend::Auto)?;
    let mut config = RunConfig::single(&hef, Duration::from_secs_f64(seconds));
    config.batch = batch;
    let m = measure::measure(&device, &config)?;

    println!("backend: {}", m.backend);
    println!(
        "run: {hef}, batch {}, {:.3} s of {} time",
        m.batch,
        m.window_s,
        if m.on_device { "wall" } else { "device" }
    );
    for g in &m.graphs {
        println!("graph {} ({} frames)", g.name, g.frames);
        println!("  ops per frame: {} [{}]", g.ops_per_frame, g.ops_source);
        println!("  fps:           {}", g.fps);
        println!("  precision:     {} ({})", g.precision, g.precision_basis);
        println!(
            "  compute:       {:.1}% of the INT8 peak, {:.1}% of the INT4 peak ({:.2} TOPS)",
            100.0 * g.compute.of_int8_peak.value,
            100.0 * g.compute.of_int4_peak.value,
            g.compute.achieved.value
        );
        match &g.hw_latency {
            Some(hw) => println!("  hw latency:    {:.3} ms per burst", hw.value),
            None => println!("  hw latency:    not available from this backend"),
        }
        if let Some(h) = &g.host_latency {
            println!(
                "  host latency:  p50 {:.3} ms, p99 {:.3} ms (submit to completion; {})",
                h.summary.p50_ms,
                h.summary.p99_ms,
                if m.on_device {
                    "measured"
                } else {
                    "simulator wall time"
                }
            );
        }
    }
    let d = &m.device;
    let show = |name: &str, f: Option<&hailo_edge::metrics::figure::Figure>| match f {
        Some(f) => println!("{name:<16} {:.4} {}", f.value, f.unit),
        None => println!("{name:<16} not reported"),
    };
    show("busy", d.busy.as_ref());
    show("switches/s", d.switches_per_s.as_ref());
    show("ms per switch", d.time_per_switch.as_ref());
    show("link in B/s", d.bytes_in_per_s.as_ref());
    show("link out B/s", d.bytes_out_per_s.as_ref());
    show("power W", d.power.as_ref());
    show("temperature C", d.temperature.as_ref());
    if let Some(cpu) = &m.host_cpu {
        println!(
            "host CPU         {:.4} ms per frame (submit {:.4}, complete {:.4}), {:.1}% of one core (measured on this host)",
            cpu.per_frame.value,
            cpu.submit_per_frame.value,
            cpu.complete_per_frame.value,
            100.0 * cpu.share_of_wall.value
        );
    }
    for note in &d.not_reported {
        println!("not reported: {note}");
    }
    println!();
    for line in m.provenance_lines() {
        println!("{line}");
    }
    Ok(())
}
