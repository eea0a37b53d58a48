#!/usr/bin/env bash
# Issue 45, item 3: the clip loader on the accvlab multi-camera workload (six synchronized
# 1600x900 HEVC cameras, bench/data/make_scenes.sh) with 1, 2 and 4 loaders at once, one
# process per GPU: stream and random access, with and without the GOP packet cache, 7 NVDEC
# sessions each. Layout: a folder holding this script, gm-loader--clips (target/gpu-bundle/
# bench) and scenes/ (scene_cam0..5.mp4). Writes clips.jsonl under $OUT, each record tagged
# with "gpus" (loaders at once) and "device".
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-$here/out}"; mkdir -p "$out"
ngpu=$(nvidia-smi -L | wc -l)
cat "$here"/scenes/* > /dev/null
export GM_BENCH_SCENES=1 GM_BENCH_SESSIONS=7 GM_BENCH_REPS=${REPS:-1} GM_BENCH_COPIES=${COPIES:-16}
for n in ${COUNTS:-1 2 4}; do
    [ "$n" -le "$ngpu" ] || continue
    echo "$(date +%s) clips x$n" >> "$out/phases.txt"
    pids=()
    for d in $(seq 0 $((n - 1))); do
        GM_BENCH_DEVICE=$d timeout ${RUN_TIMEOUT:-150} "$here/gm-loader--clips" "$here"/scenes/scene_cam*.mp4 \
            2>> "$out/clips.err" | sed "s/^{/{\"gpus\":$n,\"device\":$d,/" >> "$out/clips.jsonl" &
        pids+=($!)
    done
    wait "${pids[@]}"
done
