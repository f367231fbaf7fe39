//! Levenberg-Marquardt on a manifold with a projection after every step.
//!
//! The `levenberg-marquardt` crate (rust-cv) assumes parameters in R^n updated by `x + delta`
//! and a full QR of the m x n Jacobian per iteration. The pose lives on a product of rotation
//! groups, every step must be projected onto the joint limits before it is judged, and the
//! normal equations of our sparse keypoint Jacobian are far cheaper to build than a QR; hence
//! this small solver over nalgebra. It follows the crate's conventions: a `Copy + Default`
//! configuration, a problem trait, and a report that is an outcome rather than an error.

use nalgebra::{DMatrix, DVector};

use super::FitError;

/// A least-squares problem linearised in a local tangent space.
pub trait Problem {
    /// The point being optimised.
    type State: Clone;

    /// Number of tangent-space parameters.
    fn dim(&self) -> usize;

    /// The cost at `state`, filling the Gauss-Newton normal equations `J^T W J` and `J^T W r`
    /// there (robust weights re-evaluated at `state`).
    ///
    /// # Errors
    /// Whatever the problem cannot evaluate.
    fn linearize(
        &mut self,
        state: &Self::State,
        jtj: &mut DMatrix<f64>,
        jtr: &mut DVector<f64>,
    ) -> Result<f64, FitError>;

    /// The cost at `state`.
    ///
    /// # Errors
    /// Whatever the problem cannot evaluate.
    fn cost(&mut self, state: &Self::State) -> Result<f64, FitError>;

    /// `state` moved by `delta` from the last linearisation point and projected onto the
    /// feasible set (joint limits).
    fn step(&self, state: &Self::State, delta: &[f64]) -> Self::State;

    /// Parameters whose part of `delta` the projection would mostly undo (a joint pressed
    /// against its limit); the solver holds them still and re-solves, so that the step it
    /// takes is the step its model predicts. The default blocks nothing.
    fn blocked(&self, _state: &Self::State, _delta: &[f64], _out: &mut Vec<usize>) {}

    /// Solves the damped normal equations `a x = b`, `x` written over `b`; `false` when `a`
    /// is not positive definite. The default factors `a` whole (Cholesky); a problem whose
    /// matrix has structure, as a bundle adjustment's block-diagonal board poses, solves it
    /// in far less than the cube of its size.
    fn solve(&self, a: &DMatrix<f64>, b: &mut DVector<f64>) -> bool {
        match a.clone().cholesky() {
            Some(ch) => {
                ch.solve_mut(b);
                true
            }
            None => false,
        }
    }
}

/// Why the solver stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TerminationReason {
    /// A convergence test passed: relative cost decrease (`ftol`), step size (`xtol`) or
    /// gradient (`gtol`).
    Converged {
        /// The relative cost decrease fell below `ftol`.
        ftol: bool,
        /// The step fell below `xtol`.
        xtol: bool,
        /// The gradient fell below `gtol`.
        gtol: bool,
    },
    /// The iteration budget ran out.
    MaxIterations,
    /// No damping within `patience` increases gave a cost decrease.
    LostPatience,
    /// The problem produced a non-finite cost or a singular system.
    Numerical(&'static str),
}

/// What a minimisation did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    /// Why it stopped.
    pub termination: TerminationReason,
    /// Accepted steps (linearisations after the first).
    pub iterations: usize,
    /// Cost evaluations, including linearisations.
    pub evaluations: usize,
    /// Cost at the start.
    pub initial_cost: f64,
    /// Cost at the end.
    pub final_cost: f64,
}

impl Report {
    /// Whether the solver converged (as opposed to running out of budget or patience).
    pub fn was_successful(&self) -> bool {
        matches!(self.termination, TerminationReason::Converged { .. })
    }
}

/// Solver settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevenbergMarquardt {
    ftol: f64,
    xtol: f64,
    gtol: f64,
    max_iterations: usize,
    patience: usize,
    initial_lambda: f64,
}

impl Default for LevenbergMarquardt {
    fn default() -> Self {
        Self {
            ftol: 1e-3,
            xtol: 1e-6,
            gtol: 1e-8,
            max_iterations: 50,
            patience: 8,
            initial_lambda: 1e-3,
        }
    }
}

fn check(
    field: &'static str,
    value: f64,
    ok: bool,
    expected: &'static str,
) -> Result<(), FitError> {
    if ok {
        Ok(())
    } else {
        Err(FitError::BadSetting {
            field,
            value,
            expected,
        })
    }
}

impl LevenbergMarquardt {
    /// Stop when an accepted step lowers the cost by less than this fraction (default 1e-3).
    ///
    /// # Errors
    /// [`FitError::BadSetting`] unless in [0, 1).
    pub fn with_ftol(mut self, v: f64) -> Result<Self, FitError> {
        check("ftol", v, (0.0..1.0).contains(&v), "a value in [0, 1)")?;
        self.ftol = v;
        Ok(self)
    }

    /// Stop when the step norm falls below this (default 1e-6, in metres and radians).
    ///
    /// # Errors
    /// [`FitError::BadSetting`] when negative or not finite.
    pub fn with_xtol(mut self, v: f64) -> Result<Self, FitError> {
        check("xtol", v, v.is_finite() && v >= 0.0, "a finite value >= 0")?;
        self.xtol = v;
        Ok(self)
    }

    /// Stop when the largest gradient component falls below this (default 1e-8).
    ///
    /// # Errors
    /// [`FitError::BadSetting`] when negative or not finite.
    pub fn with_gtol(mut self, v: f64) -> Result<Self, FitError> {
        check("gtol", v, v.is_finite() && v >= 0.0, "a finite value >= 0")?;
        self.gtol = v;
        Ok(self)
    }

    /// Most accepted steps (default 50).
    ///
    /// # Errors
    /// [`FitError::BadSetting`] when zero.
    pub fn with_max_iterations(mut self, v: usize) -> Result<Self, FitError> {
        check("max_iterations", v as f64, v > 0, "at least 1")?;
        self.max_iterations = v;
        Ok(self)
    }

    /// Damping increases tried per iteration before giving up (default 8).
    ///
    /// # Errors
    /// [`FitError::BadSetting`] when zero.
    pub fn with_patience(mut self, v: usize) -> Result<Self, FitError> {
        check("patience", v as f64, v > 0, "at least 1")?;
        self.patience = v;
        Ok(self)
    }

    /// Starting damping, relative to the diagonal of `J^T J` (default 1e-3).
    ///
    /// # Errors
    /// [`FitError::BadSetting`] unless positive and finite.
    pub fn with_initial_lambda(mut self, v: f64) -> Result<Self, FitError> {
        check(
            "initial_lambda",
            v,
            v.is_finite() && v > 0.0,
            "a finite value > 0",
        )?;
        self.initial_lambda = v;
        Ok(self)
    }

    /// The iteration budget.
    pub fn max_iterations(&self) -> usize {
        self.max_iterations
    }

    /// Minimises `problem` from `start`; returns the best state found and the report.
    ///
    /// # Errors
    /// Only errors of the problem itself; numerical trouble is a [`TerminationReason`].
    pub fn minimize<P: Problem>(
        &self,
        problem: &mut P,
        start: P::State,
    ) -> Result<(P::State, Report), FitError> {
        let n = problem.dim();
        let mut jtj = DMatrix::zeros(n, n);
        let mut jtr = DVector::zeros(n);
        let mut x = start;
        let mut cost = problem.linearize(&x, &mut jtj, &mut jtr)?;
        let mut report = Report {
            termination: TerminationReason::MaxIterations,
            iterations: 0,
            evaluations: 1,
            initial_cost: cost,
            final_cost: cost,
        };
        if !cost.is_finite() {
            report.termination = TerminationReason::Numerical("non-finite cost at the start");
            return Ok((x, report));
        }
        let mut lambda = self.initial_lambda;
        let mut nu = 2.0;
        let mut a = DMatrix::zeros(n, n);
        let mut delta = DVector::zeros(n);
        let mut blocked = Vec::new();
        'outer: loop {
            if jtr.amax() <= self.gtol {
                report.termination = TerminationReason::Converged {
                    ftol: false,
                    xtol: false,
                    gtol: true,
                };
                break;
            }
            if report.iterations >= self.max_iterations {
                report.termination = TerminationReason::MaxIterations;
                break;
            }
            let mut tries = 0;
            loop {
                a.copy_from(&jtj);
                for i in 0..n {
                    a[(i, i)] += lambda * jtj[(i, i)].max(1e-9);
                }
                delta.copy_from(&jtr);
                if !problem.solve(&a, &mut delta) {
                    lambda *= 10.0;
                    tries += 1;
                    if tries > self.patience {
                        report.termination = TerminationReason::Numerical("singular damped system");
                        break 'outer;
                    }
                    continue;
                }
                delta.neg_mut();
                blocked.clear();
                problem.blocked(&x, delta.as_slice(), &mut blocked);
                if !blocked.is_empty() {
                    // Hold the blocked parameters at zero and solve for the rest.
                    let mut rhs = jtr.clone();
                    for &i in &blocked {
                        a.row_mut(i).fill(0.0);
                        a.column_mut(i).fill(0.0);
                        a[(i, i)] = 1.0;
                        rhs[i] = 0.0;
                    }
                    delta.copy_from(&rhs);
                    if !problem.solve(&a, &mut delta) {
                        report.termination =
                            TerminationReason::Numerical("singular reduced system");
                        break 'outer;
                    }
                    delta.neg_mut();
                }
                // Gain predicted by the quadratic model.
                let predicted = -(jtr.dot(&delta) + 0.5 * delta.dot(&(&jtj * &delta)));
                if predicted <= self.ftol * cost * 1e-3 {
                    report.termination = TerminationReason::Converged {
                        ftol: true,
                        xtol: false,
                        gtol: false,
                    };
                    break 'outer;
                }
                let candidate = problem.step(&x, delta.as_slice());
                let new_cost = problem.cost(&candidate)?;
                report.evaluations += 1;
                if new_cost.is_finite() && new_cost < cost {
                    let rho = (cost - new_cost) / predicted;
                    lambda *= (1.0 - (2.0 * rho - 1.0).powi(3)).max(1.0 / 3.0);
                    nu = 2.0;
                    let relative = (cost - new_cost) / cost.max(f64::MIN_POSITIVE);
                    let small_step = delta.norm() <= self.xtol;
                    x = candidate;
                    report.iterations += 1;
                    if relative < self.ftol || small_step {
                        cost = new_cost;
                        report.termination = TerminationReason::Converged {
                            ftol: relative < self.ftol,
                            xtol: small_step,
                            gtol: false,
                        };
                        break 'outer;
                    }
                    cost = problem.linearize(&x, &mut jtj, &mut jtr)?;
                    report.evaluations += 1;
                    break;
                }
                lambda *= nu;
                nu *= 2.0;
                tries += 1;
                if tries > self.patience {
                    report.termination = TerminationReason::LostPatience;
                    break 'outer;
                }
            }
        }
        report.final_cost = cost;
        Ok((x, report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rosenbrock as least squares: r = (10 (y - x^2), 1 - x).
    struct Rosenbrock;

    impl Problem for Rosenbrock {
        type State = [f64; 2];
        fn dim(&self) -> usize {
            2
        }
        fn linearize(
            &mut self,
            s: &[f64; 2],
            jtj: &mut DMatrix<f64>,
            jtr: &mut DVector<f64>,
        ) -> Result<f64, FitError> {
            let r = nalgebra::Vector2::new(10.0 * (s[1] - s[0] * s[0]), 1.0 - s[0]);
            let j = nalgebra::Matrix2::new(-20.0 * s[0], 10.0, -1.0, 0.0);
            jtj.copy_from(&(j.transpose() * j));
            jtr.copy_from(&(j.transpose() * r));
            Ok(0.5 * r.norm_squared())
        }
        fn cost(&mut self, s: &[f64; 2]) -> Result<f64, FitError> {
            Ok(0.5 * ((10.0 * (s[1] - s[0] * s[0])).powi(2) + (1.0 - s[0]).powi(2)))
        }
        fn step(&self, s: &[f64; 2], d: &[f64]) -> [f64; 2] {
            [s[0] + d[0], s[1] + d[1]]
        }
    }

    #[test]
    fn rosenbrock_converges_from_the_classic_start() {
        let lm = LevenbergMarquardt::default()
            .with_ftol(1e-12)
            .unwrap()
            .with_max_iterations(200)
            .unwrap();
        let (x, report) = lm.minimize(&mut Rosenbrock, [-1.2, 1.0]).unwrap();
        assert!(report.was_successful(), "{report:?}");
        assert!(
            (x[0] - 1.0).abs() < 1e-6 && (x[1] - 1.0).abs() < 1e-6,
            "{x:?}"
        );
        // Negative control: a budget of 2 iterations is not enough.
        let short = LevenbergMarquardt::default()
            .with_max_iterations(2)
            .unwrap();
        let (_, report) = short.minimize(&mut Rosenbrock, [-1.2, 1.0]).unwrap();
        assert_eq!(report.termination, TerminationReason::MaxIterations);
        assert!(!report.was_successful());
    }

    #[test]
    fn settings_are_validated() {
        assert!(LevenbergMarquardt::default().with_ftol(1.5).is_err());
        assert!(LevenbergMarquardt::default()
            .with_max_iterations(0)
            .is_err());
        assert!(LevenbergMarquardt::default()
            .with_initial_lambda(-1.0)
            .is_err());
    }
}
