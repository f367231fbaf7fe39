//! The joint limits as the unrolled fit applies them: per bone, the fixed-order chain of
//! single-cone clamps of its [`JointLimit`]. This adapter is the one place that reads the
//! limits; each kusudama of a bone's [`Chain`](crate::body::limits::Chain) becomes one clamp,
//! applied in the chain's order, so the graph enforces the region the chain enforces.

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

/// The clamps of every bone in `bones` (rig indices) that has a limit, in
/// chain order: `result[p]` holds the `p`-th clamp of every bone that has at least `p + 1`.
pub fn cone_chain(limits: &[Option<JointLimit>], bones: &[usize]) -> Vec<Vec<ConeClamp>> {
    let mut stages: Vec<Vec<ConeClamp>> = Vec::new();
    for &bone in bones {
        let Some(limit) = limits.get(bone).and_then(Option::as_ref) else {
            continue;
        };
        let twist = limit.chain().twist();
        for (p, cone) in limit.chain().cones().iter().enumerate() {
            if stages.len() <= p {
                stages.push(Vec::new());
            }
            stages[p].push(ConeClamp {
                bone,
                bone_axis: limit.axis().into_inner(),
                axis: cone.axis().into_inner(),
                cos_half: cone.cos_half(),
                sin_half: cone.sin_half(),
                twist_min: twist.min(),
                twist_max: twist.max(),
            });
        }
    }
    stages
}
