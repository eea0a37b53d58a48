#!/usr/bin/env bash
# Issue 45, item 2: gm against DALI on a whole 4-GPU host, one process per GPU as torchrun
# starts them, same files, same work per image (RandomResizedCrop 224, flip, ImageNet
# normalize, float16 CHW, batches of 256). Layout: a folder holding this script,
# gm-loader--pipeline (target/gpu-bundle/bench), loader_pipeline_peers.py (bench/peers) and
# imagenet/ (bench/data/make_jpeg_sets.sh); DALI unpacked from dali.tar.xz.NN chunks (its
# wheel and dependencies, unzipped; carried one call each) found under /tmp/parts.
#
# PHASES (default "gm-alone gm-four dali-alone dali-four"): gm at its defaults under
# LOCAL_WORLD_SIZE=4 (the torchrun launcher's variable), alone on GPU 0 and four at once;
# DALI's documented ImageNet training pipeline with DALI_THREADS threads per process (default
# "4 8"), alone and four at once (CUDA_VISIBLE_DEVICES picks each process's GPU, as a DALI
# training script's device_id does). Writes pipeline.jsonl (gm), dali.jsonl, cores.txt (host
# cores busy per phase, from /proc/stat) and phases.txt under $OUT.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-$here/out}"; mkdir -p "$out"
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
if [ ! -e /tmp/dali/.done ]; then
    parts=$(ls /tmp/parts/dali.tar.xz.* 2>/dev/null | sort)
    [ -n "$parts" ] && mkdir -p /tmp/dali && cat $parts | xz -dcT0 | tar xf - -C /tmp/dali \
        && touch /tmp/dali/.done
fi
{
    date -u; nproc; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
    python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
    PYTHONPATH=/tmp/dali python3 -c 'import nvidia.dali as d; print("dali", d.__version__)'
} > "$out/env.txt" 2>&1
cat "$here"/imagenet/* > /dev/null   # page cache

busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat; }
# phase LABEL CMD...: runs CMD, then records the host cores it kept busy (all CPUs' non-idle
# time over the wall time).
phase() {
    local label=$1; shift
    echo "$(date +%s) $label" >> "$out/phases.txt"
    local b0 t0 b1 t1 s0 s1
    read -r b0 t0 < <(busy); s0=$(date +%s.%N)
    "$@"
    read -r b1 t1 < <(busy); s1=$(date +%s.%N)
    awk -v l="$label" -v b="$((b1 - b0))" -v t="$((t1 - t0))" -v n="$(nproc)" -v s0="$s0" -v s1="$s1" \
        'BEGIN {printf "%s %.1f cores busy over %.1f s\n", l, n * b / t, s1 - s0}' >> "$out/cores.txt"
}

# gm's defaults: the core budget and decoder plan from the host and LOCAL_WORLD_SIZE (engines
# alone on a shared node), 3 GPU stages, as host_share.sh measured them.
export LOCAL_WORLD_SIZE=4 GM_BENCH_CORES=auto GM_BENCH_CONFIGS=4x3 GM_BENCH_REPS=5
export GM_BENCH_REPEAT=${REPEAT:-250}
gm() { # gm LABEL DEVICE: one loader at its defaults
    GM_BENCH_DEVICE=$2 timeout 120 "$here/gm-loader--pipeline" "$here/imagenet" 2>> "$out/err.txt" \
        | sed "s/^{/{\"run\":\"$1\",\"device\":$2,/" >> "$out/pipeline.jsonl"
}
dali() { # dali LABEL DEVICE THREADS: DALI's pipeline on one GPU
    CUDA_VISIBLE_DEVICES=$2 GM_PEERS=dali GM_DALI_THREADS=$3 GM_BENCH_REPS=3 PYTHONPATH=/tmp/dali \
        timeout 240 python3 "$here/loader_pipeline_peers.py" "$here/imagenet" 2>> "$out/err.txt" \
        | sed "s/^{/{\"run\":\"$1\",\"device\":$2,/" >> "$out/dali.jsonl"
}
four() { # four FN LABEL [ARGS]: FN on GPUs 0-3 at once
    local fn=$1 label=$2; shift 2
    local pids=()
    for d in 0 1 2 3; do "$fn" "$label" "$d" "$@" & pids+=($!); done
    wait "${pids[@]}"
}
for p in ${PHASES:-gm-alone gm-four dali-alone dali-four}; do
    case $p in
        gm-alone) phase gm-alone gm gm-alone 0 ;;
        gm-four) phase gm-four four gm gm-four ;;
        dali-alone) for t in ${DALI_THREADS:-4 8}; do phase "dali-alone-t$t" dali "dali-alone-t$t" 0 "$t"; done ;;
        dali-four) for t in ${DALI_THREADS:-4 8}; do phase "dali-four-t$t" four dali "dali-four-t$t" "$t"; done ;;
    esac
done
cat "$out/cores.txt"
