//! The joint limits as the unrolled fit applies them: per bone, a fixed-order list of
//! single-cone clamps. This adapter is the one place that reads [`JointLimit`]; each cone of a
//! bone's kusudama becomes one clamp, applied in the kusudama's order, so the region the graph
//! enforces is the intersection of the cones.

use nalgebra::Vector3;

use crate::body::limits::JointLimit;

/// One single-cone clamp of one bone's direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConeClamp {
    /// The bone (rig index).
    pub bone: usize,
    /// The bone's own axis in its local frame: the direction the cone holds is `D axis`.
    pub bone_axis: Vector3<f64>,
    /// The cone's axis (unit), in the bone's parent-relative frame.
    pub axis: Vector3<f64>,
    /// Cosine of the half-angle.
    pub cos_half: f64,
    /// Sine of the half-angle.
    pub sin_half: f64,
    /// The bone's twist range, radians (carried; the graph does not clamp twist).
    pub twist_min: f64,
    /// See `twist_min`.
    pub twist_max: f64,
}

/// The clamps of every bone in `bones` (rig indices) that has a limit with a swing region, in
/// chain order: `result[p]` holds the `p`-th clamp of every bone that has at least `p + 1`.
pub fn cone_chain(limits: &[Option<JointLimit>], bones: &[usize]) -> Vec<Vec<ConeClamp>> {
    let mut stages: Vec<Vec<ConeClamp>> = Vec::new();
    for &bone in bones {
        let Some(limit) = limits.get(bone).and_then(Option::as_ref) else {
            continue;
        };
        let Some(swing) = limit.swing() else {
            continue;
        };
        for (p, cone) in swing.cones().iter().enumerate() {
            if stages.len() <= p {
                stages.push(Vec::new());
            }
            stages[p].push(ConeClamp {
                bone,
                bone_axis: limit.axis().into_inner(),
                axis: cone.axis().into_inner(),
                cos_half: cone.half_angle().cos(),
                sin_half: cone.half_angle().sin(),
                twist_min: limit.twist().min(),
                twist_max: limit.twist().max(),
            });
        }
    }
    stages
}
