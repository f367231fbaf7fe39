//! The fused fast path: crop, 2x2 bilinear resampling and colour conversion
//! in one pass that reads only the source pixels each output pixel needs
//! (OpenCV `INTER_LINEAR` semantics: no antialiasing when shrinking).
//!
//! Luma and chroma are interpolated at their own sample positions straight
//! from the packed or planar camera layout, then converted to RGB per output
//! pixel; no intermediate full-size image exists.

use super::convert::{yuv_to_rgb, ChannelLut};

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

#[inline(always)]
fn lerp2(a: u32, b: u32, c: u32, d: u32, wx: u32, wy: u32) -> u8 {
    let top = a * (256 - wx) + b * wx;
    let bottom = c * (256 - wx) + d * wx;
    ((top * (256 - wy) + bottom * wy + (1 << 15)) >> 16) as u8
}

/// Scratch for the fused path (reused across frames).
#[derive(Debug, Default)]
pub struct Sampler {
    lx: Taps,
    ly: Taps,
    cx: Taps,
    cy: Taps,
    /// Byte offsets and weights of the horizontal taps, luma then chroma.
    lo: Vec<(u32, u32, u32)>,
    co: Vec<(u32, u32, u32)>,
    /// One vertically blended source row (luma, and chroma for NV12).
    row_l: Vec<u8>,
    row_c: Vec<u8>,
    /// One output row of Y, U and V.
    y: Vec<u8>,
    u: Vec<u8>,
    v: Vec<u8>,
    u2: Vec<u8>,
    v2: Vec<u8>,
}

/// Each value twice: half-width chroma to full width.
#[inline]
fn widen(half: &[u8], full: &mut [u8]) {
    for (pair, &c) in full.chunks_exact_mut(2).zip(half) {
        pair[0] = c;
        pair[1] = c;
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

/// `out = (a * (256 - w) + b * w + 128) >> 8`, over whole rows (vectorises).
#[inline]
fn blend_rows(out: &mut [u8], a: &[u8], b: &[u8], w: u32) {
    if w == 0 {
        out.copy_from_slice(a);
        return;
    }
    let (wa, wb) = (256 - w as u16, w as u16);
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = ((u16::from(x) * wa + u16::from(y) * wb + 128) >> 8) as u8;
    }
}

/// YUV rows to an interleaved RGB row; compiled once more for AVX2 and
/// picked at run time, since the baseline x86-64 target lacks the 32-bit
/// vector multiply this loop needs to vectorise.
pub(super) fn convert_row(dst: &mut [u8], y: &[u8], u: &[u8], v: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { convert_row_avx2(dst, y, u, v) };
            return;
        }
    }
    convert_row_generic(dst, y, u, v);
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn convert_row_avx2(dst: &mut [u8], y: &[u8], u: &[u8], v: &[u8]) {
    convert_row_generic(dst, y, u, v);
}

#[inline(always)]
fn convert_row_generic(dst: &mut [u8], y: &[u8], u: &[u8], v: &[u8]) {
    let n = dst.len() / 3;
    let (dst, y, u, v) = (&mut dst[..n * 3], &y[..n], &u[..n], &v[..n]);
    for i in 0..n {
        let rgb = yuv_to_rgb(y[i], u[i], v[i]);
        dst[3 * i] = rgb[0];
        dst[3 * i + 1] = rgb[1];
        dst[3 * i + 2] = rgb[2];
    }
}

/// `out[i] = lerp(row[a + delta], row[b + delta], w)` for each tap `(a, b, w)`.
///
/// # Safety
/// Every `a + delta` and `b + delta` must be below `row.len()`.
#[inline]
unsafe fn gather_row(out: &mut [u8], row: &[u8], taps: &[(u32, u32, u32)], delta: usize) {
    for (o, &(a, b, w)) in out.iter_mut().zip(taps) {
        // SAFETY: the caller guarantees both taps are inside `row`.
        let (x, y) = unsafe {
            (
                *row.get_unchecked(a as usize + delta),
                *row.get_unchecked(b as usize + delta),
            )
        };
        *o = lerp(x, y, w);
    }
}

/// The largest tap offset, to check all taps against a row once per frame.
fn max_tap(taps: &[(u32, u32, u32)]) -> usize {
    taps.iter()
        .map(|&(a, b, _)| a.max(b) as usize)
        .max()
        .unwrap_or(0)
}

#[inline(always)]
fn lerp(a: u8, b: u8, w: u32) -> u8 {
    ((u32::from(a) * (256 - w) + u32::from(b) * w + 128) >> 8) as u8
}

impl Sampler {
    /// Writes `dst` (`dw` x `dh` region of an RGB tensor `tw` wide, at `dx`, `dy`)
    /// from the `crop` region of a `w` x `h` YUV frame.
    ///
    /// Three passes per output row, each over contiguous memory except the
    /// horizontal taps: blend the two source rows (luma and chroma together
    /// for YUYV), pick and blend the horizontal taps into Y, U, V rows, and
    /// convert those to RGB.
    #[allow(clippy::too_many_arguments)]
    pub fn yuv_to_rgb(
        &mut self,
        src: &[u8],
        size: (u32, u32),
        layout: YuvLayout,
        crop: [f64; 4],
        out: &mut [u8],
        tw: usize,
        dst: [u32; 4],
        lut: &ChannelLut,
    ) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                unsafe { self.yuv_to_rgb_avx2(src, size, layout, crop, out, tw, dst, lut) };
                return;
            }
        }
        self.yuv_to_rgb_impl(src, size, layout, crop, out, tw, dst, lut);
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn yuv_to_rgb_avx2(
        &mut self,
        src: &[u8],
        size: (u32, u32),
        layout: YuvLayout,
        crop: [f64; 4],
        out: &mut [u8],
        tw: usize,
        dst: [u32; 4],
        lut: &ChannelLut,
    ) {
        self.yuv_to_rgb_impl(src, size, layout, crop, out, tw, dst, lut);
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn yuv_to_rgb_impl(
        &mut self,
        src: &[u8],
        (w, h): (u32, u32),
        layout: YuvLayout,
        crop: [f64; 4],
        out: &mut [u8],
        tw: usize,
        [dx, dy, dw, dh]: [u32; 4],
        lut: &ChannelLut,
    ) {
        let [x0, y0, cw, ch] = crop;
        self.lx.plan(dw, x0, cw, 1.0, 0.5, w);
        self.ly.plan(dh, y0, ch, 1.0, 0.5, h);
        // Chroma samples sit between the two (or four) luma samples they cover.
        // Chroma is resampled at half the output width (one U, V per output
        // pixel pair, as in 4:2:2), which halves its cost; the source has no
        // more chroma detail than that once shrunk.
        let cn = dw.div_ceil(2);
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
        // Every offset below stays inside its blended row: taps are clamped
        // to the last sample, and the spans end one sample past the last tap.
        self.lo.clear();
        self.lo
            .extend(
                self.lx
                    .i0
                    .iter()
                    .zip(&self.lx.i1)
                    .zip(&self.lx.w)
                    .map(|((&a, &b), &wt)| {
                        (
                            (a as usize * luma_step - l_span.0) as u32,
                            (b as usize * luma_step - l_span.0) as u32,
                            wt,
                        )
                    }),
            );
        self.co.clear();
        self.co
            .extend(
                self.cx
                    .i0
                    .iter()
                    .zip(&self.cx.i1)
                    .zip(&self.cx.w)
                    .map(|((&a, &b), &wt)| {
                        (
                            (a as usize * chroma_step + u_off - c_span.0) as u32,
                            (b as usize * chroma_step + u_off - c_span.0) as u32,
                            wt,
                        )
                    }),
            );
        let dwu = dw as usize;
        self.row_l.resize(l_span.1 - l_span.0, 0);
        self.row_c.resize(c_span.1 - c_span.0, 0);
        self.y.resize(dwu, 0);
        self.u.resize(cn as usize, 0);
        self.v.resize(cn as usize, 0);
        self.u2.resize(cn as usize * 2, 0);
        self.v2.resize(cn as usize * 2, 0);
        let luma_stride = if layout == YuvLayout::Yuyv { w * 2 } else { w };
        assert!(
            self.lo.is_empty()
                || (max_tap(&self.lo) < self.row_l.len()
                    && max_tap(&self.co) + v_delta < self.row_c.len().max(self.row_l.len())),
            "sampling taps outside the source rows"
        );
        if layout == YuvLayout::Nv12 {
            assert!(
                self.co.is_empty() || max_tap(&self.co) + v_delta < self.row_c.len(),
                "chroma taps outside the UV row"
            );
        }
        for oy in 0..dh as usize {
            let (r0, r1, wy) = (
                self.ly.i0[oy] as usize,
                self.ly.i1[oy] as usize,
                self.ly.w[oy],
            );
            let row =
                |r: usize, (s, e): (usize, usize)| &src[r * luma_stride + s..r * luma_stride + e];
            blend_rows(&mut self.row_l, row(r0, l_span), row(r1, l_span), wy);
            let chroma_row: &[u8] = match layout {
                YuvLayout::Yuyv => &self.row_l,
                YuvLayout::Nv12 => {
                    let (c0, c1, cwy) = (
                        self.cy.i0[oy] as usize,
                        self.cy.i1[oy] as usize,
                        self.cy.w[oy],
                    );
                    let base = w * h;
                    let crow = |r: usize| &src[base + r * w + c_span.0..base + r * w + c_span.1];
                    blend_rows(&mut self.row_c, crow(c0), crow(c1), cwy);
                    &self.row_c
                }
            };
            // SAFETY: `lo` and `co` (plus `v_delta`) were checked against the row lengths above.
            unsafe {
                gather_row(&mut self.y, &self.row_l, &self.lo, 0);
                gather_row(&mut self.u, chroma_row, &self.co, 0);
                gather_row(&mut self.v, chroma_row, &self.co, v_delta);
            }
            let o = (dy as usize + oy) * tw * 3 + dx as usize * 3;
            let dst = &mut out[o..o + dwu * 3];
            // Chroma back to full width (each value covers an output pixel pair).
            widen(&self.u, &mut self.u2);
            widen(&self.v, &mut self.v2);
            convert_row(dst, &self.y, &self.u2, &self.v2);
            if let Some(t) = lut {
                for px in dst.chunks_exact_mut(3) {
                    px.copy_from_slice(&[
                        t[0][px[0] as usize],
                        t[1][px[1] as usize],
                        t[2][px[2] as usize],
                    ]);
                }
            }
        }
    }

    /// As [`Sampler::yuv_to_rgb`] for packed 8-bit data of `channels` (1 = grey, 3 = RGB).
    #[allow(clippy::too_many_arguments)]
    pub fn packed_to_rgb(
        &mut self,
        src: &[u8],
        (w, h): (u32, u32),
        channels: usize,
        crop: [f64; 4],
        out: &mut [u8],
        tw: usize,
        [dx, dy, dw, dh]: [u32; 4],
        lut: &ChannelLut,
    ) {
        let [x0, y0, cw, ch] = crop;
        self.lx.plan(dw, x0, cw, 1.0, 0.5, w);
        self.ly.plan(dh, y0, ch, 1.0, 0.5, h);
        let stride = w as usize * channels;
        for y in 0..dh as usize {
            let (r0, r1, wy) = (
                &src[self.ly.i0[y] as usize * stride..],
                &src[self.ly.i1[y] as usize * stride..],
                self.ly.w[y],
            );
            let o = (dy as usize + y) * tw * 3 + dx as usize * 3;
            for (x, px) in out[o..o + dw as usize * 3].chunks_exact_mut(3).enumerate() {
                let (a, b, wx) = (
                    self.lx.i0[x] as usize * channels,
                    self.lx.i1[x] as usize * channels,
                    self.lx.w[x],
                );
                for c in 0..3 {
                    let k = if channels == 1 { 0 } else { c };
                    let v = lerp2(
                        r0[a + k].into(),
                        r0[b + k].into(),
                        r1[a + k].into(),
                        r1[b + k].into(),
                        wx,
                        wy,
                    );
                    px[c] = match lut {
                        None => v,
                        Some(t) => t[c][v as usize],
                    };
                }
            }
        }
    }
}
