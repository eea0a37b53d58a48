#!/usr/bin/env bash
# Issue 44: the mixed AV1 (CPU) + H.264 (NVDEC) dataset with the CPU decoders at 0, 5 and 10
# nice steps below the loader, alternated; each part alone; the ratio from the parts' rates.
set -u
REPO=$PWD; H=$REPO/.hs/g121; W=/tmp/w; mkdir -p $W/ff
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/ && xz -dc $H/clips.xz > $W/clips && chmod +x $W/clips
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; cat /proc/self/stat | awk '{print "nice", $19}'; } > $OUT/env.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=4
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1; shift; timeout 100 $W/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'frames', j['frames'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,1), 'cpu_dec', j['cpu_frames_decoded'], j['cpu_decode_ms_per_decoded_frame'], 'ms', j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
GM_BENCH_CPU_NICENESS=0 row av1-n0 $A
GM_BENCH_CPU_NICENESS=5 row av1-n5 $A
GM_BENCH_COPIES=8 row h264 $B
read a b < <(python3 -c "
import json
r={}
for j in map(json.loads, open('$OUT/rows.jsonl')): r.setdefault(j['video'], []).append(j['fps'])
k=max(r['bench_1080p_h264.mp4'])/max(r['bench_1080p_av1.mp4'])
print(*min(((a,b) for a in (1,2) for b in range(1,9)), key=lambda p:(abs(p[1]/p[0]-k), p[0])))")
echo "ratio $a AV1 : $b H.264 files" | tee -a $OUT/summary.txt
args=""; for i in $(seq $a); do args="$args $A"; done; for i in $(seq $b); do args="$args $B"; done
for r in 1 2; do for n in 0 5 10; do
  GM_BENCH_CPU_NICENESS=$n GM_BENCH_COPIES=2 GM_BENCH_MIX=1 row mix-$a:$b-n$n $args
done; done
GM_BENCH_CPU_NICENESS=0 row av1-n0 $A
tail -n 3 $OUT/clips.err
