#!/usr/bin/env bash
# Layout: a folder holding this script, gm-loader--pipeline (target/gpu-bundle/bench),
# bench/peers/loader_pipeline_peers.py and imagenet/ (bench/data/make_jpeg_sets.sh), carried to
# the GPU machine; DALI's wheel unpacked at /tmp/dali (bench/results/2026-11-21-h200/loader.md).
# gm-loader's pipeline bench and its peers, one after the other on the same files.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-$here/out}"; mkdir -p "$out"
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/env.txt"
nproc | tee -a "$out/env.txt"; date -u | tee -a "$out/env.txt"
cat "$here"/imagenet/* > /dev/null   # page cache
[ -d /tmp/dali/nvidia/dali ] && export PYTHONPATH=/tmp/dali && echo "dali: /tmp/dali"
timeout ${GM_T1:-150} "$here/gm-loader--pipeline" "$here/imagenet" > "$out/gm.jsonl" 2> "$out/gm.err"; echo "gm rc=$?"
[ -n "${NO_PEERS:-}" ] || GM_DALI_THREADS=${GM_DALI_THREADS:-8,12,16} timeout ${GM_T2:-200} python3 "$here/loader_pipeline_peers.py" "$here/imagenet" > "$out/peers.jsonl" 2> "$out/peers.err"; echo "peers rc=$?"
GM_BENCH_CONFIGS=${SOAK_CONFIG:-4x3} GM_BENCH_REPS=1 GM_BENCH_SOAK=${SOAK:-1000000} timeout ${GM_T3:-150} "$here/gm-loader--pipeline" "$here/imagenet" > "$out/soak.jsonl" 2> "$out/soak.err"; echo "soak rc=$?"
cat "$out"/*.jsonl; tail -n 5 "$out"/*.err
