#!/bin/bash
# Session 2026-11-24b: fused.cu without FMA contraction. Bundle, then the transforms GPU
# tests again (new random seeds), then the fused bench old/new interleaved.
set -u
B=target/gpu-bundle
unxz -k $B/bin/gm.xz 2>/dev/null; chmod +x $B/bin/gm
unxz -k $B/extra/fused-old.xz; chmod +x $B/extra/fused-old
NVJ=$(dirname "$(find / -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH="$NVJ:${LD_LIBRARY_PATH:-}"
export GM_LOG_DIR=$OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
timeout 330 $B/run.sh > $OUT/bundle.txt 2>&1
echo "bundle rc $?" >> $OUT/bundle.txt
tail -5 $OUT/bundle.txt
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then b=$B/extra/fused-old; else b=$B/bench/gm-transforms--fused; fi
    echo "== $v round $r"; timeout 100 $b 2>&1
  done
done > $OUT/fused-bench.txt 2>&1
grep -v "^$" $OUT/fused-bench.txt | head -80
export GM_REQUIRE_GPU=1
for r in 1 2 3; do
  for t in fused_gpu colour_gpu blur_gpu geometry_gpu policies_gpu; do
    f=$(ls $B/tests/ | grep -E "^gm-transforms--$t\$|${t}\$" | head -1)
    $B/tests/$f --test-threads=4 --nocapture > $OUT/rep-$r-$t.log 2>&1
    echo "$r $t rc $? $(grep -E '^test result' $OUT/rep-$r-$t.log) $(grep -E 'differ from the twin' $OUT/rep-$r-$t.log)"
  done
done > $OUT/repeats.txt 2>&1
cat $OUT/repeats.txt | tail -20
