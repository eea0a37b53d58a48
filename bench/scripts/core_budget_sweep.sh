#!/usr/bin/env bash
# Issue 24 item 1: the image pipeline's throughput when the loader gets only some of the host's
# cores (as one of 4 or 8 ranks on a shared host), for decoder settings from engines-only to the
# default engine/CUDA split. Each run is pinned with taskset to the first C cores; the bench
# reports images/s, host cores used and the consumer's wait per batch.
# Run from the repository root on the GPU machine: PIPELINE (gm-loader--pipeline from the GPU
# bundle) and IMAGES (bench/data/make_jpeg_sets.sh's imagenet set). Results: $OUT/cores/*.jsonl.
set -u
out="${OUT:-/tmp/out}/cores"; mkdir -p "$out"
bin="${PIPELINE:?gm-loader--pipeline}"
img="${IMAGES:?the imagenet JPEG set}"
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; date -u; } \
    | tee "$out/env.txt"
cat "$img"/* > /dev/null
export GM_BENCH_REPS="${REPS:-3}" GM_BENCH_REPEAT="${REPEAT:-50}"
# engine share, CUDA-backend threads, workers x stages
settings="${SETTINGS:-1.0,1,2x2 1.0,1,4x2 0.9,2,2x2 0.9,2,4x2 0.8,2,2x2 0.8,4,4x2 0.7,6,4x2}"
for c in ${CORES:-2 3 4 6 8 16}; do
    for s in $settings; do
        IFS=, read -r hw ct cfg <<<"$s"
        echo "[$(date -u +%T)] cores $c hw $hw cuda threads $ct config $cfg" >> "$out/run.log"
        taskset -c "0-$((c - 1))" env GM_BENCH_HW_LOAD="$hw" GM_BENCH_CUDA_THREADS="$ct" \
            GM_BENCH_CONFIGS="$cfg" timeout 60 "$bin" "$img" 2>>"$out/err.txt" \
            | grep '^{' | sed "s/^{/{\"cores_given\":$c,/" >> "$out/pipeline.jsonl"
    done
done
echo "[$(date -u +%T)] done" >> "$out/run.log"
