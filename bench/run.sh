#!/usr/bin/env bash
# `cargo xtask bench`'s driver on the GPU machine: run from target/bench-bundle/part1 after
# all parts were carried. `run.sh images`: JPEG decoding and the image pipeline (or one of them:
# `run.sh jpeg`, `run.sh loader`, each shorter than a device call's limit); `run.sh video`:
# NVDEC decoding, the clip loader, first-frame latency and index build time; `run.sh host` (a
# machine of several GPUs): one loader per GPU at once against one alone, gm against DALI on the
# whole host, the multi-camera clip loader on 1, 2, 4 GPUs. gm and every peer
# run one after the other in the same call, on the same files. Results: $OUT/bench/*.jsonl.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bundle="$(dirname "$here")"
out="${OUT:-$here/out}/bench"; mkdir -p "$out"
peers=/tmp/gm-peers
phase="${1:-images}"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
step() { # name timeout command...: stdout to NAME.jsonl, stderr to NAME.err
    local name="$1" t="$2"; shift 2
    log "start $name"
    timeout "$t" "$@" >> "$out/$name.jsonl" 2>> "$out/$name.err"
    log "end $name rc=$?"
}

nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
gpus=$(nvidia-smi -L | grep -c '^GPU')
{
  echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo "gpus: $gpus"
  echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  echo "cores: $(nproc)"
  echo "threads per core: $(lscpu 2>/dev/null | awk -F: '/Thread\(s\) per core/ {gsub(/ /, "", $2); print $2}')"
  echo "date: $(date -u +%Y-%m-%d)"
  echo "python: $(python3 -c 'import sys; print(sys.version.split()[0])')"
} > "$out/env-$phase.txt"
cat "$out/env-$phase.txt"

# The peers' packages, put back together from the parts' chunks once all of an archive's
# chunks are here (once per machine). The device tool drops a call's carried paths when the
# call ends, so each call that carries a part copies its chunks to /tmp/gm-parts:
#   mkdir -p /tmp/gm-parts && cp target/bench-bundle/part*/peers-chunks/* /tmp/gm-parts/
stash=/tmp/gm-parts; mkdir -p "$stash"
cp -n "$bundle"/part*/peers-chunks/* "$stash"/ 2>/dev/null
chunks() { ls "$stash/$1".* 2>/dev/null | sort -t. -k4; }
for f in dali.tar.xz nvimgcodec.tar.xz; do
    d="$peers/${f%%.tar.xz}"
    [ -e "$d/.done" ] && continue
    [ -n "$(chunks $f)" ] || { log "no chunks of $f"; continue; }
    cat $(chunks $f) | xz -tT0 2>/dev/null || { log "$f: chunks incomplete"; continue; }
    mkdir -p "$d" && cat $(chunks $f) | xz -dcT0 | tar xf - -C "$d" && touch "$d/.done"
done
whl="$(ls "$stash"/pynvvideocodec-*.whl.* 2>/dev/null | head -1)"
if [ -n "$whl" ] && [ ! -e "$peers/pynv/.done" ]; then
    name="$(basename "${whl%.*}")"
    cat $(chunks "$name") > "/tmp/$name"
    python3 -m pip install --quiet --no-deps --no-index --target "$peers/pynv" "/tmp/$name" 2>&1 | tail -2 \
        && touch "$peers/pynv/.done"
fi
bin="$here/bin"; data="$here/data"; py="$here/peers"
cat "$data"/jpeg/*/* "$data"/video/* > /dev/null   # page cache

if [ "$phase" = images ] || [ "$phase" = jpeg ]; then
    for set in imagenet large; do
        if [ $set = large ]; then p=100; else p=25; fi
        GM_BENCH_PASSES=$p step jpeg-gm 200 "$bin/gm-codec--jpeg" "$data/jpeg/$set"
        PYTHONPATH="$peers/nvimgcodec" step jpeg-peers 200 python3 "$py/jpeg_decode_bench.py" "$data/jpeg/$set"
    done
fi
if [ "$phase" = images ] || [ "$phase" = loader ]; then
    # chroma:engine share:CUDA threads:workers x stages:balanced:blocking sync:region decoding.
    # The loader's defaults (replicate, 0.8, 4 threads, 4x2, fixed split, spinning waits,
    # region decoding) and with blocking sync or whole-image decoding; more of the batch on the
    # CUDA backend with more stages and threads (the Huffman decoding of the images not given
    # to the engines runs on those threads), with and without region decoding; the run-time
    # split (not bit-reproducible across runs); the CPU-exact chroma (decoded whole).
    for c in replicate:0.8:4:4x2,4x3:0:0:1 replicate:0.8:4:4x2:0:0:0 replicate:0.8:4:4x2:0:1:1 \
             replicate:0.6:8:4x3:0:0:1 replicate:0.6:8:4x3:0:0:0 replicate:0.5:8:4x3:0:0:1 \
             replicate:0.4:8:4x3:0:0:1 replicate:0.5:6:4x4:0:0:1 replicate:0.5:8:4x3:1:0:1 \
             smooth:0.6:8:4x3:0:0:1; do
        IFS=: read -r ch hl th cf ba bs rg <<< "$c"
        GM_BENCH_CHROMA=$ch GM_BENCH_HW_LOAD=$hl GM_BENCH_CUDA_THREADS=$th GM_BENCH_CONFIGS=$cf \
            GM_BENCH_BALANCED=$ba GM_BENCH_BLOCKING_SYNC=$bs GM_BENCH_REGION=$rg \
            step loader-gm 150 "$bin/gm-loader--pipeline" "$data/jpeg/imagenet"
    done
    # gm's own control: the driver's default 8 work queues instead of the 32 gm asks for.
    CUDA_DEVICE_MAX_CONNECTIONS=8 GM_BENCH_HW_LOAD=0.6 GM_BENCH_CUDA_THREADS=8 GM_BENCH_CONFIGS=4x3 \
        step loader-gm 150 "$bin/gm-loader--pipeline" "$data/jpeg/imagenet"
    PYTHONPATH="$peers/dali" GM_DALI_THREADS=8,12,16,24 step loader-peers 240 python3 "$py/loader_pipeline_peers.py" "$data/jpeg/imagenet"
    # DALI with the 32 work queues gm gives itself, so that the setting is not what the ratio
    # measures.
    CUDA_DEVICE_MAX_CONNECTIONS=32 GM_PEERS=dali PYTHONPATH="$peers/dali" GM_DALI_THREADS=12,16,24 \
        step loader-peers 200 python3 "$py/loader_pipeline_peers.py" "$data/jpeg/imagenet"
    if [ "$gpus" -ge 2 ]; then
        log "start loader-2gpu"
        for d in 0 1; do
            GM_BENCH_DEVICE=$d GM_BENCH_CONFIGS=4x2 GM_BENCH_REPS=3 timeout 120 "$bin/gm-loader--pipeline" "$data/jpeg/imagenet" > "$out/loader-2gpu-$d.jsonl" 2>> "$out/loader-2gpu.err" &
        done
        wait; log "end loader-2gpu"
    fi
elif [ "$phase" = host ]; then
    # The whole host (issue 45): one process per GPU as torchrun starts them, each told the
    # node's loader count (LOCAL_WORLD_SIZE), on the same files. gm's image pipeline at its
    # defaults on GPU 0 alone, then on every GPU at once (per-GPU efficiency); DALI's pipeline
    # the same way at DALI_THREADS (aggregate against gm); the clip loader on the multi-camera
    # scene (the accvlab workload) on 1, 2, 4, ... GPUs at once. Records carry "gpus" (processes
    # at once) and "device"; host-cores.txt has the host cores busy in each part.
    export LOCAL_WORLD_SIZE=$gpus
    busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat; }
    at_once() { # LABEL N FN [ARGS]: FN N DEVICE ARGS on devices 0..N-1 at once; host cores busy
        local label=$1 n=$2 fn=$3 pids=() b0 t0 b1 t1; shift 3
        read -r b0 t0 < <(busy)
        for d in $(seq 0 $((n - 1))); do "$fn" "$n" "$d" "$@" & pids+=($!); done
        wait "${pids[@]}"
        read -r b1 t1 < <(busy)
        awk -v l="$label" -v b="$((b1 - b0))" -v t="$((t1 - t0))" -v c="$(nproc)" \
            'BEGIN {printf "%s: %.1f host cores busy\n", l, c * b / t}' >> "$out/host-cores.txt"
    }
    gm_on() { # N DEVICE
        GM_BENCH_DEVICE=$2 GM_BENCH_CORES=auto GM_BENCH_CONFIGS=4x3 GM_BENCH_REPS=5 GM_BENCH_REPEAT=250 \
            timeout 150 "$bin/gm-loader--pipeline" "$data/jpeg/imagenet" 2>> "$out/host-gm.err" \
            | sed "s/^{/{\"gpus\":$1,/" >> "$out/host-gm.jsonl"
    }
    dali_on() { # N DEVICE THREADS
        CUDA_VISIBLE_DEVICES=$2 GM_PEERS=dali GM_DALI_THREADS=$3 GM_BENCH_REPS=3 GM_BENCH_REPEAT=250 \
            PYTHONPATH="$peers/dali" timeout 200 python3 "$py/loader_pipeline_peers.py" "$data/jpeg/imagenet" \
            2>> "$out/host-dali.err" | sed "s/^{/{\"gpus\":$1,\"device\":$2,/" >> "$out/host-dali.jsonl"
    }
    clips_on() { # N DEVICE
        GM_BENCH_DEVICE=$2 GM_BENCH_SCENES=1 GM_BENCH_SESSIONS=7 GM_BENCH_REPS=1 GM_BENCH_COPIES=16 \
            timeout 150 "$bin/gm-loader--clips" "$data/scenes"/scene_cam*.mp4 2>> "$out/host-clips.err" \
            | sed "s/^{/{\"gpus\":$1,\"device\":$2,/" >> "$out/host-clips.jsonl"
    }
    cat "$data"/scenes/* > /dev/null
    for part in ${HOST_PARTS:-gm dali clips}; do
        log "start host-$part"
        case $part in
            gm) at_once "gm x1" 1 gm_on; at_once "gm x$gpus" "$gpus" gm_on ;;
            dali) for t in ${DALI_THREADS:-8 12}; do
                      at_once "dali t$t x1" 1 dali_on "$t"; at_once "dali t$t x$gpus" "$gpus" dali_on "$t"
                  done ;;
            clips) n=1; while [ "$n" -le "$gpus" ]; do at_once "clips x$n" "$n" clips_on; n=$((n * 2)); done ;;
        esac
        log "end host-$part"
    done
    cat "$out/host-cores.txt"
elif [ "$phase" = video ]; then
    v="$data/video"
    export GM_BENCH_EPISODES="$out"
    step clips-gm 200 "$bin/gm-loader--clips" "$v/bench_1080p_h264.mp4" "$v/bench_1080p_hevc.mp4" "$v/bench_1080p_h264_gop250.mp4"
    if [ "$gpus" -ge 2 ]; then
        log "start clips-2gpu"
        for d in 0 1; do
            GM_BENCH_DEVICE=$d GM_BENCH_SESSIONS=7 GM_BENCH_EPISODES= timeout 120 "$bin/gm-loader--clips" "$v/bench_1080p_h264.mp4" "$v/bench_1080p_hevc.mp4" > "$out/clips-2gpu-$d.jsonl" 2>> "$out/clips-2gpu.err" &
        done
        wait; log "end clips-2gpu"
    fi
    step nvdec-gm 150 "$bin/gm-codec--nvdec" "$v/bench_1080p_h264.mp4" "$v/bench_1080p_hevc.mp4"
    GM_BENCH_FIRST_FRAME_ONLY=1 step nvdec-gm 60 "$bin/gm-codec--nvdec" "$v/long_1080p_10min.mp4"
    PYTHONPATH="$peers/pynv" step nvdec-peers 240 python3 "$py/pynvvideocodec_bench.py" "$v/bench_1080p_h264.mp4" "$v/bench_1080p_hevc.mp4"
    PYTHONPATH="$peers/pynv" GM_BENCH_ONLY_EPISODES=1 step nvdec-peers 60 python3 "$py/pynvvideocodec_bench.py" "$v/bench_1080p_h264_gop250.mp4"
    PYTHONPATH="$peers/pynv" GM_BENCH_FIRST_FRAME=1 step first-frame-peers 60 python3 "$py/pynvvideocodec_bench.py" "$v/bench_1080p_h264.mp4" "$v/bench_1080p_hevc.mp4" "$v/long_1080p_10min.mp4"
    GM_BENCH_LONG_VIDEO="$v/long_1080p_10min.mp4" GM_BENCH_LONG_FRAGMENTED=skip step index-gm 60 "$bin/gm-demux--index"
fi
log "done $phase"
# One archive: the device tool brings back only a few files per call.
tar czf "$(dirname "$out")/bench-$phase.tgz" -C "$(dirname "$out")" bench
tail -n 3 "$out"/*.err 2>/dev/null | tail -40
