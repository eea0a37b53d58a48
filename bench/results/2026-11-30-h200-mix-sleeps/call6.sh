#!/usr/bin/env bash
# The fused kernel loaded one entry point at a time (gm_cuda::EntryModules): call 5's first
# run on an empty JIT cache again (one short H.264 stream row, cold then warm; 53.4 s and 1.9 s
# with the whole module), then the fused, colour and geometry GPU tests (every variant against
# the CPU twins), timed, on the cache that row left. Carried: .hs/g142/*.xz (bundle-release),
# .hs/g139/bench_1080p_h264.mp4.
set -u
REPO=$PWD; H=$REPO/.hs/g142; G=$REPO/.hs/g139
mkdir -p /tmp/b && for t in clips fused_gpu colour_gpu geometry_gpu; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $OUT/env.txt
rm -rf ~/.nv/ComputeCache
t() { python3 -c "import time; print(round(time.time() - $1, 1))"; }
export GM_BENCH_REPS=1 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=7 GM_BENCH_ACCESS=stream GM_BENCH_COPIES=1
for k in cold warm; do
  s=$(date +%s.%N)
  timeout 100 /tmp/b/clips $G/bench_1080p_h264.mp4 > $OUT/$k.jsonl 2>>$OUT/err.txt
  echo "$k: rc $? in $(t $s) s, fps $(python3 -c "import json; print([j['fps'] for j in map(json.loads, open('$OUT/$k.jsonl'))])"), JIT cache $(du -sh ~/.nv/ComputeCache 2>/dev/null | cut -f1)" | tee -a $OUT/summary.txt
done
cd crates/gm-transforms
for b in fused_gpu colour_gpu geometry_gpu; do
  s=$(date +%s.%N)
  GM_FIXTURES=$REPO/tests/media GM_REQUIRE_GPU=1 timeout 55 /tmp/b/$b 2>&1 | grep -E "^test result|FAILED|panicked|failed" | head -8 >> $OUT/tests.txt
  echo "$b: rc ${PIPESTATUS[0]} in $(t $s) s, JIT cache $(du -sh ~/.nv/ComputeCache 2>/dev/null | cut -f1)" | tee -a $OUT/summary.txt
done
cat $OUT/tests.txt
