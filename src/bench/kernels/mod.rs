//! Per-frame work and time of the chain's hot CPU kernels, next to a Cortex-A76 model.
//!
//! `hailo-edge kernels` builds the real-width decoder graph at each side (288, 432), counts
//! the work of every hot node from the shapes the prepared graph gives it ([`work`]), times
//! every node over a few runs (thread CPU time, one thread), and does the same for the
//! fused preprocessing of one camera frame per camera size. Each row carries the code path
//! that ran on this CPU ([`Kernel::path`]), the measured milliseconds and the
//! [`model`]'s prediction for a Raspberry Pi 5 core, so the one table answers both "what
//! does this box take" and "what should a Pi take".

pub mod model;
pub mod work;

mod camera;
mod decoder;

use std::fmt;
use std::ops::AddAssign;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub use camera::CAMERAS;
pub use decoder::probe_inputs;
pub use model::{Core, CORTEX_A76_PI5};

/// The hot kernels of one frame's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    /// YUYV crop, 2x2 bilinear resample and colour conversion in one pass.
    Preprocess,
    /// The decoder's fused `softmax(scale · Q Kᵀ) V`.
    Attention,
    /// Deformable sampling (with the value projection of the sampled rows where fused).
    DeformSample,
    /// Short-row softmax and its exponentials.
    Softmax,
    /// The linear layers on [`FastLinear`](crate::decode::ops::linear::FastLinear)
    /// (`gemm`'s kernels).
    Linear,
    /// tract's matrix products (the ones no rewrite took).
    MatMul,
    /// Every other decoder node (layer norms, element-wise, reshapes).
    Other,
}

impl Kernel {
    /// Every kernel, in table order.
    pub const ALL: [Kernel; 7] = [
        Kernel::Preprocess,
        Kernel::Attention,
        Kernel::DeformSample,
        Kernel::Softmax,
        Kernel::Linear,
        Kernel::MatMul,
        Kernel::Other,
    ];

    /// The kernel's name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Preprocess => "preprocess (yuyv crop+resample+rgb)",
            Kernel::Attention => "attention",
            Kernel::DeformSample => "deformable sampling",
            Kernel::Softmax => "softmax + exp",
            Kernel::Linear => "linear layers",
            Kernel::MatMul => "matrix products (tract)",
            Kernel::Other => "other decoder ops (tract)",
        }
    }

    /// The code path the kernel takes on this CPU: `avx2` or `scalar` on x86_64 (by run-time
    /// detection, as the kernels choose), `neon` on aarch64 (the baseline there), and
    /// `tract-linalg` for tract's own kernels, which pick their own, and the `gemm`
    /// crate's widest path for the linear layers (with the column panels of
    /// `decode::ops::linear` where AVX-512 runs them). Attention multiplies its larger items
    /// on `gemm`, and the sampling projects its rows there and sums its taps with
    /// AVX-512 where the CPU has it.
    pub fn path(self) -> &'static str {
        match self {
            Kernel::MatMul | Kernel::Other => "tract-linalg",
            Kernel::Linear => match gemm_path() {
                // Products of 32 contiguous rows or more run on the column panels there.
                "gemm avx512" => "panels avx512 + gemm avx512",
                other => other,
            },
            Kernel::Preprocess | Kernel::Softmax => simd_path(),
            Kernel::Attention => match (simd_path(), gemm_path()) {
                ("avx2", "gemm avx512") => "avx2 + gemm avx512",
                ("avx2", _) => "avx2 + gemm avx2",
                ("neon", _) => "neon + gemm neon",
                _ => "scalar + gemm scalar",
            },
            Kernel::DeformSample => match (simd_path(), gemm_path()) {
                ("avx2", "gemm avx512") => "avx512 taps + gemm avx512",
                ("avx2", _) => "avx2 + gemm avx2",
                ("neon", _) => "neon + gemm neon",
                _ => "scalar + gemm scalar",
            },
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The vector path `gemm` takes here: it picks AVX-512 when the CPU has the x86-64-v4
/// set (this crate builds it with that path), then AVX2 with FMA; NEON on aarch64.
fn gemm_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512cd")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            return "gemm avx512";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "gemm avx2";
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        return "gemm neon";
    }
    #[allow(unreachable_code)]
    "gemm scalar"
}

/// The vector path hailo-edge's own kernels take here.
fn simd_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "avx2";
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        return "neon";
    }
    #[allow(unreachable_code)]
    "scalar"
}

/// The work of a kernel over one frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Work {
    /// Output elements written.
    pub elements: u64,
    /// f32 multiply-adds.
    pub macs: u64,
    /// Fixed-point multiply-adds (the preprocessing's taps and colour matrix).
    pub int_macs: u64,
    /// Exponentials.
    pub exps: u64,
    /// Bytes the inner loops load.
    pub load_bytes: u64,
}

impl AddAssign for Work {
    fn add_assign(&mut self, o: Work) {
        self.elements += o.elements;
        self.macs += o.macs;
        self.int_macs += o.int_macs;
        self.exps += o.exps;
        self.load_bytes += o.load_bytes;
    }
}

/// One row of the table: a kernel at one model side (and camera size for preprocessing).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Model input side in pixels.
    pub side: usize,
    pub kernel: Kernel,
    /// The camera frame (preprocessing) or the decoder graph the row ran.
    pub case: String,
    /// Graph nodes (or frames) the row sums.
    pub nodes: usize,
    /// The code path that ran ([`Kernel::path`]).
    pub path: &'static str,
    /// Counted work per frame.
    pub work: Work,
    /// Measured on this machine, per frame (thread CPU time, median over the runs).
    pub measured_ms: f64,
    /// The [`model`]'s prediction for one Cortex-A76 core, per frame.
    pub model_ms: f64,
}

/// Why the kernel table could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelBenchError {
    /// The decoder graph for a side could not be generated or cached.
    #[error("decoder graph at side {side}: {source}")]
    Graph {
        side: usize,
        source: crate::decode::graph::GraphError,
    },
    /// tract could not load, prepare or run the graph.
    #[error("decoder {path}: {message}")]
    Decoder { path: String, message: String },
    /// The preprocessor refused a camera case.
    #[error("preprocessing {case}: {source}")]
    Preprocess {
        case: String,
        source: crate::preprocess::PreprocessError,
    },
    /// A side the decoder cannot take.
    #[error("side {side} is not a positive multiple of 24 (the decoder's patch grid)")]
    Side { side: usize },
}

/// The table for each side, each kernel timed over `runs` frames after one warm-up. A side
/// runs the decoder ONNX given with it, or else the real-width graph generated for it
/// (seeded, cached: [`cached`](crate::decode::graph::cached)).
///
/// # Errors
/// [`KernelBenchError`] naming the side, graph or camera case that failed.
pub fn table(
    sides: &[(usize, Option<PathBuf>)],
    runs: usize,
) -> Result<Vec<Row>, KernelBenchError> {
    let mut rows = Vec::new();
    for (side, decoder) in sides {
        let side = *side;
        let graph = crate::decode::graph::HostGraph::real(side);
        graph
            .validate()
            .map_err(|_| KernelBenchError::Side { side })?;
        rows.extend(camera::rows(side, runs)?);
        let path = match decoder {
            Some(path) => path.clone(),
            None => crate::decode::graph::cached(&graph)
                .map_err(|source| KernelBenchError::Graph { side, source })?,
        };
        rows.extend(decoder::rows(&path, side, runs)?);
    }
    Ok(rows)
}

/// Median of per-run durations, in milliseconds.
fn median_ms(mut runs: Vec<Duration>) -> f64 {
    if runs.is_empty() {
        return 0.0;
    }
    runs.sort();
    runs[runs.len() / 2].as_secs_f64() * 1e3
}

/// The rows as a text table: per side, each kernel's work, path, measured and modelled ms.
pub fn render(rows: &[Row], core: &Core) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "measured: this machine ({}), thread CPU time per frame, median; \
         model: {} (a bound, not a measurement)",
        std::env::consts::ARCH,
        core.name
    );
    let _ = writeln!(
        out,
        "{:>4}  {:<36} {:<17} {:>5} {:>8} {:>10} {:>8} {:>8} {:>7}  {:>11} {:>9}",
        "side",
        "kernel",
        "case",
        "nodes",
        "elem k",
        "f32 MMAC",
        "int MMAC",
        "exp k",
        "load MB",
        "measured ms",
        "model ms"
    );
    for r in rows {
        let w = &r.work;
        let _ = writeln!(
            out,
            "{:>4}  {:<36} {:<17} {:>5} {:>8.1} {:>10.2} {:>8.2} {:>8.1} {:>7.2}  {:>11.3} {:>9.3}  [{}]",
            r.side,
            r.kernel.name(),
            r.case,
            r.nodes,
            w.elements as f64 / 1e3,
            w.macs as f64 / 1e6,
            w.int_macs as f64 / 1e6,
            w.exps as f64 / 1e3,
            w.load_bytes as f64 / 1e6,
            r.measured_ms,
            r.model_ms,
            r.path
        );
    }
    out
}

#[cfg(test)]
mod tests;
