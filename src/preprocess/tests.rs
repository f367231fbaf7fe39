use super::*;

fn frame(format: PixelFormat, w: u32, h: u32, data: Vec<u8>) -> Frame {
    Frame {
        capture_ns: 42,
        sequence: 7,
        ..Frame::still(CameraId(1), format, w, h, data)
    }
}

/// Luma of a Gaussian spot centred at `c` (continuous camera pixels).
fn spot(w: u32, h: u32, c: [f64; 2], sigma: f64) -> Vec<u8> {
    let mut y = vec![16u8; (w * h) as usize];
    for j in 0..h {
        for i in 0..w {
            let dx = f64::from(i) + 0.5 - c[0];
            let dy = f64::from(j) + 0.5 - c[1];
            let v = 16.0 + 219.0 * (-(dx * dx + dy * dy) / (2.0 * sigma * sigma)).exp();
            y[(j * w + i) as usize] = v.round() as u8;
        }
    }
    y
}

/// A preprocessor for `spec` that crops, with the default filter.
fn cropping(spec: InputSpec) -> Preprocessor {
    let config = PreprocessConfig {
        fit: Fit::Crop,
        ..Default::default()
    };
    Preprocessor::new(spec, config).unwrap()
}

fn yuyv_from_luma(luma: &[u8]) -> Vec<u8> {
    luma.iter().flat_map(|&y| [y, 128]).collect()
}

fn nv12_from_luma(luma: &[u8]) -> Vec<u8> {
    let mut v = luma.to_vec();
    v.extend(std::iter::repeat_n(128u8, luma.len() / 2));
    v
}

/// Intensity-weighted centroid of the red channel above the background plus `floor`.
fn centroid(t: &Tensor, floor: f64) -> [f64; 2] {
    let floor = floor + f64::from(t.data.iter().step_by(3).copied().min().unwrap_or(0));
    let (mut sx, mut sy, mut sw) = (0.0, 0.0, 0.0);
    for y in 0..t.height as usize {
        for x in 0..t.width as usize {
            let r = f64::from(t.data[(y * t.width as usize + x) * 3]) - floor;
            if r > 0.0 {
                sx += r * (x as f64 + 0.5);
                sy += r * (y as f64 + 0.5);
                sw += r;
            }
        }
    }
    [sx / sw, sy / sw]
}

fn round_trip(format: PixelFormat, fit: Fit, side: u32) {
    let (w, h) = (1280, 720);
    let config = PreprocessConfig {
        fit,
        ..Default::default()
    };
    let mut pre = Preprocessor::new(InputSpec::rgb(side, side), config).unwrap();
    for c in [
        [640.0, 360.0],
        [503.3, 211.7],
        [777.8, 600.25],
        [330.0, 90.0],
    ] {
        let luma = spot(w, h, c, 7.0);
        let data = match format {
            PixelFormat::Yuyv => yuyv_from_luma(&luma),
            PixelFormat::Nv12 => nv12_from_luma(&luma),
            PixelFormat::Grey => luma,
            PixelFormat::Mjpeg => jpeg_of_luma(&luma, w, h),
            _ => unreachable!(),
        };
        let t = pre.run(&frame(format, w, h, data)).unwrap();
        assert_eq!((t.capture_ns, t.sequence, t.camera), (42, 7, CameraId(1)));
        let back = t.transform.to_camera(centroid(&t, 2.0));
        let err = ((back[0] - c[0]).powi(2) + (back[1] - c[1]).powi(2)).sqrt();
        assert!(
            err < 0.5,
            "{format} {fit:?} {side}: spot {c:?} came back at {back:?} ({err:.3} px)"
        );
    }
}

fn jpeg_of_luma(luma: &[u8], w: u32, h: u32) -> Vec<u8> {
    let rgb: Vec<u8> = luma
        .iter()
        .flat_map(|&y| [yuv_to_rgb(y, 128, 128)[0]; 3])
        .collect();
    let mut out = Vec::new();
    let enc = jpeg_encoder::Encoder::new(&mut out, 95);
    enc.encode(&rgb, w as u16, h as u16, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    out
}

#[test]
fn keypoints_map_back_to_camera_pixels_within_half_a_pixel() {
    for fit in [Fit::Crop, Fit::Letterbox { pad: [0, 0, 0] }] {
        round_trip(PixelFormat::Yuyv, fit, 288);
        round_trip(PixelFormat::Yuyv, fit, 432);
        round_trip(PixelFormat::Nv12, fit, 288);
    }
    round_trip(PixelFormat::Grey, Fit::Crop, 288);
    // With libjpeg-turbo these decode at 1/2 (crop 288), 1/4 (letterbox 288)
    // and full size (crop 432), each through a column window.
    round_trip(PixelFormat::Mjpeg, Fit::Crop, 288);
    round_trip(PixelFormat::Mjpeg, Fit::Letterbox { pad: [0, 0, 0] }, 288);
    round_trip(PixelFormat::Mjpeg, Fit::Crop, 432);
    round_trip(PixelFormat::Nv12, Fit::Letterbox { pad: [0, 0, 0] }, 432);
}

#[test]
fn a_shifted_transform_fails_the_round_trip() {
    // Negative control: a transform off by one tensor pixel misses by far more than 0.5 px.
    let luma = spot(1280, 720, [640.0, 360.0], 7.0);
    let mut pre = cropping(InputSpec::rgb(288, 288));
    let mut t = pre
        .run(&frame(PixelFormat::Yuyv, 1280, 720, yuyv_from_luma(&luma)))
        .unwrap();
    t.transform.offset[0] += 1.0;
    let back = t.transform.to_camera(centroid(&t, 2.0));
    assert!((back[0] - 640.0).abs() > 2.0);
}

#[test]
fn flat_colours_convert_to_reference_values() {
    // 75% colour bars, BT.601 limited range.
    let bars: [([u8; 3], [u8; 3]); 4] = [
        ([65, 100, 212], [191, 0, 0]),
        ([112, 72, 58], [0, 191, 0]),
        ([35, 212, 114], [0, 0, 191]),
        ([180, 128, 128], [191, 191, 191]),
    ];
    for ([y, u, v], want) in bars {
        let yuyv: Vec<u8> = (0..64 * 48 / 2).flat_map(|_| [y, u, y, v]).collect();
        let mut nv12 = vec![y; 64 * 48];
        nv12.extend((0..64 * 24 / 2).flat_map(|_| [u, v]));
        let frames = [
            frame(PixelFormat::Yuyv, 64, 48, yuyv),
            frame(PixelFormat::Nv12, 64, 48, nv12),
        ];
        for (f, filter) in frames
            .iter()
            .flat_map(|f| [(f, Filter::Linear), (f, Filter::Bilinear)])
        {
            let config = PreprocessConfig {
                fit: Fit::Crop,
                filter,
                ..Default::default()
            };
            let mut pre = Preprocessor::new(InputSpec::rgb(16, 16), config).unwrap();
            let t = pre.run(f).unwrap();
            for px in t.data.chunks_exact(3) {
                for c in 0..3 {
                    assert!(
                        px[c].abs_diff(want[c]) <= 1,
                        "{} {filter:?} {:?} -> {px:?}, want {want:?}",
                        f.format,
                        [y, u, v]
                    );
                }
            }
        }
    }
}

#[test]
fn letterbox_pads_with_the_configured_value() {
    let yuyv: Vec<u8> = (0..128 * 72 / 2)
        .flat_map(|_| [235u8, 128, 235, 128])
        .collect();
    let config = PreprocessConfig {
        fit: Fit::Letterbox { pad: [1, 2, 3] },
        ..Default::default()
    };
    let mut pre = Preprocessor::new(InputSpec::rgb(64, 64), config).unwrap();
    let t = pre.run(&frame(PixelFormat::Yuyv, 128, 72, yuyv)).unwrap();
    // 128x72 -> 64x36 content at rows 14..50.
    assert_eq!(&t.data[..3], &[1, 2, 3]);
    assert_eq!(&t.data[(13 * 64) * 3..(13 * 64) * 3 + 3], &[1, 2, 3]);
    assert_eq!(&t.data[(14 * 64) * 3..(14 * 64) * 3 + 3], &[255, 255, 255]);
    assert_eq!(&t.data[(50 * 64) * 3..(50 * 64) * 3 + 3], &[1, 2, 3]);
    assert_eq!(t.transform.offset, [0.0, 14.0]);
}

#[test]
fn nv12_and_yuy2_inputs_stay_in_yuv() {
    let (y, u, v) = (100u8, 90u8, 160u8);
    let yuyv: Vec<u8> = (0..64 * 48 / 2).flat_map(|_| [y, u, y, v]).collect();
    for (layout, len) in [
        (InputLayout::Nv12, 32 * 32 * 3 / 2),
        (InputLayout::Yuy2, 32 * 32 * 2),
    ] {
        let spec = InputSpec {
            layout,
            ..InputSpec::rgb(32, 32)
        };
        let mut pre = cropping(spec);
        let t = pre
            .run(&frame(PixelFormat::Yuyv, 64, 48, yuyv.clone()))
            .unwrap();
        assert_eq!(t.data.len(), len);
        match layout {
            InputLayout::Nv12 => {
                assert!(t.data[..32 * 32].iter().all(|&b| b == y));
                assert!(t.data[32 * 32..].chunks_exact(2).all(|c| c == [u, v]));
            }
            _ => assert!(t.data.chunks_exact(4).all(|c| c == [y, u, y, v])),
        }
    }
}

#[test]
fn bad_frames_are_errors_not_panics() {
    let mut pre = Preprocessor::new(InputSpec::rgb(32, 32), PreprocessConfig::default()).unwrap();
    let short = pre.run(&frame(PixelFormat::Yuyv, 64, 48, vec![0; 100]));
    assert!(
        matches!(
            short,
            Err(PreprocessError::Frame(FrameError::WrongSize { .. }))
        ),
        "{short:?}"
    );
    let luma = spot(64, 48, [10.0, 10.0], 3.0);
    let good = jpeg_of_luma(&luma, 64, 48);
    assert!(pre
        .run(&frame(PixelFormat::Mjpeg, 64, 48, good.clone()))
        .is_ok());
    let mut cases = vec![
        good[..good.len() / 3].to_vec(),
        vec![0xff, 0xd8, 0xff, 0xc0, 0, 0, 0],
        vec![1, 2, 3, 4],
    ];
    let mut flipped = good.clone();
    for b in flipped.iter_mut().skip(20).step_by(7) {
        *b ^= 0x5a;
    }
    cases.push(flipped);
    for (i, bad) in cases.into_iter().enumerate() {
        match pre.run(&frame(PixelFormat::Mjpeg, 64, 48, bad)) {
            Err(PreprocessError::CorruptJpeg { camera, .. }) => assert_eq!(camera, CameraId(1)),
            // Some corruptions still decode to an image of the right size; never a panic.
            Ok(_) if i == 3 => {}
            other => panic!("case {i}: {other:?}"),
        }
    }
    // An output buffer of the wrong size is an error too.
    let mut small = vec![0u8; 10];
    let luma_frame = frame(PixelFormat::Grey, 64, 48, luma.clone());
    let err = pre.run_into(&luma_frame, &mut small).unwrap_err();
    assert!(
        matches!(
            err,
            PreprocessError::OutputSize {
                expected: 3072,
                actual: 10,
                ..
            }
        ),
        "{err}"
    );
    // A JPEG of another size than the stream declares.
    let err = pre
        .run(&frame(PixelFormat::Mjpeg, 32, 48, good))
        .unwrap_err();
    assert!(err.to_string().contains("64x48"), "{err}");
}

#[test]
fn steady_state_does_not_allocate_tensors() {
    let yuyv = vec![128u8; 320 * 240 * 2];
    let mut pre = Preprocessor::new(InputSpec::rgb(96, 96), PreprocessConfig::default()).unwrap();
    let f = frame(PixelFormat::Yuyv, 320, 240, yuyv);
    for _ in 0..3 {
        drop(pre.run(&f).unwrap());
    }
    let warm = pre.pool.stats().allocations;
    for _ in 0..50 {
        drop(pre.run(&f).unwrap());
    }
    assert_eq!(pre.pool.stats().allocations, warm);
}

#[test]
fn quantisation_tables_are_applied() {
    let norm = Normalize {
        mean: [0.5; 3],
        std: [0.5; 3],
    };
    let q = hef::QuantInfo {
        zp: 100.0,
        scale: 0.01,
        limvals_min: -1.0,
        limvals_max: 1.55,
    };
    let spec = InputSpec {
        quant: hef::Quantization::Uniform(q),
        ..InputSpec::rgb(8, 8)
    };
    let config = PreprocessConfig {
        fit: Fit::Crop,
        normalize: Some(norm),
        ..Default::default()
    };
    let mut pre = Preprocessor::new(spec, config).unwrap();
    let yuyv: Vec<u8> = (0..16 * 16 / 2)
        .flat_map(|_| [126u8, 128, 126, 128])
        .collect();
    let t = pre.run(&frame(PixelFormat::Yuyv, 16, 16, yuyv)).unwrap();
    // 128 -> (128/255 - 0.5) / 0.5 = 0.0039 -> 0.39 + 100 -> 100
    assert!(t.data.iter().all(|&b| b == 100), "{:?}", &t.data[..6]);
}

#[test]
fn input_spec_from_hef_stream() {
    let mut s = hef::StreamInfo {
        name: "net/input_layer1".into(),
        network: "net/net".into(),
        direction: hef::Direction::Input,
        shape: hef::StreamShape::Image {
            height: 288,
            width: 288,
            features: 3,
        },
        device_order: hef::FormatOrder::Nhcw,
        host_order: hef::FormatOrder::Nhwc,
        data_type: hef::DataType::Uint8,
        transposed: false,
        quant: hef::Quantization::Uniform(hef::QuantInfo {
            zp: 0.0,
            scale: 1.0,
            limvals_min: 0.0,
            limvals_max: 255.0,
        }),
    };
    let spec = InputSpec::from_stream(&s).unwrap();
    assert_eq!(
        (spec.width, spec.height, spec.layout),
        (288, 288, InputLayout::Rgb)
    );
    s.host_order = hef::FormatOrder::Nv12;
    assert_eq!(
        InputSpec::from_stream(&s).unwrap().layout,
        InputLayout::Nv12
    );
    s.shape = hef::StreamShape::Image {
        height: 288,
        width: 289,
        features: 3,
    };
    let err = InputSpec::from_stream(&s).unwrap_err().to_string();
    assert!(
        err.contains("289x288 is odd; NV12 needs even sizes"),
        "{err}"
    );
    // The control: an RGB input takes an odd width.
    s.host_order = hef::FormatOrder::Nhwc;
    assert_eq!(InputSpec::from_stream(&s).unwrap().width, 289);
    s.data_type = hef::DataType::Uint16;
    let err = InputSpec::from_stream(&s).unwrap_err().to_string();
    assert!(
        err.contains("net/input_layer1") && err.contains("UINT16"),
        "{err}"
    );
}

/// The tensor of an MJPEG frame next to the reference: a full-size zune-jpeg
/// decode, then the same crop and fused resample.
fn mjpeg_and_reference(fit: Fit, jpeg: &[u8], crop_shift: f64) -> (Tensor, Vec<u8>) {
    let (w, h, side) = (1280, 720, 288);
    let config = PreprocessConfig {
        fit,
        ..Default::default()
    };
    let mut pre = Preprocessor::new(InputSpec::rgb(side, side), config).unwrap();
    let t = pre
        .run(&frame(PixelFormat::Mjpeg, w, h, jpeg.to_vec()))
        .unwrap();
    let mut plan = Layout::plan(w, h, side, side, fit, 1);
    plan.src[0] += crop_shift;
    let mut full = jpeg::MjpegDecoder::default();
    let d = full.decode_full(CameraId(1), jpeg, (w, h), &plan).unwrap();
    let mut reference = vec![0u8; (side * side * 3) as usize];
    let decoded = Source {
        data: full.pixels(),
        size: d.size,
        pixels: Pixels::Packed(3),
        crop: d.src,
    };
    let out = RgbOut {
        data: &mut reference,
        width: side as usize,
        dst: plan.dst,
    };
    resample::fused::Sampler::default().sample(&decoded, out, &None);
    (t, reference)
}

fn mjpeg_test_frame() -> Vec<u8> {
    let (w, h) = (1280, 720);
    let mut rgb = jpeg::tests::smooth_rgb(w, h);
    let luma = spot(w, h, [600.0, 300.0], 6.0);
    for (px, &l) in rgb.chunks_exact_mut(3).zip(&luma) {
        px[1] = px[1].saturating_add(l - 16);
    }
    jpeg::tests::encode(&rgb, w, h, jpeg_encoder::SamplingFactor::F_2_1)
}

/// Largest and mean absolute difference over the tensor's content rows `rows`.
fn tensor_diff(a: &[u8], b: &[u8], rows: std::ops::Range<usize>) -> (u8, f64) {
    let row = 288 * 3;
    jpeg::tests::diff(
        &a[rows.start * row..rows.end * row],
        &b[rows.start * row..rows.end * row],
    )
}

#[test]
fn mjpeg_tensors_match_a_full_decode_with_the_same_crop_and_resize() {
    let jpeg = mjpeg_test_frame();
    // The default build is the reference path itself. libjpeg-turbo's
    // reduced IDCT low-passes before the resampler (1/2 for the crop, 1/4
    // for the letterbox) where the reference point-samples the full image:
    // they differ most on the sharp spot, more so at the 4.4x letterbox
    // shrink, and by a fraction of a level on average.
    let turbo = cfg!(feature = "libjpeg-turbo");
    for (fit, rows, (max_tol, mean_tol)) in [
        (Fit::Crop, 0..288, if turbo { (12, 0.3) } else { (0, 0.0) }),
        (
            Fit::Letterbox { pad: [0, 0, 0] },
            63..225,
            if turbo { (32, 0.5) } else { (0, 0.0) },
        ),
    ] {
        let within = |(max, mean): (u8, f64)| max <= max_tol && mean <= mean_tol;
        let (t, reference) = mjpeg_and_reference(fit, &jpeg, 0.0);
        let d = tensor_diff(&t.data, &reference, rows.clone());
        assert!(within(d), "{} {fit:?}: (max, mean) {d:?}", mjpeg_decoder());
        // Negative control: a reference cropped 4 camera pixels to the right is told apart.
        let (t, shifted) = mjpeg_and_reference(fit, &jpeg, 4.0);
        let d = tensor_diff(&t.data, &shifted, rows);
        assert!(!within(d), "{fit:?} shifted: (max, mean) {d:?}");
    }
}

#[test]
fn mjpeg_without_huffman_tables_uses_the_standard_ones() {
    // Many UVC cameras leave the DHT segment out of MJPEG frames.
    let jpeg = mjpeg_test_frame();
    let stripped = jpeg::tests::strip_dht(&jpeg);
    assert!(stripped.len() < jpeg.len());
    let mut pre = Preprocessor::new(InputSpec::rgb(288, 288), PreprocessConfig::default()).unwrap();
    let with = pre
        .run(&frame(PixelFormat::Mjpeg, 1280, 720, jpeg))
        .unwrap();
    let without = pre
        .run(&frame(PixelFormat::Mjpeg, 1280, 720, stripped))
        .unwrap();
    assert_eq!(&with.data[..], &without.data[..]);
}

/// A frame at the tensor's width, letterboxed into a square tensor, is
/// converted pixel for pixel (no resampling), quantisation tables applied,
/// and the border is padding.
#[test]
fn frames_at_the_tensor_size_convert_pixel_for_pixel() {
    let (w, h) = (32u32, 16u32);
    let yuyv: Vec<u8> = (0..w * h * 2).map(|i| (i * 37 % 251) as u8).collect();
    let q = hef::QuantInfo {
        zp: 90.0,
        scale: 0.02,
        limvals_min: -1.8,
        limvals_max: 3.3,
    };
    let quant = hef::Quantization::Uniform(q);
    for normalize in [
        None,
        Some(Normalize {
            mean: [0.4, 0.5, 0.6],
            std: [0.3, 0.2, 0.25],
        }),
    ] {
        let spec = InputSpec {
            quant: quant.clone(),
            ..InputSpec::rgb(32, 32)
        };
        let config = PreprocessConfig {
            fit: Fit::Letterbox { pad: [7, 7, 7] },
            normalize,
            ..Default::default()
        };
        let mut pre = Preprocessor::new(spec, config).unwrap();
        let t = pre
            .run(&frame(PixelFormat::Yuyv, w, h, yuyv.clone()))
            .unwrap();
        let table = quantize::tables(normalize, &quant).unwrap();
        let lut = |rgb: [u8; 3]| match &table {
            None => rgb,
            Some(t) => [0, 1, 2].map(|c| t[c][rgb[c] as usize]),
        };
        let at = |x: u32, y: u32| -> [u8; 3] {
            let i = ((y * 32 + x) * 3) as usize;
            [t.data[i], t.data[i + 1], t.data[i + 2]]
        };
        // Rows 8..24 hold the frame at scale 1.
        for y in 0..h {
            for x in 0..w {
                let m = ((y * w + x / 2 * 2) * 2) as usize;
                let luma = yuyv[m + if x % 2 == 0 { 0 } else { 2 }];
                let want = lut(yuv_to_rgb(luma, yuyv[m + 1], yuyv[m + 3]));
                assert_eq!(at(x, y + 8), want, "{normalize:?} pixel {x},{y}");
            }
        }
        assert_eq!(at(5, 3), lut([7, 7, 7]), "padding above");
        assert_eq!(at(30, 27), lut([7, 7, 7]), "padding below");
        // Negative control: the frame one row off does not match.
        let m = ((3 * w) * 2) as usize;
        let row3 = lut(yuv_to_rgb(yuyv[m], yuyv[m + 1], yuyv[m + 3]));
        assert_ne!(at(0, 3 + 9), row3, "a row off went unnoticed");
    }
}
