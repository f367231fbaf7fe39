//! `hailo-edge cameras --toml`: ready `[[camera]]` entries for the cameras
//! on this machine, each with a path that survives a reboot and the capture
//! mode that suits a square graph input of a given side.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{DeviceSummary, FormatInfo};
use crate::camera::frame::PixelFormat;

/// A capture mode: what a `[[camera]]` entry asks the device for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mode {
    pub format: PixelFormat,
    pub width: u32,
    pub height: u32,
    pub fps: f64,
}

/// The mode that suits a graph input of `side` pixels: the highest rate up
/// to `max_fps` among the sizes whose shorter side covers `side` (so the
/// crop or letterbox never upsamples); at equal rates an uncompressed format
/// (no JPEG decode on the host), then the smallest frame (least to move and
/// resample). `None` when no handled format has such a size.
pub fn best_mode(formats: &[FormatInfo], side: u32, max_fps: f64) -> Option<Mode> {
    let mut best: Option<Mode> = None;
    for f in formats.iter().filter(|f| f.supported) {
        let Some(format) = pixel_format(&f.fourcc) else {
            continue;
        };
        for &((width, height), ref rates) in &f.rates {
            if width.min(height) < side {
                continue;
            }
            let Some(fps) = rates
                .iter()
                .copied()
                .filter(|&r| r <= max_fps * 1.001)
                .max_by(f64::total_cmp)
            else {
                continue;
            };
            let mode = Mode {
                format,
                width,
                height,
                fps,
            };
            if best.is_none_or(|b| rank(&mode) > rank(&b)) {
                best = Some(mode);
            }
        }
    }
    best
}

/// Higher is better: rate, then uncompressed, then fewer pixels.
fn rank(m: &Mode) -> (i64, bool, i64) {
    (
        (m.fps * 1000.0).round() as i64,
        m.format != PixelFormat::Mjpeg,
        -i64::from(m.width) * i64::from(m.height),
    )
}

fn pixel_format(fourcc: &str) -> Option<PixelFormat> {
    let mut code = [b' '; 4];
    for (c, b) in code.iter_mut().zip(fourcc.bytes()) {
        *c = b;
    }
    PixelFormat::from_fourcc(code)
}

/// For every `/dev/videoN` with a link under `/dev/v4l/by-id` (or, failing
/// that, `/dev/v4l/by-path`), that link: the USB serial number or the port
/// names the camera, where `videoN` depends on the order of enumeration.
pub fn stable_paths(v4l_dir: &Path) -> BTreeMap<PathBuf, PathBuf> {
    let mut out = BTreeMap::new();
    // by-path first, so that by-id, inserted last, wins.
    for dir in ["by-path", "by-id"] {
        let Ok(entries) = std::fs::read_dir(v4l_dir.join(dir)) else {
            continue;
        };
        let mut links: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        links.sort();
        for link in links {
            if let Ok(node) = std::fs::canonicalize(&link) {
                out.insert(node, link);
            }
        }
    }
    out
}

/// One `[[camera]]` entry as the rig file spells it.
#[derive(Serialize)]
struct Entry {
    name: String,
    source: String,
    width: u32,
    height: u32,
    fps: f64,
    graph: String,
    format: &'static str,
}

#[derive(Serialize)]
struct Entries<'a> {
    camera: &'a [Entry],
}

/// The rig file's `[[camera]]` entries for `devices`, named `cam0`, `cam1`,
/// … and feeding `graph`, each after a comment naming the device and the
/// mode's choice; a device with no mode that fits gets a comment saying so.
pub fn rig_entries(
    devices: &[DeviceSummary],
    stable: &BTreeMap<PathBuf, PathBuf>,
    side: u32,
    max_fps: f64,
    graph: &str,
) -> String {
    let mut text = String::new();
    for (i, d) in devices.iter().enumerate() {
        let path = stable.get(&d.path).unwrap_or(&d.path);
        let node = d.path.display();
        let card = crate::output::printable(&d.caps.card);
        let Some(mode) = best_mode(&d.formats, side, max_fps) else {
            text.push_str(&format!(
                "# {card} ({node}): no handled format has a size of at least {side}x{side} at up to {max_fps} fps\n\n"
            ));
            continue;
        };
        let note = if stable.contains_key(&d.path) {
            String::new()
        } else {
            " (no /dev/v4l link: the node number may change)".into()
        };
        let entry = Entry {
            name: format!("cam{i}"),
            source: format!("v4l2:{}", path.display()),
            width: mode.width,
            height: mode.height,
            fps: mode.fps,
            graph: graph.to_owned(),
            format: mode.format.name(),
        };
        let toml = toml::to_string(&Entries { camera: &[entry] })
            .unwrap_or_else(|e| format!("# cannot write the entry: {e}\n"));
        text.push_str(&format!(
            "# {card} ({node}{note}): the fastest mode covering {side}x{side}\n{toml}\n"
        ));
    }
    text
}

#[cfg(test)]
#[path = "suggest_tests.rs"]
mod tests;
