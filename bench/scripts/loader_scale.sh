#!/usr/bin/env bash
# Layout: a folder holding this script, gm-loader--pipeline (target/gpu-bundle/bench),
# bench/peers/loader_pipeline_peers.py and imagenet/ (bench/data/make_jpeg_sets.sh), carried to
# the GPU machine; DALI's wheel unpacked at /tmp/dali (bench/results/2026-11-21-h200/loader.md).
# One loader on GPU 0, then one loader per GPU at once (one process each, as under torchrun).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
cat "$here"/imagenet/* > /dev/null
export GM_BENCH_CONFIGS=${CONFIGS:-4x3} GM_BENCH_REPS=5
echo "# alone"; GM_BENCH_DEVICE=0 "$here/gm-loader--pipeline" "$here/imagenet"
n=$(nvidia-smi -L | wc -l)
echo "# $n at once"
for d in $(seq 0 $((n - 1))); do GM_BENCH_DEVICE=$d "$here/gm-loader--pipeline" "$here/imagenet" & done; wait
