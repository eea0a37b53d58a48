#!/usr/bin/env bash
# Issue 42: new3 (COCO masks kept after their first rasterizing) against new2, alternated, and
# the GPU loader's targets against the CPU loader's on new3.
set -u
REPO=$PWD; H=$REPO/.hs/g113
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/img && tar -xf $H/imagenet.tar -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
for v in new2 new3; do rm -rf /tmp/v$v; python3 -m venv /tmp/v$v && echo "$SP" > "$(/tmp/v$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
  /tmp/v$v/bin/pip install -q --no-index --no-deps $H/$v/*.whl 2>&1 | tail -2; done
(cd crates/gm-python/tests && GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1 timeout 120 /tmp/vnew3/bin/python -m pytest -q -p no:cacheprovider gpu/test_torch.py test_coco.py -k "target or coco or detection or mask" 2>&1 | tail -3) | tee "$OUT/tests.txt"
cd bench/peers
for r in 1 2; do
  for p in "new2 64" "new3 64" "new2 8" "new3 8"; do
    set -- $p
    GM_BENCH_REPEAT=$2 GM_PEERS=gm GM_DET_MASKS=1 GM_DET_IMPORT=batch timeout 60 /tmp/v$1/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-r$2 2>>"$OUT/det.err" \
      | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$1\", \"repeat\": $2, /" >> "$OUT/detection.jsonl"
  done
done
python3 -c "
import json
for l in open('$OUT/detection.jsonl'):
    d=json.loads(l); g=lambda k: round(d.get(k) or 0)
    print(d['round'], d['v'], d['repeat'], g('images_per_s'), 'loader', g('loader_images_per_s'), 'read', g('read_us_per_image'), 'dec', g('decode_us_per_image'), 'tr', g('transform_us_per_image'), 'import', g('targets_import_us_per_image'), 'wait', round(d.get('wait_fraction') or 0,2))
" | tee "$OUT/summary.txt"
