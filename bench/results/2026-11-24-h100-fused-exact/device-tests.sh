#!/bin/bash
set -u
C=target/tx-carry
for f in $C/*.xz; do unxz $f; done; chmod +x $C/*_gpu
export GM_REQUIRE_GPU=1 GM_FIXTURES=$PWD/tests/media
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2 3 4 5; do
  for t in fused_gpu colour_gpu blur_gpu geometry_gpu policies_gpu; do
    $C/$t --test-threads=4 --nocapture > $OUT/$r-$t.log 2>&1
    echo "$r $t rc $? $(grep -E '^test result' $OUT/$r-$t.log | cut -c1-40) $(grep -E '^seed' $OUT/$r-$t.log | tr '\n' ' ') $(grep -E 'differ from the twin' $OUT/$r-$t.log)"
    grep -E "panicked|assertion" -A3 $OUT/$r-$t.log | head -8
  done
done
