//! The live status display (indicatif): per camera fps and drops, per graph
//! device fps, switches per second, device busy share, per-stage latency
//! p50/p99 and the fit's error.
//!
//! Every field carries its label. When the terminal is tall enough the
//! display takes one line per topic; otherwise one compact line. Either way
//! no line is wider than the terminal (80 columns when it cannot be told), so
//! nothing is cut mid-field. Bars live in [`terminal`], which the binary's log
//! bridge suspends, so log lines print above the display instead of under it.

use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::npu::Device;
use crate::rig::stage::capture::CaptureThread;

use super::config::RigConfig;
use super::stats::{LiveStats, END_TO_END};

/// Width assumed when stderr is not a terminal or does not say.
const DEFAULT_WIDTH: usize = 80;
/// Rows the multi-line display needs besides room for the log above it.
const MULTI_LINE_MIN_ROWS: u16 = 12;

/// Every progress bar and status display the crate draws: one place, so that
/// log output can be printed above them (`indicatif_log_bridge`).
pub fn terminal() -> &'static MultiProgress {
    static TERMINAL: OnceLock<MultiProgress> = OnceLock::new();
    TERMINAL.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4)))
}

/// One camera's rate and drops over the last interval.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraFigures {
    pub name: String,
    pub fps: f64,
    /// Frames dropped anywhere since the start.
    pub dropped: u64,
}

/// What one redraw shows, already reduced to rates.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StatusFigures {
    pub elapsed: Duration,
    pub cameras: Vec<CameraFigures>,
    /// Per graph: name and completed frames per second.
    pub graphs: Vec<(String, f64)>,
    pub switches_per_s: f64,
    /// Share of wall time the modelled device was computing: only the simulator knows it.
    pub modelled_busy: Option<f64>,
    /// Per stage: name, p50 and p99 in ms.
    pub latency: Vec<(&'static str, f64, f64)>,
    /// The last MPJPE (mm) when ground truth exists, else the mean reprojection residual (px).
    pub fit: Option<FitFigure>,
}

/// The fit's error as the display states it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FitFigure {
    MpjpeMm(f64),
    ResidualPx(f64),
}

impl StatusFigures {
    /// The display: one line per topic when `multi_line`, else one compact
    /// line; every line at most `width` columns.
    pub fn render(&self, width: usize, multi_line: bool) -> String {
        let secs = self.elapsed.as_secs();
        let clock = format!("{}:{:02}", secs / 60, secs % 60);
        let lines = if multi_line {
            self.full_lines(&clock)
        } else {
            vec![self.compact_line(&clock, width)]
        };
        lines
            .iter()
            .map(|l| fit_width(l, width))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn full_lines(&self, clock: &str) -> Vec<String> {
        let mut lines = Vec::new();
        let cams: Vec<String> = self
            .cameras
            .iter()
            .map(|c| format!("{} {:.0} fps, {} dropped", c.name, c.fps, c.dropped))
            .collect();
        lines.push(format!("{clock} cameras: {}", cams.join("; ")));
        let graphs: Vec<String> = self
            .graphs
            .iter()
            .map(|(g, fps)| format!("{g} {fps:.0} fps"))
            .collect();
        let mut device = format!(
            "device: {}; {:.0} graph switches/s",
            graphs.join(", "),
            self.switches_per_s
        );
        if let Some(busy) = self.busy_text() {
            device += &format!("; {busy}");
        }
        lines.push(device);
        if !self.latency.is_empty() {
            let stages: Vec<String> = self
                .latency
                .iter()
                .map(|(s, p50, p99)| format!("{s} {p50:.1}/{p99:.1}"))
                .collect();
            lines.push(format!("latency p50/p99 ms: {}", stages.join(", ")));
        }
        if let Some(fit) = self.fit_text() {
            lines.push(format!("fit: {fit}"));
        }
        lines
    }

    /// The compact form: the fields in order of importance, each added only
    /// while the line still fits `width`.
    fn compact_line(&self, clock: &str, width: usize) -> String {
        let fps: Vec<String> = self
            .cameras
            .iter()
            .map(|c| format!("{:.0}", c.fps))
            .collect();
        let dropped: u64 = self.cameras.iter().map(|c| c.dropped).sum();
        let device: f64 = self.graphs.iter().map(|(_, f)| f).sum();
        let mut fields = vec![
            format!("{clock} cams {} fps, {dropped} dropped", fps.join("/")),
            format!("device {device:.0} fps"),
        ];
        if let Some(&(_, p50, _)) = self.latency.iter().find(|(s, ..)| *s == END_TO_END) {
            fields.push(format!("e2e {p50:.0} ms"));
        }
        fields.extend(self.fit_text());
        let mut line = String::new();
        for field in fields {
            let joined = if line.is_empty() {
                field
            } else {
                format!("{line} | {field}")
            };
            if !line.is_empty() && joined.chars().count() > width {
                break;
            }
            line = joined;
        }
        line
    }

    fn busy_text(&self) -> Option<String> {
        self.modelled_busy
            .map(|share| format!("busy {:.0}% of wall time (modelled)", 100.0 * share))
    }

    fn fit_text(&self) -> Option<String> {
        self.fit.map(|f| match f {
            FitFigure::MpjpeMm(mm) => format!("MPJPE {mm:.0} mm"),
            FitFigure::ResidualPx(px) => format!("residual {px:.1} px"),
        })
    }
}

/// `line` cut to `width` columns, with an ellipsis when cut.
fn fit_width(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Rates from the live counters: each call gives the figures over the time
/// since the last figures it gave (at least 0.4 s), so every reader (the
/// status line, the live tap) reduces the same counters the same way.
pub struct StatusRates {
    names: Vec<String>,
    graphs: Vec<String>,
    last: Option<(Duration, Vec<u64>, Vec<u64>, u64)>,
}

impl StatusRates {
    /// Rates for cameras and graphs of these names, in rig order.
    pub fn new(names: Vec<String>, graphs: Vec<String>) -> Self {
        Self {
            names,
            graphs,
            last: None,
        }
    }

    /// Forgets the last figures: the next call starts the rates afresh.
    pub fn restart(&mut self) {
        self.last = None;
    }

    /// The figures since the last call; none on the first call, or when
    /// less than 0.4 s has passed since the figures before.
    pub fn figures(
        &mut self,
        stats: &LiveStats,
        captures: &[CaptureThread],
        device: &Device,
        elapsed: Duration,
    ) -> Option<StatusFigures> {
        let frames: Vec<u64> = captures
            .iter()
            .map(|c| c.status.snapshot().frames)
            .collect();
        let graph_frames: Vec<u64> = stats
            .graphs
            .iter()
            .map(|g| g.completed.load(Ordering::Relaxed))
            .collect();
        let sim = device.sim_stats();
        let switches = sim
            .as_ref()
            .map_or(stats.app_switches.load(Ordering::Relaxed), |s| s.switches);
        let (t0, f0, g0, s0) =
            self.last
                .replace((elapsed, frames.clone(), graph_frames.clone(), switches))?;
        let dt = (elapsed - t0).as_secs_f64().max(1e-6);
        if dt < 0.4 {
            self.last = Some((t0, f0, g0, s0));
            return None;
        }
        let cameras = captures
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let snap = c.status.snapshot();
                let dropped = snap.queue_drops
                    + super::stats::DropStage::ALL
                        .iter()
                        .map(|&s| stats.cameras[i].dropped(s))
                        .sum::<u64>();
                CameraFigures {
                    name: self.names.get(i).cloned().unwrap_or_default(),
                    fps: frames[i].saturating_sub(f0[i]) as f64 / dt,
                    dropped,
                }
            })
            .collect();
        let lat = stats.latencies();
        let q = stats.fit_quality();
        Some(StatusFigures {
            elapsed,
            cameras,
            graphs: self
                .graphs
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    let n = graph_frames.get(i).copied().unwrap_or(0);
                    let n0 = g0.get(i).copied().unwrap_or(0);
                    (g.clone(), n.saturating_sub(n0) as f64 / dt)
                })
                .collect(),
            switches_per_s: switches.saturating_sub(s0) as f64 / dt,
            modelled_busy: sim
                .as_ref()
                .map(|s| s.busy_ns as f64 / s.now_ns.max(1) as f64),
            latency: ["npu", "decode", "fit", END_TO_END]
                .into_iter()
                .filter_map(|stage| {
                    let s = lat.stage(stage)?.summary()?;
                    Some((stage, s.p50_ms, s.p99_ms))
                })
                .collect(),
            fit: q
                .last_mpjpe_m
                .map(|m| FitFigure::MpjpeMm(m * 1e3))
                .or_else(|| q.residual_px().map(FitFigure::ResidualPx)),
        })
    }
}

/// The live display on stderr, redrawn from the live counters.
pub struct StatusLine {
    bar: ProgressBar,
    rates: StatusRates,
}

impl StatusLine {
    pub fn new(rig: &RigConfig, device: &Device) -> Self {
        let bar = terminal().add(ProgressBar::new_spinner());
        bar.set_style(
            ProgressStyle::with_template("{msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.println(format!("running on {}", device.describe()));
        Self {
            bar,
            rates: StatusRates::new(
                rig.cameras.iter().map(|c| c.name.clone()).collect(),
                rig.graphs.iter().map(|g| g.name.clone()).collect(),
            ),
        }
    }

    /// Redraws from the counters (rates over the time since the last update).
    pub fn update(
        &mut self,
        stats: &LiveStats,
        captures: &[CaptureThread],
        device: &Device,
        elapsed: Duration,
    ) {
        let Some(figures) = self.rates.figures(stats, captures, device, elapsed) else {
            return;
        };
        let term = console::Term::stderr();
        let (rows, cols) = term.size_checked().unwrap_or((0, DEFAULT_WIDTH as u16));
        self.bar
            .set_message(figures.render(usize::from(cols), rows >= MULTI_LINE_MIN_ROWS));
        self.bar.tick();
    }

    /// Leaves the last display on screen.
    pub fn finish(self) {
        self.bar.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> StatusFigures {
        StatusFigures {
            elapsed: Duration::from_secs(75),
            cameras: ["body_left", "body_front", "body_right", "face"]
                .iter()
                .map(|n| CameraFigures {
                    name: (*n).into(),
                    fps: 119.6,
                    dropped: 467,
                })
                .collect(),
            graphs: vec![
                ("backbone_288".into(), 358.8),
                ("backbone_432".into(), 119.6),
            ],
            switches_per_s: 61.0,
            modelled_busy: Some(0.28),
            latency: vec![
                ("npu", 34.8, 79.9),
                ("decode", 51.2, 88.0),
                ("fit", 0.3, 0.6),
                (END_TO_END, 95.1, 170.4),
            ],
            fit: Some(FitFigure::MpjpeMm(31.4)),
        }
    }

    #[test]
    fn every_line_fits_80_columns_in_both_forms() {
        for multi in [false, true] {
            let text = demo().render(80, multi);
            for line in text.lines() {
                assert!(
                    line.chars().count() <= 80,
                    "{} columns: {line}",
                    line.chars().count()
                );
            }
        }
        // Negative control: at a wider terminal the full form is wider than
        // 80, so the bound above is what cuts it.
        let wide = demo().render(400, true);
        assert!(wide.lines().any(|l| l.chars().count() > 80), "{wide}");
    }

    #[test]
    fn fields_are_labelled_and_the_busy_share_says_what_it_measures() {
        let text = demo().render(400, true);
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(
            text.starts_with("1:15 cameras: body_left 120 fps, 467 dropped;"),
            "{text}"
        );
        assert!(text.contains("backbone_288 359 fps"), "{text}");
        assert!(text.contains("61 graph switches/s"), "{text}");
        assert!(text.contains("busy 28% of wall time (modelled)"), "{text}");
        assert!(text.contains("latency p50/p99 ms: npu 34.8/79.9"), "{text}");
        assert!(text.contains("fit: MPJPE 31 mm"), "{text}");
        assert!(!text.contains(" d467"), "{text}");
        let compact = demo().render(400, false);
        assert_eq!(
            compact,
            "1:15 cams 120/120/120/120 fps, 1868 dropped | device 478 fps | e2e 95 ms | MPJPE 31 mm"
        );
        // At 80 columns the compact form drops whole fields from the end
        // rather than cutting one.
        let narrow = demo().render(80, false);
        assert_eq!(
            narrow,
            "1:15 cams 120/120/120/120 fps, 1868 dropped | device 478 fps | e2e 95 ms"
        );
    }

    #[test]
    fn a_cut_line_ends_in_an_ellipsis() {
        assert_eq!(fit_width("abcdef", 4), "abc…");
        assert_eq!(fit_width("abcd", 4), "abcd");
    }
}
