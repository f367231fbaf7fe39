//! Two backbone graphs on one NPU: 3 frames of the 288 graph (three body
//! cameras) for every frame of the 432 graph (the face camera), under a few
//! scheduler thresholds and timeouts.
//!
//! ```sh
//! cargo run --release --example two_graphs -- [fixtures-dir] [tick-hz] [seconds]
//! ```
//!
//! Runs on the real part when this build links HailoRT and a device is
//! present; otherwise on the simulated Hailo-10H with a deterministic manual
//! clock. It prints which backend ran and which figures are assumed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hailo_edge::npu::sim::{ManualClock, SimProfile, TimeBase};
use hailo_edge::npu::{Backend, BackendKind, ConfiguredModel, Device, NpuError};

struct Setting {
    threshold: u32,
    timeout_ms: u64,
}

struct Row {
    fps: [f64; 2],
    switches_per_s: Option<f64>,
    ms_per_switch: Option<f64>,
    busy: Option<f64>,
}

fn open(real: bool) -> Result<(Device, Option<ManualClock>), NpuError> {
    if real {
        return Ok((Device::open(Backend::Auto)?, None));
    }
    let clock = ManualClock::new();
    let profile = SimProfile::default().with_clock(TimeBase::Manual(clock.clone()));
    Ok((Device::open(Backend::Sim(profile))?, Some(clock)))
}

fn drain(cm: &ConfiguredModel, done: &mut u64, wait: Duration) -> Result<(), NpuError> {
    while let Some(c) = cm.wait_next_complete(wait) {
        c.status?;
        *done += 1;
        if cm.pending() == 0 {
            break;
        }
    }
    Ok(())
}

fn run(
    real: bool,
    dir: &std::path::Path,
    setting: &Setting,
    tick: Duration,
    ticks: u64,
) -> Result<(Row, Device), Box<dyn std::error::Error>> {
    let (device, clock) = open(real)?;
    let graphs = [
        device
            .load_model_file(dir.join("backbone_288.hef"))?
            .configure()?,
        device
            .load_model_file(dir.join("backbone_432.hef"))?
            .configure()?,
    ];
    for cm in &graphs {
        cm.set_scheduler_threshold(setting.threshold)?;
        cm.set_scheduler_timeout(Duration::from_millis(setting.timeout_ms))?;
    }
    let per_tick = [3, 1];
    let mut done = [0u64; 2];
    let start = Instant::now();
    for t in 0..ticks {
        match &clock {
            Some(clock) => clock.advance_to(tick * t as u32),
            None => std::thread::sleep(
                (start + tick * t as u32).saturating_duration_since(Instant::now()),
            ),
        }
        for (cm, n) in graphs.iter().zip(per_tick) {
            for _ in 0..n {
                cm.submit(cm.bindings()?)?;
            }
        }
        for (cm, d) in graphs.iter().zip(done.iter_mut()) {
            while let Ok(c) = cm.completions().try_recv() {
                c.status?;
                *d += 1;
            }
        }
    }
    if let Some(clock) = &clock {
        clock.finish();
    }
    for (cm, d) in graphs.iter().zip(done.iter_mut()) {
        drain(cm, d, Duration::from_secs(30))?;
    }
    let row = match device.sim_stats() {
        Some(stats) => {
            let end = stats
                .models
                .values()
                .map(|m| m.last_end_ns)
                .max()
                .unwrap_or(0) as f64
                / 1e9;
            let fps = |name: &str| {
                stats
                    .models
                    .get(name)
                    .map_or(0.0, |m| m.frames as f64 / end)
            };
            let switch_ms: f64 = stats.switch_ns.iter().sum::<u64>() as f64 / 1e6;
            Row {
                fps: [fps(graphs[0].name()), fps(graphs[1].name())],
                switches_per_s: Some(stats.switches as f64 / end),
                ms_per_switch: Some(switch_ms / stats.switches.max(1) as f64),
                busy: Some(100.0 * stats.busy_ns as f64 / (end * 1e9)),
            }
        }
        None => {
            let wall = start.elapsed().as_secs_f64();
            Row {
                fps: [done[0] as f64 / wall, done[1] as f64 / wall],
                switches_per_s: None,
                ms_per_switch: None,
                busy: None,
            }
        }
    };
    Ok((row, device))
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.digits$}"))
}

/// Two graphs on one NPU at 3:1 under several scheduler thresholds and timeouts.
#[derive(clap::Parser)]
struct Args {
    /// The folder holding backbone_288.hef and backbone_432.hef.
    #[arg(default_value = "fixtures")]
    dir: PathBuf,
    /// Feed ticks per second (each tick: three 288 frames and one 432 frame).
    #[arg(default_value_t = 25.0, value_parser = positive)]
    hz: f64,
    /// Seconds per setting.
    #[arg(default_value_t = 2.0, value_parser = positive)]
    seconds: f64,
}

fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 3600.0 => Ok(v),
        _ => Err(format!("expected a number in (0, 3600], got {text}")),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let Args { dir, hz, seconds } = <Args as clap::Parser>::parse();
    let tick = Duration::from_secs_f64(1.0 / hz);
    let ticks = (seconds * hz).round() as u64;

    let real = Device::open(Backend::Auto)?.backend() == BackendKind::HailoRt;
    let settings = [
        Setting {
            threshold: 0,
            timeout_ms: 0,
        },
        Setting {
            threshold: 2,
            timeout_ms: 20,
        },
        Setting {
            threshold: 3,
            timeout_ms: 50,
        },
        Setting {
            threshold: 6,
            timeout_ms: 100,
        },
    ];
    println!(
        "feed: 3 frames of backbone_288 and 1 of backbone_432 every {:.1} ms for {seconds} s (batch 1, priority 16)",
        tick.as_secs_f64() * 1e3
    );
    println!("threshold  timeout_ms  fps_288  fps_432  switches/s  ms/switch  busy_%");
    let mut last = None;
    for s in &settings {
        let (row, device) = run(real, &dir, s, tick, ticks)?;
        println!(
            "{:>9}  {:>10}  {:>7.1}  {:>7.1}  {:>10}  {:>9}  {:>6}",
            s.threshold,
            s.timeout_ms,
            row.fps[0],
            row.fps[1],
            opt(row.switches_per_s, 1),
            opt(row.ms_per_switch, 3),
            opt(row.busy, 1)
        );
        last = Some(device);
    }
    if let Some(device) = last {
        println!("backend: {}", device.describe());
        match device.backend() {
            BackendKind::Sim => {
                println!("outputs: synthetic (no reference ONNX registered); fps is on the simulated device clock");
                println!("assumed figures:");
                for a in device.assumptions() {
                    println!("  {} = {}", a.name, a.value);
                }
            }
            BackendKind::HailoRt => {
                println!(
                    "fps is wall-clock; switch counts need HAILO_TRACE=scheduler on the real part"
                )
            }
        }
    }
    Ok(())
}
