//! Preprocessing speed, single thread: 1280x720 YUYV -> 288x288x3 and
//! 432x432x3, and 1280x720 MJPEG -> 288x288x3 (centre crop, antialiased
//! bilinear), the cases `tools/bench_preprocess.sh` compares with OpenCV;
//! and YUYV frames already at the tensor size (the demo rig's cameras: the
//! centre 288x288 and 432x432 of the same picture), which only convert,
//! beside a 290x290 window shrunk to 288 (the resampling path, at the
//! same pixel count).
//!
//! MJPEG goes through zune-jpeg, or with `--features libjpeg-turbo` through
//! the system libjpeg-turbo at reduced scale; the output names the decoder
//! and times the MJPEG stages (decode alone, full-size decode) too.
//!
//! `cargo bench --bench bench_camera` generates its own input. The script
//! passes `--input DIR` (frame.yuyv and frame.jpg written by the OpenCV side,
//! so both time the same bytes) and `--json FILE` for the comparison table.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hailo_edge::camera::{CameraId, Frame, PixelFormat};
use hailo_edge::preprocess::{
    mjpeg_decoder, Filter, Fit, InputLayout, InputSpec, Layout, MjpegDecoder, PreprocessConfig,
    Preprocessor,
};

/// One preprocessing case: a frame and what it becomes.
struct Case<'a> {
    name: String,
    format: PixelFormat,
    data: &'a [u8],
    /// The frame's width and height.
    size: (u32, u32),
    /// The tensor's side.
    side: u32,
    fit: Fit,
    filter: Filter,
    layout: InputLayout,
}

impl<'a> Case<'a> {
    /// A case on the 1280x720 frame.
    fn full(name: String, format: PixelFormat, data: &'a [u8], side: u32) -> Self {
        Self {
            name,
            format,
            data,
            size: (W, H),
            side,
            fit: Fit::Crop,
            filter: Filter::Linear,
            layout: InputLayout::Rgb,
        }
    }

    /// Median and minimum time of one frame; the tensor is written to `keep` when given.
    fn time(&self, keep: Option<&Path>) -> (Duration, Duration) {
        let mut spec = InputSpec::rgb(self.side, self.side);
        spec.layout = self.layout;
        let mut pre = Preprocessor::new(
            spec,
            PreprocessConfig {
                fit: self.fit,
                filter: self.filter,
                ..Default::default()
            },
        )
        .expect("preprocessor");
        let (width, height) = self.size;
        let frame = Frame::still(CameraId(0), self.format, width, height, self.data.to_vec());
        let mut out = vec![0u8; pre.spec().layout.len(self.side, self.side)];
        let timed = time(|| {
            pre.run_into(&frame, &mut out).expect("preprocess");
        });
        if let Some(dir) = keep {
            std::fs::write(dir.join(format!("{}.rgb", self.name)), &out).expect("write output");
        }
        timed
    }
}

const W: u32 = 1280;
const H: u32 = 720;

fn main() {
    let mut input: Option<PathBuf> = None;
    let mut json: Option<PathBuf> = None;
    let mut only = String::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--input" => input = args.next().map(PathBuf::from),
            "--json" => json = args.next().map(PathBuf::from),
            "--only" => only = args.next().unwrap_or_default(),
            _ => {} // cargo bench passes --bench
        }
    }
    let (yuyv, jpeg, jpeg_q80) = match &input {
        Some(dir) => (
            std::fs::read(dir.join("frame.yuyv")).expect("frame.yuyv"),
            std::fs::read(dir.join("frame.jpg")).expect("frame.jpg"),
            std::fs::read(dir.join("frame_q80.jpg")).expect("frame_q80.jpg"),
        ),
        None => generated(),
    };
    let windows = [288, 290, 432].map(|side| centre_window(&yuyv, side));
    let mut results = serde_json::Map::new();
    println!("MJPEG decoder: {}", mjpeg_decoder());
    results.insert("mjpeg_decoder".into(), mjpeg_decoder().into());
    println!(
        "{:<40} {:>10} {:>10}",
        "case (hailo-edge, 1 thread)", "median ms", "min ms"
    );
    for case in cases(&yuyv, &jpeg, &jpeg_q80, &windows) {
        if !case.name.contains(&only) {
            continue;
        }
        // The outputs the script compares with OpenCV's.
        let compared = ["288_crop", "288_crop_aa", "same_size"]
            .iter()
            .any(|end| case.name.ends_with(end));
        let (median, min) = case.time(input.as_deref().filter(|_| compared));
        println!("{:<40} {:>10.3} {:>10.3}", case.name, ms(median), ms(min));
        results.insert(
            case.name,
            serde_json::json!({"median_ms": ms(median), "min_ms": ms(min)}),
        );
    }
    if "mjpeg".contains(&only) || only.contains("mjpeg") {
        mjpeg_stages(&jpeg, &mut results);
    }
    if let Some(path) = json {
        std::fs::write(path, serde_json::to_string_pretty(&results).expect("json"))
            .expect("write json");
    }
}

/// The cases, in the order they print: YUYV and MJPEG centre crops, plain then antialiased;
/// a letterbox; NV12 out; frames at the tensor size and one a little larger.
fn cases<'a>(
    yuyv: &'a [u8],
    jpeg: &'a [u8],
    jpeg_q80: &'a [u8],
    windows: &'a [(u32, Vec<u8>); 3],
) -> Vec<Case<'a>> {
    let mut cases = Vec::new();
    for (filter, suffix) in [(Filter::Linear, ""), (Filter::Bilinear, "_aa")] {
        for (name, format, data, side) in [
            ("yuyv_1280x720_to_288_crop", PixelFormat::Yuyv, yuyv, 288),
            ("yuyv_1280x720_to_432_crop", PixelFormat::Yuyv, yuyv, 432),
            ("mjpeg_1280x720_to_288_crop", PixelFormat::Mjpeg, jpeg, 288),
            (
                "mjpeg_q80_1280x720_to_288_crop",
                PixelFormat::Mjpeg,
                jpeg_q80,
                288,
            ),
        ] {
            cases.push(Case {
                filter,
                ..Case::full(format!("{name}{suffix}"), format, data, side)
            });
        }
    }
    let name = "yuyv_1280x720_to_288_letterbox";
    cases.push(Case {
        fit: Fit::default(),
        ..Case::full(name.into(), PixelFormat::Yuyv, yuyv, 288)
    });
    let name = "yuyv_1280x720_to_nv12_288_crop";
    cases.push(Case {
        layout: InputLayout::Nv12,
        ..Case::full(name.into(), PixelFormat::Yuyv, yuyv, 288)
    });
    for (name, window, side) in [
        ("yuyv_288_same_size", &windows[0], 288),
        ("yuyv_432_same_size", &windows[2], 432),
        ("yuyv_290_to_288_resampled", &windows[1], 288),
    ] {
        cases.push(Case {
            size: (window.0, window.0),
            fit: Fit::default(),
            ..Case::full(name.into(), PixelFormat::Yuyv, &window.1, side)
        });
    }
    cases
}

/// The MJPEG decode on its own: the part the 288 centre crop needs, and the
/// whole frame at full size (what resampling adds is the case's time minus
/// the first).
fn mjpeg_stages(jpeg: &[u8], results: &mut serde_json::Map<String, serde_json::Value>) {
    let mut decoder = MjpegDecoder::default();
    for (name, side_w, side_h) in [
        ("stage_mjpeg_decode_for_288_crop", 288, 288),
        ("stage_mjpeg_decode_full_size", W, H),
    ] {
        let plan = Layout::plan(W, H, side_w, side_h, Fit::Crop, 1);
        let mut size = (0, 0);
        let (median, min) = time(|| {
            size = decoder
                .decode(CameraId(0), jpeg, (W, H), &plan)
                .expect("decode")
                .size;
        });
        let label = format!("{name} ({}x{})", size.0, size.1);
        println!("{label:<40} {:>10.3} {:>10.3}", ms(median), ms(min));
        results.insert(
            name.into(),
            serde_json::json!({"median_ms": ms(median), "min_ms": ms(min), "decoded": [size.0, size.1]}),
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median and minimum over runs filling about one second, after a warm-up.
fn time(mut f: impl FnMut()) -> (Duration, Duration) {
    for _ in 0..20 {
        f();
    }
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 50 || (start.elapsed() < Duration::from_secs(1) && samples.len() < 5000) {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    samples.sort();
    (samples[samples.len() / 2], samples[0])
}

/// The centre `side` x `side` of the 1280x720 YUYV frame (an even column,
/// so the window starts on a macropixel), as its own frame.
fn centre_window(yuyv: &[u8], side: u32) -> (u32, Vec<u8>) {
    let (x0, y0) = (((W - side) / 2) & !1, (H - side) / 2);
    let row = side as usize * 2;
    let data = (y0..y0 + side)
        .flat_map(|y| {
            let s = (y * W + x0) as usize * 2;
            yuyv[s..s + row].iter().copied()
        })
        .collect();
    (side, data)
}

/// A deterministic test picture: gradients, stripes and noise, as YUYV, as
/// JPEG (quality 90) and as a lighter JPEG (quality 80, 4:2:2).
fn generated() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut rgb = vec![0u8; (W * H * 3) as usize];
    let mut seed = 12345u32;
    for y in 0..H {
        for x in 0..W {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let n = (seed >> 24) as i32 % 24 - 12;
            let i = ((y * W + x) * 3) as usize;
            let stripes = if (x / 40 + y / 40) % 2 == 0 { 40 } else { 0 };
            rgb[i] = ((x * 255 / W) as i32 + n + stripes).clamp(0, 255) as u8;
            rgb[i + 1] = ((y * 255 / H) as i32 + n).clamp(0, 255) as u8;
            rgb[i + 2] = (128 + stripes - n).clamp(0, 255) as u8;
        }
    }
    let mut yuyv = vec![0u8; (W * H * 2) as usize];
    for (j, o) in yuyv.chunks_exact_mut(4).enumerate() {
        let a = hailo_edge::preprocess::rgb_to_yuv([rgb[j * 6], rgb[j * 6 + 1], rgb[j * 6 + 2]]);
        let b =
            hailo_edge::preprocess::rgb_to_yuv([rgb[j * 6 + 3], rgb[j * 6 + 4], rgb[j * 6 + 5]]);
        o.copy_from_slice(&[a[0], a[1], b[0], a[2]]);
    }
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 90)
        .encode(&rgb, W as u16, H as u16, jpeg_encoder::ColorType::Rgb)
        .expect("encode");
    let mut jpeg_q80 = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut jpeg_q80, 80);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::F_2_1);
    encoder
        .encode(&rgb, W as u16, H as u16, jpeg_encoder::ColorType::Rgb)
        .expect("encode");
    (yuyv, jpeg, jpeg_q80)
}
