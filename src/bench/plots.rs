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

/// Lines over an axis.
struct Lines<'a> {
    x_label: &'a str,
    y_label: &'a str,
    series: &'a [Series],
    /// The x values are batch sizes: ticks at whole numbers only.
    whole_x: bool,
    /// The y axis's fixed top (a CDF ends at 1); `None`: the data's, plus room for the legend.
    y_top: Option<f64>,
    /// Writes each point's value beside it, with this suffix (e.g. `%`).
    point_labels: Option<&'a str>,
    /// Where the legend sits: where the lines are not.
    legend: SeriesLabelPosition,
    /// Series whose names start with this are dashed, each with its own dash
    /// length and unlabelled, so lines that coincide (every busy share at
    /// 100 %) all stay visible.
    dashed: Option<&'a str>,
}

/// What a plot draws.
enum Chart<'a> {
    Lines(Lines<'a>),
    Histogram { x_label: &'a str, values: &'a [f64] },
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    chart: &Chart<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    match chart {
        Chart::Lines(lines) => draw_lines(&root, title, lines)?,
        Chart::Histogram { x_label, values } => draw_histogram(&root, title, x_label, values)?,
    }
    root.present()
}

/// Lines over their data's range (whole-number x ticks where `whole_x`), with headroom for
/// the legend, dots where the points are few and their values where asked.
fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    lines: &Lines<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let Lines {
        x_label,
        y_label,
        series,
        ..
    } = lines;
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
    if lines.whole_x {
        // Half a batch of margin, so the end points and their labels stay inside.
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    } else if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    // Headroom above the data for the legend (about 20 px per entry).
    let headroom = 1.1 + 0.05 * series.len() as f64;
    let y1 = match lines.y_top {
        Some(top) => top,
        None if y1 > 0.0 => y1 * headroom,
        None => 1.0,
    };
    let whole = lines.whole_x.then_some((x0, x1));
    let mut c = axes(root, title, (x0..x1, x_label), (0.0..y1, y_label), whole)?;
    let mut dashes = 0u32;
    for (i, (name, pts)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let dashed = lines.dashed.is_some_and(|p| name.starts_with(p));
        let style = colour.stroke_width(2);
        let drawn = if dashed {
            let dash = 6 + 6 * dashes;
            dashes += 1;
            c.draw_series(DashedLineSeries::new(
                pts.iter().copied(),
                dash,
                dash,
                style,
            ))?
        } else {
            c.draw_series(LineSeries::new(pts.iter().copied(), style))?
        };
        drawn.label(name.as_str()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
        });
        if pts.len() < 50 {
            c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
        }
        if let Some(unit) = lines.point_labels.filter(|_| pts.len() <= 16 && !dashed) {
            c.draw_series(pts.iter().map(|&(x, y)| {
                Text::new(
                    format!("{}{unit}", value_text(y)),
                    (x, y),
                    ("sans-serif", 12).into_font().color(&colour),
                )
            }))?;
        }
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(lines.legend.clone())
        .draw()?;
    Ok(())
}

/// Twenty bins over the values' range (a range around the value when they are all one),
/// or a note when there are none.
fn draw_histogram<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    values: &[f64],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
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
    for &v in values {
        let i = (((v - start) / width) as usize).min(bins - 1);
        counts[i] += 1;
    }
    let top = f64::from(counts.iter().copied().max().unwrap_or(0).max(1)) * 1.1;
    let end = start + width * bins as f64;
    let mut c = axes(
        root,
        title,
        (start..end, x_label),
        (0.0..top, "switches"),
        None,
    )?;
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
    Ok(())
}

/// A value as a point label: three significant figures, no trailing zeros.
fn value_text(v: f64) -> String {
    let decimals = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// A titled chart on `root` with its labelled axes and grid drawn. With
/// `whole_x` (the x range, half a step beyond whole numbers) the x ticks
/// stand at whole numbers only, as batch sizes do.
fn axes<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    (x, x_label): (Range<f64>, &str),
    (y, y_label): (Range<f64>, &str),
    whole_x: Option<(f64, f64)>,
) -> Result<Plane<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut c = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)?;
    let whole = |v: &f64| format!("{v:.0}");
    let mut mesh = c.configure_mesh();
    mesh.x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 14));
    if let Some((x0, x1)) = whole_x {
        // One tick per whole number in range (plotters puts ticks at round
        // steps, so a count of whole numbers lands them on whole numbers);
        // a formatter alone would print two ticks between batches as one.
        let count = (x1 - x0).floor().max(1.0) as usize;
        mesh.x_labels(count.min(32)).x_label_formatter(&whole);
    }
    mesh.draw()?;
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

/// Where a sweep's figures come from, for every plot's title: `measured on
/// <device>` when every point ran on a part, else `modelled (simulator)`.
fn provenance(sweep: &Sweep) -> String {
    let mut ran = sweep.points.iter().map(|p| &p.measurement);
    match ran.next() {
        Some(first) if first.on_device && ran.all(|m| m.on_device) => {
            format!("measured on {}", crate::output::printable(&first.device_id))
        }
        _ => "modelled (simulator)".to_owned(),
    }
}

/// What the plots draw, gathered from a sweep's points.
struct Curves {
    /// Per graph and mode: the best fps at each batch over thresholds and timeouts.
    fps: Vec<Series>,
    /// Compute % of the INT8 peak per graph and mode, then busy % (alone, pair); the best
    /// at each batch.
    util: Vec<Series>,
    /// Per graph: the latency CDF of its point with the highest fps.
    cdf: Vec<Series>,
    /// Every switch's time, ms.
    switches: Vec<f64>,
}

impl Curves {
    fn of(sweep: &Sweep) -> Self {
        // Per graph and mode: the best value at each batch over thresholds and timeouts.
        let mut fps: BTreeMap<String, BTreeMap<u16, f64>> = BTreeMap::new();
        let mut compute: BTreeMap<String, BTreeMap<u16, f64>> = BTreeMap::new();
        let mut busy: BTreeMap<String, BTreeMap<u16, f64>> = BTreeMap::new();
        // Per graph: the point with the highest fps, whose latencies the CDF shows.
        let mut cdf: BTreeMap<String, (f64, String, Vec<f64>)> = BTreeMap::new();
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
                    let e = cdf
                        .entry(g.name.clone())
                        .or_insert((0.0, String::new(), Vec::new()));
                    if g.fps.value > e.0 {
                        *e = (g.fps.value, p.label.clone(), h.samples_ms.clone());
                    }
                }
            }
        }
        let lines = |m: BTreeMap<String, BTreeMap<u16, f64>>| -> Vec<Series> {
            m.into_iter()
                .map(|(k, v)| (k, v.into_iter().map(|(b, y)| (f64::from(b), y)).collect()))
                .collect()
        };
        let mut util = lines(compute);
        util.extend(lines(busy));
        let cdf = cdf
            .into_iter()
            .map(|(name, (_, point, samples))| {
                let n = samples.len().max(1) as f64;
                let step = (samples.len() / 400).max(1);
                let pts = samples
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % step == 0 || *i + 1 == samples.len())
                    .map(|(i, &ms)| (ms, (i + 1) as f64 / n))
                    .collect();
                (format!("{name}, at its fastest point ({point})"), pts)
            })
            .collect();
        Self {
            fps: lines(fps),
            util,
            cdf,
            switches,
        }
    }
}

/// Writes every plot of `sweep` into `dir`; returns the files written.
///
/// # Errors
/// [`BenchError::Write`] naming the file.
pub fn write_plots(sweep: &Sweep, dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let Curves {
        fps,
        util,
        cdf,
        switches,
    } = Curves::of(sweep);
    let mut files = Vec::new();
    let run = &sweep.backend;
    let source = provenance(sweep);
    let title = |what: &str| format!("{what}: {source}");
    files.extend(both(
        dir,
        "fps_vs_batch",
        &title("Device fps vs batch (best over threshold/timeout)"),
        &Chart::Lines(Lines {
            x_label: "batch size",
            y_label: "fps",
            series: &fps,
            whole_x: true,
            y_top: None,
            point_labels: Some(""),
            legend: SeriesLabelPosition::UpperRight,
            dashed: None,
        }),
    )?);
    files.extend(both(
        dir,
        "utilisation_vs_batch",
        &title("Compute % of the INT8 peak and busy % vs batch"),
        &Chart::Lines(Lines {
            x_label: "batch size",
            y_label: "percent",
            series: &util,
            whole_x: true,
            // A share: the axis ends at 100 %, and the legend sits between
            // the compute shares (low) and the busy shares (high).
            y_top: Some(100.0),
            point_labels: Some("%"),
            legend: SeriesLabelPosition::MiddleRight,
            dashed: Some("busy"),
        }),
    )?);
    files.extend(both(
        dir,
        "latency_cdf",
        &title("Host-observed latency CDF per graph (submit to completion)"),
        &Chart::Lines(Lines {
            x_label: "latency, ms",
            y_label: "fraction of frames",
            series: &cdf,
            whole_x: false,
            y_top: Some(1.0),
            point_labels: None,
            // Each curve climbs to 1 on the right: the lower right is empty.
            legend: SeriesLabelPosition::LowerRight,
            dashed: None,
        }),
    )?);
    files.extend(both(
        dir,
        "switch_cost_histogram",
        &title("Time per graph switch"),
        &Chart::Histogram {
            x_label: "switch time, ms",
            values: &switches,
        },
    )?);
    log::info!("plots of {run} written to {}", dir.display());
    Ok(files)
}
