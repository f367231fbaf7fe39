//! The NEON build of the narrow-head loops on aarch64, where NEON is the baseline
//! (no detection): the AVX2 build's blocking, block sizes and phases, each 8-lane
//! register of it a pair of 4-lane NEON registers ([`V8`]), with fused
//! multiply-adds as there. Kᵀ is gathered by element copies (NEON has no 8×8
//! register transpose to mirror). It differs from the portable loops only in
//! rounding (fused multiply-adds, the order of each sum), and the tests hold it to
//! the AVX2 build's bound.

use std::arch::aarch64::*;

use super::super::super::softmax_neon::exp4;
use super::super::kernel::{pad, Operands, Scratch, LANES};
use super::super::Dims;
use super::copy_kt as gather_kt;
use super::{block_rows, blocks, score_rows, v_rows, MAX_HEAD, SCORE_REGS};

/// Half of a [`LANES`]-wide register: one NEON register of f32.
const HALF: usize = LANES / 2;

/// One [`LANES`]-wide register of the AVX2 build, as two NEON registers.
#[derive(Clone, Copy)]
struct V8([float32x4_t; 2]);

/// The lanes of the last key register that hold keys (the others are padding).
#[derive(Clone, Copy)]
struct Tail([uint32x4_t; 2]);

/// The register and mask types [`block_kernels`] works on.
type Vector = V8;
type Mask = Tail;

#[inline]
#[target_feature(enable = "neon")]
fn splat(x: f32) -> V8 {
    V8([vdupq_n_f32(x); 2])
}

/// # Safety
/// `p` reads [`LANES`] f32.
#[inline]
#[target_feature(enable = "neon")]
unsafe fn load(p: *const f32) -> V8 {
    // SAFETY: the caller's bound; unaligned loads.
    unsafe { V8([vld1q_f32(p), vld1q_f32(p.add(HALF))]) }
}

/// # Safety
/// `p` writes [`LANES`] f32.
#[inline]
#[target_feature(enable = "neon")]
unsafe fn store(p: *mut f32, v: V8) {
    // SAFETY: the caller's bound; unaligned stores.
    unsafe {
        vst1q_f32(p, v.0[0]);
        vst1q_f32(p.add(HALF), v.0[1]);
    }
}

/// `acc + a b`, one rounding per lane.
#[inline]
#[target_feature(enable = "neon")]
fn fma(acc: V8, a: V8, b: V8) -> V8 {
    V8([
        vfmaq_f32(acc.0[0], a.0[0], b.0[0]),
        vfmaq_f32(acc.0[1], a.0[1], b.0[1]),
    ])
}

/// Two-operand functions of [`V8`], each one intrinsic on both halves.
macro_rules! lanewise {
    ($($name:ident = $op:ident;)+) => {$(
        #[inline]
        #[target_feature(enable = "neon")]
        fn $name(a: V8, b: V8) -> V8 {
            V8([$op(a.0[0], b.0[0]), $op(a.0[1], b.0[1])])
        }
    )+};
}

lanewise! {
    mul = vmulq_f32;
    add = vaddq_f32;
    sub = vsubq_f32;
    max = vmaxq_f32;
}

/// The largest lane.
#[inline]
#[target_feature(enable = "neon")]
fn max_all(v: V8) -> f32 {
    vmaxvq_f32(vmaxq_f32(v.0[0], v.0[1]))
}

/// The sum of the lanes.
#[inline]
#[target_feature(enable = "neon")]
fn sum_all(v: V8) -> f32 {
    vaddvq_f32(vaddq_f32(v.0[0], v.0[1]))
}

/// [`exp_approx`](super::super::super::fast_ops::exp_approx) of every lane, bit for bit.
#[inline]
#[target_feature(enable = "neon")]
fn exp8(x: V8) -> V8 {
    V8([exp4(x.0[0]), exp4(x.0[1])])
}

/// The first `keys` lanes (`1..=LANES`) of a register, the ones that hold keys.
#[inline]
#[target_feature(enable = "neon")]
fn tail_mask(keys: usize) -> Tail {
    let (lo, hi): ([u32; HALF], [u32; HALF]) = ([0, 1, 2, 3], [4, 5, 6, 7]);
    let keys = vdupq_n_u32(keys as u32);
    // SAFETY: `lo` and `hi` hold one register each.
    let (lo, hi) = unsafe { (vld1q_u32(lo.as_ptr()), vld1q_u32(hi.as_ptr())) };
    Tail([vcltq_u32(lo, keys), vcltq_u32(hi, keys)])
}

/// `v` with the lanes outside `tail` set to `f32::MIN`.
#[inline]
#[target_feature(enable = "neon")]
fn keep(v: V8, tail: Tail) -> V8 {
    let min = vdupq_n_f32(f32::MIN);
    V8([
        vbslq_f32(tail.0[0], v.0[0], min),
        vbslq_f32(tail.0[1], v.0[1], min),
    ])
}

/// One batch item, as [`one_generic`](super::super::kernel::one_generic) computes it.
///
/// # Safety
/// [`accepts`](super::accepts) must hold for these arguments (`out_len = out.len()`).
#[target_feature(enable = "neon")]
pub(in super::super) unsafe fn one(
    ops: &Operands,
    dims: Dims,
    scratch: &mut Scratch,
    out: &mut [f32],
) {
    one_item!(ops, dims, scratch, out)
}

block_kernels!("neon");
