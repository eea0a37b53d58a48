#!/usr/bin/env bash
# Issue 42: the fused antialias kernel. old = 90cdb6d; A = the exact antialias from per-image
# tables; B = A + direct RGB taps in the exact path + __launch_bounds__(256, 4). GPU tests on B;
# detection (boxes, shapes; masks, torch_targets) and classification, alternated; ncu of B's kernel.
set -u
REPO=$PWD; H=$REPO/.hs/g100
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/b
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
for v in A B; do
  python3 -m venv /tmp/v$v && echo "$SP" > "$(/tmp/v$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
done
/tmp/vA/bin/pip install -q --no-index --no-deps $H/whlA/*.whl 2>&1 | tail -2
/tmp/vB/bin/pip install -q --no-index --no-deps $H/whl/*.whl 2>&1 | tail -2
for t in fused_gpu colour_gpu geometry_gpu; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
for t in fused_gpu colour_gpu geometry_gpu; do
  timeout 300 /tmp/b/$t --test-threads=4 2>&1 | grep -E "^test result|FAILED|panicked|elements compared" | sed "s/^/$t: /" | tee -a "$OUT/tests.txt"
done
cd bench/peers
for r in 1 2; do
  for v in old A B; do
    for m in "0 none" "1 batch"; do
      set -- $m
      GM_BENCH_REPEAT=8 GM_PEERS=gm GM_DET_MASKS=$1 GM_DET_IMPORT=$2 timeout 100 /tmp/v$v/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$1 2>>"$OUT/err.txt" | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"
    done
    GM_BENCH_REPEAT=7 GM_PEERS="gm-classification" timeout 60 /tmp/v$v/bin/python segmentation_bench.py /tmp/img/imagenet /tmp/seg 2>>"$OUT/err.txt" | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"
  done
done
for v in A B; do
GM_PEERS=gm GM_BENCH_REPEAT=1 GM_BENCH_EPOCHS=1 GM_DET_MASKS=0 GM_DET_IMPORT=none timeout 200 /usr/local/cuda/bin/ncu --kernel-name gm_fused_antialias --launch-skip 10 --launch-count 3 --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis /tmp/v$v/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-ncu 2>&1 | grep -E "Duration|Registers Per|Achieved Occupancy|Spilling Requests  |Memory Throughput|Grid Size" | sed "s/^/$v /" >> $OUT/ncu.txt
done
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l)
    print(d['round'], d['v'], d['peer'], d.get('masks'), round(d['images_per_s']), 'dec', round(d.get('decode_us_per_image',0)), 'tr', round(d.get('transform_us_per_image',0)), 'wait', round(d.get('wait_fraction',0),2))
"
cat $OUT/ncu.txt; tail -n 3 "$OUT/err.txt"
