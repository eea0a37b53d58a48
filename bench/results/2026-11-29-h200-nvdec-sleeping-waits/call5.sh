#!/usr/bin/env bash
# Issue 44: the 1:2 mix with 32 NVDEC sessions against 16, and the loader's default (7).
set -u
REPO=$PWD; H=$REPO/.hs/g127; W=/tmp/w; mkdir -p $W/ff /tmp/b
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/
xz -dc $H/clips.xz > /tmp/b/clips && chmod +x /tmp/b/clips
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=2 GM_BENCH_MIX=1
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1 t=$2; shift 2; timeout $t /tmp/b/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'sessions', j['sessions'], j['decoder_threads'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'ms/dec', j['cpu_decode_ms_per_decoded_frame'], {k: b[k] for k in ('decoded_wait','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
GM_BENCH_SESSIONS=32 row mix-s32 70 $A $B $B
GM_BENCH_SESSIONS=16 row mix-s16 60 $A $B $B
GM_BENCH_SESSIONS=0 row mix-default 60 $A $B $B
