#!/usr/bin/env python3
"""Decoder per-frame time, tract against ONNX Runtime, side by side in one run.

    tools/.venv/bin/python tools/bench_decoder.py [--runs 20] [--threads 1] [--ort-only] [--stock] [model.onnx ...]

Default models: fixtures/decoder_reduced_288.onnx and fixtures/decoder_reduced_432.onnx; any list of ONNX
files can be given (taps or design-split inputs alike: inputs are fed by their declared
shapes). For each model this runs the Rust bench (`cargo bench --bench bench_decode`,
release, tract with the fast GridSample, and with `--stock` also tract's own GridSample),
then ONNX Runtime (the `onnxruntime` package: CPU provider, `--threads` intra-op threads
(1 by default), 1 inter-op thread, sequential, all optimisations) on the same file with
the same kind of random inputs, and prints a table with the tract / ORT ratio of the
medians. `--ort-only` skips the Rust bench. ORT figures are medians over `--runs` runs after
`--warmup` runs, interleaved across the files: wall time and process CPU time (all threads of
the process).

Needs `pip install onnxruntime numpy` (tools/.venv).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_graph  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def ort_times(paths, runs, threads, warmup=5):
    """{path: (wall median, wall p90, process CPU median)} in ms, one ORT session per file.

    The runs are interleaved across the files (one run of each in turn), so that on a shared,
    loaded machine every file sees the same load and the ratios between them stay fair.
    """
    opts = onnx_graph.session_options(threads)
    rng = np.random.default_rng(0)
    jobs = []
    for path in paths:
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        feeds = {i.name: rng.uniform(-1, 1, i.shape).astype(np.float32) for i in sess.get_inputs()}
        for _ in range(warmup):
            sess.run(None, feeds)
        jobs.append((path, sess, feeds, [], []))
    for _ in range(runs):
        for _, sess, feeds, times, cpu in jobs:
            t, c = time.perf_counter(), time.process_time()
            sess.run(None, feeds)
            cpu.append((time.process_time() - c) * 1e3)
            times.append((time.perf_counter() - t) * 1e3)
    out = {}
    for path, _, _, times, cpu in jobs:
        times.sort()
        cpu.sort()
        out[path] = (times[len(times) // 2], times[round((len(times) - 1) * 0.9)], cpu[len(cpu) // 2])
    return out


def rust_rows(models, args):
    """The Rust bench's JSON rows for `models`."""
    cmd = ["cargo", "bench", "--bench", "bench_decode", "--", "--runs", str(args.runs)]
    if args.stock:
        cmd += ["--stock", "--stock-runs", str(args.stock_runs)]
    cmd += models
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--stock", action="store_true", help="also time tract's own GridSample (slow)")
    ap.add_argument("--stock-runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="ONNX Runtime intra-op threads (default 1)")
    ap.add_argument("--warmup", type=int, default=5, help="ONNX Runtime runs before timing")
    ap.add_argument("--ort-only", action="store_true", help="time ONNX Runtime only, not the Rust bench")
    args = ap.parse_args()
    models = [os.path.abspath(m) for m in args.models] or [
        os.path.join(ROOT, "fixtures", f"decoder_reduced_{s}.onnx") for s in (288, 432)
    ]
    rows = [] if args.ort_only else rust_rows(models, args)

    load = os.getloadavg()[0]
    tract = "" if args.ort_only else "; tract-onnx 0.23, 1 thread"
    print(f"onnxruntime {ort.__version__}, {args.threads} thread(s){tract}; medians of {args.runs} runs")
    print(f"load average {load:.1f} on {os.cpu_count()} cores: wall time counts waiting for a core, CPU time does not")
    print(f"{'model':<36} {'engine':<22} {'wall ms':>8} {'p90 ms':>8} {'/ ORT':>6} {'CPU ms':>8} {'/ ORT':>6}")
    figures = ort_times(models, args.runs, args.threads, args.warmup)
    for m in models:
        med, p90, cpu = figures[m]
        name = os.path.relpath(m, ROOT) if m.startswith(ROOT) else os.path.basename(m)
        print(f"{name:<36} {'onnxruntime':<22} {med:>8.1f} {p90:>8.1f} {1.0:>6.2f} {cpu:>8.1f} {1.0:>6.2f}")
        for r in rows:
            if r["model"] == m:
                wr, cr = r["median_ms"] / med, r["cpu_median_ms"] / cpu
                print(
                    f"{'':<36} {r['engine']:<22} {r['median_ms']:>8.1f} {r['p90_ms']:>8.1f} {wr:>6.2f}"
                    f" {r['cpu_median_ms']:>8.1f} {cr:>6.2f}"
                )
    for r in rows:
        if r["engine"] == "input":
            print(f"{r['model']:<36} {'hailo-edge':<22} {r['median_ms']:>8.2f} {r['p90_ms']:>8.2f}")


if __name__ == "__main__":
    main()
