#!/usr/bin/env bash
# Issue 44: why an AV1 frame costs 17-20% more CPU beside NVDEC work on a fast-AV1 machine.
# GPU tests of 75dccec first; then the clip loader, random access, 16 NVDEC sessions: H.264
# alone, AV1 alone (libdav1d through FFmpeg 7.1, carried) and the 3 AV1 : 5 H.264 mix with the
# landed waits, main's old polls (1d23e69), nvcuvid's waits, the NVDEC threads moved to
# SCHED_BATCH (threads.py), and 15 CPU decoders. threads.py records each thread group's CPU
# time, runqueue wait and context switches. .hs/g138: clips.xz, nvdec.xz, video.xz (75dccec,
# bundle-release), clips-main.xz (1d23e69), the two bench videos, avlibs.tar.xz.
set -u
REPO=$PWD; H=$REPO/.hs/g138; R=$REPO/bench/results/2026-11-30-h200-mix-av1-cost; W=/tmp/w
mkdir -p $W/ff /tmp/b $OUT/threads; cp $H/*.mp4 $W/; START=$(date +%s)
tar -xJf $H/avlibs.tar.xz -C $W/ff
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for t in clips clips-main nvdec video; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; lscpu | grep -E "Model name|Thread|Core|Socket|NUMA node|MHz"; } > $OUT/env.txt
(export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
 cd $REPO/crates/gm-codec && echo "== nvdec" && timeout 60 /tmp/b/nvdec 2>&1 | grep -E "^test |^test result|panicked|failed" | tail -40
 cd $REPO/crates/gm-loader && echo "== video" && timeout 150 /tmp/b/video 2>&1 | grep -E "^test |^test result|FAILED|panicked|failed" | head -40) > $OUT/tests.txt 2>&1
grep -E "^==|test result|FAIL|panick" $OUT/tests.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4; M="$A $A $A $B $B $B $B $B"
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { # tag binary sched(-|PREFIX) files...
  local tag=$1 bin=$2 sched=$3; shift 3
  [ $(( $(date +%s) - START )) -gt 520 ] && { echo "skip $tag" | tee -a $OUT/summary.txt; return; }
  local b=(); [ "$sched" != - ] && b=(--batch $sched)
  timeout 70 python3 $R/threads.py $OUT/threads/$tag.json "${b[@]}" -- /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'ms/dec', j['cpu_decode_ms_per_decoded_frame'], 'reads/frame', j.get('status_reads_per_frame'), j['cores_by_thread'])" | tee -a $OUT/summary.txt
  python3 -c "
import json,sys; g=json.load(open(sys.argv[1]))['groups']
for k,v in sorted(g.items()):
    if v['run_s']>1: print('   ', k, {a: round(b,2) for a,b in v.items()})" $OUT/threads/$tag.json | tee -a $OUT/summary.txt; }
GM_BENCH_COPIES=8 row h264 clips - $B
GM_BENCH_COPIES=4 row av1 clips - $A
export GM_BENCH_COPIES=1 GM_BENCH_MIX=1
row mix-land clips - $M
row mix-main clips-main - $M
GM_NVDEC_WAIT=nvcuvid row mix-nvcuvid clips - $M
row mix-batch clips gm-nvdec $M
GM_BENCH_CPU_DECODERS=15 row mix-cpu15 clips - $M
GM_BENCH_COPIES=4 GM_BENCH_MIX=0 row av1-2 clips - $A
row mix-land-2 clips - $M
row mix-batch-2 clips gm-nvdec $M
echo "total $(( $(date +%s) - START )) s"
