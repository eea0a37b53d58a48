#!/usr/bin/env bash
# Issue 44: the GPU test of 53bb1e5 (gm-loader `video`, whose mixed-codec test now asserts
# from /proc that the NVDEC threads run under SCHED_BATCH), then where the CPU decoders sleep
# in the AV1 + H.264 mix (the previous session's callD.sh): sleeps.py samples every 2 ms the
# system call each gm-cpu-route thread is blocked in and the library that called it. AV1 alone,
# the 3:5 mix with SCHED_BATCH on and off, and the mix again sampling the NVDEC threads.
# Carried: .hs/g140/{video,clips}.xz (53bb1e5, bundle-release), .hs/g139's bench videos and
# avlibs.tar.xz (FFmpeg 7.1 with libdav1d).
set -u
REPO=$PWD; H=$REPO/.hs/g140; G=$REPO/.hs/g139; W=/tmp/w
S=$REPO/bench/results/2026-11-30-h200-mix-av1-cost/sleeps.py
mkdir -p $W/ff /tmp/b $OUT/sleeps; cp $G/*.mp4 $W/
tar -xJf $G/avlibs.tar.xz -C $W/ff
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for t in clips video; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
(export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
 cd $REPO/crates/gm-loader && echo "== video" && timeout 200 /tmp/b/video 2>&1 | grep -E "^test |^test result|FAILED|panicked|failed" | head -40) > $OUT/tests.txt 2>&1
grep -E "^==|test result|FAIL|panick" $OUT/tests.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4; M="$A $A $A $B $B $B $B $B"
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { # tag thread-prefix files...
  local tag=$1 prefix=$2; shift 2
  timeout 80 python3 $S $OUT/sleeps/$tag.json $prefix 2 -- /tmp/b/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" >> $OUT/rows.jsonl
  python3 -c "
import json,sys; print(sys.argv[2]); [print('   ', *r) for r in json.load(open(sys.argv[1]))[:14]]" $OUT/sleeps/$tag.json $tag | tee -a $OUT/summary.txt; }
GM_BENCH_COPIES=4 row av1 gm-cpu-route $A
export GM_BENCH_COPIES=1 GM_BENCH_MIX=1
row mix gm-cpu-route $M
GM_BENCH_NVDEC_BATCH=0 row mix-off gm-cpu-route $M
row mix-nvdec gm-nvdec $M
python3 -c "
import json
for j in map(json.loads, open('$OUT/rows.jsonl')): print(j['tag'], j['fps'], j['cores_by_thread'])" | tee -a $OUT/summary.txt
tail -n 3 $OUT/clips.err
