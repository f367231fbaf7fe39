//! The pipeline's targets, measured and printed (a bench binary, not criterion:
//! each figure is one timed run of the whole rig).
//!
//! ```sh
//! cargo bench --bench bench_pipeline                 # all four, ~90 s
//! cargo bench --bench bench_pipeline -- demo host    # a subset: demo, host, soak, serve
//! HAILO_EDGE_DEMO_SECS=20 HAILO_EDGE_SOAK_SECS=60 cargo bench --bench bench_pipeline
//! ```
//!
//! - demo: the demo rig on the real-time simulator (decoder and fit for real):
//!   (a) does it sustain 120 fps per camera with no drops, or which stage is the
//!   bottleneck and by how much; (b) capture-to-fitted-body latency p99 against
//!   two frame periods; (b') the same rig at 80% of the rate the machine and
//!   the modelled device sustain, where nothing has to queue.
//! - host: (c) CPU of the pipeline itself (NPU stage, decoder-thread overhead,
//!   sync, sinks; excluding decode and fit) per frame on the zero-time device,
//!   against 100 us, and the same split by thread (preprocessing into the HEF
//!   inputs, the NPU stage's waiting and the rest of it, decoder threads,
//!   sync + sinks).
//! - soak: (d) twice the sustainable load (a fit stage held to half the offered
//!   rate) for `HAILO_EDGE_SOAK_SECS` (60): RSS, threads and open fds at 10
//!   minutes (or a sixth of a shorter run) against the last sample, and the
//!   frame accounting ([`hailo_edge::rig::soak`]).
//! - serve: (e) the host run of (c) three times a round: without the
//!   dashboard, with it and no browser, and with one client reading the
//!   WebSocket; the pipeline's CPU per frame and the rest of the process's
//!   (capture threads, the dashboard's hub and web threads); medians over
//!   `HAILO_EDGE_SERVE_ROUNDS` rounds (5).

use std::time::Duration;

use hailo_edge::npu::sim::DeviceProfile;
use hailo_edge::rig::config::SimProfileName;
use hailo_edge::rig::stage::live::LiveTap;
use hailo_edge::rig::{run, Report, RigConfig, RunOptions};
use hailo_edge::serve::Server;

fn secs(var: &str, default: f64) -> f64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn accounting(report: &Report) -> String {
    let parts: Vec<String> = report
        .cameras
        .iter()
        .map(|c| {
            format!(
                "{} {}={}+{}+{}{}",
                c.name,
                c.frames.captured,
                c.frames.processed,
                c.frames.dropped_total(),
                c.frames.in_flight,
                if c.accounting_ok { "" } else { " (!)" }
            )
        })
        .collect();
    format!(
        "{} [{}]",
        if report.accounting_ok {
            "adds up"
        } else {
            "DOES NOT ADD UP"
        },
        parts.join(", ")
    )
}

/// The demo runs' length: the variable that sets it, and the seconds without it.
const DEMO_SECS: (&str, f64) = ("HAILO_EDGE_DEMO_SECS", 15.0);

/// Runs `rig` with `options` for the seconds `(var, default)` gives; returns them and the
/// report.
fn timed(
    rig: &RigConfig,
    label: &str,
    (var, default): (&str, f64),
    options: RunOptions,
) -> (f64, Report) {
    let d = secs(var, default);
    let options = RunOptions {
        duration: Some(Duration::from_secs_f64(d)),
        ..options
    };
    let report = run(rig, label, &options).unwrap_or_else(|e| panic!("{label}: {e}"));
    (d, report)
}

/// Runs the demo rig at 120 fps; returns the per-camera rate this machine and
/// the (modelled) device could sustain.
fn demo() -> Option<f64> {
    let rig = RigConfig::demo(&RigConfig::demo_fixtures_dir().expect("the demo HEFs"));
    let (d, report) = timed(&rig, "demo", DEMO_SECS, RunOptions::default());
    println!(
        "== (a) demo rig, {d} s on {}",
        report.what_ran.ran_on.device
    );
    for c in &report.cameras {
        println!(
            "   {:<6} {:.1} fps captured, {:.1} fps fitted; frames: {}",
            c.name, c.captured_fps, c.processed_fps, c.frames
        );
    }
    let h = &report.host;
    println!(
        "   CPU: decode {:.2} ms/frame ({} x{}), fit {:.2} ms/group, pipeline {:.1} us/frame, other {:.1} us/frame, {} cores",
        h.decode_ms_per_frame.unwrap_or(f64::NAN),
        report.what_ran.decoder,
        report.what_ran.decoder_threads,
        h.fit_ms_per_group.unwrap_or(f64::NAN),
        h.pipeline_us_per_frame.unwrap_or(f64::NAN),
        h.other_us_per_frame.unwrap_or(f64::NAN),
        h.cores
    );
    println!("   {}", report.verdict.text);
    println!("   accounting: {}", accounting(&report));
    let period_ms = 1e3 / 120.0;
    match report.end_to_end() {
        Some(e) => println!(
            "== (b) capture -> fitted body: p50 {:.1} ms, p99 {:.1} ms; target p99 <= {:.1} ms (2 frame periods): {}",
            e.p50_ms,
            e.p99_ms,
            2.0 * period_ms,
            if e.p99_ms <= 2.0 * period_ms { "met" } else { "NOT met" }
        ),
        None => println!("== (b) no frame was fitted"),
    }
    if let Some(m) = report.fit.mpjpe_mm {
        println!(
            "   fit: {} groups, MPJPE {m:.1} mm against ground truth",
            report.fit.fits
        );
    }
    let v = &report.verdict;
    let cpu: f64 = v.cores_needed.values().sum();
    let host_fps = 120.0 * (report.host.cores as f64 / cpu.max(1e-9)).min(1.0);
    let device_fps = v
        .device_share_needed
        .map_or(f64::INFINITY, |d| 120.0 / d.max(1.0));
    Some(host_fps.min(device_fps))
}

/// (b) once more at a rate the chain sustains: what the pipeline adds to the
/// latency floor when nothing has to queue.
fn sustainable(fps: f64) {
    let mut rig = RigConfig::demo(&RigConfig::demo_fixtures_dir().expect("the demo HEFs"));
    for c in &mut rig.cameras {
        c.fps = fps;
    }
    let (d, report) = timed(
        &rig,
        "demo at a sustainable rate",
        DEMO_SECS,
        RunOptions::default(),
    );
    let period_ms = 1e3 / fps;
    let dropped: u64 = report
        .cameras
        .iter()
        .map(|c| c.frames.dropped_total())
        .sum();
    let captured: u64 = report.cameras.iter().map(|c| c.frames.captured).sum();
    match report.end_to_end() {
        Some(e) => println!(
            "== (b') the demo rig at {fps:.1} fps per camera, {d} s: {dropped} of {captured} frames dropped; capture -> fitted body p50 {:.1} ms, p99 {:.1} ms = {:.2} frame periods; target 2: {}; latency floor {:.1} ms",
            e.p50_ms,
            e.p99_ms,
            e.p99_ms / period_ms,
            if e.p99_ms <= 2.0 * period_ms { "met" } else { "NOT met" },
            report.verdict.latency_floor_ms.unwrap_or(f64::NAN),
        ),
        None => println!("== (b') no frame was fitted at {fps:.1} fps"),
    }
}

/// The pipeline-only run on the zero-time device that (c) and (e) measure.
fn host_run(label: &str, live: Option<LiveTap>) -> (f64, Report) {
    let mut rig = RigConfig::demo(&RigConfig::demo_fixtures_dir().expect("the demo HEFs"));
    rig.device.profile = SimProfileName::ZeroTime;
    timed(
        &rig,
        label,
        ("HAILO_EDGE_HOST_SECS", 10.0),
        RunOptions {
            pipeline_only: true,
            profile: Some(DeviceProfile::zero_time()),
            live,
            ..RunOptions::default()
        },
    )
}

fn host() {
    let (d, report) = host_run("demo (pipeline only, zero-time device)", None);
    let us = report.host.pipeline_us_per_frame.unwrap_or(f64::NAN);
    let fps: f64 = report.cameras.iter().map(|c| c.processed_fps).sum();
    println!(
        "== (c) pipeline host CPU (thread CPU time: NPU stage + sync + sinks; decode and fit skipped), zero-time device, {d} s: {us:.1} us/frame at {fps:.0} frames/s; target <= 100 us: {}",
        if us <= 100.0 { "met" } else { "NOT met" }
    );
    if let Some(b) = &report.host.pipeline_breakdown_us {
        println!(
            "   by thread, us CPU per frame: NPU stage: preprocessing (YUYV 288/432 -> RGB into the HEF input) {:.1}, waiting for work {:.1}, the rest (queues, batching, submission, routing) {:.1}; decoder threads {:.1}; sync + sinks {:.1}",
            b.preprocess, b.npu_stage_wait, b.npu_stage_rest, b.decode_overhead, b.sync_sinks
        );
    }
    if let Some(p) = report.latency_ms.get("preprocess") {
        println!(
            "   preprocessing wall time per frame: p50 {:.3} ms, p99 {:.3} ms",
            p.p50_ms, p.p99_ms
        );
    }
    println!("   accounting: {}", accounting(&report));
}

/// One run of (e): the host run without the dashboard (0), with it and no browser (1), with
/// one client reading every message (2); the report and the messages and bytes it read.
fn serve_variant(variant: usize) -> (Report, u64, u64) {
    let cameras = RigConfig::demo(&RigConfig::demo_fixtures_dir().expect("the demo HEFs"))
        .cameras
        .len();
    let start =
        || Server::start("127.0.0.1:0".parse().unwrap(), cameras).expect("start the dashboard");
    if variant == 0 {
        return (host_run("host, no dashboard", None).1, 0, 0);
    }
    let server = start();
    if variant == 1 {
        let (_, none) = host_run("host, dashboard, no browser", Some(server.tap()));
        server.stop();
        return (none, 0, 0);
    }
    let url = format!("ws://{}/ws", server.address());
    let reader = std::thread::spawn(move || {
        let (mut ws, _) = tungstenite::connect(url).expect("the dashboard's WebSocket");
        let (mut messages, mut bytes) = (0u64, 0u64);
        while let Ok(m) = ws.read() {
            if m.is_close() {
                break;
            }
            messages += 1;
            bytes += m.len() as u64;
        }
        (messages, bytes)
    });
    let (_, one) = host_run("host, dashboard, one client", Some(server.tap()));
    server.stop();
    let (messages, bytes) = reader.join().unwrap_or_default();
    (one, messages, bytes)
}

/// One round of (e): the three runs, starting with run `round % 3` so that none is always
/// first or last in the process; per run, the pipeline's and the rest's CPU per frame.
fn serve_round(round: usize) -> [(f64, f64); 3] {
    let mut out = [(f64::NAN, f64::NAN); 3];
    let mut read = String::new();
    for k in 0..3 {
        let v = (round + k) % 3;
        let (report, messages, bytes) = serve_variant(v);
        let h = &report.host;
        out[v] = (
            h.pipeline_us_per_frame.unwrap_or(f64::NAN),
            h.other_us_per_frame.unwrap_or(f64::NAN),
        );
        if let (2, Some(s)) = (v, &report.serve) {
            read = format!(
                "the client read {messages} messages, {:.1} MB ({} frames tapped, {} messages dropped)",
                bytes as f64 / 1e6,
                s.frames_tapped,
                s.messages_dropped_slow
            );
        }
    }
    let [a, b, c] = out;
    println!(
        "   round {round}: pipeline {:.1} / {:.1} / {:.1} us/frame, rest {:.1} / {:.1} / {:.1} us/frame; {read}",
        a.0, b.0, c.0, a.1, b.1, c.1
    );
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// (e) The dashboard's cost: rounds of the host run without it, with it and no browser, with
/// one client that reads every message, interleaved so that a machine's changing load falls on
/// all three alike; the medians.
fn serve() {
    let rounds = secs("HAILO_EDGE_SERVE_ROUNDS", 5.0).max(1.0) as usize;
    let d = secs("HAILO_EDGE_HOST_SECS", 10.0);
    println!(
        "== (e) the dashboard's host cost: {rounds} rounds of pipeline-only runs of {d} s on the zero-time device, each without --serve / --serve and no browser / --serve and one client; pipeline = NPU stage, decoder threads, sync + sinks; rest = the rest of the process (capture threads, and the dashboard's hub and web threads)"
    );
    let all: Vec<[(f64, f64); 3]> = (1..=rounds).map(serve_round).collect();
    let med = |i: usize, pipeline: bool| {
        median(
            all.iter()
                .map(|r| if pipeline { r[i].0 } else { r[i].1 })
                .collect(),
        )
    };
    let (base, none, one) = (med(0, true), med(1, true), med(2, true));
    println!(
        "   medians: pipeline {base:.1} / {none:.1} / {one:.1} us/frame, rest {:.1} / {:.1} / {:.1} us/frame",
        med(0, false),
        med(1, false),
        med(2, false)
    );
    println!(
        "   pipeline cost against no dashboard (medians): {:+.1}% with no browser (target 0%), {:+.1}% with one client (target <= 10%)",
        100.0 * (none / base - 1.0),
        100.0 * (one / base - 1.0)
    );
}

fn soak() {
    let fixtures = RigConfig::demo_fixtures_dir().expect("the demo HEFs");
    let d = Duration::from_secs_f64(secs("HAILO_EDGE_SOAK_SECS", 60.0));
    let soak = hailo_edge::rig::soak::soak(&fixtures, d).unwrap_or_else(|e| panic!("soak: {e}"));
    let report = &soak.report;
    let offered: f64 = report.cameras.iter().map(|c| c.captured_fps).sum();
    let done: f64 = report.cameras.iter().map(|c| c.processed_fps).sum();
    let (r, e) = (&soak.reference, &soak.end);
    println!(
        "== (d) {:.0} s at {offered:.0} frames/s offered, {done:.0} processed (sustainable {:.0}); {} samples",
        d.as_secs_f64(),
        hailo_edge::rig::soak::SUSTAINABLE_VIEWS_PER_S,
        soak.samples
    );
    println!(
        "   at {:.0} s: RSS {:.1} MB, {} threads, {} fds; at {:.0} s: RSS {:.1} MB ({:+.1}%), {} threads, {} fds",
        r.at_s,
        r.rss_bytes as f64 / 1e6,
        r.threads,
        r.fds,
        e.at_s,
        e.rss_bytes as f64 / 1e6,
        100.0 * (e.rss_bytes as f64 / r.rss_bytes as f64 - 1.0),
        e.threads,
        e.fds
    );
    println!("   accounting: {}", accounting(report));
    match soak.failures().as_slice() {
        [] => {
            println!("   targets (RSS within 10%, threads and fds constant, accounting exact): met")
        }
        f => println!("   targets NOT met: {}", f.join("; ")),
    }
}

fn main() {
    // As `hailo-edge run` does for a rig with `decoder.retain_memory` (the default).
    hailo_edge::rig::alloc::retain_freed_memory();
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    if want("demo") {
        let fps = demo();
        if let Some(fps) = fps.filter(|f| f.is_finite() && *f > 0.0) {
            // A margin below the estimate, for the machine's jitter.
            sustainable((0.8 * fps).max(1.0));
        }
    }
    if want("host") {
        host();
    }
    if want("soak") {
        soak();
    }
    if want("serve") {
        serve();
    }
}
