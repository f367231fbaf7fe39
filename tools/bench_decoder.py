#!/usr/bin/env python3
"""Decoder per-frame time, tract against ONNX Runtime, side by side in one run.

    tools/.venv/bin/python tools/bench_decoder.py [--runs 20] [--rounds 1] [--threads 1] [--ort-only] [--stock] [model.onnx ...]

Default models: fixtures/decoder_reduced_288.onnx and fixtures/decoder_reduced_432.onnx; any list of ONNX
files can be given (taps or design-split inputs alike: inputs are fed by their declared
shapes). For each model this runs the Rust bench (`cargo bench --bench bench_decode`,
release, tract with the fast GridSample, and with `--stock` also tract's own GridSample),
then ONNX Runtime (the `onnxruntime` package: CPU provider, `--threads` intra-op threads
(1 by default), 1 inter-op thread, sequential, all optimisations) on the same file with
the same kind of random inputs, and prints a table with the tract / ORT ratio of the
medians. `--rounds N` repeats the Rust bench and the ORT timing N times in turn and prints,
per figure, the median over the rounds, and per ratio the median and range of the rounds'
own ratios (each from one round's tract and ORT medians, measured minutes apart at most): on
a shared machine a slow spell then moves one round, not the table. `--ort-only` skips the Rust
bench. ORT figures are medians over `--runs` runs after
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
    ap.add_argument("--rounds", type=int, default=1, help="Rust bench and ORT timing repeated in turn")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds: expected 1 or more")
    models = [os.path.abspath(m) for m in args.models] or [
        os.path.join(ROOT, "fixtures", f"decoder_reduced_{s}.onnx") for s in (288, 432)
    ]
    rounds = []
    loads = []
    for _ in range(args.rounds):
        rows = [] if args.ort_only else rust_rows(models, args)
        rounds.append((rows, ort_times(models, args.runs, args.threads, args.warmup)))
        loads.append(os.getloadavg()[0])

    tract = "" if args.ort_only else "; tract-onnx 0.23, 1 thread"
    across = f", median over {args.rounds} rounds (ratios: median and range of the rounds')" if args.rounds > 1 else ""
    print(f"onnxruntime {ort.__version__}, {args.threads} thread(s){tract}; medians of {args.runs} runs{across}")
    load = ", ".join(f"{x:.1f}" for x in loads)
    print(f"load average {load} on {os.cpu_count()} cores: wall time counts waiting for a core, CPU time does not")
    print(f"{'model':<36} {'engine':<22} {'wall ms':>8} {'p90 ms':>8} {'/ ORT':>6} {'CPU ms':>8} {'/ ORT':>6}")
    for m in models:
        ort_rounds = [figures[m] for _, figures in rounds]
        med, p90, cpu = (median([f[i] for f in ort_rounds]) for i in range(3))
        name = os.path.relpath(m, ROOT) if m.startswith(ROOT) else os.path.basename(m)
        print(f"{name:<36} {'onnxruntime':<22} {med:>8.1f} {p90:>8.1f} {1.0:>6.2f} {cpu:>8.1f} {1.0:>6.2f}")
        engines = [r["engine"] for r in rounds[0][0] if r["model"] == m]
        for engine in engines:
            mine = [(next(r for r in rows if r["model"] == m and r["engine"] == engine), figures[m])
                    for rows, figures in rounds]
            wall = median([r["median_ms"] for r, _ in mine])
            p90 = median([r["p90_ms"] for r, _ in mine])
            cpu_ms = median([r["cpu_median_ms"] for r, _ in mine])
            wr = [r["median_ms"] / f[0] for r, f in mine]
            cr = [r["cpu_median_ms"] / f[2] for r, f in mine]
            spread = f"  ({min(cr):.2f}-{max(cr):.2f})" if args.rounds > 1 else ""
            print(
                f"{'':<36} {engine:<22} {wall:>8.1f} {p90:>8.1f} {median(wr):>6.2f}"
                f" {cpu_ms:>8.1f} {median(cr):>6.2f}{spread}"
            )
    for r in rounds[0][0]:
        if r["engine"] == "input":
            same = [x for rows, _ in rounds for x in rows if x["engine"] == "input" and x["model"] == r["model"]]
            print(
                f"{r['model']:<36} {'hailo-edge':<22} {median([x['median_ms'] for x in same]):>8.2f}"
                f" {median([x['p90_ms'] for x in same]):>8.2f}"
            )


def median(values):
    """The median of a non-empty list (the mean of the middle two for an even count)."""
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


if __name__ == "__main__":
    main()
