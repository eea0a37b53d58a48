#!/usr/bin/env bash
# Issue 44: the 2:5 mix by NVDEC sessions (16, the new default 7 + one per CPU decoder = 23,
# 32), 16 CPU decoders, alternated; each part alone.
set -u
REPO=$PWD; H=$REPO/.hs/g124; W=/tmp/w; mkdir -p $W/ff
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/ && xz -dc $H/clips.xz > $W/clips && chmod +x $W/clips
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } > $OUT/env.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=4 GM_BENCH_CPU_NICENESS=0
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1; shift; timeout 90 $W/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'threads', j['decoder_threads'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,1), 'cpu_dec', j['cpu_frames_decoded'], j['cpu_decode_ms_per_decoded_frame'], 'ms', j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
GM_BENCH_SESSIONS=16 row av1 $A
GM_BENCH_SESSIONS=16 GM_BENCH_COPIES=8 row h264-s16 $B
M="$A $A $B $B $B $B $B"
for s in 16 0 32 16 0 32; do
  GM_BENCH_SESSIONS=$s GM_BENCH_COPIES=2 GM_BENCH_MIX=1 row mix-s$s $M
done
