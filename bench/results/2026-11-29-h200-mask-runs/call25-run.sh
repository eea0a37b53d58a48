#!/usr/bin/env bash
# Experiment (branch hw-roi), after call 1: the loader's region test on this code, then old
# (6a826b0) against new (regions on the engines): classification (RandomResizedCrop) and
# COCO detection (masks and boxes only, the loop reading shapes), two rounds alternated.
set -u
REPO=$PWD; H=$REPO/.hs/g80
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
xz -dc "$H/pipeline.xz" > /tmp/b/pipeline && chmod +x /tmp/b/pipeline
GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1 timeout 120 /tmp/b/pipeline gpu:: --test-threads=4 2>&1 | grep -E "^test result|FAILED|panicked" | tee "$OUT/pipeline.txt"
mkdir -p /tmp/img && tar -xf "$H/imagenet.tar" -C /tmp/img
cd bench/peers
for r in 1 2; do
  for v in old new; do
    GM_BENCH_REPEAT=7 GM_PEERS="gm-classification" timeout 60 /tmp/v$v/bin/python segmentation_bench.py /tmp/img/imagenet /tmp/seg 2>>"$OUT/err.txt" | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"
    for m in 1 0; do
      GM_BENCH_REPEAT=8 GM_PEERS=gm GM_DET_MASKS=$m GM_DET_IMPORT=none timeout 60 /tmp/v$v/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$m 2>>"$OUT/err.txt" | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"
    done
  done
done
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l)
    if 'peer' in d: print(d['round'], d['v'], d['peer'], d.get('masks'), round(d['images_per_s']), round(d.get('decode_us_per_image',0)), round(d.get('wait_fraction',0),2))
"
tail -n 3 "$OUT/err.txt"
