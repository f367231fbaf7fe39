//! Decoder checks that need no preprocessor. The libjpeg-turbo ones run with
//! `--features libjpeg-turbo`.

use jpeg_encoder::{ColorType, Encoder, SamplingFactor};

use super::*;

/// A smooth, deterministic RGB picture (gradients and soft discs), `w` x `h`.
pub(crate) fn smooth_rgb(w: u32, h: u32) -> Vec<u8> {
    let mut rgb = Vec::with_capacity((w * h * 3) as usize);
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (f64::from(x) / f64::from(w), f64::from(y) / f64::from(h));
            let disc = |cx: f64, cy: f64, r: f64| {
                let d = ((fx - cx).powi(2) + (fy - cy).powi(2)).sqrt() / r;
                (-d * d).exp()
            };
            let r = 40.0 + 170.0 * fx + 40.0 * disc(0.3, 0.4, 0.1);
            let g = 30.0 + 150.0 * fy + 60.0 * disc(0.6, 0.5, 0.08);
            let b = 200.0 - 120.0 * fx * fy + 50.0 * disc(0.5, 0.7, 0.12);
            rgb.extend([r, g, b].map(|v| v.round().clamp(0.0, 255.0) as u8));
        }
    }
    rgb
}

pub(crate) fn encode(rgb: &[u8], w: u32, h: u32, sampling: SamplingFactor) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = Encoder::new(&mut out, 90);
    enc.set_sampling_factor(sampling);
    enc.encode(rgb, w as u16, h as u16, ColorType::Rgb)
        .expect("encode");
    out
}

/// Largest and mean absolute difference of two equally long, non-empty buffers.
pub(crate) fn diff(a: &[u8], b: &[u8]) -> (u8, f64) {
    assert_eq!(a.len(), b.len());
    let max = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).max().unwrap();
    let sum: u64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| u64::from(x.abs_diff(*y)))
        .sum();
    (max, sum as f64 / a.len() as f64)
}

/// `data` without its DHT (Huffman table) segments, as many UVC cameras send MJPEG.
pub(crate) fn strip_dht(data: &[u8]) -> Vec<u8> {
    let mut out = data[..2].to_vec();
    let mut i = 2;
    while i + 4 <= data.len() && data[i] == 0xff {
        let marker = data[i + 1];
        let len = usize::from(u16::from_be_bytes([data[i + 2], data[i + 3]]));
        if marker != 0xc4 {
            out.extend_from_slice(&data[i..i + 2 + len]);
        }
        i += 2 + len;
        if marker == 0xda {
            break;
        }
    }
    out.extend_from_slice(&data[i..]);
    out
}

#[test]
fn end_marker_check_sees_truncation() {
    let data = encode(&smooth_rgb(64, 48), 64, 48, SamplingFactor::F_2_2);
    assert!(has_end_marker(&data));
    let mut padded = data.clone();
    padded.extend([0; 16]);
    assert!(has_end_marker(&padded));
    assert!(!has_end_marker(&data[..data.len() - 1]));
    assert!(!has_end_marker(&data[..data.len() / 2]));
}

#[test]
fn stripping_dht_removes_only_the_tables() {
    let data = encode(&smooth_rgb(64, 48), 64, 48, SamplingFactor::F_2_2);
    let stripped = strip_dht(&data);
    assert!(data.windows(2).any(|w| w == [0xff, 0xc4]));
    assert!(!stripped.windows(2).any(|w| w == [0xff, 0xc4]));
    assert!(stripped.len() < data.len() && has_end_marker(&stripped));
    assert!(lacks_huffman_tables(&stripped));
    // Negative controls: the original has tables; garbage is not "lacking".
    assert!(!lacks_huffman_tables(&data));
    assert!(!lacks_huffman_tables(&[1, 2, 3, 4]));
}

#[test]
fn zune_path_decodes_frames_without_huffman_tables() {
    let (w, h) = (64, 48);
    let data = encode(&smooth_rgb(w, h), w, h, SamplingFactor::F_2_1);
    let stripped = strip_dht(&data);
    let camera = crate::camera::CameraId(0);
    // Negative control: zune-jpeg alone refuses the untagged frame.
    assert!(zune::decode_rgb(camera, &stripped, w, h, &mut Vec::new()).is_err());
    let plan = Layout::plan(w, h, 32, 32, super::super::Fit::Crop, 1);
    let mut dec = MjpegDecoder::default();
    dec.decode_full(camera, &data, (w, h), &plan).unwrap();
    let with = dec.pixels()[..(w * h * 3) as usize].to_vec();
    dec.decode_full(camera, &stripped, (w, h), &plan).unwrap();
    assert_eq!(&dec.pixels()[..(w * h * 3) as usize], &with[..]);
}

#[cfg(feature = "libjpeg-turbo")]
mod turbo_tests {
    use super::super::turbo::decode_window;
    use super::*;

    const W: u32 = 320;
    const H: u32 = 240;

    fn full(data: &[u8], denom: u32) -> (Vec<u8>, (u32, u32)) {
        let (sw, sh) = (W.div_ceil(denom), H.div_ceil(denom));
        let mut rgb = Vec::new();
        let win = decode_window(data, (W, H), denom, [0, 0, sw, sh], &mut rgb).unwrap();
        assert_eq!((win.origin, win.size), ([0, 0], (sw, sh)));
        rgb.truncate((sw * sh * 3) as usize);
        (rgb, (sw, sh))
    }

    /// The test picture encoded with each chroma sampling (4:4:4, 4:2:2, 4:2:0).
    fn encodings() -> impl Iterator<Item = (SamplingFactor, Vec<u8>)> {
        let rgb = smooth_rgb(W, H);
        [
            SamplingFactor::F_1_1,
            SamplingFactor::F_2_1,
            SamplingFactor::F_2_2,
        ]
        .into_iter()
        .map(move |sampling| (sampling, encode(&rgb, W, H, sampling)))
    }

    #[test]
    fn full_size_decode_agrees_with_zune() {
        for (sampling, data) in encodings() {
            let (turbo, _) = full(&data, 1);
            let mut zune = Vec::new();
            super::super::zune::decode_rgb(crate::camera::CameraId(0), &data, W, H, &mut zune)
                .unwrap();
            // Both are JPEG decoders of the same bytes: IDCT and chroma
            // upsampling rounding differ by a few levels at most (measured
            // with libjpeg-turbo 2.1.5: max 2 / 3 / 4, mean 0.005 / 0.03 / 0.1
            // for 4:4:4 / 4:2:2 / 4:2:0).
            let close = |(max, mean): (u8, f64)| max <= 6 && mean < 0.25;
            let d = diff(&turbo, &zune);
            assert!(close(d), "{sampling:?}: (max, mean) {d:?}");
            // Negative control: the same check rejects a picture 3 levels brighter.
            let brighter: Vec<u8> = zune.iter().map(|v| v.saturating_add(3)).collect();
            assert!(!close(diff(&turbo, &brighter)));
        }
    }

    #[test]
    fn a_window_is_the_same_pixels_as_the_full_scaled_decode() {
        for (sampling, data) in encodings() {
            for denom in [1, 2, 4] {
                let (reference, (sw, _)) = full(&data, denom);
                let rect = [37 / denom + 1, 21 / denom, 150 / denom, 160 / denom];
                let mut buf = Vec::new();
                let win = decode_window(&data, (W, H), denom, rect, &mut buf).unwrap();
                assert!(win.origin[0] <= rect[0] && win.origin[1] == rect[1]);
                assert!(win.origin[0] + win.size.0 >= rect[0] + rect[2]);
                assert_eq!(win.size.1, rect[3]);
                // Compare the requested columns away from the window's edges
                // (libjpeg upsamples chroma there as at an image edge).
                let mut worst = 0;
                for y in 0..rect[3] {
                    for x in rect[0] + 1..rect[0] + rect[2] - 1 {
                        for c in 0..3 {
                            let a = buf[((y * win.size.0 + x - win.origin[0]) * 3 + c) as usize];
                            let b = reference[(((y + rect[1]) * sw + x) * 3 + c) as usize];
                            worst = worst.max(a.abs_diff(b));
                        }
                    }
                }
                assert_eq!(worst, 0, "{sampling:?} 1/{denom}");
            }
        }
    }

    #[test]
    fn corrupt_or_truncated_data_is_an_error() {
        let data = encode(&smooth_rgb(W, H), W, H, SamplingFactor::F_2_2);
        let mut buf = Vec::new();
        assert!(decode_window(&data, (W, H), 2, [0, 0, 160, 120], &mut buf).is_ok());
        // Entropy data cut in half, end marker kept: libjpeg's "premature
        // end" warning is an error here, not a grey lower half.
        let mut cut = data[..data.len() / 2].to_vec();
        cut.extend([0xff, 0xd9]);
        let err = decode_window(&cut, (W, H), 2, [0, 0, 160, 120], &mut buf).unwrap_err();
        assert!(err.to_string().contains("Corrupt JPEG data"), "{err}");
        // Without an end marker at all.
        let err =
            decode_window(&data[..data.len() / 2], (W, H), 1, [0, 0, W, H], &mut buf).unwrap_err();
        assert!(err.to_string().contains("Premature end"), "{err}");
        for (bad, want) in [
            (&[][..], "empty"),
            (&[1, 2, 3, 4][..], "Not a JPEG file"),
            (&[0xff, 0xd8, 0xff, 0xc0, 0, 0, 0][..], ""),
        ] {
            let err = decode_window(bad, (W, H), 1, [0, 0, W, H], &mut buf).unwrap_err();
            assert!(err.to_string().contains(want), "{err}");
        }
        let err = decode_window(&data, (W + 2, H), 1, [0, 0, W, H], &mut buf).unwrap_err();
        assert!(
            err.to_string()
                .contains("JPEG is 320x240, the stream is 322x240"),
            "{err}"
        );
        let err = decode_window(&data, (W, H), 2, [100, 0, 100, 10], &mut buf).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
        let err = decode_window(&data, (W, H), 3, [0, 0, 10, 10], &mut buf).unwrap_err();
        assert!(err.to_string().contains("1/3"), "{err}");
    }

    #[test]
    fn progressive_frames_decode_through_a_window_too() {
        let rgb = smooth_rgb(W, H);
        let mut data = Vec::new();
        let mut enc = Encoder::new(&mut data, 90);
        enc.set_progressive(true);
        enc.encode(&rgb, W as u16, H as u16, ColorType::Rgb)
            .unwrap();
        let (reference, (sw, _)) = full(&data, 2);
        let rect = [40, 30, 60, 50];
        let mut buf = Vec::new();
        let win = decode_window(&data, (W, H), 2, rect, &mut buf).unwrap();
        for y in 0..rect[3] {
            for x in rect[0] + 1..rect[0] + rect[2] - 1 {
                let a = ((y * win.size.0 + x - win.origin[0]) * 3) as usize;
                let b = (((y + rect[1]) * sw + x) * 3) as usize;
                assert_eq!(buf[a..a + 3], reference[b..b + 3], "({x}, {y})");
            }
        }
    }

    #[test]
    fn damaged_frames_are_errors_or_pictures_never_crashes() {
        let (w, h) = (64, 48);
        let data = encode(&smooth_rgb(w, h), w, h, SamplingFactor::F_2_2);
        let mut seed = 0x2545_f491_u32;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as usize % n
        };
        let (mut errors, mut decoded) = (0, 0);
        let mut buf = Vec::new();
        for _ in 0..300 {
            let mut bad = data.clone();
            for _ in 0..1 + next(4) {
                let i = next(bad.len());
                bad[i] ^= 1 << next(8);
            }
            bad.truncate(bad.len() - next(bad.len() / 4 + 1));
            match decode_window(&bad, (w, h), 1 << next(4), [0, 0, 8, 6], &mut buf) {
                Ok(_) => decoded += 1,
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    errors += 1;
                }
            }
        }
        // Both outcomes happen: the check can say yes and no.
        assert!(
            errors > 50 && decoded > 0,
            "{errors} errors, {decoded} decoded"
        );
    }

    #[test]
    fn frames_without_huffman_tables_decode_with_the_standard_ones() {
        let data = encode(&smooth_rgb(W, H), W, H, SamplingFactor::F_2_1);
        let stripped = strip_dht(&data);
        let (with, _) = full(&data, 2);
        let (without, _) = full(&stripped, 2);
        assert_eq!(with, without);
    }
}
