#!/usr/bin/env bash
# Issue 42: the exact antialias's spans and weights from a per-image table (gm_aa_exact_prepare)
# instead of per pixel in double. GPU tests; then old (90cdb6d) against new in the same call:
# COCO detection (boxes only, loop reading shapes; masks, torch_targets), classification;
# kernel times of the new one.
set -u
REPO=$PWD; H=$REPO/.hs/g98
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/b
for t in fused_gpu colour_gpu geometry_gpu coco pipeline; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
for t in fused_gpu colour_gpu geometry_gpu coco; do
  timeout 300 /tmp/b/$t --test-threads=4 2>&1 | grep -E "^test result|FAILED|panicked|elements compared" | sed "s/^/$t: /" | tee -a "$OUT/tests.txt"
done
timeout 200 /tmp/b/pipeline gpu:: --test-threads=4 2>&1 | grep -E "^test result|FAILED|panicked" | sed "s/^/pipeline: /" | tee -a "$OUT/tests.txt"
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv /tmp/vnew && echo "$SP" > "$(/tmp/vnew/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vnew/bin/pip install -q --no-index --no-deps $H/whl/*.whl 2>&1 | tail -2
cd bench/peers
for r in 1 2; do
  for v in old new; do
    for m in "0 none" "1 batch"; do
      set -- $m
      GM_BENCH_REPEAT=8 GM_PEERS=gm GM_DET_MASKS=$1 GM_DET_IMPORT=$2 timeout 100 /tmp/v$v/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$1 2>>"$OUT/err.txt" | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"
    done
    GM_BENCH_REPEAT=7 GM_PEERS="gm-classification" timeout 60 /tmp/v$v/bin/python segmentation_bench.py /tmp/img/imagenet /tmp/seg 2>>"$OUT/err.txt" | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"
  done
done
GM_PEERS=gm GM_BENCH_REPEAT=8 GM_DET_MASKS=0 GM_DET_IMPORT=none timeout 100 /tmp/vnew/bin/python $REPO/.hs/g97/prof.py /tmp/img/imagenet /tmp/det-prof0 2>&1 >/dev/null | grep -v -i warn | cut -c1-80,150-230 | head -14 > $OUT/prof-new.txt
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l)
    print(d['round'], d['v'], d['peer'], d.get('masks'), round(d['images_per_s']), 'dec', round(d.get('decode_us_per_image',0)), 'tr', round(d.get('transform_us_per_image',0)), 'wait', round(d.get('wait_fraction',0),2))
"
cat $OUT/prof-new.txt; tail -n 3 "$OUT/err.txt"
