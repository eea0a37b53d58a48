#!/usr/bin/env bash
# Issue 44: callB where the CPU binds: the 3 AV1 : 5 H.264 mix of call A, NVDEC threads under
# SCHED_BATCH (on, the default) or not (off), in rounds of AV1 alone, off and on (alternating
# order). threads.py also records the CPU time the hypervisor stole during each row. No tests
# (call B ran them on this build). .hs/g139 as call B.
set -u
REPO=$PWD; H=$REPO/.hs/g139; R=$REPO/bench/results/2026-11-30-h200-mix-av1-cost; W=/tmp/w
mkdir -p $W/ff /tmp/b /tmp/threads; cp $H/*.mp4 $W/; START=$(date +%s)
tar -xJf $H/avlibs.tar.xz -C $W/ff
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for t in clips; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; lscpu | grep -E "Model name|Thread|MHz"; } > $OUT/env.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { # tag files...
  local tag=$1; shift
  [ $(( $(date +%s) - START )) -gt 520 ] && { echo "skip $tag" | tee -a $OUT/summary.txt; return; }
  timeout 70 python3 $R/threads.py /tmp/threads/$tag.json -- /tmp/b/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'ms/dec', j['cpu_decode_ms_per_decoded_frame'], 'reads/frame', j.get('status_reads_per_frame'), j['cores_by_thread'], j['placement'])" | tee -a $OUT/summary.txt
  python3 -c "
import json,sys; g=json.load(open(sys.argv[1]))['groups']
for k,v in sorted(g.items()):
    if v['run_s']>1: print('   ', k, {a: round(b,2) for a,b in v.items()})
print('    steal_s', round(json.load(open(sys.argv[1]))['steal_s'],2))" /tmp/threads/$tag.json | tee -a $OUT/summary.txt; }
GM_BENCH_COPIES=8 row h264 $B
M="$A $A $A $B $B $B $B $B"
mix() { GM_BENCH_COPIES=1 GM_BENCH_MIX=1 row "$@" $M; }
for i in 1 2 3 4; do
  GM_BENCH_COPIES=4 row av1-$i $A
  if [ $((i % 2)) = 0 ]; then mix on-$i; GM_BENCH_NVDEC_BATCH=0 mix off-$i; else GM_BENCH_NVDEC_BATCH=0 mix off-$i; mix on-$i; fi
done
GM_BENCH_COPIES=4 row av1-5 $A
tar -czf $OUT/threads.tgz -C /tmp threads; echo "total $(( $(date +%s) - START )) s"
