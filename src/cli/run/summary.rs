//! What `run` prints: the decoders before the run, and the summary after it. The summary
//! is a courtesy (the report file is the record), so a closed pipe ends it quietly.

use std::io::Write;

use hailo_edge::decode::Pairing;
use hailo_edge::output::printable;
use hailo_edge::rig::decoders::DecoderChoice;
use hailo_edge::rig::{Report, RigConfig};

/// One line to `out`; a write that fails (a closed pipe) is not an error of the run.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {
        let _ = writeln!($out, $($arg)*);
    };
}

/// What will run, before it runs: each graph's decoder and how the HEF feeds it.
pub(super) fn print_decoders(
    out: &mut dyn Write,
    rig: &RigConfig,
    choices: &[DecoderChoice],
    pairings: &[Pairing],
) {
    for ((g, pairing), choice) in rig.graphs.iter().zip(pairings).zip(choices) {
        say!(
            out,
            "graph {}: decoder {}",
            printable(&g.name),
            printable(&choice.describe())
        );
        say!(out, "  {}", pairing.split_text());
        for line in pairing.lines() {
            say!(out, "  {line}");
        }
    }
}

/// The summary of a finished run: what ran, each camera's and graph's counts, latency, the
/// fit, the verdict, and what did not end well (a drain cut short, a failed output).
pub(super) fn print_summary(out: &mut dyn Write, rig: &RigConfig, report: &Report) {
    let w = &report.what_ran;
    say!(
        out,
        "ran: {} on {} ({})",
        w.rig,
        w.ran_on.device,
        w.switching
    );
    if let Some(warning) = &w.ran_on.backend_warning {
        eprintln!("WARNING: {warning}");
    }
    say!(
        out,
        "decoder: {} x{} threads; fit keypoints: {}",
        w.decoder,
        w.decoder_threads,
        w.fit_keypoints
    );
    counts(out, report);
    latency(out, report);
    results(out, report);
    say!(out, "{}", report.verdict.text);
    for n in &w.notes {
        say!(out, "note: {n}");
    }
    if let Some(p) = &rig.output.report {
        say!(out, "report: {}", printable(&p.display().to_string()));
    }
    warnings(report);
}

/// Each camera's frames and each graph's jobs, with a graph's fault where it broke.
fn counts(out: &mut dyn Write, report: &Report) {
    for c in &report.cameras {
        say!(
            out,
            "camera {:<6} captured {:>6} processed {:>6} dropped {:>6} ({:.1} fps in, {:.1} fps fitted){}",
            printable(&c.name),
            c.frames.captured,
            c.frames.processed,
            c.frames.dropped_total(),
            c.captured_fps,
            c.processed_fps,
            if c.accounting_ok { "" } else { "  ACCOUNTING MISMATCH" }
        );
    }
    for g in &report.graphs {
        let name = printable(&g.name);
        say!(
            out,
            "graph {name:<6} device {:.1} fps ({} frames in {} jobs)",
            g.device_fps.value,
            g.frames,
            g.jobs
        );
        if let Some(fault) = &g.fault {
            say!(
                out,
                "graph {name:<6} broken by: {}; down {:.0} ms; configured again: {}, failed attempts: {}",
                printable(fault),
                g.down_ms,
                g.reconfigured,
                g.reconfigure_failed
            );
        }
    }
}

/// The switch rate and the end-to-end latency, in milliseconds and in frame periods of the
/// slowest camera (the rate at which bodies are fitted).
fn latency(out: &mut dyn Write, report: &Report) {
    if let Some(s) = &report.switching.switches_per_s {
        say!(out, "switches: {:.1}/s", s.value);
    }
    let Some(e) = report.end_to_end() else {
        return;
    };
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
    say!(
        out,
        "end to end: p50 {:.1} ms, p99 {:.1} ms{periods}",
        e.p50_ms,
        e.p99_ms
    );
}

/// What the run gave: the fit's error, the framing precision and the dashboard's clients.
fn results(out: &mut dyn Write, report: &Report) {
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
        say!(
            out,
            "fit: {} groups, MPJPE {m:.1} mm{share}",
            report.fit.fits
        );
    } else if let Some(r) = report.fit.residual_px {
        say!(
            out,
            "fit: {} groups, residual {r:.1} px{share}",
            report.fit.fits
        );
    }
    if let Some(framing) = &report.framing {
        for line in hailo_edge::camera::calib::framing::render(framing).lines() {
            say!(out, "{}", printable(line));
        }
    }
    if let Some(s) = &report.serve {
        say!(
            out,
            "dashboard: {} clients served; {} dropped for not keeping up, {} messages dropped for slow clients",
            s.clients_served,
            s.clients_dropped_slow,
            s.messages_dropped_slow
        );
    }
}

/// What did not end well, on standard error: a drain cut short, an output that failed.
fn warnings(report: &Report) {
    let d = &report.drain;
    if !d.completed {
        eprintln!(
            "WARNING: the drain did not end within {:.1} s: still running: {}; {} frames in flight",
            d.timeout_s,
            d.waiting_for.join(", "),
            d.frames_in_flight
        );
    }
    for f in &report.output_failures {
        eprintln!(
            "error: output {} {} failed: {}; {} items not written (the other outputs went on)",
            f.sink,
            printable(&f.path),
            f.error,
            f.items_lost
        );
    }
}
