//! The ANNY body model, forward kinematics and skinning, kusudama joint limits, multi-view triangulation and the pose fit.

pub mod fit;
pub mod limits;
pub mod projection;
pub mod triangulate;
