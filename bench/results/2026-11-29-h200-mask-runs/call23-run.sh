#!/usr/bin/env bash
# Issue 42, after 6a826b0: is the COCO loader bound by its GPU stages? gm's detection bench
# with the loop reading shapes only, 3, 4 and 5 stages, masks and boxes only, two rounds.
set -u
REPO=$PWD; H=$REPO/.hs/g78
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vcur/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/*.whl 2>&1 | tail -2
mkdir -p /tmp/img && tar -xf "$H/imagenet.tar" -C /tmp/img
cd bench/peers
for r in 1 2; do
  for p in "1 3" "1 4" "1 5" "0 3" "0 4"; do
    set -- $p
    GM_BENCH_REPEAT=8 GM_PEERS=gm GM_DET_MASKS=$1 GM_DET_IMPORT=none GM_BENCH_STAGES=$2 timeout 100 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$1 2>>"$OUT/det.err" \
      | sed "s/^{/{\"round\": $r, /" | tee -a "$OUT/detection.jsonl" > /dev/null
  done
done
python3 -c "
import json
for l in open('$OUT/detection.jsonl'):
    d=json.loads(l)
    if 'peer' in d: print(d['round'], d['masks'], d['stages'], round(d['images_per_s']), round(d['decode_us_per_image']), round(d['transform_us_per_image']), round(d['read_us_per_image']), round(d['wait_fraction'],2))
"
tail -n 3 "$OUT/det.err"
