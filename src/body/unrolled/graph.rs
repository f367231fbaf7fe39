//! The unrolled fit as a sequence of operators: `iterations` damped Gauss-Newton steps on 3D
//! keypoint targets, each solved by a fixed number of Newton-Schulz iterations, each followed
//! by the limit clamps; then the keypoints of the result.
//!
//! One step, from rotations `D` (one 3x3 per bone) and root translation `t`:
//!
//! ```text
//! FK, level by level:  E_c = E_p D_c,  h_c = h_p + E_p o_c          (Gather, MatMul, Add)
//! keypoints:           c_t = E_b l_t + w_t h_b,  kp = S c           (MatMul)
//! residual:            e = kp - y,  weighted by the confidences     (Mul, Add)
//! Jacobian:            v_ks = M c - (M w) h_s,  J = -[v]x, by Gather from v
//! normal equations:    H = J^T C J + lambda diag(H) + mu I,  g = J^T C e
//! solve:               A = P H P, X <- X (2I - A X) from X = alpha I, delta = -P X P g
//! update:              D_s <- E_p^T (I + W + W^2/2) E_s, then D <- D (3I - D^T D) / 2
//! clamp, cone by cone: d = D a; outside (d.k < cos): turn d onto the cone's rim
//! ```
//!
//! No step has a data-dependent count or branch: reciprocals and reciprocal square roots are
//! fixed Newton iterations, and "inside or outside the cone" is a Min ramp that blends the
//! clamped rotation in over a band of 1/`ramp` in cosine.

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};

use super::layout::Layout;
use super::ops::Ops;
use super::{UnrolledConfig, UnrolledError};

/// The graph's inputs, as tensors of the implementation.
pub struct Inputs<T> {
    /// `(bones, 3, 3)` rotations, in [`Layout::order`].
    pub rotations: T,
    /// `(1, 3)` root translation.
    pub translation: T,
    /// `(keypoints, 3)` targets.
    pub targets: T,
    /// `(keypoints, 1)` confidences.
    pub confidence: T,
}

/// The forward kinematics as tensors: frames `(bones, 3, 3)`, heads `(bones, 3)`, term
/// contributions `(terms, 3)` and keypoints `(keypoints, 3)`.
struct Posed<T> {
    frames: T,
    heads: T,
    contrib: T,
    keypoints: T,
}

/// The graph's outputs.
pub struct Outputs<T> {
    /// `(bones, 3, 3)` fitted rotations.
    pub rotations: T,
    /// `(1, 3)` fitted root translation.
    pub translation: T,
    /// `(keypoints, 3)` keypoints of the fitted pose.
    pub keypoints: T,
}

fn arr(shape: &[usize], v: Vec<f32>) -> Result<ArrayD<f32>, UnrolledError> {
    ArrayD::from_shape_vec(IxDyn(shape), v).map_err(|e| UnrolledError::Shape {
        op: "constant".into(),
        tensor: String::new(),
        what: e.to_string(),
    })
}

fn eye(n: usize, scale: f32) -> Vec<f32> {
    (0..n * n)
        .map(|i| if i / n == i % n { scale } else { 0.0 })
        .collect()
}

/// Gather indices and signs making `[v]x` from a `(.., 4)` tensor whose last element is 0.
const SKEW_INDEX: [i64; 9] = [3, 2, 1, 2, 3, 0, 1, 0, 3];
const SKEW_SIGN: [f32; 9] = [0.0, -1.0, 1.0, 1.0, 0.0, -1.0, -1.0, 1.0, 0.0];
const TRANSPOSE: [i64; 9] = [0, 3, 6, 1, 4, 7, 2, 5, 8];

/// Builds the unrolled fit with `ops`; `precondition` is the constant diagonal `P`.
pub struct Builder<'a, O: Ops> {
    o: &'a mut O,
    layout: &'a Layout,
    config: &'a UnrolledConfig,
    precondition: &'a [f64],
    /// Constants by name: each is made once and shared by every iteration.
    consts: HashMap<String, O::T>,
    index: HashMap<String, O::I>,
}

impl<'a, O: Ops> Builder<'a, O> {
    /// A builder writing to `o`.
    pub fn new(
        o: &'a mut O,
        layout: &'a Layout,
        config: &'a UnrolledConfig,
        precondition: &'a [f64],
    ) -> Self {
        Self {
            o,
            layout,
            config,
            precondition,
            consts: HashMap::new(),
            index: HashMap::new(),
        }
    }

    fn c(&mut self, name: &str, shape: &[usize], v: Vec<f32>) -> Result<O::T, UnrolledError> {
        if let Some(t) = self.consts.get(name) {
            return Ok(t.clone());
        }
        let a = arr(shape, v)?;
        let t = self.o.constant(&format!("c/{name}"), a)?;
        self.consts.insert(name.to_owned(), t.clone());
        Ok(t)
    }

    fn ix(&mut self, name: &str, shape: &[usize], v: Vec<i64>) -> O::I {
        if let Some(i) = self.index.get(name) {
            return i.clone();
        }
        let i = self.o.indices(&format!("c/{name}"), shape, v);
        self.index.insert(name.to_owned(), i.clone());
        i
    }

    fn neg(&mut self, name: &str, a: &O::T) -> Result<O::T, UnrolledError> {
        let m = self.c("minus_one", &[1], vec![-1.0])?;
        self.o.mul(name, a, &m)
    }

    fn sub(&mut self, name: &str, a: &O::T, b: &O::T) -> Result<O::T, UnrolledError> {
        let nb = self.neg(&format!("{name}/neg"), b)?;
        self.o.add(name, a, &nb)
    }

    /// `(n, 3, 3)` transposed, by Gather.
    fn transpose(&mut self, name: &str, a: &O::T, n: usize) -> Result<O::T, UnrolledError> {
        let flat = self.o.reshape(&format!("{name}/flat"), a, &[n, 9])?;
        let idx = self.ix("transpose", &[9], TRANSPOSE.to_vec());
        let g = self.o.gather(&format!("{name}/gather"), &flat, &idx, 1)?;
        self.o.reshape(name, &g, &[n, 3, 3])
    }

    /// `(n, 3)` vectors to `(n, 3, 3)` cross-product matrices.
    fn skew(&mut self, name: &str, v: &O::T, n: usize) -> Result<O::T, UnrolledError> {
        let zero = self.c(&format!("skew/zero{n}"), &[n, 1], vec![0.0; n])?;
        let ext = self.o.concat(&format!("{name}/ext"), &[v, &zero], 1)?;
        let idx = self.ix("skew", &[3, 3], SKEW_INDEX.to_vec());
        let g = self.o.gather(&format!("{name}/gather"), &ext, &idx, 1)?;
        let sign = self.c("skew/sign", &[1, 3, 3], SKEW_SIGN.to_vec())?;
        self.o.mul(name, &g, &sign)
    }

    /// `a x b` row by row for `(n, 3)` tensors.
    fn cross(&mut self, name: &str, a: &O::T, b: &O::T) -> Result<O::T, UnrolledError> {
        let i120 = self.ix("cross/120", &[3], vec![1, 2, 0]);
        let i201 = self.ix("cross/201", &[3], vec![2, 0, 1]);
        let a1 = self.o.gather(&format!("{name}/a1"), a, &i120, 1)?;
        let b2 = self.o.gather(&format!("{name}/b2"), b, &i201, 1)?;
        let a2 = self.o.gather(&format!("{name}/a2"), a, &i201, 1)?;
        let b1 = self.o.gather(&format!("{name}/b1"), b, &i120, 1)?;
        let p = self.o.mul(&format!("{name}/p"), &a1, &b2)?;
        let q = self.o.mul(&format!("{name}/q"), &a2, &b1)?;
        self.sub(name, &p, &q)
    }

    /// Rows of `t` at `positions` (axis 0).
    fn pick(&mut self, name: &str, t: &O::T, positions: &[usize]) -> Result<O::T, UnrolledError> {
        let idx = positions.iter().map(|&p| p as i64).collect();
        let i = self
            .o
            .indices(&format!("{name}/idx"), &[positions.len()], idx);
        self.o.gather(name, t, &i, 0)
    }

    /// Forward kinematics of `d` and `t`.
    fn forward(&mut self, p: &str, d: &O::T, t: &O::T) -> Result<Posed<O::T>, UnrolledError> {
        let lay = self.layout;
        let mut frames = self.pick(&format!("{p}/fk/e0"), d, &[0])?;
        let mut heads = t.clone();
        for (l, range) in lay.levels.iter().enumerate().skip(1) {
            let n = range.len();
            let parents: Vec<usize> = range
                .clone()
                .map(|q| lay.parent_pos[q].unwrap_or(0))
                .collect();
            let ep = self.pick(&format!("{p}/fk/ep{l}"), &frames, &parents)?;
            let own: Vec<usize> = range.clone().collect();
            let dl = self.pick(&format!("{p}/fk/d{l}"), d, &own)?;
            let el = self.o.matmul(&format!("{p}/fk/e{l}"), &ep, &dl)?;
            let offsets: Vec<f32> = range
                .clone()
                .flat_map(|q| lay.offsets[q].iter().map(|&x| x as f32).collect::<Vec<_>>())
                .collect();
            let o = self.c(&format!("offsets{l}"), &[n, 3, 1], offsets)?;
            let eo = self.o.matmul(&format!("{p}/fk/eo{l}"), &ep, &o)?;
            let eo = self.o.reshape(&format!("{p}/fk/eo{l}r"), &eo, &[n, 3])?;
            let hp = self.pick(&format!("{p}/fk/hp{l}"), &heads, &parents)?;
            let hl = self.o.add(&format!("{p}/fk/h{l}"), &hp, &eo)?;
            frames = self
                .o
                .concat(&format!("{p}/fk/frames{l}"), &[&frames, &el], 0)?;
            heads = self
                .o
                .concat(&format!("{p}/fk/heads{l}"), &[&heads, &hl], 0)?;
        }
        let nt = lay.term_pos.len();
        let et = self.pick(&format!("{p}/kp/et"), &frames, &lay.term_pos)?;
        let local: Vec<f32> = lay
            .term_local
            .iter()
            .flat_map(|v| v.iter().map(|&x| x as f32).collect::<Vec<_>>())
            .collect();
        let l = self.c("term_local", &[nt, 3, 1], local)?;
        let el = self.o.matmul(&format!("{p}/kp/el"), &et, &l)?;
        let el = self.o.reshape(&format!("{p}/kp/elr"), &el, &[nt, 3])?;
        let ht = self.pick(&format!("{p}/kp/ht"), &heads, &lay.term_pos)?;
        let w = self.c(
            "term_weight",
            &[nt, 1],
            lay.term_weight.iter().map(|&x| x as f32).collect(),
        )?;
        let wh = self.o.mul(&format!("{p}/kp/wh"), &ht, &w)?;
        let contrib = self.o.add(&format!("{p}/kp/c"), &el, &wh)?;
        let mut s = vec![0f32; lay.keypoints * nt];
        for (t, &k) in lay.term_keypoint.iter().enumerate() {
            s[k * nt + t] = 1.0;
        }
        let s = self.c("term_sum", &[lay.keypoints, nt], s)?;
        let kp = self.o.matmul(&format!("{p}/kp/kp"), &s, &contrib)?;
        Ok(Posed {
            frames,
            heads,
            contrib,
            keypoints: kp,
        })
    }

    /// The whole graph: `iterations` steps and the final keypoints.
    ///
    /// # Errors
    /// [`UnrolledError::Shape`] when an operator refuses its operands.
    pub fn build(&mut self, inputs: Inputs<O::T>) -> Result<Outputs<O::T>, UnrolledError> {
        let mut d = inputs.rotations;
        let mut t = inputs.translation;
        for i in 0..self.config.iterations {
            let p = format!("s{i}");
            (d, t) = self.step(&p, &d, &t, &inputs.targets, &inputs.confidence)?;
            d = self.clamp(&p, &d)?;
        }
        let posed = self.forward("out", &d, &t)?;
        Ok(Outputs {
            rotations: d,
            translation: t,
            keypoints: posed.keypoints,
        })
    }

    /// One damped Gauss-Newton step: the residual, the Jacobian, the damped normal
    /// equations, their solve and the update of the translation and the fitted bones.
    fn step(
        &mut self,
        p: &str,
        d: &O::T,
        t: &O::T,
        y: &O::T,
        conf: &O::T,
    ) -> Result<(O::T, O::T), UnrolledError> {
        let Posed {
            frames,
            heads,
            contrib,
            keypoints: kp,
        } = self.forward(p, d, t)?;
        let e = self.sub(&format!("{p}/res/e"), &kp, y)?;
        let we = self.o.mul(&format!("{p}/res/we"), &e, conf)?;
        let (j, jt) = self.jacobian(p, &heads, &contrib)?;
        let (h, g) = self.normal_equations(p, &j, &jt, &we, conf)?;
        let delta = self.solve(p, &h, &g)?;
        self.update(p, &delta, &frames, d, t)
    }

    /// The keypoints' Jacobian `J` (3k x n) and its transpose, gathered from one source
    /// vector by a fixed pattern of indices and coefficients.
    fn jacobian(
        &mut self,
        p: &str,
        heads: &O::T,
        contrib: &O::T,
    ) -> Result<(O::T, O::T), UnrolledError> {
        let lay = self.layout;
        let (k, a, nt, n) = (lay.keypoints, lay.slots(), lay.term_pos.len(), lay.params());
        // v_ks = sum over the terms of k that bone s drives of (c_t - w_t h_s).
        let mut m = vec![0f32; k * a * nt];
        let mut mw = vec![0f32; k * a];
        for (t_i, (&tp, &tk)) in lay.term_pos.iter().zip(&lay.term_keypoint).enumerate() {
            for (s, &sp) in lay.active_pos.iter().enumerate() {
                if lay.drives(sp, tp) {
                    m[(tk * a + s) * nt + t_i] = 1.0;
                    mw[tk * a + s] += lay.term_weight[t_i] as f32;
                }
            }
        }
        let m = self.c("jac/m", &[k * a, nt], m)?;
        let mw = self.c("jac/mw", &[k * a, 1], mw)?;
        let mc = self.o.matmul(&format!("{p}/jac/mc"), &m, contrib)?;
        let rows: Vec<usize> = (0..k * a).map(|r| lay.active_pos[r % a]).collect();
        let hs = self.pick(&format!("{p}/jac/hs"), heads, &rows)?;
        let mwh = self.o.mul(&format!("{p}/jac/mwh"), &hs, &mw)?;
        let v = self.sub(&format!("{p}/jac/v"), &mc, &mwh)?;
        let vflat = self
            .o
            .reshape(&format!("{p}/jac/vflat"), &v, &[k * a * 3])?;
        let one = self.c("jac/one", &[1], vec![1.0])?;
        let src = self.o.concat(&format!("{p}/jac/src"), &[&vflat, &one], 0)?;
        let (idx, coef) = lay.jacobian_pattern();
        let tr = |x: &[i64]| -> Vec<i64> {
            (0..n * 3 * k)
                .map(|i| x[(i % (3 * k)) * n + i / (3 * k)])
                .collect()
        };
        let trf = |x: &[f32]| -> Vec<f32> {
            (0..n * 3 * k)
                .map(|i| x[(i % (3 * k)) * n + i / (3 * k)])
                .collect()
        };
        let (idx_t, coef_t) = (tr(&idx), trf(&coef));
        let ji = self.ix("jac/idx", &[3 * k, n], idx);
        let jti = self.ix("jac/idx_t", &[n, 3 * k], idx_t);
        let jc = self.c("jac/coef", &[3 * k, n], coef)?;
        let jtc = self.c("jac/coef_t", &[n, 3 * k], coef_t)?;
        let jg = self.o.gather(&format!("{p}/jac/jg"), &src, &ji, 0)?;
        let j = self.o.mul(&format!("{p}/jac/j"), &jg, &jc)?;
        let jtg = self.o.gather(&format!("{p}/jac/jtg"), &src, &jti, 0)?;
        let jt = self.o.mul(&format!("{p}/jac/jt"), &jtg, &jtc)?;
        Ok((j, jt))
    }

    /// The damped normal equations: `H = J^T W J + lambda diag(J^T W J) + mu I` and
    /// `g = J^T W e`, with `W` the keypoints' confidences.
    fn normal_equations(
        &mut self,
        p: &str,
        j: &O::T,
        jt: &O::T,
        we: &O::T,
        conf: &O::T,
    ) -> Result<(O::T, O::T), UnrolledError> {
        let lay = self.layout;
        let (k, n) = (lay.keypoints, lay.params());
        let row_k: Vec<usize> = (0..3 * k).map(|r| r / 3).collect();
        let wrow = self.pick(&format!("{p}/jac/wrow"), conf, &row_k)?;
        let jw = self.o.mul(&format!("{p}/jac/jw"), j, &wrow)?;
        let h = self.o.matmul(&format!("{p}/ne/h"), jt, &jw)?;
        let wef = self.o.reshape(&format!("{p}/ne/wef"), we, &[3 * k, 1])?;
        let g = self.o.matmul(&format!("{p}/ne/g"), jt, &wef)?;
        let cfg = self.config;
        let lam = self.c("ne/lambda", &[n, n], eye(n, cfg.lambda as f32))?;
        let hl = self.o.mul(&format!("{p}/ne/hl"), &h, &lam)?;
        let mu = self.c("ne/mu", &[n, n], eye(n, cfg.mu as f32))?;
        let h = self.o.add(&format!("{p}/ne/hd"), &h, &hl)?;
        let h = self.o.add(&format!("{p}/ne/hdm"), &h, &mu)?;
        Ok((h, g))
    }

    /// `delta = -H^-1 g`, with `H^-1` by preconditioned Newton-Schulz iterations.
    fn solve(&mut self, p: &str, h: &O::T, g: &O::T) -> Result<O::T, UnrolledError> {
        let n = self.layout.params();
        let cfg = self.config;
        let pc: Vec<f32> = self.precondition.iter().map(|&x| x as f32).collect();
        let pcol = self.c("solve/p_col", &[n, 1], pc.clone())?;
        let prow = self.c("solve/p_row", &[1, n], pc)?;
        let ap = self.o.mul(&format!("{p}/solve/a1"), h, &pcol)?;
        let ap = self.o.mul(&format!("{p}/solve/a"), &ap, &prow)?;
        let two = self.c("solve/two_i", &[n, n], eye(n, 2.0))?;
        let mut x = self.c("solve/x0", &[n, n], eye(n, cfg.alpha as f32))?;
        for it in 0..cfg.solve_iterations {
            let ax = self.o.matmul(&format!("{p}/solve/ax{it}"), &ap, &x)?;
            let r = self.sub(&format!("{p}/solve/r{it}"), &two, &ax)?;
            x = self.o.matmul(&format!("{p}/solve/x{it}"), &x, &r)?;
        }
        let gp = self.o.mul(&format!("{p}/solve/gp"), g, &pcol)?;
        let xg = self.o.matmul(&format!("{p}/solve/xg"), &x, &gp)?;
        let xg = self.o.mul(&format!("{p}/solve/pxg"), &xg, &pcol)?;
        let delta = self.neg(&format!("{p}/solve/delta"), &xg)?;
        Ok(delta)
    }

    /// The translation moved by `delta`'s first three entries; each fitted bone's rotation
    /// turned by the rest (second order, then orthonormalised), in its parent's frame.
    fn update(
        &mut self,
        p: &str,
        delta: &O::T,
        frames: &O::T,
        d: &O::T,
        t: &O::T,
    ) -> Result<(O::T, O::T), UnrolledError> {
        let lay = self.layout;
        let (a, n) = (lay.slots(), lay.params());
        let dt = self.pick(&format!("{p}/up/dt"), delta, &[0, 1, 2])?;
        let dt = self.o.reshape(&format!("{p}/up/dtr"), &dt, &[1, 3])?;
        let t = self.o.add(&format!("{p}/up/t"), t, &dt)?;
        let w_rows: Vec<usize> = (3..n).collect();
        let w = self.pick(&format!("{p}/up/w"), delta, &w_rows)?;
        let w = self.o.reshape(&format!("{p}/up/wr"), &w, &[a, 3])?;
        let wx = self.skew(&format!("{p}/up/wx"), &w, a)?;
        let wx2 = self.o.matmul(&format!("{p}/up/wx2"), &wx, &wx)?;
        let half = self.c("up/half", &[1], vec![0.5])?;
        let wx2 = self.o.mul(&format!("{p}/up/wx2h"), &wx2, &half)?;
        let i3 = self.c("up/eye", &[1, 3, 3], eye(3, 1.0))?;
        let rw = self.o.add(&format!("{p}/up/rw1"), &i3, &wx)?;
        let rw = self.o.add(&format!("{p}/up/rw"), &rw, &wx2)?;
        let es = self.pick(&format!("{p}/up/es"), frames, &lay.active_pos)?;
        let ext = self
            .o
            .concat(&format!("{p}/up/frames_i"), &[frames, &i3], 0)?;
        let parents: Vec<usize> = lay
            .active_pos
            .iter()
            .map(|&q| lay.parent_pos[q].unwrap_or(lay.bones()))
            .collect();
        let ep = self.pick(&format!("{p}/up/ep"), &ext, &parents)?;
        let ept = self.transpose(&format!("{p}/up/ept"), &ep, a)?;
        let re = self.o.matmul(&format!("{p}/up/re"), &rw, &es)?;
        let dn = self.o.matmul(&format!("{p}/up/dn"), &ept, &re)?;
        let dn = self.orthonormalise(&format!("{p}/up/orth"), &dn, a)?;
        let d = self.scatter(&format!("{p}/up/d"), d, &dn, &lay.active_pos)?;
        Ok((d, t))
    }

    /// One Newton step towards the nearest rotation: `D (3I - D^T D) / 2`.
    fn orthonormalise(&mut self, name: &str, d: &O::T, n: usize) -> Result<O::T, UnrolledError> {
        let dt = self.transpose(&format!("{name}/t"), d, n)?;
        let dtd = self.o.matmul(&format!("{name}/dtd"), &dt, d)?;
        let mhalf = self.c("orth/minus_half", &[1], vec![-0.5])?;
        let dtd = self.o.mul(&format!("{name}/dtdh"), &dtd, &mhalf)?;
        let i15 = self.c("orth/eye_1_5", &[1, 3, 3], eye(3, 1.5))?;
        let f = self.o.add(&format!("{name}/f"), &i15, &dtd)?;
        self.o.matmul(name, d, &f)
    }

    /// `all` with the rows at `positions` replaced by `rows` (Concat, then Gather).
    fn scatter(
        &mut self,
        name: &str,
        all: &O::T,
        rows: &O::T,
        positions: &[usize],
    ) -> Result<O::T, UnrolledError> {
        let nb = self.layout.bones();
        let mut map: Vec<usize> = (0..nb).collect();
        for (s, &q) in positions.iter().enumerate() {
            map[q] = nb + s;
        }
        let both = self.o.concat(&format!("{name}/both"), &[all, rows], 0)?;
        self.pick(name, &both, &map)
    }

    /// The limit clamps, stage by stage.
    fn clamp(&mut self, p: &str, d: &O::T) -> Result<O::T, UnrolledError> {
        let mut d = d.clone();
        let stages = self.layout.clamps.clone();
        for (st, stage) in stages.iter().enumerate() {
            let q = format!("{p}/lim{st}");
            let n = stage.len();
            let pos: Vec<usize> = stage.iter().map(|(q, _)| *q).collect();
            let flat = |f: &dyn Fn(&super::limits::ConeClamp) -> [f64; 3]| -> Vec<f32> {
                stage
                    .iter()
                    .flat_map(|(_, c)| f(c).map(|x| x as f32))
                    .collect()
            };
            let ba = self.c(
                &format!("lim{st}/bone_axis"),
                &[n, 3, 1],
                flat(&|c| c.bone_axis.into()),
            )?;
            let ka = self.c(&format!("lim{st}/axis"), &[n, 3], flat(&|c| c.axis.into()))?;
            let cosv: Vec<f32> = stage.iter().map(|(_, c)| c.cos_half as f32).collect();
            let sinv: Vec<f32> = stage.iter().map(|(_, c)| c.sin_half as f32).collect();
            let cos = self.c(&format!("lim{st}/cos"), &[n, 1], cosv.clone())?;
            let sin = self.c(&format!("lim{st}/sin"), &[n, 1], sinv)?;
            let dsel = self.pick(&format!("{q}/d"), &d, &pos)?;
            let dir = self.o.matmul(&format!("{q}/dir"), &dsel, &ba)?;
            let dir = self.o.reshape(&format!("{q}/dirr"), &dir, &[n, 3])?;
            let dk = self.o.mul(&format!("{q}/dk"), &dir, &ka)?;
            let c = self.o.reduce_sum(&format!("{q}/c"), &dk, 1)?;
            // u = (d - c k) / sqrt(1 - c^2), by Newton on the reciprocal square root from 1.
            let ck = self.o.mul(&format!("{q}/ck"), &c, &ka)?;
            let perp = self.sub(&format!("{q}/perp"), &dir, &ck)?;
            let cc = self.o.mul(&format!("{q}/cc"), &c, &c)?;
            let one = self.c("lim/one", &[1], vec![1.0])?;
            let x = self.sub(&format!("{q}/s2"), &one, &cc)?;
            let rs = self.newton(&format!("{q}/rsqrt"), &x, n, true)?;
            let u = self.o.mul(&format!("{q}/u"), &perp, &rs)?;
            let kc = self.o.mul(&format!("{q}/kc"), &ka, &cos)?;
            let us = self.o.mul(&format!("{q}/us"), &u, &sin)?;
            let target = self.o.add(&format!("{q}/target"), &kc, &us)?;
            // The turn taking d onto the rim: I + [n]x + [n]x^2 / (1 + d.d').
            let axis = self.cross(&format!("{q}/n"), &dir, &target)?;
            let dd = self.o.mul(&format!("{q}/dd"), &dir, &target)?;
            let cphi = self.o.reduce_sum(&format!("{q}/cphi"), &dd, 1)?;
            let den = self.o.add(&format!("{q}/den"), &cphi, &one)?;
            let inv = self.newton(&format!("{q}/recip"), &den, n, false)?;
            let nx = self.skew(&format!("{q}/nx"), &axis, n)?;
            let nx2 = self.o.matmul(&format!("{q}/nx2"), &nx, &nx)?;
            let inv3 = self.o.reshape(&format!("{q}/inv3"), &inv, &[n, 1, 1])?;
            let nx2 = self.o.mul(&format!("{q}/nx2s"), &nx2, &inv3)?;
            let i3 = self.c("up/eye", &[1, 3, 3], eye(3, 1.0))?;
            let r = self.o.add(&format!("{q}/r1"), &i3, &nx)?;
            let r = self.o.add(&format!("{q}/r"), &r, &nx2)?;
            let clamped = self.o.matmul(&format!("{q}/clamped"), &r, &dsel)?;
            // Blend: 0 inside (c >= cos), 1 once c < cos - 1/ramp.
            let margin = self.sub(&format!("{q}/margin"), &c, &cos)?;
            let zero = self.c("lim/zero", &[1], vec![0.0])?;
            let below = self.o.min(&format!("{q}/below"), &margin, &zero)?;
            let ramp = self.c("lim/ramp", &[1], vec![-(self.config.ramp as f32)])?;
            let s = self.o.mul(&format!("{q}/s_raw"), &below, &ramp)?;
            let s = self.o.min(&format!("{q}/s"), &s, &one)?;
            let s3 = self.o.reshape(&format!("{q}/s3"), &s, &[n, 1, 1])?;
            let diff = self.sub(&format!("{q}/diff"), &clamped, &dsel)?;
            let step = self.o.mul(&format!("{q}/step"), &diff, &s3)?;
            let dnew = self.o.add(&format!("{q}/dnew"), &dsel, &step)?;
            d = self.scatter(&format!("{q}/all"), &d, &dnew, &pos)?;
        }
        Ok(d)
    }

    /// Fixed Newton iterations for `1/sqrt(x)` (from 1) or `1/x` (from 1/2), `(n, 1)`.
    fn newton(
        &mut self,
        name: &str,
        x: &O::T,
        n: usize,
        rsqrt: bool,
    ) -> Result<O::T, UnrolledError> {
        let cfg = self.config;
        let (start, iterations) = if rsqrt {
            (1.0, cfg.rsqrt_iterations)
        } else {
            (0.5, cfg.recip_iterations)
        };
        let mut y = self.c(&format!("newton/start{n}_{rsqrt}"), &[n, 1], vec![start; n])?;
        let c = if rsqrt { (-0.5, 1.5) } else { (-1.0, 2.0) };
        let a = self.c(&format!("newton/a_{rsqrt}"), &[1], vec![c.0])?;
        let b = self.c(&format!("newton/b_{rsqrt}"), &[1], vec![c.1])?;
        for it in 0..iterations {
            // rsqrt: y (1.5 - 0.5 x y^2); reciprocal: y (2 - x y).
            let xy = self.o.mul(&format!("{name}/xy{it}"), x, &y)?;
            let xy = if rsqrt {
                self.o.mul(&format!("{name}/xyy{it}"), &xy, &y)?
            } else {
                xy
            };
            let f = self.o.mul(&format!("{name}/f{it}"), &xy, &a)?;
            let f = self.o.add(&format!("{name}/g{it}"), &f, &b)?;
            y = self.o.mul(&format!("{name}/y{it}"), &y, &f)?;
        }
        Ok(y)
    }
}
