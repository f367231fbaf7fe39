//! The fused samplers against plain two-pass references.
use super::*;

/// The straightforward two-pass sampler the fused one must equal bit for
/// bit: vertical blend of each sample, then horizontal, with the taps'
/// own `(i0, i1, w)` (no pairing, no 16-bit tricks).
fn reference(
    src: &[u8],
    (w, h): (u32, u32),
    layout: YuvLayout,
    crop: [f64; 4],
    (dw, dh): (u32, u32),
    shift: u32,
) -> Vec<u8> {
    let [x0, y0, cw, ch] = crop;
    let (mut lx, mut ly, mut cx, mut cy) = Default::default();
    Taps::plan(&mut lx, dw, x0, cw, 1.0, 0.5, w);
    Taps::plan(&mut ly, dh, y0, ch, 1.0, 0.5, h);
    let cn = dw.div_ceil(2);
    Taps::plan(
        &mut cx,
        cn,
        x0,
        cw * f64::from(2 * cn) / f64::from(dw),
        2.0,
        1.0,
        w / 2,
    );
    Taps::plan(&mut cy, dh, y0, ch, 2.0, 1.0, h / 2);
    let (w, h) = (w as usize, h as usize);
    let lerp =
        |a: u8, b: u8, t: u32| ((u32::from(a) * (256 - t) + u32::from(b) * t + 128) >> 8) as u8;
    // Byte of luma sample (x, y) and of chroma sample (x, y), U (0) or V (1).
    let luma = |x: usize, y: usize| match layout {
        YuvLayout::Yuyv => src[y * w * 2 + x * 2],
        YuvLayout::Nv12 => src[y * w + x],
    };
    let chroma = |x: usize, y: usize, c: usize, ry: usize| match layout {
        YuvLayout::Yuyv => src[ry * w * 2 + x * 4 + 1 + 2 * c],
        YuvLayout::Nv12 => src[w * h + y * w + x * 2 + c],
    };
    let at = |t: &Taps, i: usize| (t.i0[i] as usize, t.i1[i] as usize, t.w[i] + shift);
    let mut out = Vec::new();
    for oy in 0..dh as usize {
        let (r0, r1, wy) = at(&ly, oy);
        let (c0, c1, cwy) = match layout {
            YuvLayout::Yuyv => (r0, r1, wy),
            YuvLayout::Nv12 => at(&cy, oy),
        };
        for ox in 0..dw as usize {
            let (a, b, wx) = at(&lx, ox);
            let y = lerp(
                lerp(luma(a, r0), luma(a, r1), wy),
                lerp(luma(b, r0), luma(b, r1), wy),
                wx,
            );
            let (ca, cb, cwx) = at(&cx, ox / 2);
            let uv = [0, 1].map(|c| {
                let v = |x: usize| lerp(chroma(x, c0, c, r0), chroma(x, c1, c, r1), cwy);
                lerp(v(ca), v(cb), cwx)
            });
            out.extend(crate::preprocess::yuv_to_rgb(y, uv[0], uv[1]));
        }
    }
    out
}

fn fused(
    src: &[u8],
    size: (u32, u32),
    layout: YuvLayout,
    crop: [f64; 4],
    d: (u32, u32),
) -> Vec<u8> {
    let src = source(src, size, Pixels::Yuv(layout), crop);
    rgb_image(d, |out| Sampler::default().sample(&src, out, &None))
}

/// The pixels `data` (of `size`, laid out as `pixels`) with region `crop`.
fn source(data: &[u8], size: (u32, u32), pixels: Pixels, crop: [f64; 4]) -> Source<'_> {
    Source {
        data,
        size,
        pixels,
        crop,
    }
}

/// A `d` RGB image written whole by `write`.
fn rgb_image(d: (u32, u32), write: impl FnOnce(RgbOut)) -> Vec<u8> {
    let mut data = vec![0; d.0 as usize * d.1 as usize * 3];
    write(RgbOut {
        data: &mut data,
        width: d.0 as usize,
        dst: [0, 0, d.0, d.1],
    });
    data
}

/// `len` deterministic bytes from the linear congruential generator at `seed`.
fn noise(len: usize, seed: &mut u32) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (*seed >> 24) as u8
        })
        .collect()
}

#[test]
fn fused_sampler_equals_the_two_pass_reference() {
    let mut seed = 7u32;
    for (layout, (w, h), crop, d) in [
        (YuvLayout::Yuyv, (64, 36), [14.0, 0.0, 36.0, 36.0], (29, 29)),
        (YuvLayout::Yuyv, (64, 36), [0.0, 0.0, 64.0, 36.0], (40, 22)),
        (YuvLayout::Yuyv, (64, 36), [0.0, 0.0, 64.0, 36.0], (100, 60)),
        (YuvLayout::Nv12, (64, 36), [14.0, 0.0, 36.0, 36.0], (29, 29)),
        (YuvLayout::Nv12, (64, 36), [0.0, 0.0, 64.0, 36.0], (100, 60)),
        (YuvLayout::Yuyv, (2, 2), [0.0, 0.0, 2.0, 2.0], (3, 3)),
    ] {
        let len = (w * h * 2) as usize;
        let src = noise(len, &mut seed);
        let want = reference(&src, (w, h), layout, crop, d, 0);
        assert_eq!(
            fused(&src, (w, h), layout, crop, d),
            want,
            "{layout:?} {w}x{h} {crop:?} -> {d:?}"
        );
        // Negative control: the comparison notices weights one step off.
        let off = reference(&src, (w, h), layout, crop, d, 1);
        assert_ne!(
            off, want,
            "{layout:?} {d:?}: shifted weights went unnoticed"
        );
    }
}

#[test]
fn packed_sampler_equals_the_two_pass_reference() {
    let (w, h) = (40u32, 24u32);
    let lerp =
        |a: u8, b: u8, t: u32| ((u32::from(a) * (256 - t) + u32::from(b) * t + 128) >> 8) as u8;
    for channels in [1usize, 3] {
        let src: Vec<u8> = (0..w as usize * h as usize * channels)
            .map(|i| (i * 37 % 251) as u8)
            .collect();
        for (crop, d) in [
            ([8.0, 0.0, 24.0, 24.0], (17u32, 17u32)),
            ([0.0, 0.0, 40.0, 24.0], (60, 36)),
        ] {
            let (mut lx, mut ly) = (Taps::default(), Taps::default());
            lx.plan(d.0, crop[0], crop[2], 1.0, 0.5, w);
            ly.plan(d.1, crop[1], crop[3], 1.0, 0.5, h);
            let reference = |shift: u32| {
                let mut out = Vec::new();
                for oy in 0..d.1 as usize {
                    for ox in 0..d.0 as usize {
                        for c in 0..3 {
                            let k = if channels == 1 { 0 } else { c };
                            let at = |x: u32, y: u32| {
                                src[(y as usize * w as usize + x as usize) * channels + k]
                            };
                            let wy = ly.w[oy] + shift;
                            let v = |x: u32| lerp(at(x, ly.i0[oy]), at(x, ly.i1[oy]), wy);
                            out.push(lerp(v(lx.i0[ox]), v(lx.i1[ox]), lx.w[ox] + shift));
                        }
                    }
                }
                out
            };
            let packed = source(&src, (w, h), Pixels::Packed(channels), crop);
            let got = rgb_image(d, |out| Sampler::default().sample(&packed, out, &None));
            assert_eq!(got, reference(0), "{channels} channels, {crop:?} -> {d:?}");
            assert_ne!(
                got,
                reference(1),
                "negative control: shifted weights went unnoticed"
            );
        }
    }
}

#[test]
fn a_reused_sampler_replans_when_the_crop_or_source_changes() {
    let (w, h) = (64u32, 36u32);
    let src: Vec<u8> = (0..(w * h * 2) as usize)
        .map(|i| (i * 53 % 241) as u8)
        .collect();
    let d = (20u32, 20u32);
    let run = |s: &mut Sampler, layout: YuvLayout, crop: [f64; 4]| {
        let yuv = source(&src, (w, h), Pixels::Yuv(layout), crop);
        rgb_image(d, |out| s.sample(&yuv, out, &None))
    };
    let (a, b) = ([14.0, 0.0, 36.0, 36.0], [0.0, 0.0, 36.0, 36.0]);
    let mut reused = Sampler::default();
    for (layout, crop) in [
        (YuvLayout::Yuyv, a),
        (YuvLayout::Yuyv, b),
        (YuvLayout::Nv12, b),
        (YuvLayout::Yuyv, a),
    ] {
        let fresh = run(&mut Sampler::default(), layout, crop);
        assert_eq!(run(&mut reused, layout, crop), fresh, "{layout:?} {crop:?}");
    }
    // Negative control: stale taps would show, since the two crops differ.
    assert_ne!(
        run(&mut Sampler::default(), YuvLayout::Yuyv, a),
        run(&mut Sampler::default(), YuvLayout::Yuyv, b)
    );
    let grey = source(&src, (w, h), Pixels::Packed(1), a);
    let packed = rgb_image(d, |out| reused.sample(&grey, out, &None));
    let want = rgb_image(d, |out| Sampler::default().sample(&grey, out, &None));
    assert_eq!(packed, want, "packed after YUV");
}

/// A frame already at the output size (whole, or a crop at whole, even
/// offsets) takes the row converter; it must equal the resampling path and
/// the two-pass reference bit for bit, NV12's interpolated chroma rows
/// included.
#[test]
fn one_to_one_crops_equal_the_resampling_path() {
    let mut seed = 11u32;
    for (layout, (w, h), crop, d) in [
        (YuvLayout::Yuyv, (48, 20), [0.0, 0.0, 48.0, 20.0], (48, 20)),
        (YuvLayout::Nv12, (48, 20), [0.0, 0.0, 48.0, 20.0], (48, 20)),
        (YuvLayout::Yuyv, (64, 36), [14.0, 0.0, 36.0, 36.0], (36, 36)),
        (YuvLayout::Nv12, (64, 36), [14.0, 3.0, 34.0, 30.0], (34, 30)),
        (YuvLayout::Yuyv, (2, 2), [0.0, 0.0, 2.0, 2.0], (2, 2)),
    ] {
        let size = (w, h);
        assert!(
            one_to_one(crop, size, layout, [0, 0, d.0, d.1]).is_some(),
            "{crop:?} -> {d:?} is one to one"
        );
        let src = noise((w * h * 2) as usize, &mut seed);
        let got = fused(&src, size, layout, crop, d);
        let yuv = source(&src, size, Pixels::Yuv(layout), crop);
        let resampled = rgb_image(d, |out| {
            Sampler::default().resample_yuv(&yuv, layout, out, &None)
        });
        assert_eq!(
            got, resampled,
            "{layout:?} {crop:?}: rows against resampling"
        );
        assert_eq!(
            got,
            reference(&src, size, layout, crop, d, 0),
            "{layout:?} {crop:?}: rows against the reference"
        );
        // Negative control: the same frame one pixel to the right differs.
        let moved = [crop[0] + 2.0, crop[1], crop[2], crop[3]];
        if moved[0] + moved[2] <= f64::from(w) {
            assert_ne!(got, fused(&src, size, layout, moved, d), "{crop:?} moved");
        }
    }
}

#[test]
fn fractional_or_odd_crops_are_not_one_to_one() {
    let d = [0, 0, 36, 36];
    let yuyv = YuvLayout::Yuyv;
    assert!(one_to_one([14.0, 0.0, 36.0, 36.0], (64, 36), yuyv, d).is_some());
    assert!(one_to_one([13.0, 0.0, 36.0, 36.0], (64, 36), yuyv, d).is_none());
    assert!(one_to_one([14.5, 0.0, 36.0, 36.0], (64, 36), yuyv, d).is_none());
    assert!(one_to_one([14.0, 0.0, 36.0, 35.0], (64, 36), yuyv, d).is_none());
    assert!(one_to_one([30.0, 0.0, 36.0, 36.0], (64, 36), yuyv, d).is_none());
    assert!(one_to_one([0.0, 0.0, 35.0, 36.0], (64, 36), yuyv, [0, 0, 35, 36]).is_none());
}

/// The vertical blend (NEON on aarch64, plain loops elsewhere) equals the
/// per-byte formula for every weight, at lengths around the vector width
/// and its tails, bit for bit.
#[test]
fn blend_rows_equals_the_per_byte_formula() {
    let mut seed = 5u32;
    let lerp = |a: u8, b: u8, w: u32, round: u32| {
        ((u32::from(a) * (256 - w) + u32::from(b) * w + round) >> 8) as u8
    };
    let (mut checked, mut caught) = (0usize, 0usize);
    for n in (0..=70).chain([255, 1283]) {
        let (a, b) = (noise(n, &mut seed), noise(n, &mut seed));
        for w in 0..=256u32 {
            let mut got = vec![0u8; n];
            blend_rows(&mut got, &a, &b, w);
            let want: Vec<u8> = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| lerp(x, y, w, 128))
                .collect();
            assert_eq!(got, want, "{n} bytes, weight {w}");
            checked += n;
            // Negative control: rounding down instead of to nearest is seen
            // whenever some byte's fraction is at least one half.
            let floor: Vec<u8> = a.iter().zip(&b).map(|(&x, &y)| lerp(x, y, w, 0)).collect();
            caught += usize::from(got != floor);
        }
    }
    assert!(checked > 400_000, "{checked} bytes compared");
    assert!(caught > 10_000, "truncation seen in only {caught} rows");
}
