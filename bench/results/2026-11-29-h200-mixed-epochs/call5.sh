#!/usr/bin/env bash
# Issue 44: does the in-order window (jobs in flight) leave cores idle? AV1 alone and the mix,
# whole epochs, at several windows.
set -u
H=$PWD/.hs/g93; W=/tmp/w; mkdir -p $W/ff
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/ && xz -dc $H/clips.xz > $W/clips && chmod +x $W/clips
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/env.txt; nproc >> $OUT/env.txt; date -u >> $OUT/env.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1; shift; timeout 150 $W/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,1), 'cpu_dec', j['cpu_frames_decoded'], j['cpu_decode_ms_per_decoded_frame'], 'ms', j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
GM_BENCH_COPIES=4 row av1-default $A
GM_BENCH_COPIES=4 GM_BENCH_JOBS_IN_FLIGHT=64 row av1-64 $A
GM_BENCH_COPIES=4 GM_BENCH_JOBS_IN_FLIGHT=146 row av1-146 $A
GM_BENCH_COPIES=12 row h264-default $B
GM_BENCH_COPIES=4 GM_BENCH_MIX=1 row mix-default $A $B $B $B
GM_BENCH_COPIES=4 GM_BENCH_MIX=1 GM_BENCH_JOBS_IN_FLIGHT=128 row mix-128 $A $B $B $B
GM_BENCH_COPIES=4 GM_BENCH_MIX=1 GM_BENCH_JOBS_IN_FLIGHT=256 row mix-256 $A $B $B $B
