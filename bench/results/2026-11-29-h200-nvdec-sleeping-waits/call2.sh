#!/usr/bin/env bash
# Issue 44: the NVDEC sessions' CPU inside cuvidDecodePicture and cuvidMapVideoFrame; polls
# that sleep instead (map after the picture decoded; at most K pictures submitted ahead);
# more CPU decoders than cores.
set -u
REPO=$PWD; H=$REPO/.hs/g126; W=/tmp/w; mkdir -p $W/ff
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/ && xz -dc $H/clips.xz > $W/clips && chmod +x $W/clips
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=4
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1 t=$2; shift 2; timeout $t $W/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'ms/dec', j['cpu_decode_ms_per_decoded_frame'], {k: b[k] for k in ('submit','submit_cpu','map','map_cpu','poll','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
M="$A $A $B $B $B $B $B"
P="GM_EXP_MAP_POLL=1 GM_EXP_POLL_US=100"
GM_BENCH_COPIES=8 row h264 150 $B
GM_EXP_MAP_POLL=1 GM_EXP_POLL_US=100 GM_BENCH_COPIES=8 row h264-mappoll 100 $B
GM_EXP_SUBMIT_AHEAD=4 GM_EXP_MAP_POLL=1 GM_EXP_POLL_US=100 GM_BENCH_COPIES=8 row h264-ahead4 100 $B
row av1 100 $A
GM_BENCH_COPIES=2 GM_BENCH_MIX=1 row mix 100 $M
GM_EXP_MAP_POLL=1 GM_EXP_POLL_US=100 GM_BENCH_COPIES=2 GM_BENCH_MIX=1 row mix-mappoll 100 $M
GM_EXP_SUBMIT_AHEAD=4 GM_EXP_MAP_POLL=1 GM_EXP_POLL_US=100 GM_BENCH_COPIES=2 GM_BENCH_MIX=1 row mix-ahead4 100 $M
row av1 100 $A
GM_BENCH_CPU_DECODERS=20 GM_BENCH_COPIES=2 GM_BENCH_MIX=1 row mix-cpu20 100 $M
tail -n 3 $OUT/clips.err
