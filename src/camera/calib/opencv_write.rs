//! Writing a rig's calibration: one OpenCV FileStorage YAML file per camera (what
//! `cv::FileStorage` and [`super::from_opencv_file`] read), and the rig file's
//! `[[camera]]` entries that name them.
//!
//! The YAML is OpenCV's own layout: a `%YAML:1.0` directive, `!!opencv-matrix` tags, and
//! numbers with a decimal point and a signed exponent (`9.1000000000000000e+02`), which
//! YAML 1.1 readers such as PyYAML take as floats. Translations are written in metres.

use std::fmt::Write as _;
use std::path::Path;

use super::CalibratedCamera;
use crate::geom::Camera;

/// A camera as an OpenCV FileStorage YAML file: `image_width`, `image_height`,
/// `camera_matrix`, `distortion_coefficients` (k1, k2, p1, p2, k3), `R` and `T`
/// (world to camera, metres). The principal point moves by half a pixel into OpenCV's
/// integer pixel centres.
pub fn to_opencv_yaml(name: &str, c: &Camera) -> String {
    let d = c.distortion;
    let r: Vec<f64> = (0..9).map(|k| c.rotation[(k / 3, k % 3)]).collect();
    let t = c.translation;
    let mut out = String::from("%YAML:1.0\n---\n");
    // Writing to a String cannot fail.
    let _ = writeln!(out, "camera_name: \"{}\"", name.escape_default());
    let _ = writeln!(out, "image_width: {}", c.width);
    let _ = writeln!(out, "image_height: {}", c.height);
    let k = [c.fx, 0.0, c.cx - 0.5, 0.0, c.fy, c.cy - 0.5, 0.0, 0.0, 1.0];
    matrix(&mut out, "camera_matrix", 3, 3, &k);
    matrix(
        &mut out,
        "distortion_coefficients",
        1,
        5,
        &[d.k1, d.k2, d.p1, d.p2, d.k3],
    );
    matrix(&mut out, "R", 3, 3, &r);
    matrix(&mut out, "T", 3, 1, &[t.x, t.y, t.z]);
    out
}

fn matrix(out: &mut String, key: &str, rows: usize, cols: usize, data: &[f64]) {
    let values: Vec<String> = data.iter().map(|v| number(*v)).collect();
    let _ = writeln!(
        out,
        "{key}: !!opencv-matrix\n   rows: {rows}\n   cols: {cols}\n   dt: d\n   data: [ {} ]",
        values.join(", ")
    );
}

/// A number as OpenCV writes one: 17 significant digits, a decimal point and a signed
/// two-digit exponent, which reads back to the same f64.
pub fn number(v: f64) -> String {
    let s = format!("{v:.16e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let e: i32 = exp.parse().unwrap_or(0);
            format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

/// What the `[[camera]]` entries need besides the calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryDefaults {
    /// The graph every camera feeds (`graph`).
    pub graph: String,
    /// Frames per second (`fps`).
    pub fps: f64,
}

/// The rig file's `[[camera]]` entries for `cameras`, camera `i` calibrated by `files[i]`
/// (written as given, so relative paths are relative to the rig file). Each source is
/// `v4l2:/dev/videoN` in order, to be edited to the camera's device; the files are in
/// metres, the rig file's default `unit`.
pub fn camera_entries(
    cameras: &[CalibratedCamera],
    files: &[&Path],
    with: &EntryDefaults,
) -> String {
    let mut out = String::from(
        "# The calibration files' translations are in metres (the default `unit = \"m\"`).\n",
    );
    for (i, (c, file)) in cameras.iter().zip(files).enumerate() {
        let toml_str = |s: &str| toml::Value::String(s.to_owned()).to_string();
        let _ = write!(
            out,
            "\n[[camera]]\nname = {}\nsource = \"v4l2:/dev/video{i}\"  # this camera's device\n\
             width = {}\nheight = {}\nfps = {}\ngraph = {}\ncalibration_file = {}\n",
            toml_str(&c.name),
            c.camera.width,
            c.camera.height,
            toml::Value::Float(with.fps),
            toml_str(&with.graph),
            toml_str(&file.display().to_string()),
        );
    }
    out
}
