#!/usr/bin/env bash
# Does spinning on GPU waits cost the mixed random-access loader its cores? The mix with and
# without blocking sync, alternated, and AV1 alone with it.
set -u
REPO=$PWD; H=$REPO/.hs/g21
(cd "$H" && xz -dc clips.xz > clips && chmod +x clips && mkdir -p ff && tar -xJf ffmpeg71.tar.xz -C ff)
export GM_FFMPEG_DIR="$(dirname "$(find "$H/ff" -name 'libavcodec.so*' | head -n 1)")"
export LD_LIBRARY_PATH="$GM_FFMPEG_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/env.txt"; nproc | tee -a "$OUT/env.txt"; date -u | tee -a "$OUT/env.txt"
lscpu | grep -E "^(Thread|Core|Socket|Model name)" | tee -a "$OUT/env.txt"
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_RANDOM_BATCHES=200 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_COPIES=4
A=$H/bench_1080p_av1.mp4; B=$H/bench_1080p_h264.mp4
row() { local tag=$1; shift; timeout 120 "$H/clips" "$@" 2>>"$OUT/clips.err" | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a "$OUT/rows.jsonl" | python3 -c "import json,sys; [print(j['tag'], j['video'], j['fps'], j['spread'], j['cpu_ms_per_1000_frames'], round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,1), 'cores') for j in map(json.loads, sys.stdin)]"; }
args="$A $B $B $B"
for rep in 1 2; do
  GM_BENCH_MIX=1 row spin $args
  GM_BENCH_MIX=1 GM_BENCH_BLOCKING_SYNC=1 row block $args
done
GM_BENCH_BLOCKING_SYNC=1 row block-alone "$A"
row spin-alone "$A"
