#!/usr/bin/env bash
# Layout: a folder holding this script, gm-loader--pipeline (target/gpu-bundle/bench),
# bench/peers/loader_pipeline_peers.py and imagenet/ (bench/data/make_jpeg_sets.sh), carried to
# the GPU machine; DALI's wheel unpacked at /tmp/dali (bench/results/2026-11-21-h200/loader.md).
# Decoder settings inside the pipeline, then DALI's thread count, same files.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
cat "$here"/imagenet/* > /dev/null
for hw in 1.0 0.95 0.9; do for ct in 2 4; do
  GM_BENCH_REPS=3 GM_BENCH_HW_LOAD=$hw GM_BENCH_CUDA_THREADS=$ct GM_BENCH_CONFIGS=${CONFIGS:-4x3,4x4} timeout 100 "$here/gm-loader--pipeline" "$here/imagenet"
done; done
PYTHONPATH=/tmp/dali GM_PEERS=dali timeout 200 python3 "$here/loader_pipeline_peers.py" "$here/imagenet"
