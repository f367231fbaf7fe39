//! Colour conversion, BT.601 limited range (what UVC cameras send and what
//! OpenCV's `COLOR_YUV2RGB_*` assume), in 8.8 fixed point.

/// One pixel from Y, U (Cb), V (Cr) to R, G, B.
#[inline(always)]
pub fn yuv_to_rgb(y: u8, u: u8, v: u8) -> [u8; 3] {
    let c = 298 * (i32::from(y) - 16);
    let d = i32::from(u) - 128;
    let e = i32::from(v) - 128;
    [
        clamp8((c + 409 * e + 128) >> 8),
        clamp8((c - 100 * d - 208 * e + 128) >> 8),
        clamp8((c + 516 * d + 128) >> 8),
    ]
}

/// One pixel from R, G, B to Y, U, V (for padding YUV outputs).
pub fn rgb_to_yuv(rgb: [u8; 3]) -> [u8; 3] {
    let [r, g, b] = rgb.map(i32::from);
    [
        clamp8(((66 * r + 129 * g + 25 * b + 128) >> 8) + 16),
        clamp8(((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128),
        clamp8(((112 * r - 94 * g - 18 * b + 128) >> 8) + 128),
    ]
}

#[inline(always)]
fn clamp8(v: i32) -> u8 {
    v.clamp(0, 255) as u8
}

/// The textbook float formula, the reference the fixed-point one is tested against.
pub fn yuv_to_rgb_reference(y: u8, u: u8, v: u8) -> [f64; 3] {
    let y = (f64::from(y) - 16.0) * 255.0 / 219.0;
    let u = (f64::from(u) - 128.0) * 255.0 / 224.0;
    let v = (f64::from(v) - 128.0) * 255.0 / 224.0;
    let (kr, kb) = (0.299, 0.114);
    let kg = 1.0 - kr - kb;
    let r = y + 2.0 * (1.0 - kr) * v;
    let b = y + 2.0 * (1.0 - kb) * u;
    let g = (y - kr * r - kb * b) / kg;
    [r, g, b].map(|c| c.clamp(0.0, 255.0))
}

/// Per-channel lookup applied to every output byte (quantisation); identity when `None`.
pub type ChannelLut = Option<Box<[[u8; 256]; 3]>>;

/// Writes one RGB row from a luma row and a chroma row of the same width.
///
/// `luma` holds `width` samples at stride `ls` (offset 0), `chroma` holds U at
/// `cu` and V at `cv` in pixels of stride `cs`. Works in blocks of 64 pixels
/// gathered on the stack so the conversion itself runs vectorised.
#[inline]
pub fn row_yuv_to_rgb(
    out: &mut [u8],
    luma: &[u8],
    ls: usize,
    chroma: &[u8],
    cs: usize,
    (cu, cv): (usize, usize),
    lut: &ChannelLut,
) {
    const B: usize = 64;
    let width = out.len() / 3;
    let (mut y, mut u, mut v) = ([0u8; B], [0u8; B], [0u8; B]);
    for start in (0..width).step_by(B) {
        let n = B.min(width - start);
        for i in 0..n {
            let x = start + i;
            y[i] = luma[x * ls];
            u[i] = chroma[x * cs + cu];
            v[i] = chroma[x * cs + cv];
        }
        let o = &mut out[start * 3..(start + n) * 3];
        super::sample::convert_row(o, &y[..n], &u[..n], &v[..n]);
        super::sample::apply_lut(o, lut);
    }
}

#[cfg(test)]
mod tests {
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
}
