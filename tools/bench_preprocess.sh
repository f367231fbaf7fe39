#!/usr/bin/env bash
# Preprocessing benchmark, hailo-edge vs OpenCV, single thread, same input, one run.
# Needs python3 with opencv-python-headless and numpy (pip install opencv-python-headless numpy).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 tools/bench_opencv_preprocess.py --write-input "$dir"
cargo bench --bench bench_camera -- --input "$dir" --json "$dir/rust.json"
echo
python3 tools/bench_opencv_preprocess.py --input "$dir" --rust "$dir/rust.json"
