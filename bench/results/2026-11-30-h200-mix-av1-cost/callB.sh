#!/usr/bin/env bash
# Issue 44: the NVDEC threads under SCHED_BATCH in a mixed loader (the new default), against
# the default policy (GM_BENCH_NVDEC_BATCH=0). GPU test gm-loader `video` (its mixed-codec
# test runs the new path); H.264 alone, AV1 alone, then the mix at the rule's file ratio
# (1.15 x H.264's rate over AV1's, from the first AV1 row), rounds of AV1 alone, mix off and
# mix on (the order of off and on alternating), so that each mix row has an AV1 row beside it.
# .hs/g139: clips.xz, video.xz (bundle-release of this commit), bench videos, avlibs.tar.xz.
set -u
REPO=$PWD; H=$REPO/.hs/g139; R=$REPO/bench/results/2026-11-30-h200-mix-av1-cost; W=/tmp/w
mkdir -p $W/ff /tmp/b /tmp/threads; cp $H/*.mp4 $W/; START=$(date +%s)
tar -xJf $H/avlibs.tar.xz -C $W/ff
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for t in clips video; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; lscpu | grep -E "Model name|Thread|MHz"; } > $OUT/env.txt
(export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
 cd $REPO/crates/gm-loader && echo "== video" && timeout 150 /tmp/b/video 2>&1 | grep -E "^test |^test result|FAILED|panicked|failed" | head -40) > $OUT/tests.txt 2>&1
grep -E "^==|test result|FAIL|panick" $OUT/tests.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { # tag files...
  local tag=$1; shift
  [ $(( $(date +%s) - START )) -gt 545 ] && { echo "skip $tag" | tee -a $OUT/summary.txt; return; }
  timeout 70 python3 $R/threads.py /tmp/threads/$tag.json -- /tmp/b/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'ms/dec', j['cpu_decode_ms_per_decoded_frame'], 'reads/frame', j.get('status_reads_per_frame'), j['cores_by_thread'], j['placement'])" | tee -a $OUT/summary.txt
  python3 -c "
import json,sys; g=json.load(open(sys.argv[1]))['groups']
for k,v in sorted(g.items()):
    if v['run_s']>1: print('   ', k, {a: round(b,2) for a,b in v.items()})" /tmp/threads/$tag.json | tee -a $OUT/summary.txt; }
GM_BENCH_COPIES=8 row h264 $B
GM_BENCH_COPIES=4 row av1-1 $A
read a b < <(python3 -c "
import json
r=[j for j in map(json.loads, open('$OUT/rows.jsonl'))]
h=[j['fps'] for j in r if j['tag']=='h264'][0]; av=[j['fps'] for j in r if j['tag']=='av1-1'][0]
k=1.15*h/av
print(*min(((a,b) for a in (1,2,3) for b in range(1,13)), key=lambda p:(abs(p[1]/p[0]-k), p[0])))")
echo "ratio $a AV1 : $b H.264 files" | tee -a $OUT/summary.txt
M=""; for i in $(seq $a); do M="$M $A"; done; for i in $(seq $b); do M="$M $B"; done
c=$(( 12 / (a + b) )); [ $c -lt 1 ] && c=1
mix() { GM_BENCH_COPIES=$c GM_BENCH_MIX=1 row "$@" $M; }
GM_BENCH_NVDEC_BATCH=0 mix off-1; mix on-1
for i in 2 3 4 5; do
  GM_BENCH_COPIES=4 row av1-$i $A
  if [ $((i % 2)) = 0 ]; then mix on-$i; GM_BENCH_NVDEC_BATCH=0 mix off-$i; else GM_BENCH_NVDEC_BATCH=0 mix off-$i; mix on-$i; fi
done
tar -czf $OUT/threads.tgz -C /tmp threads; echo "total $(( $(date +%s) - START )) s"
