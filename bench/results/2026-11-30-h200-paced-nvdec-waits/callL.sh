#!/usr/bin/env bash
# Issue 44, callK again with FFmpeg (libdav1d) carried: AV1 alone, then the 3 AV1 : 5 H.264 mix
# with the landed waits (1723272) and with the old ones (1d23e69), alternated; the clip loader,
# random access, 16 sessions. Not run: the session's device time was spent. .hs/g137 holds
# clips.xz and clips-main.xz (`cargo bench --profile bundle-release -p gm-loader --bench clips
# --no-run` at those commits, xz'd), bench_1080p_av1.mp4 and bench_1080p_h264.mp4
# (bench/data/make_videos.sh), avlibs.tar.xz (bench/data/ffmpeg_from_pyav_wheel.sh).
set -u
REPO=$PWD; H=$REPO/.hs/g137; W=/tmp/w; mkdir -p $W/ff /tmp/b; cp $H/*.mp4 $W/
tar -xJf $H/avlibs.tar.xz -C $W/ff
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for t in clips clips-main; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; grep -m1 "model name" /proc/cpuinfo; } > $OUT/env.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { local tag=$1 bin=$2 t=$3; shift 3; timeout $t /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], j['access'], j['sessions'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'ms/dec', j['cpu_decode_ms_per_decoded_frame'], 'reads/frame', j.get('status_reads_per_frame'), {k: b[k] for k in ('decoded_wait','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
M="$A $A $A $B $B $B $B $B"
GM_BENCH_COPIES=4 row av1 clips 60 $A
GM_BENCH_COPIES=1 GM_BENCH_MIX=1 row mix-land clips 60 $M
GM_BENCH_COPIES=1 GM_BENCH_MIX=1 row mix-main clips-main 60 $M
GM_BENCH_COPIES=1 GM_BENCH_MIX=1 row mix-land clips 60 $M
