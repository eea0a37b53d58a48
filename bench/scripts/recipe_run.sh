#!/usr/bin/env bash
# timm's ImageNet training recipe against the plain pipeline, gm against DALI and torchvision
# on the GPU, in one call on one GPU, on the same files (issue 23's performance targets).
# Run from the repository root on the GPU machine with target/gpu-bundle carried (its
# tests.tar.xz holds the release benches), the JPEG set of bench/data/make_jpeg_sets.sh at
# IMAGES (default /tmp/imagenet) and DALI as xz'd tar chunks dali.tar.xz.NN under /tmp/parts
# (carried over several calls). Recipes (GM_BENCH_RECIPE / GM_RECIPE): plain = decode,
# RandomResizedCrop 224, flip, normalize, f16 CHW; timm = the same plus TrivialAugmentWide
# after the flip and RandomErasing 0.25 after normalize. ROUNDS (2) interleaved rounds; gm at
# the loader's default decoder settings (4 workers x 2 or 3 stages). SKIP_PEERS_GPU=1 leaves out
# torchvision on the GPU and the fused-kernel bench.
# Results: $OUT/recipe/*.jsonl.
set -u
root="$(pwd)"
img="${IMAGES:-/tmp/imagenet}"
out="${OUT:-/tmp/out}/recipe"; mkdir -p "$out"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores: $(nproc)"; date -u; git -C "$root" log -1 --format=%h 2>/dev/null
  python3 -c 'import sys, torch, torchvision; print("python", sys.version.split()[0], "torch", torch.__version__, "torchvision", torchvision.__version__)'
} | tee "$out/env.txt"
bundle="${BUNDLE:-$root/target/gpu-bundle}"
[ -d "$bundle/bench" ] || tar -xJf "$bundle/tests.tar.xz" -C "$bundle"
if [ ! -e /tmp/dali/.done ]; then
    parts=$(find /tmp/parts -name 'dali.tar.xz.*' | sort)
    [ -n "$parts" ] && mkdir -p /tmp/dali && cat $parts | xz -dcT0 | tar xf - -C /tmp/dali && touch /tmp/dali/.done
fi
log "images $(ls "$img" | wc -l), dali $([ -e /tmp/dali/.done ] && echo yes || echo no)"
cat "$img"/* > /dev/null   # page cache
export GM_BENCH_REPEAT="${REPEAT:-50}" GM_BENCH_REPS="${REPS:-5}"
peers="$root/bench/peers/loader_pipeline_peers.py"
for round in $(seq 1 "${ROUNDS:-2}"); do
    for recipe in plain timm; do
        log "round $round $recipe: gm"
        GM_BENCH_RECIPE=$recipe GM_BENCH_CONFIGS=4x2,4x3 \
            timeout 150 "$bundle/bench/gm-loader--pipeline" "$img" >> "$out/gm.jsonl" 2>> "$out/gm.err"
        log "round $round $recipe: dali"
        GM_RECIPE=$recipe GM_PEERS=dali GM_DALI_THREADS=12,16 PYTHONPATH=/tmp/dali \
            timeout 200 python3 "$peers" "$img" >> "$out/dali.jsonl" 2>> "$out/dali.err"
    done
done
[ -n "${SKIP_PEERS_GPU:-}" ] && { log done; exit 0; }
log "torchvision-gpu"
for recipe in plain timm; do
    GM_BENCH_REPEAT=10 GM_BENCH_REPS=3 GM_RECIPE=$recipe GM_PEERS=torchvision-gpu \
        timeout 150 python3 "$peers" "$img" >> "$out/torchvision.jsonl" 2>> "$out/torchvision.err"
done
log "fused kernel"
for b in "$bundle"/bench/*transforms*fused*; do
    timeout 120 "$b" >> "$out/fused.jsonl" 2>> "$out/fused.err"
done
log done
tail -n 3 "$out"/*.err
