//! The preprocessing rows: one YUYV camera frame per camera size into an RGB tensor.

use std::time::Duration;

use super::{median_ms, Kernel, KernelBenchError, Row, Work};
use crate::camera::frame::{CameraId, Frame, PixelFormat};
use crate::geom::time::ThreadCpu;
use crate::preprocess::{InputSpec, PreprocessConfig, Preprocessor};

/// The camera sizes the table covers (width, height): 720p and 1080p.
pub const CAMERAS: [(u32, u32); 2] = [(1280, 720), (1920, 1080)];

/// Source samples one output pixel reads in the fused path: 2x2 luma, 2x2 of each chroma.
const TAPS: u64 = 12;
/// Fixed-point multiply-adds of the YUV to RGB matrix per output pixel.
const COLOUR_MACS: u64 = 4;
/// Bytes per output pixel the fused loop loads: the taps, and one table entry per channel.
const LOAD_BYTES: u64 = TAPS + 3;

/// Counted work of the fused crop + bilinear + colour path into a `side` x `side` tensor.
pub fn work(side: u64) -> Work {
    let pixels = side * side;
    Work {
        elements: pixels * 3,
        int_macs: pixels * (TAPS + COLOUR_MACS),
        load_bytes: pixels * LOAD_BYTES,
        ..Work::default()
    }
}

/// A deterministic YUYV frame: gradients and seeded noise.
fn frame(width: u32, height: u32) -> Frame {
    let mut seed = 0x2545_f491u32;
    let data: Vec<u8> = (0..width as usize * height as usize * 2)
        .map(|i| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((i / 2 % width as usize) as u32 * 200 / width + (seed >> 28)) as u8
        })
        .collect();
    Frame::still(CameraId(0), PixelFormat::Yuyv, width, height, data)
}

/// One row per camera size: the frame preprocessed `runs` times into a `side` tensor.
///
/// # Errors
/// [`KernelBenchError::Preprocess`] when the preprocessor refuses the case.
pub fn rows(side: usize, runs: usize) -> Result<Vec<Row>, KernelBenchError> {
    let core = super::CORTEX_A76_PI5;
    CAMERAS
        .iter()
        .map(|&(w, h)| {
            let case = format!("{w}x{h} yuyv");
            let fail = |source| KernelBenchError::Preprocess {
                case: case.clone(),
                source,
            };
            let s = side as u32;
            let mut pre = Preprocessor::new(InputSpec::rgb(s, s), PreprocessConfig::default())
                .map_err(fail)?;
            let frame = frame(w, h);
            let mut out = vec![0u8; pre.spec().layout.len(s, s)];
            pre.run_into(&frame, &mut out).map_err(fail)?;
            let mut times: Vec<Duration> = Vec::with_capacity(runs);
            for _ in 0..runs.max(1) {
                // Thread CPU time: on a shared machine it leaves out waits for a core.
                let t = ThreadCpu::start();
                pre.run_into(&frame, &mut out).map_err(fail)?;
                times.push(t.elapsed().unwrap_or_default());
            }
            let work = work(side as u64);
            Ok(Row {
                side,
                kernel: Kernel::Preprocess,
                case,
                nodes: 1,
                path: Kernel::Preprocess.path(),
                work,
                measured_ms: median_ms(times),
                model_ms: core.predict_ms(&work),
            })
        })
        .collect()
}
