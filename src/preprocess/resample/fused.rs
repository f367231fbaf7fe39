//! The fused fast path: crop, 2x2 bilinear resampling and colour conversion
//! in one pass that reads only the source pixels each output pixel needs
//! (OpenCV `INTER_LINEAR` semantics: no antialiasing when shrinking).
//!
//! Luma and chroma are interpolated at their own sample positions straight
//! from the packed or planar camera layout, then converted to RGB per output
//! pixel; no intermediate full-size image exists.

use super::{Pixels, RgbOut, Source};
use crate::preprocess::quantize::{self, ChannelLut};
use crate::preprocess::yuv;

/// Source sample pair and weight (0..=256) for each output coordinate of one axis.
#[derive(Debug, Default, Clone)]
pub struct Taps {
    i0: Vec<u32>,
    i1: Vec<u32>,
    w: Vec<u32>,
}

impl Taps {
    /// Taps for `n` outputs covering source `[start, start + len)` (continuous
    /// coordinates of the full-resolution grid), for samples spaced `spacing`
    /// full-resolution pixels apart whose first centre is at `first_centre`,
    /// `count` samples in all.
    pub fn plan(
        &mut self,
        n: u32,
        start: f64,
        len: f64,
        spacing: f64,
        first_centre: f64,
        count: u32,
    ) {
        self.i0.clear();
        self.i1.clear();
        self.w.clear();
        let last = count.saturating_sub(1);
        for d in 0..n {
            let u = start + (f64::from(d) + 0.5) * len / f64::from(n);
            let s = ((u - first_centre) / spacing).clamp(0.0, f64::from(last));
            let i0 = (s.floor() as u32).min(last);
            let w = ((s - f64::from(i0)) * 256.0).round() as u32;
            self.i0.push(i0);
            self.i1.push((i0 + 1).min(last));
            self.w.push(w.min(256));
        }
    }
}

/// Scratch for the fused path (reused across frames).
#[derive(Debug, Default)]
pub struct Sampler {
    lx: Taps,
    ly: Taps,
    cx: Taps,
    cy: Taps,
    /// Horizontal tap pairs, luma then chroma.
    lo: PairTaps,
    co: PairTaps,
    /// One vertically blended source row (luma, and chroma for NV12).
    row_l: Vec<u8>,
    row_c: Vec<u8>,
    /// One output row of Y, U and V (chroma already widened to full width).
    y: Vec<u8>,
    u2: Vec<u8>,
    v2: Vec<u8>,
    /// What the taps above were planned for; planning again only when it changes.
    planned: Option<PlanKey>,
}

/// The inputs tap planning depends on: source kind (layout or channel count),
/// source size, crop (as bits) and output size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PlanKey(u8, (u32, u32), [u64; 4], (u32, u32));

impl PlanKey {
    fn new(kind: u8, size: (u32, u32), crop: [f64; 4], out: (u32, u32)) -> Self {
        Self(kind, size, crop.map(f64::to_bits), out)
    }
}

/// Horizontal taps as pairs of neighbouring samples: the first sample's byte
/// offset in a row (the second is one sample step further) and the second
/// sample's weight.
///
/// A tap clamped at the last sample (`i0 == i1`) becomes the pair ending
/// there with weight 256, which gives the same value exactly; so every pair
/// is two fixed steps apart, one offset per output instead of two, and the
/// weight fits 16-bit arithmetic.
#[derive(Debug, Default, Clone)]
pub(super) struct PairTaps {
    off: Vec<u32>,
    w: Vec<u16>,
}

impl PairTaps {
    /// Pairs from `taps`, samples `step` bytes apart starting at byte `base`
    /// of the source row, minus `origin` (the first byte kept in the row).
    fn build(&mut self, taps: &Taps, step: usize, base: usize, origin: usize) {
        self.off.clear();
        self.w.clear();
        for ((&a, &b), &w) in taps.i0.iter().zip(&taps.i1).zip(&taps.w) {
            let (first, w) = if a == b && a > 0 {
                (a - 1, 256)
            } else {
                (a, w)
            };
            self.off
                .push((first as usize * step + base - origin) as u32);
            self.w.push(w as u16);
        }
    }

    /// One past the largest byte a gather with sample step `step` and extra
    /// offset `delta` reads.
    fn reach(&self, step: usize, delta: usize) -> usize {
        self.off
            .iter()
            .map(|&o| o as usize + step + delta + 1)
            .max()
            .unwrap_or(0)
    }
}

/// Bytes after each blended row, enough for the widest pair (YUYV chroma: 4 + 2).
const ROW_PAD: usize = 8;

/// `(a * (256 - w) + b * w + 128) >> 8` in 16 bits: at most 255 * 256 + 128.
#[inline(always)]
fn lerp16(a: u8, b: u8, w: u16) -> u8 {
    ((u16::from(a) * (256 - w) + u16::from(b) * w + 128) >> 8) as u8
}

/// Luma: `out[i] = lerp(row[off], row[off + STEP], w)`.
///
/// # Safety
/// `taps.reach(STEP, 0) <= row.len()`.
#[inline(always)]
unsafe fn gather_luma<const STEP: usize>(out: &mut [u8], row: &[u8], taps: &PairTaps) {
    for ((o, &off), &w) in out.iter_mut().zip(&taps.off).zip(&taps.w) {
        let p = off as usize;
        // SAFETY: the caller guarantees every `off + STEP` is inside `row`.
        let (a, b) = unsafe { (*row.get_unchecked(p), *row.get_unchecked(p + STEP)) };
        *o = lerp16(a, b, w);
    }
}

/// Chroma: U at `off`, V at `off + VD`, the pair's second sample `STEP` on;
/// each value written twice (one chroma sample per output pixel pair).
///
/// # Safety
/// `taps.reach(STEP, VD) <= row.len()`.
#[inline(always)]
unsafe fn gather_chroma<const STEP: usize, const VD: usize>(
    u2: &mut [u8],
    v2: &mut [u8],
    row: &[u8],
    taps: &PairTaps,
) {
    for (((u, v), &off), &w) in u2
        .chunks_exact_mut(2)
        .zip(v2.chunks_exact_mut(2))
        .zip(&taps.off)
        .zip(&taps.w)
    {
        let p = off as usize;
        // SAFETY: the caller guarantees every `off + STEP + VD` is inside `row`.
        let (u0, u1, v0, v1) = unsafe {
            (
                *row.get_unchecked(p),
                *row.get_unchecked(p + STEP),
                *row.get_unchecked(p + VD),
                *row.get_unchecked(p + STEP + VD),
            )
        };
        let (cu, cv) = (lerp16(u0, u1, w), lerp16(v0, v1, w));
        u[0] = cu;
        u[1] = cu;
        v[0] = cv;
        v[1] = cv;
    }
}

/// Where a frame's luma and chroma samples live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YuvLayout {
    /// Packed Y0 U Y1 V, `width` even.
    Yuyv,
    /// Y plane then interleaved UV plane at half resolution.
    Nv12,
}

/// `out = (a * (256 - w) + b * w + 128) >> 8`, over whole rows: NEON
/// intrinsics on aarch64 for the whole vectors, plain loops (which the
/// compiler vectorises, AVX2 under `resample_yuv_avx2`) for the rest.
#[inline]
fn blend_rows(out: &mut [u8], a: &[u8], b: &[u8], w: u32) {
    if w == 0 {
        out.copy_from_slice(a);
        return;
    }
    let (wa, wb) = (256 - w as u16, w as u16);
    // SAFETY: NEON is the aarch64 baseline.
    #[cfg(target_arch = "aarch64")]
    let done = unsafe { super::neon::blend_rows(out, a, b, wa, wb) };
    #[cfg(not(target_arch = "aarch64"))]
    let done = 0;
    let (out, a, b) = (&mut out[done..], &a[done..], &b[done..]);
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = ((u16::from(x) * wa + u16::from(y) * wb + 128) >> 8) as u8;
    }
}

impl Taps {
    /// Blends, into `out`, columns `span` of the two source rows output row
    /// `i` takes (rows `stride` bytes apart in `src`) with its weight.
    #[inline]
    fn blend(&self, i: usize, out: &mut [u8], src: &[u8], stride: usize, (s, e): (usize, usize)) {
        let row = |r: u32| &src[r as usize * stride + s..r as usize * stride + e];
        blend_rows(out, row(self.i0[i]), row(self.i1[i]), self.w[i]);
    }
}

/// Where the crop starts when it maps one to one onto the output region:
/// the same size, at whole pixels, inside the frame, and with an even start
/// and width so that output pixel pairs share one chroma sample as the
/// camera's do.
fn one_to_one(
    [x0, y0, cw, ch]: [f64; 4],
    (w, h): (u32, u32),
    layout: YuvLayout,
    [_, _, dw, dh]: [u32; 4],
) -> Option<(usize, usize)> {
    let whole = |v: f64| v >= 0.0 && v.fract() == 0.0;
    let fits = cw == f64::from(dw)
        && ch == f64::from(dh)
        && whole(x0)
        && whole(y0)
        && x0 + cw <= f64::from(w)
        && y0 + ch <= f64::from(h)
        && (x0 as u64).is_multiple_of(2)
        && dw.is_multiple_of(2)
        && (layout == YuvLayout::Yuyv || h.is_multiple_of(2));
    fits.then_some((x0 as usize, y0 as usize))
}

impl Sampler {
    /// Writes region `out.dst` of an RGB tensor from the source's crop,
    /// quantised through `lut`.
    pub fn sample(&mut self, src: &Source, out: RgbOut, lut: &ChannelLut) {
        match src.pixels {
            Pixels::Yuv(layout) => self.sample_yuv(src, layout, out, lut),
            Pixels::Packed(channels) => self.sample_packed(src, channels, out, lut),
        }
    }

    /// [`Sampler::sample`] for YUV pixels laid out as `layout`.
    ///
    /// Three passes per output row, each over contiguous memory except the
    /// horizontal taps: blend the two source rows (luma and chroma together
    /// for YUYV), pick and blend the horizontal taps into Y, U, V rows, and
    /// convert those to RGB.
    fn sample_yuv(&mut self, src: &Source, layout: YuvLayout, out: RgbOut, lut: &ChannelLut) {
        if let Some(origin) = one_to_one(src.crop, src.size, layout, out.dst) {
            return self.same_size(src, layout, origin, out, lut);
        }
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                unsafe { self.resample_yuv_avx2(src, layout, out, lut) };
                return;
            }
        }
        self.resample_yuv(src, layout, out, lut);
    }

    /// [`Sampler::sample_yuv`] when the crop maps one to one onto the output
    /// (see [`one_to_one`]): every tap would have weight 0 except NV12's
    /// vertical chroma, so rows are converted whole by the row converters, bit for
    /// bit what the resampling path computes.
    fn same_size(
        &mut self,
        src: &Source,
        layout: YuvLayout,
        (x0, y0): (usize, usize),
        out: RgbOut,
        lut: &ChannelLut,
    ) {
        let (src, (w, h), crop) = (src.data, src.size, src.crop);
        let (out, tw, [dx, dy, dw, dh]) = (out.data, out.width, out.dst);
        let (wu, hu, dwu) = (w as usize, h as usize, dw as usize);
        let key = PlanKey::new(0x20 | layout as u8, (w, h), crop, (dw, dh));
        if layout == YuvLayout::Nv12 && self.planned != Some(key) {
            // The chroma rows sit between luma rows: the same vertical taps
            // as the resampling path.
            self.cy.plan(dh, crop[1], crop[3], 2.0, 1.0, h / 2);
            self.planned = Some(key);
        }
        self.row_c.resize(dwu, 0);
        for oy in 0..dh as usize {
            let o = (dy as usize + oy) * tw * 3 + dx as usize * 3;
            let dst = &mut out[o..o + dwu * 3];
            let r = y0 + oy;
            match layout {
                YuvLayout::Yuyv => {
                    let s = (r * wu + x0) * 2;
                    yuv::yuyv_row_to_rgb(&src[s..s + dwu * 2], dst);
                }
                YuvLayout::Nv12 => {
                    // Pair `x0 / 2` of a chroma row starts at byte `x0` (x0 is even).
                    let uv_plane = &src[wu * hu..];
                    self.cy
                        .blend(oy, &mut self.row_c, uv_plane, wu, (x0, x0 + dwu));
                    let s = r * wu + x0;
                    yuv::nv12_row_to_rgb(&src[s..s + dwu], &self.row_c, dst);
                }
            }
            quantize::apply(lut, dst);
        }
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn resample_yuv_avx2(
        &mut self,
        src: &Source,
        layout: YuvLayout,
        out: RgbOut,
        lut: &ChannelLut,
    ) {
        self.resample_yuv(src, layout, out, lut);
    }

    #[inline(always)]
    fn resample_yuv(&mut self, src: &Source, layout: YuvLayout, out: RgbOut, lut: &ChannelLut) {
        let (src, (w, h), crop) = (src.data, src.size, src.crop);
        let (out, tw, [dx, dy, dw, dh]) = (out.data, out.width, out.dst);
        let [x0, y0, cw, ch] = crop;
        let cn = dw.div_ceil(2);
        let key = PlanKey::new(layout as u8, (w, h), crop, (dw, dh));
        let replan = self.planned != Some(key);
        if replan {
            self.lx.plan(dw, x0, cw, 1.0, 0.5, w);
            self.ly.plan(dh, y0, ch, 1.0, 0.5, h);
            // Chroma samples sit between the two (or four) luma samples they cover.
            // Chroma is resampled at half the output width (one U, V per output
            // pixel pair, as in 4:2:2), which halves its cost; the source has no
            // more chroma detail than that once shrunk.
            self.cx.plan(
                cn,
                x0,
                cw * f64::from(2 * cn) / f64::from(dw.max(1)),
                2.0,
                1.0,
                w / 2,
            );
            if layout == YuvLayout::Nv12 {
                self.cy.plan(dh, y0, ch, 2.0, 1.0, h / 2);
            }
        }
        let (w, h) = (w as usize, h as usize);
        // Byte steps between samples, and where U and V sit in a chroma sample.
        let (luma_step, chroma_step, u_off, v_delta) = match layout {
            YuvLayout::Yuyv => (2, 4, 1, 2),
            YuvLayout::Nv12 => (1, 2, 0, 1),
        };
        // Blend only the span of each row the taps touch.
        let l_first = self.lx.i0.first().copied().unwrap_or(0) as usize * luma_step;
        let l_last = self.lx.i1.last().copied().unwrap_or(0) as usize * luma_step + luma_step;
        let c_first = self.cx.i0.first().copied().unwrap_or(0) as usize * chroma_step;
        let c_last = self.cx.i1.last().copied().unwrap_or(0) as usize * chroma_step + chroma_step;
        let (l_span, c_span) = match layout {
            YuvLayout::Yuyv => {
                let s = l_first.min(c_first) & !3;
                let e = l_last.max(c_last).min(w * 2);
                ((s, e), (s, e))
            }
            YuvLayout::Nv12 => ((l_first, l_last.min(w)), (c_first, c_last.min(w))),
        };
        // Every pair below stays inside its blended row: the spans end one
        // sample past the last tap (checked once per frame, below).
        if replan {
            self.lo.build(&self.lx, luma_step, 0, l_span.0);
            self.co.build(&self.cx, chroma_step, u_off, c_span.0);
            self.planned = Some(key);
        }
        let dwu = dw as usize;
        // Zero padding past each span: a single-sample axis pairs its only
        // sample with the padding at weight 0, which reads but never uses it.
        let (l_len, c_len) = (l_span.1 - l_span.0, c_span.1 - c_span.0);
        self.row_l.resize(l_len + ROW_PAD, 0);
        self.row_c.resize(c_len + ROW_PAD, 0);
        self.y.resize(dwu, 0);
        self.u2.resize(cn as usize * 2, 0);
        self.v2.resize(cn as usize * 2, 0);
        let luma_stride = if layout == YuvLayout::Yuyv { w * 2 } else { w };
        let chroma_len = match layout {
            YuvLayout::Yuyv => self.row_l.len(),
            YuvLayout::Nv12 => self.row_c.len(),
        };
        assert!(
            self.lo.reach(luma_step, 0) <= self.row_l.len()
                && self.co.reach(chroma_step, v_delta) <= chroma_len,
            "sampling taps outside the source rows"
        );
        for oy in 0..dh as usize {
            self.ly
                .blend(oy, &mut self.row_l[..l_len], src, luma_stride, l_span);
            let chroma_row: &[u8] = match layout {
                YuvLayout::Yuyv => &self.row_l,
                YuvLayout::Nv12 => {
                    let uv_plane = &src[w * h..];
                    self.cy
                        .blend(oy, &mut self.row_c[..c_len], uv_plane, w, c_span);
                    &self.row_c
                }
            };
            let o = (dy as usize + oy) * tw * 3 + dx as usize * 3;
            let dst = &mut out[o..o + dwu * 3];
            // SAFETY: both reaches were checked against the row lengths above.
            unsafe {
                match layout {
                    YuvLayout::Yuyv => {
                        gather_luma::<2>(&mut self.y, &self.row_l, &self.lo);
                        gather_chroma::<4, 2>(&mut self.u2, &mut self.v2, chroma_row, &self.co);
                    }
                    YuvLayout::Nv12 => {
                        gather_luma::<1>(&mut self.y, &self.row_l, &self.lo);
                        gather_chroma::<2, 1>(&mut self.u2, &mut self.v2, chroma_row, &self.co);
                    }
                }
            }
            yuv::planar_row_to_rgb(&self.y, &self.u2, &self.v2, dst);
            quantize::apply(lut, dst);
        }
    }

    /// [`Sampler::sample`] for packed 8-bit pixels of `channels` (1 = grey, 3 = RGB).
    fn sample_packed(&mut self, src: &Source, channels: usize, out: RgbOut, lut: &ChannelLut) {
        let (src, (w, h), crop) = (src.data, src.size, src.crop);
        let (out, tw, [dx, dy, dw, dh]) = (out.data, out.width, out.dst);
        let [x0, y0, cw, ch] = crop;
        let key = PlanKey::new(0x10 | channels as u8, (w, h), crop, (dw, dh));
        let replan = self.planned != Some(key);
        if replan {
            self.lx.plan(dw, x0, cw, 1.0, 0.5, w);
            self.ly.plan(dh, y0, ch, 1.0, 0.5, h);
        }
        let stride = w as usize * channels;
        // Blend only the span of each row the taps touch, then gather pairs
        // from it as in the YUV path.
        let first = self.lx.i0.first().copied().unwrap_or(0) as usize * channels;
        let last = (self.lx.i1.last().copied().unwrap_or(0) as usize + 1) * channels;
        let len = last.saturating_sub(first);
        if replan {
            self.lo.build(&self.lx, channels, 0, first);
            self.planned = Some(key);
        }
        self.row_l.resize(len + ROW_PAD, 0);
        assert!(
            self.lo.reach(channels, channels - 1) <= self.row_l.len(),
            "sampling taps outside the source rows"
        );
        let dwu = dw as usize;
        for oy in 0..dh as usize {
            self.ly
                .blend(oy, &mut self.row_l[..len], src, stride, (first, last));
            let o = (dy as usize + oy) * tw * 3 + dx as usize * 3;
            let dst = &mut out[o..o + dwu * 3];
            // SAFETY: the reach was checked against the row length above.
            unsafe {
                if channels == 1 {
                    gather_packed::<1>(dst, &self.row_l, &self.lo);
                } else {
                    gather_packed::<3>(dst, &self.row_l, &self.lo);
                }
            }
            quantize::apply(lut, dst);
        }
    }
}

/// Packed grey (`CH` = 1, replicated) or RGB (`CH` = 3) pairs to RGB pixels.
///
/// # Safety
/// `taps.reach(CH, CH - 1) <= row.len()`.
#[inline(always)]
unsafe fn gather_packed<const CH: usize>(dst: &mut [u8], row: &[u8], taps: &PairTaps) {
    for ((px, &off), &w) in dst.chunks_exact_mut(3).zip(&taps.off).zip(&taps.w) {
        let p = off as usize;
        for (c, v) in px.iter_mut().enumerate() {
            let k = if CH == 1 { 0 } else { c };
            // SAFETY: the caller guarantees every `off + CH + CH - 1` is inside `row`.
            let (a, b) = unsafe { (*row.get_unchecked(p + k), *row.get_unchecked(p + CH + k)) };
            *v = lerp16(a, b, w);
        }
    }
}

#[cfg(test)]
#[path = "fused_tests.rs"]
mod tests;
