//! The narrow-head path against the portable loops, and its bounds gate.

use super::super::super::test_util::random;
use super::super::kernel::{one_generic, Portable};
use super::*;

/// One item: Q of `mq` rows, K and V of `n` rows, each row `k` (or `d`) wide at
/// stride `row`; with `transposed` the operands are stored column-major (row
/// stride 1), so no row is contiguous.
struct Case {
    mq: usize,
    rows: (usize, usize),
    n: usize,
    k: usize,
    d: usize,
    row: usize,
    transposed: bool,
}

impl Case {
    fn dims(&self) -> Dims {
        Dims {
            m0: self.rows.0,
            m1: self.rows.1,
            n: self.n,
            k: self.k,
            d: self.d,
        }
    }

    /// Strides along (row, column) of a `len`-row operand.
    fn strides(&self, len: usize) -> [usize; 2] {
        if self.transposed {
            [1, len]
        } else {
            [self.row, 1]
        }
    }

    /// Random Q, K and V from `seed`: rows at stride `row` (as one head's rows in a
    /// (tokens, heads, width) tensor), or column-major when transposed.
    fn buffers(&self, seed: u64) -> [Vec<f32>; 3] {
        let span = |len: usize, w: usize| {
            if self.transposed {
                len * w
            } else {
                (len - 1) * self.row + w
            }
        };
        [
            random(span(self.mq, self.k), seed, -2.0, 2.0),
            random(span(self.n, self.k), seed + 1, -2.0, 2.0),
            random(span(self.n, self.d), seed + 2, -2.0, 2.0),
        ]
    }

    /// Output of `run` over the given buffers and scale; the output rows are at
    /// stride `row` (contiguous), or column-major when transposed.
    fn run(
        &self,
        [q, k, v]: &[Vec<f32>; 3],
        scale: f32,
        run: impl Fn(&Operands, Dims, &mut Scratch, &mut [f32]),
    ) -> Vec<f32> {
        let rows = self.rows.1 - self.rows.0;
        let ops = Operands {
            q,
            k,
            v,
            qw: self.strides(self.mq),
            kw: self.strides(self.n),
            vw: self.strides(self.n),
            ow: self.strides(rows),
            scale,
        };
        let mut out = vec![f32::NAN; rows * self.row.max(self.d)];
        run(&ops, self.dims(), &mut Scratch::new(self.dims()), &mut out);
        out
    }
}

/// Whether this CPU runs the path: AVX2 and FMA on x86-64; NEON, the baseline, on
/// aarch64.
fn native() -> bool {
    #[cfg(target_arch = "x86_64")]
    return is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
    #[cfg(target_arch = "aarch64")]
    return true;
}

fn small(ops: &Operands, dims: Dims, scratch: &mut Scratch, out: &mut [f32]) {
    assert!(
        accepts(ops, dims, scratch, out.len()),
        "path refused the item"
    );
    // SAFETY: the tests run this only where `native()` holds; `accepts` was checked
    // just above; the scratch is freshly zeroed.
    unsafe { one(ops, dims, scratch, out) }
}

/// Largest difference over the output elements the item writes (NaN elsewhere
/// in both).
fn diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .filter(|(x, y)| !(x.is_nan() && y.is_nan()))
        .map(|(x, y)| {
            if x.is_nan() || y.is_nan() {
                f32::INFINITY
            } else {
                (x - y).abs()
            }
        })
        .fold(0.0, f32::max)
}

fn cases() -> Vec<Case> {
    let case = |mq, rows, n, k, d, row, transposed| Case {
        mq,
        rows,
        n,
        k,
        d,
        row,
        transposed,
    };
    vec![
        // The keypoint branch: rows 1..18 of 18 tokens, 8-wide heads at stride 64.
        case(18, (1, 18), 18, 8, 8, 64, false),
        // Two-register heads, fewer keys than a register, a single query row.
        case(1, (0, 1), 7, 16, 16, 16, false),
        case(9, (2, 9), 7, 16, 16, 40, false),
        // The decoder's self-attention: 100 queries over 100 keys.
        case(100, (0, 100), 100, 8, 8, 64, false),
        // Heads narrower than a register; nothing contiguous.
        case(18, (1, 18), 18, 8, 8, 64, true),
        case(11, (0, 11), 13, 5, 3, 64, false),
        case(6, (1, 6), 30, 12, 16, 64, true),
    ]
}

#[test]
fn matches_the_portable_loops() {
    if !native() {
        return;
    }
    for (i, c) in cases().iter().enumerate() {
        let bufs = c.buffers(10 * i as u64 + 1);
        let want = c.run(&bufs, 0.35, one_generic::<Portable>);
        let got = c.run(&bufs, 0.35, small);
        let written = got.iter().filter(|x| !x.is_nan()).count();
        assert_eq!(
            written,
            (c.rows.1 - c.rows.0) * c.d,
            "case {i}: rows written"
        );
        let e = diff(&got, &want);
        assert!(e < 1e-5, "case {i}: {e}");

        // Negative controls: another scale, or one value of V moved, disagree.
        let e = diff(&c.run(&bufs, 0.36, small), &want);
        assert!(e > 1e-3, "case {i}: scale changed, difference {e}");
        let mut moved = bufs.clone();
        moved[2][c.strides(c.n)[0] * (c.n / 2)] += 1.0;
        let e = diff(&c.run(&moved, 0.35, small), &want);
        assert!(e > 1e-3, "case {i}: V changed, difference {e}");
    }
}

#[test]
fn refuses_wide_heads_and_short_operands() {
    let c = &cases()[0];
    let [q, k, v] = c.buffers(3);
    let ops = |q, k, v| Operands {
        q,
        k,
        v,
        qw: [64, 1],
        kw: [64, 1],
        vw: [64, 1],
        ow: [64, 1],
        scale: 1.0,
    };
    let dims = c.dims();
    let scratch = Scratch::new(dims);
    // 17 output rows of 8 at stride 64.
    let out_len = 16 * 64 + 8;
    assert!(accepts(&ops(&q, &k, &v), dims, &scratch, out_len));
    // One element short, for each operand and the output.
    assert!(!accepts(
        &ops(&q[..q.len() - 1], &k, &v),
        dims,
        &scratch,
        out_len
    ));
    assert!(!accepts(
        &ops(&q, &k[..k.len() - 1], &v),
        dims,
        &scratch,
        out_len
    ));
    assert!(!accepts(
        &ops(&q, &k, &v[..v.len() - 1]),
        dims,
        &scratch,
        out_len
    ));
    assert!(!accepts(&ops(&q, &k, &v), dims, &scratch, out_len - 1));
    // Heads wider than two registers go to the general loops.
    let wide = Dims { k: 17, ..dims };
    assert!(!accepts(
        &ops(&q, &k, &v),
        wide,
        &Scratch::new(wide),
        out_len
    ));
    // Scratch sized for fewer keys.
    assert!(!accepts(
        &ops(&q, &k, &v),
        dims,
        &Scratch::new(Dims { n: 8, ..dims }),
        out_len
    ));
}
