#!/usr/bin/env bash
# Issue 44, not run (no device time left): where the CPU decoders sleep in the mix. They
# switch out voluntarily about 20,000 times a second in the 3 AV1 : 5 H.264 mix against about
# 700 with AV1 alone (calls B and C), with SCHED_BATCH on or off. sleeps.py samples every 2 ms
# which system call each gm-cpu-route thread is blocked in and from which library (libcuda,
# libnvcuvid, libavcodec, the bench binary): AV1 alone, then the mix, twice. About 200 s of
# device time. .hs/g139 as call B (clips.xz of c8d2a3e, bench videos, avlibs.tar.xz).
set -u
REPO=$PWD; H=$REPO/.hs/g139; R=$REPO/bench/results/2026-11-30-h200-mix-av1-cost; W=/tmp/w
mkdir -p $W/ff /tmp/b; cp $H/*.mp4 $W/
tar -xJf $H/avlibs.tar.xz -C $W/ff
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
xz -T4 -dc $H/clips.xz > /tmp/b/clips && chmod +x /tmp/b/clips
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4; M="$A $A $A $B $B $B $B $B"
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { local tag=$1; shift
  timeout 80 python3 $R/sleeps.py $OUT/sleeps-$tag.json gm-cpu-route 2 -- /tmp/b/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" >> $OUT/rows.jsonl
  python3 -c "
import json,sys; print(sys.argv[2]); [print('   ', *r) for r in json.load(open(sys.argv[1]))[:12]]" $OUT/sleeps-$tag.json $tag | tee -a $OUT/summary.txt; }
GM_BENCH_COPIES=4 row av1 $A
GM_BENCH_COPIES=1 GM_BENCH_MIX=1 row mix $M
GM_BENCH_COPIES=1 GM_BENCH_MIX=1 GM_BENCH_NVDEC_BATCH=0 row mix-off $M
python3 -c "
import json
for j in map(json.loads, open('$OUT/rows.jsonl')): print(j['tag'], j['fps'], j['cores_by_thread'])" | tee -a $OUT/summary.txt
