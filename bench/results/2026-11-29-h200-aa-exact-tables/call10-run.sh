#!/usr/bin/env bash
# Issue 42: C = the exact antialias from per-image tables, with its own entry points
# (gm_fused_aa_exact, gm_fused_colour_aa_exact) for launches whose every image takes it. GPU
# tests on C; old (90cdb6d) against C alternated: detection boxes (shapes) and masks
# (torch_targets), classification; ncu of C's kernel.
set -u
REPO=$PWD; H=$REPO/.hs/g101
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/b /tmp/img && tar -xf $H/imagenet.tar -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
for v in old C; do
  python3 -m venv /tmp/v$v && echo "$SP" > "$(/tmp/v$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
done
/tmp/vold/bin/pip install -q --no-index --no-deps $H/old/*.whl 2>&1 | tail -2
/tmp/vC/bin/pip install -q --no-index --no-deps $H/whl/*.whl 2>&1 | tail -2
for t in fused_gpu colour_gpu; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
for t in fused_gpu colour_gpu; do
  timeout 300 /tmp/b/$t --test-threads=4 2>&1 | grep -E "^test result|FAILED|panicked|elements compared|^seed" | sed "s/^/$t: /" | tee -a "$OUT/tests.txt"
done
cd bench/peers
for r in 1 2; do
  for v in old C; do
    for m in "0 none" "1 batch"; do
      set -- $m
      GM_BENCH_REPEAT=8 GM_PEERS=gm GM_DET_MASKS=$1 GM_DET_IMPORT=$2 timeout 100 /tmp/v$v/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$1 2>>"$OUT/err.txt" | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"
    done
    GM_BENCH_REPEAT=7 GM_PEERS="gm-classification" timeout 60 /tmp/v$v/bin/python segmentation_bench.py /tmp/img/imagenet /tmp/seg 2>>"$OUT/err.txt" | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"
  done
done
GM_PEERS=gm GM_BENCH_REPEAT=1 GM_BENCH_EPOCHS=1 GM_DET_MASKS=0 GM_DET_IMPORT=none timeout 200 /usr/local/cuda/bin/ncu --kernel-name regex:gm_fused --launch-skip 10 --launch-count 2 --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis /tmp/vC/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-ncu 2>&1 | grep -E "gm_fused|Duration|Registers Per|Achieved Occupancy|Spilling Requests  |Memory Throughput" | cut -c1-100 >> $OUT/ncu.txt
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l)
    print(d['round'], d['v'], d['peer'], d.get('masks'), round(d['images_per_s']), 'dec', round(d.get('decode_us_per_image',0)), 'tr', round(d.get('transform_us_per_image',0)), 'wait', round(d.get('wait_fraction',0),2))
"
cat $OUT/ncu.txt; tail -n 3 "$OUT/err.txt"
