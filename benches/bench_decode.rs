//! Decoder per-frame benchmark: tract with hailo-edge's kernels (and, with `--stock`,
//! tract's own ops) on decoder ONNX files given as arguments or in
//! `HAILO_EDGE_BENCH_DECODERS` (paths separated by `:`); by default the committed
//! reduced-width fixtures at 288 and 432.
//!
//! ```sh
//! cargo bench --bench bench_decode -- [--runs N] [--stock] [model.onnx ...]
//! HAILO_EDGE_BENCH_DECODERS=a.onnx:b.onnx cargo bench --bench bench_decode
//! cargo bench --bench bench_decode -- --linear
//! ```
//!
//! `--linear` instead times the decoder's largest linear layers on the column panels
//! against `gemm`, side by side (see [`bench_linear`]).
//!
//! Prints one JSON line per (model, engine) with the median and p90 wall time and the
//! median thread CPU time of one view's `run` (1 thread, sequential, after warm-up).
//! Each graph runs through [`TractDecoder`], fed from its named [`FeatureMaps`].
//! `tools/bench_decoder.py` runs this and ONNX Runtime on the same files in one go and
//! prints the ratio.

use std::path::{Path, PathBuf};
use std::time::Instant;

use hailo_edge::decode::engine::tract::{TractDecoder, TractKernels};
use hailo_edge::decode::{Decoder, FeatureMaps, MapSpec, Split};
use hailo_edge::geom::time::ThreadCpu;

/// Fills `values` with a fixed pseudo-random sequence in [-1, 1).
fn fill_values<'a>(values: impl Iterator<Item = &'a mut f32>) {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for v in values {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *v = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
    }
}

/// One decoder and its input maps, as the benchmark times a view.
struct View {
    dec: TractDecoder,
    maps: FeatureMaps,
}

impl View {
    fn load(path: &Path, kernel: TractKernels) -> Result<Self, String> {
        let dec = TractDecoder::load(path, kernel).map_err(|e| e.to_string())?;
        let maps = dec.new_maps();
        Ok(Self { dec, maps })
    }

    /// Writes the next view's inputs (not timed).
    fn refill(&mut self) {
        for i in 0..self.maps.len() {
            fill_values(self.maps.map_mut(i).iter_mut());
        }
    }

    /// Runs one view.
    fn view(&mut self) -> Result<(), String> {
        let out = self.dec.run(&mut self.maps).map_err(|e| e.to_string())?;
        std::hint::black_box(out);
        Ok(())
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn bench(path: &Path, kernel: TractKernels, runs: usize) -> Result<(), String> {
    let t = Instant::now();
    let mut view = View::load(path, kernel)?;
    let load_s = t.elapsed().as_secs_f64();
    let warmup = if kernel == TractKernels::Stock { 1 } else { 3 };
    let mut times = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    for i in 0..warmup + runs {
        view.refill();
        let (t, c) = (Instant::now(), ThreadCpu::start());
        view.view()?;
        let cpu_ms = c.elapsed().unwrap_or_default().as_secs_f64() * 1e3;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if i >= warmup {
            times.push(ms);
            cpu.push(cpu_ms);
        }
    }
    times.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let engine = match kernel {
        TractKernels::Fast => "tract (hailo-edge ops)",
        TractKernels::Stock => "tract (stock 0.23)",
    };
    // Two decimals, as the comparison script prints them.
    let round = |v: f64| (v * 100.0).round() / 100.0;
    let line = serde_json::json!({
        "model": path.display().to_string(),
        "engine": engine,
        "threads": 1,
        "runs": runs,
        "median_ms": round(percentile(&times, 0.5)),
        "p90_ms": round(percentile(&times, 0.9)),
        "cpu_median_ms": round(percentile(&cpu, 0.5)),
        "load_s": round(load_s),
    });
    println!("{line}");
    Ok(())
}

/// Time of dequantising the design split's two UINT8 NHWC device buffers into the NCHW
/// maps (the host work per frame before the decoder runs).
fn bench_dequantise(grid: usize, runs: usize) {
    use hailo_edge::hef::{DataType, QuantInfo, Quantization};
    let split = Split::Design;
    let channels = split.channels();
    let bytes: Vec<u8> = (0..grid * grid * channels)
        .map(|i| (i * 37 % 251) as u8)
        .collect();
    let q = Quantization::Uniform(QuantInfo {
        zp: 128.0,
        scale: 0.02,
        limvals_min: -2.56,
        limvals_max: 2.54,
    });
    let tap = hailo_edge::decode::input::DeviceMap {
        stream: "map",
        bytes: &bytes,
        data_type: DataType::Uint8,
        quant: &q,
    };
    let specs: Vec<MapSpec> = split
        .input_names()
        .iter()
        .map(|n| MapSpec::new(*n, channels, grid, grid))
        .collect();
    let mut maps = FeatureMaps::new(&specs);
    let buffers = vec![tap; specs.len()];
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        maps.fill_from_device(&buffers).expect("matching buffers");
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{{\"model\":\"dequantise {} x ({grid},{grid},{channels}) u8\",\"engine\":\"input\",\"threads\":1,\"runs\":{runs},\"median_ms\":{:.3},\"p90_ms\":{:.3}}}",
        specs.len(),
        percentile(&times, 0.5),
        percentile(&times, 0.9)
    );
}

/// The decoder's largest linear layers (the FFN's two products, an attention projection,
/// the selection's class head), each as a `FastLinear` with bias and ReLU on its weight
/// packed into column panels and on `gemm`, called in turn, every call on another copy of
/// the weight from a set of 48 MB so that the weight comes cold as in a decoder run.
/// Prints the median thread CPU time of each and their ratio.
fn bench_linear(calls: usize) {
    use std::sync::Arc;

    use hailo_edge::decode::ops::linear::{FastLinear, MatrixLayout};
    use tract_onnx::prelude::Tensor;

    println!("linear layers, weights cold (48 MB of copies), median thread CPU time of {calls} calls each, in turn");
    for (m, k, n) in [
        (100, 256, 2048),
        (100, 2048, 256),
        (100, 256, 768),
        (576, 256, 91),
    ] {
        let copies = (48_000_000 / (k * n * 4)).max(2);
        let gemm: Vec<FastLinear> = (0..copies)
            .map(|c| {
                let mut w = vec![0f32; k * n];
                fill_values(w.iter_mut());
                w.iter_mut().for_each(|v| *v += c as f32 * 1e-3);
                let mut b = vec![0f32; n];
                fill_values(b.iter_mut());
                FastLinear {
                    weight: Arc::new(Tensor::from_shape(&[k, n], &w).expect("k x n")),
                    bias: Some(Arc::new(Tensor::from_shape(&[n], &b).expect("n"))),
                    relu: true,
                    input: MatrixLayout::along(&[1, m, k], 2).expect("rows of k"),
                    output: MatrixLayout::along(&[1, m, n], 2).expect("rows of n"),
                }
            })
            .collect();
        let panels: Vec<FastLinear> = gemm
            .iter()
            .map(|op| op.clone().packed().expect("f32 weight"))
            .collect();
        let took = panels[0].weight.rank() == 3;
        let mut x = vec![0f32; m * k];
        fill_values(x.iter_mut());
        let (mut out_p, mut out_g) = (vec![0f32; m * n], vec![0f32; m * n]);
        let (mut tp, mut tg) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
        for c in 0..calls {
            let t = ThreadCpu::start();
            panels[c % copies]
                .apply(&x, &mut out_p)
                .expect("panel product");
            tp.push(t.elapsed().unwrap_or_default().as_secs_f64() * 1e3);
            let t = ThreadCpu::start();
            gemm[(c + copies / 2) % copies]
                .apply(&x, &mut out_g)
                .expect("gemm product");
            tg.push(t.elapsed().unwrap_or_default().as_secs_f64() * 1e3);
        }
        tp.sort_by(f64::total_cmp);
        tg.sort_by(f64::total_cmp);
        let (p, g) = (percentile(&tp, 0.5), percentile(&tg, 0.5));
        let path = if took {
            "panels"
        } else {
            "gemm (no AVX-512: panels not taken)"
        };
        println!(
            "{m}x{k} . {k}x{n} + b, relu: {path} {p:.3} ms, gemm {g:.3} ms, ratio {:.2} ({copies} weight copies)",
            p / g
        );
    }
}

fn main() {
    // As `hailo-edge run` does for a rig with `decoder.retain_memory` (the default):
    // freed tensors stay in the process between runs.
    hailo_edge::rig::alloc::retain_freed_memory();
    let mut runs = 20;
    let mut stock = false;
    let mut stock_runs = 3;
    let mut models = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bench" => {}
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).unwrap_or(runs),
            "--stock-runs" => {
                stock_runs = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(stock_runs)
            }
            "--stock" => stock = true,
            "--linear" => {
                bench_linear(400);
                return;
            }
            _ if a.starts_with("--") => {}
            _ => models.push(PathBuf::from(a)),
        }
    }
    if models.is_empty() {
        if let Ok(list) = std::env::var("HAILO_EDGE_BENCH_DECODERS") {
            models = std::env::split_paths(&list).collect();
        }
    }
    if models.is_empty() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        models = vec![
            root.join("decoder_reduced_288.onnx"),
            root.join("decoder_reduced_432.onnx"),
        ];
    }
    for grid in [24, 36] {
        bench_dequantise(grid, 50);
    }
    let mut failed = false;
    for m in &models {
        let mut kernels = vec![TractKernels::Fast];
        if stock {
            kernels.push(TractKernels::Stock);
        }
        for k in kernels {
            let n = if k == TractKernels::Stock {
                stock_runs
            } else {
                runs
            };
            if let Err(e) = bench(m, k, n) {
                eprintln!("bench_decode: {}: {e}", m.display());
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
