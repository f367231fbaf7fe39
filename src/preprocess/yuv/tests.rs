use super::*;

#[test]
fn reference_values() {
    // Limited-range black, white and the 75% colour bars (ITU-R BT.601).
    assert_eq!(yuv_to_rgb(16, 128, 128), [0, 0, 0]);
    assert_eq!(yuv_to_rgb(235, 128, 128), [255, 255, 255]);
    assert_eq!(yuv_to_rgb(126, 128, 128), [128, 128, 128]);
    let close = |a: [u8; 3], b: [u8; 3]| a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= 1);
    assert!(close(yuv_to_rgb(65, 100, 212), [191, 0, 0]), "red bar");
    assert!(close(yuv_to_rgb(112, 72, 58), [0, 191, 0]), "green bar");
    assert!(close(yuv_to_rgb(35, 212, 114), [0, 0, 191]), "blue bar");
}

#[test]
fn fixed_point_matches_the_float_formula_everywhere() {
    let mut worst = 0.0f64;
    for y in (0..=255).step_by(3) {
        for u in (0..=255).step_by(5) {
            for v in (0..=255).step_by(5) {
                let got = yuv_to_rgb(y, u, v);
                let want = yuv_to_rgb_reference(y, u, v);
                for c in 0..3 {
                    worst = worst.max((f64::from(got[c]) - want[c]).abs());
                }
            }
        }
    }
    assert!(worst <= 1.5, "worst difference {worst}");
}

#[test]
fn rgb_to_yuv_inverts_within_rounding() {
    for rgb in [[0, 0, 0], [255, 255, 255], [114, 114, 114], [200, 30, 90]] {
        let [y, u, v] = rgb_to_yuv(rgb);
        let back = yuv_to_rgb(y, u, v);
        for c in 0..3 {
            assert!(back[c].abs_diff(rgb[c]) <= 3, "{rgb:?} -> {back:?}");
        }
    }
}

/// Deterministic bytes (xorshift), so failures reproduce.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect()
}

/// Every (Y, U, V) triple, as YUYV rows of 256 pixels: the row for
/// (u, v) carries Y = 0..=255 with that chroma.
#[test]
fn yuyv_equals_the_scalar_formula_for_every_triple() {
    let mut src = vec![0u8; 512];
    let mut got = vec![0u8; 768];
    for u in 0..=255u8 {
        for v in 0..=255u8 {
            for (j, m) in src.chunks_exact_mut(4).enumerate() {
                m.copy_from_slice(&[2 * j as u8, u, 2 * j as u8 + 1, v]);
            }
            yuyv_row_to_rgb(&src, &mut got);
            for (x, px) in got.chunks_exact(3).enumerate() {
                assert_eq!(px, yuv_to_rgb(x as u8, u, v), "y {x} u {u} v {v}");
            }
        }
    }
}

#[test]
fn rows_of_any_even_length_equal_the_scalar_reference() {
    for n in [2usize, 14, 16, 18, 30, 32, 34, 288, 432, 1282] {
        let src = bytes(2 * n, n as u64);
        let mut fast = vec![0u8; 3 * n];
        let mut slow = vec![1u8; 3 * n];
        yuyv_row_to_rgb(&src, &mut fast);
        yuyv_row_scalar(&src, &mut slow);
        assert_eq!(fast, slow, "YUYV row of {n} pixels");

        let (luma, uv) = src.split_at(n);
        nv12_row_to_rgb(luma, uv, &mut fast);
        nv12_row_scalar(luma, uv, &mut slow);
        assert_eq!(fast, slow, "NV12 row of {n} pixels");
        for (x, px) in fast.chunks_exact(3).enumerate() {
            let c = &uv[x / 2 * 2..];
            assert_eq!(px, yuv_to_rgb(luma[x], c[0], c[1]), "NV12 pixel {x}");
        }
    }
}

/// Negative control: the comparison above notices one wrong byte, and a
/// conversion with a different matrix (full-range Y) differs.
#[test]
fn the_comparison_can_fail() {
    let n = 64;
    let src = bytes(2 * n, 7);
    let mut fast = vec![0u8; 3 * n];
    let mut slow = vec![0u8; 3 * n];
    yuyv_row_to_rgb(&src, &mut fast);
    yuyv_row_scalar(&src, &mut slow);
    assert_eq!(fast, slow);
    slow[3 * 37 + 1] ^= 1;
    assert_ne!(fast, slow, "a flipped bit must be seen");
    let full_range: Vec<u8> = src
        .chunks_exact(4)
        .flat_map(|m| {
            let rgb = |y: u8| {
                let (y, d, e) = (
                    f64::from(y),
                    f64::from(m[1]) - 128.0,
                    f64::from(m[3]) - 128.0,
                );
                [y + 1.402 * e, y - 0.344 * d - 0.714 * e, y + 1.772 * d]
                    .map(|c| c.round().clamp(0.0, 255.0) as u8)
            };
            [rgb(m[0]), rgb(m[2])].concat()
        })
        .collect();
    assert_ne!(fast, full_range, "a different matrix must be seen");
}

#[test]
#[should_panic(expected = "not an even number of pixels")]
fn an_odd_row_is_refused() {
    yuyv_row_to_rgb(&[0; 6], &mut [0; 9]);
}

/// Every (Y, U, V) triple through the per-pixel converter: for each U, rows
/// whose luma is rotated against V so that every (Y, V) pair occurs.
#[test]
fn planar_equals_the_scalar_formula_for_every_triple() {
    let v: Vec<u8> = (0..=255).collect();
    let mut y = vec![0u8; 256];
    let mut got = vec![0u8; 768];
    for u in 0..=255u8 {
        let u_row = [u; 256];
        for k in 0..=255u8 {
            for (i, b) in y.iter_mut().enumerate() {
                *b = (i as u8).wrapping_add(k);
            }
            planar_row_to_rgb(&y, &u_row, &v, &mut got);
            for (x, px) in got.chunks_exact(3).enumerate() {
                assert_eq!(px, yuv_to_rgb(y[x], u, v[x]), "y {} u {u} v {x}", y[x]);
            }
        }
    }
}

#[test]
fn planar_rows_of_any_length_equal_the_scalar_reference() {
    for n in [1usize, 3, 15, 16, 17, 31, 33, 144, 287, 288] {
        let (y, u, v) = (
            bytes(n, n as u64),
            bytes(n, 3 * n as u64),
            bytes(n, 7 * n as u64),
        );
        let mut fast = vec![0u8; 3 * n];
        let mut slow = vec![1u8; 3 * n];
        planar_row_to_rgb(&y, &u, &v, &mut fast);
        planar_row_scalar(&y, &u, &v, &mut slow);
        assert_eq!(fast, slow, "planar row of {n} pixels");
        // Negative control: U and V swapped are seen.
        planar_row_to_rgb(&y, &v, &u, &mut slow);
        assert_ne!(fast, slow, "U and V swapped in a row of {n} went unnoticed");
    }
}
