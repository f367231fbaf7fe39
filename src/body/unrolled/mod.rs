//! The pose fit unrolled into a fixed graph of the operators the NPU's backbone compiled, to
//! answer whether a fit at the part's precision reaches an acceptable residual.
//!
//! [`UnrolledFit`] holds the graph's constants for one rig: its [`Layout`], the settings and
//! the constant preconditioner. The graph itself is written once ([`graph`]) against the
//! operator trait ([`ops::Ops`]) and either emitted as ONNX ([`UnrolledFit::onnx`]) or
//! evaluated on f32 arrays ([`UnrolledFit::run`]), exactly or with every tensor fake-quantised
//! as the Hailo dataflow compiler would hold it ([`quant`]). [`evaluate`] runs it on the demo
//! motion and makes the precision x iterations table.
//!
//! The fit works on 3D targets (triangulated keypoints): a reprojection residual needs a
//! division by depth, which the operator set does not have.

pub mod evaluate;
pub mod graph;
pub mod layout;
pub mod limits;
pub mod ops;
pub mod quant;
pub mod verify;

use nalgebra::{DMatrix, Point3};
use ndarray::{ArrayD, IxDyn};

pub use layout::Layout;
pub use ops::{Emit, Eval, Mode};

use ops::Ops as _;

use crate::body::limits::JointLimit;
use crate::body::{KeypointRig, Pose, Posed, RigError};

/// Why the unrolled fit could not be built or run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum UnrolledError {
    /// The rig's root does not rest at the identity, which the graph's offsets assume.
    #[error("rig: the root's reference orientation must be the identity")]
    RootNotReference,
    /// An active bone index outside the rig.
    #[error("rig: active bone {bone} is outside the rig of {bones} bones")]
    ActiveBoneOutside {
        /// The bone index given.
        bone: usize,
        /// Bones of the rig.
        bones: usize,
    },
    /// The rig refused to pose.
    #[error("rig: {0}")]
    Rig(#[from] RigError),
    /// An operator refused its operands.
    #[error("{op} `{tensor}`: {what}")]
    Shape {
        /// The operator.
        op: String,
        /// The tensor it was making.
        tensor: String,
        /// What did not fit.
        what: String,
    },
    /// A setting out of range.
    #[error("unrolled fit setting `{field}` = {value}: expected {expected}")]
    BadSetting {
        /// The setting.
        field: &'static str,
        /// The value given.
        value: f64,
        /// What was expected.
        expected: &'static str,
    },
    /// A pose for another rig.
    #[error("pose has {got} bone rotations, the rig has {expected} bones")]
    PoseSize {
        /// Bones of the rig.
        expected: usize,
        /// Rotations given.
        got: usize,
    },
}

/// Settings of the unrolled fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnrolledConfig {
    /// Gauss-Newton steps.
    pub iterations: usize,
    /// Marquardt damping, relative to the diagonal of `J^T C J`.
    pub lambda: f64,
    /// Absolute damping, in the units of `J^T C J` (m^2 and m^2 / rad^2).
    pub mu: f64,
    /// Newton-Schulz iterations of the solve.
    pub solve_iterations: usize,
    /// Newton-Schulz start `X = alpha I`, times the reciprocal of the largest eigenvalue of
    /// the preconditioned system at the reference pose.
    pub alpha_scale: f64,
    /// Newton-Schulz start, set by [`UnrolledFit::new`].
    pub alpha: f64,
    /// Newton iterations of the reciprocal square root in the clamp.
    pub rsqrt_iterations: usize,
    /// Newton iterations of the reciprocal in the clamp.
    pub recip_iterations: usize,
    /// Slope of the clamp's blend, per unit of cosine outside the cone.
    pub ramp: f64,
}

impl Default for UnrolledConfig {
    fn default() -> Self {
        Self {
            iterations: 4,
            lambda: 0.1,
            mu: 1e-4,
            solve_iterations: 12,
            alpha_scale: 0.25,
            alpha: 0.0,
            rsqrt_iterations: 8,
            recip_iterations: 6,
            ramp: 1e3,
        }
    }
}

impl UnrolledConfig {
    /// The same settings with `iterations` Gauss-Newton steps.
    ///
    /// # Errors
    /// [`UnrolledError::BadSetting`] for zero.
    pub fn with_iterations(mut self, iterations: usize) -> Result<Self, UnrolledError> {
        if iterations == 0 {
            return Err(UnrolledError::BadSetting {
                field: "iterations",
                value: 0.0,
                expected: "at least 1",
            });
        }
        self.iterations = iterations;
        Ok(self)
    }
}

/// The unrolled fit of one rig.
#[derive(Debug, Clone)]
pub struct UnrolledFit {
    layout: Layout,
    config: UnrolledConfig,
    precondition: Vec<f64>,
}

/// What one run of the graph gives.
#[derive(Debug, Clone, PartialEq)]
pub struct UnrolledOutput {
    /// The fitted pose (rotations projected to the nearest rotation).
    pub pose: Pose,
    /// The graph's own keypoints of the fit.
    pub keypoints: Vec<Point3<f64>>,
}

impl UnrolledFit {
    /// The unrolled fit of `rig` moving the bones `active` under `limits`. The preconditioner
    /// and the solve's start are fixed from the reference pose, where every keypoint counts
    /// with confidence 1.
    ///
    /// # Errors
    /// As [`Layout::new`]; [`UnrolledError::BadSetting`] for zero iterations.
    pub fn new(
        rig: &KeypointRig,
        limits: &[Option<JointLimit>],
        active: &[usize],
        config: UnrolledConfig,
    ) -> Result<Self, UnrolledError> {
        let mut config = config.with_iterations(config.iterations)?;
        let layout = Layout::new(rig, limits, active)?;
        let h = reference_normal_matrix(rig, active)?;
        let n = h.nrows();
        let damped = |i: usize| h[(i, i)] * (1.0 + config.lambda) + config.mu;
        let precondition: Vec<f64> = (0..n).map(|i| 1.0 / damped(i).sqrt()).collect();
        let mut a = h.clone();
        for i in 0..n {
            a[(i, i)] = damped(i);
        }
        let p = DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(&precondition));
        let a = &p * a * &p;
        let largest = a.symmetric_eigenvalues().max();
        config.alpha = config.alpha_scale / largest.max(1e-12);
        Ok(Self {
            layout,
            config,
            precondition,
        })
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The settings (with the solve's start filled in).
    pub fn config(&self) -> &UnrolledConfig {
        &self.config
    }

    /// The graph as ONNX bytes: inputs `rotations (B, 3, 3)`, `translation (1, 3)`,
    /// `targets (K, 3)`, `confidence (K, 1)`; outputs `fitted_rotations`, `fitted_translation`,
    /// `keypoints`.
    ///
    /// # Errors
    /// [`UnrolledError::Shape`] when the graph cannot be assembled.
    pub fn onnx(&self) -> Result<Vec<u8>, UnrolledError> {
        let mut emit = Emit::new("unrolled_fit");
        let (b, k) = (self.layout.bones(), self.layout.keypoints);
        let inputs = graph::Inputs {
            rotations: emit.input("rotations", &[b, 3, 3]),
            translation: emit.input("translation", &[1, 3]),
            targets: emit.input("targets", &[k, 3]),
            confidence: emit.input("confidence", &[k, 1]),
        };
        let out = graph::Builder::new(&mut emit, &self.layout, &self.config, &self.precondition)
            .build(inputs)?;
        let mut g = emit.graph;
        for (tensor, name, shape) in [
            (&out.rotations, "fitted_rotations", vec![b, 3, 3]),
            (&out.translation, "fitted_translation", vec![1, 3]),
            (&out.keypoints, "keypoints", vec![k, 3]),
        ] {
            let s = g_shape(&mut g, name, &shape);
            g.node_to("Reshape", &[tensor.as_str(), s.as_str()], &[], name);
            g.output_typed(name, &shape);
        }
        Ok(crate::metrics::ops::builder::encode(&g.finish()))
    }

    /// The graph's inputs for `pose` and `targets` (`None` where a keypoint has no target).
    ///
    /// # Errors
    /// [`UnrolledError::PoseSize`] for a pose of another rig.
    pub fn inputs(
        &self,
        pose: &Pose,
        targets: &[Option<(Point3<f64>, f64)>],
    ) -> Result<[ArrayD<f32>; 4], UnrolledError> {
        let expected = self.layout.order.iter().max().map_or(0, |m| m + 1);
        if pose.rotations.len() < expected {
            return Err(UnrolledError::PoseSize {
                expected,
                got: pose.rotations.len(),
            });
        }
        let (b, k) = (self.layout.bones(), self.layout.keypoints);
        let (y, w) = self.layout.targets(targets);
        let t = pose.translation;
        let shaped = |shape: &[usize], v: Vec<f32>| {
            ArrayD::from_shape_vec(IxDyn(shape), v).map_err(|e| UnrolledError::Shape {
                op: "input".into(),
                tensor: String::new(),
                what: e.to_string(),
            })
        };
        Ok([
            shaped(&[b, 3, 3], self.layout.rotations(pose))?,
            shaped(&[1, 3], vec![t.x as f32, t.y as f32, t.z as f32])?,
            shaped(&[k, 3], y)?,
            shaped(&[k, 1], w)?,
        ])
    }

    /// Runs the graph with `eval` from `pose` towards `targets`.
    ///
    /// # Errors
    /// As [`Self::inputs`], and [`UnrolledError::Shape`] from an operator.
    pub fn run(
        &self,
        eval: &mut Eval,
        pose: &Pose,
        targets: &[Option<(Point3<f64>, f64)>],
    ) -> Result<UnrolledOutput, UnrolledError> {
        let [r, t, k] = self.evaluate(eval, self.inputs(pose, targets)?)?;
        Ok(self.output(pose, &r, &t, &k))
    }

    /// Runs the graph with `eval` on its four inputs (as [`Self::inputs`] makes them); returns
    /// its three outputs (rotations, translation, keypoints) as the ONNX graph shapes them.
    ///
    /// # Errors
    /// [`UnrolledError::Shape`] from an operator.
    pub fn evaluate(
        &self,
        eval: &mut Eval,
        inputs: [ArrayD<f32>; 4],
    ) -> Result<[ArrayD<f32>; 3], UnrolledError> {
        let [r, t, y, w] = inputs;
        // The inputs are tensors too: quantised where they enter.
        let inputs = graph::Inputs {
            rotations: eval.constant("in/rotations", r)?,
            translation: eval.constant("in/translation", t)?,
            targets: eval.constant("in/targets", y)?,
            confidence: eval.constant("in/confidence", w)?,
        };
        let out = graph::Builder::new(eval, &self.layout, &self.config, &self.precondition)
            .build(inputs)?;
        Ok([out.rotations, out.translation, out.keypoints])
    }

    /// The fitted pose and keypoints from the graph's three outputs.
    pub fn output(
        &self,
        pose: &Pose,
        rotations: &ArrayD<f32>,
        translation: &ArrayD<f32>,
        keypoints: &ArrayD<f32>,
    ) -> UnrolledOutput {
        let flat = |a: &ArrayD<f32>| a.iter().copied().collect::<Vec<f32>>();
        let kp = flat(keypoints);
        UnrolledOutput {
            pose: self
                .layout
                .apply(pose, &flat(rotations), &flat(translation)),
            keypoints: kp
                .chunks_exact(3)
                .map(|c| Point3::new(f64::from(c[0]), f64::from(c[1]), f64::from(c[2])))
                .collect(),
        }
    }
}

fn g_shape(
    g: &mut crate::metrics::ops::builder::GraphBuilder,
    name: &str,
    shape: &[usize],
) -> String {
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    g.ints(&format!("{name}/shape"), &dims)
}

/// `J^T J` of the keypoints at the reference pose (every confidence 1), over the root
/// translation and the active bones' world-frame increments.
fn reference_normal_matrix(
    rig: &KeypointRig,
    active: &[usize],
) -> Result<DMatrix<f64>, UnrolledError> {
    let mut posed = Posed::default();
    rig.forward(&Pose::identity(rig.bones()), &mut posed)?;
    let mut slot_of = vec![None; rig.bones()];
    for (s, &a) in active.iter().enumerate() {
        slot_of[a] = Some(s);
    }
    let mut blocks = vec![Vec::new(); rig.keypoints()];
    rig.keypoint_jacobian(&posed, &slot_of, &mut blocks);
    let n = 3 + 3 * active.len();
    let mut j = DMatrix::zeros(3 * rig.keypoints(), n);
    for (k, blk) in blocks.iter().enumerate() {
        for (slot, m) in blk {
            j.fixed_view_mut::<3, 3>(3 * k, 3 * slot).copy_from(m);
        }
    }
    Ok(j.transpose() * j)
}

#[cfg(test)]
mod tests;
