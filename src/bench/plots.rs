//! Plots of a sweep, each as SVG and PNG: fps vs batch, utilisation vs batch, host latency CDF
//! per graph, and the switch-cost histogram.
//!
//! PNG text is drawn with the bundled DejaVu Sans through ab_glyph, so no system font library
//! is needed; SVG text is left to the viewer's fonts.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{BenchError, Sweep};

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

fn register_font() {
    REGISTER.call_once(|| {
        if plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            log::warn!("the bundled font did not load; PNG plots will lack text");
        }
    });
}

const SIZE: (u32, u32) = (900, 560);
/// The "tab10" palette, so up to ten series stay distinguishable.
const COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A chart with linear f64 axes.
type Plane<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// One named line.
type Series = (String, Vec<(f64, f64)>);

/// What a plot draws.
enum Chart<'a> {
    Lines {
        x_label: &'a str,
        y_label: &'a str,
        series: &'a [Series],
    },
    Histogram {
        x_label: &'a str,
        values: &'a [f64],
    },
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    chart: &Chart<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    match chart {
        Chart::Lines {
            x_label,
            y_label,
            series,
        } => {
            let points = series.iter().flat_map(|(_, p)| p.iter());
            let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
            for &(x, y) in points {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y1 = y1.max(y);
            }
            if !x0.is_finite() {
                (x0, x1) = (0.0, 1.0);
            }
            if x1 <= x0 {
                x1 = x0 + 1.0;
            }
            // Headroom above the data for the legend (about 20 px per entry).
            let headroom = 1.1 + 0.05 * series.len() as f64;
            let y1 = if y1 > 0.0 { y1 * headroom } else { 1.0 };
            let mut c = axes(&root, title, (x0..x1, x_label), (0.0..y1, y_label))?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let colour = COLOURS[i % COLOURS.len()];
                c.draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                    });
                if pts.len() < 50 {
                    c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
                }
            }
            c.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 14))
                .position(SeriesLabelPosition::UpperRight)
                .draw()?;
        }
        Chart::Histogram { x_label, values } => {
            let (lo, hi) = values
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                    (a.min(v), b.max(v))
                });
            let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
            let bins = 20usize;
            let span = if hi > lo { hi - lo } else { lo.abs().max(1e-3) };
            let (start, width) = if hi > lo {
                (lo, span / bins as f64)
            } else {
                (lo - span / 2.0, span / bins as f64)
            };
            let mut counts = vec![0u32; bins];
            for &v in values.iter() {
                let i = (((v - start) / width) as usize).min(bins - 1);
                counts[i] += 1;
            }
            let top = f64::from(counts.iter().copied().max().unwrap_or(0).max(1)) * 1.1;
            let end = start + width * bins as f64;
            let mut c = axes(&root, title, (start..end, x_label), (0.0..top, "switches"))?;
            c.draw_series(
                counts
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(i, &n)| {
                        let x = start + width * i as f64;
                        Rectangle::new([(x, 0.0), (x + width, f64::from(n))], COLOURS[0].filled())
                    }),
            )?;
            if values.is_empty() {
                root.draw(&Text::new(
                    "no switches in this sweep (run two graphs: --graphs two or both)",
                    (120, 260),
                    ("sans-serif", 18),
                ))?;
            }
        }
    }
    root.present()
}

/// A titled chart on `root` with its labelled axes and grid drawn.
fn axes<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    (x, x_label): (Range<f64>, &str),
    (y, y_label): (Range<f64>, &str),
) -> Result<Plane<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut c = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)?;
    c.configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 14))
        .draw()?;
    Ok(c)
}

fn both(
    dir: &Path,
    stem: &str,
    title: &str,
    chart: &Chart<'_>,
) -> Result<Vec<PathBuf>, BenchError> {
    register_font();
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    let fail = |path: &Path, reason: &dyn std::fmt::Display| BenchError::Write {
        path: path.display().to_string(),
        reason: reason.to_string(),
    };
    draw(
        SVGBackend::new(&svg, SIZE).into_drawing_area(),
        title,
        chart,
    )
    .map_err(|r| fail(&svg, &r))?;
    draw(
        BitMapBackend::new(&png, SIZE).into_drawing_area(),
        title,
        chart,
    )
    .map_err(|r| fail(&png, &r))?;
    Ok(vec![svg, png])
}

/// Writes every plot of `sweep` into `dir`; returns the files written.
///
/// # Errors
/// [`BenchError::Write`] naming the file.
pub fn write_plots(sweep: &Sweep, dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    // Per graph and mode: the best value at each batch over thresholds and timeouts.
    let mut fps: BTreeMap<String, BTreeMap<u16, f64>> = BTreeMap::new();
    let mut compute: BTreeMap<String, BTreeMap<u16, f64>> = BTreeMap::new();
    let mut busy: BTreeMap<String, BTreeMap<u16, f64>> = BTreeMap::new();
    let mut cdf: BTreeMap<String, (f64, Vec<f64>)> = BTreeMap::new();
    let mut switches = Vec::new();
    for p in &sweep.points {
        let m = &p.measurement;
        if let Some(b) = &m.device.busy {
            let key = if p.mode == "alone" {
                format!("busy %, {} (alone)", m.graphs[0].name)
            } else {
                "busy %, pair".to_owned()
            };
            let e = busy.entry(key).or_default().entry(m.batch).or_insert(0.0);
            *e = e.max(100.0 * b.value);
        }
        switches.extend(m.device.switch_ms.iter().copied());
        for g in &m.graphs {
            let key = format!("{} ({})", g.name, p.mode);
            let e = fps
                .entry(key.clone())
                .or_default()
                .entry(m.batch)
                .or_insert(0.0);
            *e = e.max(g.fps.value);
            let e = compute
                .entry(format!("compute % INT8, {key}"))
                .or_default()
                .entry(m.batch)
                .or_insert(0.0);
            *e = e.max(100.0 * g.compute.of_int8_peak.value);
            if let Some(h) = &g.host_latency {
                let e = cdf.entry(g.name.clone()).or_insert((0.0, Vec::new()));
                if g.fps.value > e.0 {
                    *e = (g.fps.value, h.samples_ms.clone());
                }
            }
        }
    }
    let lines = |m: BTreeMap<String, BTreeMap<u16, f64>>| -> Vec<Series> {
        m.into_iter()
            .map(|(k, v)| (k, v.into_iter().map(|(b, y)| (f64::from(b), y)).collect()))
            .collect()
    };
    let fps = lines(fps);
    let mut util = lines(compute);
    util.extend(lines(busy));
    let cdf: Vec<Series> = cdf
        .into_iter()
        .map(|(name, (_, samples))| {
            let n = samples.len().max(1) as f64;
            let step = (samples.len() / 400).max(1);
            let pts = samples
                .iter()
                .enumerate()
                .filter(|(i, _)| i % step == 0 || *i + 1 == samples.len())
                .map(|(i, &ms)| (ms, (i + 1) as f64 / n))
                .collect();
            (name, pts)
        })
        .collect();
    let mut files = Vec::new();
    let run = &sweep.backend;
    files.extend(both(
        dir,
        "fps_vs_batch",
        "Device fps vs batch (best over threshold/timeout)",
        &Chart::Lines {
            x_label: "batch size",
            y_label: "fps",
            series: &fps,
        },
    )?);
    files.extend(both(
        dir,
        "utilisation_vs_batch",
        "Compute % of the INT8 peak and busy % vs batch",
        &Chart::Lines {
            x_label: "batch size",
            y_label: "percent",
            series: &util,
        },
    )?);
    files.extend(both(
        dir,
        "latency_cdf",
        "Host-observed latency CDF per graph (submit to completion)",
        &Chart::Lines {
            x_label: "latency, ms",
            y_label: "fraction of frames",
            series: &cdf,
        },
    )?);
    files.extend(both(
        dir,
        "switch_cost_histogram",
        "Time per graph switch",
        &Chart::Histogram {
            x_label: "switch time, ms",
            values: &switches,
        },
    )?);
    log::info!("plots of {run} written to {}", dir.display());
    Ok(files)
}
