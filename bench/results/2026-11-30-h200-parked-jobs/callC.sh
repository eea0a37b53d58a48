#!/usr/bin/env bash
# Issue 44, parked jobs: the 1:2 mix (4 copies, an epoch as long as the parts') against its
# parts, AV1 read around the mixed rows; one mixed row with a window of 256 jobs.
set -u
REPO=$PWD; H=$REPO/.hs/g128; W=/tmp/w; mkdir -p $W/ff /tmp/b
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/
for t in clips video nvdec; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=4
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1 t=$2; shift 2; timeout $t /tmp/b/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'threads', j['decoder_threads'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'parked', j.get('parked_jobs'), 'parts', j.get('cpu_parts'), {k: b[k] for k in ('decoded_wait','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
M="$A $B $B"
row av1 100 $A
GM_BENCH_COPIES=4 GM_BENCH_MIX=1 row mix 70 $M
GM_BENCH_COPIES=8 row h264 70 $B
row av1 70 $A
GM_BENCH_COPIES=4 GM_BENCH_MIX=1 row mix 70 $M
GM_BENCH_JOBS_IN_FLIGHT=256 GM_BENCH_COPIES=4 GM_BENCH_MIX=1 row mix-w256 70 $M
row av1 70 $A
tail -n 3 $OUT/clips.err
