#!/usr/bin/env bash
# The loaders' GPU tests on the fused kernel with gm_aa_exact_prepare.
set -u
REPO=$PWD; H=$REPO/.hs/g45
mkdir -p /tmp/g && cp -r "$H"/* /tmp/g/ && H=/tmp/g
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; } | tee "$OUT/summary.txt"
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
for f in $H/bin/*.xz; do xz -d "$f"; chmod +x "${f%.xz}"; done
for t in coco segmentation sizes; do
  timeout 150 $H/bin/$t > "$OUT/$t.txt" 2>&1; echo "$t rc=$? $(grep 'test result' $OUT/$t.txt)" | tee -a "$OUT/summary.txt"
  grep -E "panicked|FAILED|SKIP" "$OUT/$t.txt" | head -5 | tee -a "$OUT/summary.txt"
done
timeout 240 $H/bin/pipeline gpu:: --test-threads 4 > "$OUT/pipeline.txt" 2>&1; echo "pipeline gpu:: rc=$? $(grep 'test result' $OUT/pipeline.txt)" | tee -a "$OUT/summary.txt"
grep -E "panicked|FAILED|SKIP" "$OUT/pipeline.txt" | head -5 | tee -a "$OUT/summary.txt"
