//! The ONNX Runtime engine (cargo feature `ort`).
//!
//! ONNX Runtime is loaded at run time (`ort`'s `load-dynamic`), so the build needs no
//! library and no download. The library comes from `ORT_DYLIB_PATH`, for example the
//! `libonnxruntime.so.*` that the PyPI `onnxruntime` wheel ships in
//! `onnxruntime/capi/`. The feature maps are handed to ORT as borrowed views: no copy.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::TensorRef;

use super::{map_spec, raw_output, GraphInputs, OUTPUT_NAMES};
use crate::decode::input::specs_text;
use crate::decode::{DecodeError, Decoder, Engine, FeatureMaps, MapSpec, RawOutput};

/// Environment variable naming the ONNX Runtime shared library.
pub const DYLIB_ENV: &str = "ORT_DYLIB_PATH";

/// Why ONNX Runtime cannot be loaded in this process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OrtLoadError {
    /// `ORT_DYLIB_PATH` is unset or empty.
    #[error(
        "{DYLIB_ENV} is not set; point it at libonnxruntime.so \
         (e.g. from `pip install onnxruntime`, onnxruntime/capi/)"
    )]
    NotSet,
    /// The library named by `ORT_DYLIB_PATH` could not be loaded.
    #[error("{DYLIB_ENV}={}: {message}", .path.display())]
    Library { path: PathBuf, message: String },
    /// The library loaded but refused to create its environment.
    #[error("ONNX Runtime environment: {message}")]
    Environment { message: String },
}

static ENVIRONMENT: OnceLock<Result<ort::environment::Environment, OrtLoadError>> = OnceLock::new();

/// Loads ONNX Runtime once per process from `ORT_DYLIB_PATH`.
pub(crate) fn environment() -> Result<&'static ort::environment::Environment, OrtLoadError> {
    ENVIRONMENT
        .get_or_init(|| {
            let path = std::env::var_os(DYLIB_ENV)
                .filter(|p| !p.is_empty())
                .ok_or(OrtLoadError::NotSet)?;
            let builder = ort::init_from(&path).map_err(|e| OrtLoadError::Library {
                path: PathBuf::from(&path),
                message: e.to_string(),
            })?;
            builder.build().map_err(|e| OrtLoadError::Environment {
                message: e.to_string(),
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Whether ONNX Runtime can be loaded in this process (and why not).
///
/// # Errors
/// [`OrtLoadError`] saying what is missing.
pub fn available() -> Result<(), OrtLoadError> {
    environment().map(|_| ())
}

/// A decoder graph in an ONNX Runtime session.
pub struct OrtDecoder {
    graph: GraphInputs,
    session: Session,
}

impl std::fmt::Debug for OrtDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrtDecoder")
            .field("graph", &self.graph)
            .finish_non_exhaustive()
    }
}

impl OrtDecoder {
    /// Loads a decoder ONNX into a session with `threads` intra-op threads, sequential
    /// execution and all graph optimisations.
    ///
    /// # Errors
    /// [`DecodeError::Load`] naming the file (or `ORT_DYLIB_PATH` when the library
    /// cannot be loaded), [`DecodeError::Graph`] when inputs or outputs do not match.
    pub fn load(path: &Path, threads: usize) -> Result<Self, DecodeError> {
        let load_err = |message: String| DecodeError::Load {
            path: path.to_path_buf(),
            message,
        };
        let env = environment().map_err(|e| load_err(e.to_string()))?;
        let session = Session::builder(env)
            .and_then(|b| Ok(b.with_optimization_level(GraphOptimizationLevel::Level3)?))
            .and_then(|b| Ok(b.with_intra_threads(threads)?))
            .and_then(|b| Ok(b.with_inter_threads(1)?))
            .and_then(|b| Ok(b.with_parallel_execution(false)?))
            .and_then(|mut b| b.commit_from_file(path))
            .map_err(|e| load_err(e.to_string()))?;
        let mut maps = Vec::new();
        for input in session.inputs() {
            let shape = input
                .dtype()
                .tensor_shape()
                .map(|s| s.iter().map(|&d| d.max(0) as usize).collect::<Vec<_>>());
            let is_f32 = matches!(
                input.dtype().tensor_type(),
                Some(ort::value::TensorElementType::Float32)
            );
            let found = format!("{}", input.dtype());
            maps.push(map_spec(path, input.name(), shape, is_f32, &found)?);
        }
        let outputs: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
        let (graph, _) = GraphInputs::new(path, maps, &outputs)?;
        log::info!(
            "decoder {}: ONNX Runtime, {threads} thread(s), inputs {}",
            path.display(),
            specs_text(&graph.maps)
        );
        Ok(Self { graph, session })
    }
}

impl Decoder for OrtDecoder {
    fn engine(&self) -> Engine {
        Engine::Ort
    }

    fn inputs(&self) -> &[MapSpec] {
        &self.graph.maps
    }

    fn run(&mut self, maps: &mut FeatureMaps) -> Result<RawOutput, DecodeError> {
        self.graph.check(maps)?;
        let run_err = |e: ort::Error| DecodeError::Run(e.to_string());
        let mut inputs = Vec::with_capacity(maps.len());
        for (i, spec) in self.graph.maps.iter().enumerate() {
            let view = TensorRef::from_array_view(maps.map(i)).map_err(run_err)?;
            inputs.push((spec.name.as_str(), view));
        }
        let outputs = self.session.run(inputs).map_err(run_err)?;
        let [d, l, k] = OUTPUT_NAMES.map(|name| outputs[name].try_extract_array::<f32>());
        raw_output(
            d.map_err(run_err)?,
            l.map_err(run_err)?,
            k.map_err(run_err)?,
        )
    }
}
