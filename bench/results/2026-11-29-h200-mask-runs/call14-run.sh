#!/usr/bin/env bash
# GPU call (issue 42): gm's detection bench on this code: masks with the default plan's 4
# workers, 6 and 8; the loop importing targets into torch at once or reading shapes only;
# boxes only. One round each; the photos stay for the DALI calls.
set -u
REPO=$PWD
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/img && tar -xf "$REPO/.hs/g76/imagenet.tar" -C /tmp/img
cd bench/peers
for p in "1 batch -" "1 batch 6" "1 batch 8" "1 none -" "0 batch -" "0 none -"; do
  set -- $p
  W=""; [ "$3" != "-" ] && W="GM_BENCH_WORKERS=$3"
  env $W GM_BENCH_REPEAT=8 GM_PEERS=gm GM_DET_MASKS=$1 GM_DET_IMPORT=$2 timeout 100 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$1 2>>"$OUT/det.err" \
    | tee -a "$OUT/detection.jsonl"
done
tail -n 3 "$OUT/det.err"
