#!/usr/bin/env bash
# Why the first bench row on a fresh machine printed nothing within 75 s (call 3, and call C
# of the previous session): the driver compiling the kernels' PTX on first use? The JIT cache
# emptied, then one short H.264 row timed twice (cold cache, warm cache). Carried:
# .hs/g141/clips.xz, .hs/g139/bench_1080p_h264.mp4.
set -u
REPO=$PWD; H=$REPO/.hs/g141; G=$REPO/.hs/g139
mkdir -p /tmp/b && xz -T4 -dc $H/clips.xz > /tmp/b/clips && chmod +x /tmp/b/clips
rm -rf ~/.nv/ComputeCache
export GM_BENCH_REPS=1 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=7 GM_BENCH_ACCESS=stream GM_BENCH_COPIES=1
for k in cold warm; do
  s=$(date +%s.%N)
  timeout 200 /tmp/b/clips $G/bench_1080p_h264.mp4 > $OUT/$k.jsonl 2>>$OUT/err.txt
  echo "$k: rc $? in $(python3 -c "print(round($(date +%s.%N) - $s, 1))") s, fps $(python3 -c "import json; print([j['fps'] for j in map(json.loads, open('$OUT/$k.jsonl'))])"), JIT cache $(du -sh ~/.nv/ComputeCache 2>/dev/null | cut -f1)" | tee -a $OUT/summary.txt
done
