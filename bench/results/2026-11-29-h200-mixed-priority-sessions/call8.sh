#!/usr/bin/env bash
# Issue 44: the 2:5 mix by NVDEC sessions and CPU decoders (a core left to the sessions or not).
set -u
REPO=$PWD; W=/tmp/w
[ -x $W/clips ] || { echo "machine is fresh: no /tmp/w"; exit 3; }
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=4 GM_BENCH_CPU_NICENESS=0
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1; shift; timeout 90 $W/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,1), 'cpu_dec', j['cpu_frames_decoded'], j['cpu_decode_ms_per_decoded_frame'], 'ms', j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
GM_BENCH_SESSIONS=16 row av1 $A
GM_BENCH_SESSIONS=16 GM_BENCH_COPIES=8 row h264-s16 $B
M="$A $A $B $B $B $B $B"
for c in "16 16" "16 15" "16 14" "8 16" "8 15" "16 16"; do set -- $c
  GM_BENCH_SESSIONS=$1 GM_BENCH_CPU_DECODERS=$2 GM_BENCH_COPIES=2 GM_BENCH_MIX=1 row mix-s$1-c$2 $M
done
GM_BENCH_SESSIONS=8 GM_BENCH_COPIES=8 row h264-s8 $B
