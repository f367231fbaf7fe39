#!/usr/bin/env bash
# Preprocessing benchmark, hailo-edge vs OpenCV, single thread, same input, one run.
# Needs python3 with opencv-python-headless and numpy (pip install opencv-python-headless numpy).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 tools/bench_opencv_preprocess.py --write-input "$dir"
# MJPEG through libjpeg-turbo when its headers are installed (the output names
# the decoder); BENCH_MJPEG=zune keeps the default build's zune-jpeg.
features=()
if [ "${BENCH_MJPEG:-}" != zune ] && echo '#include <stdio.h>
#include <jpeglib.h>' | ${CC:-cc} ${LIBJPEG_TURBO_INCLUDE_DIR:+-I"$LIBJPEG_TURBO_INCLUDE_DIR"} -x c -E - >/dev/null 2>&1; then
    features=(--features libjpeg-turbo)
fi
cargo bench --bench bench_camera "${features[@]}" -- --input "$dir" --json "$dir/rust.json"
echo
python3 tools/bench_opencv_preprocess.py --input "$dir" --rust "$dir/rust.json"
