#!/usr/bin/env bash
# Issue 42: new2 against DALI's COCO pipeline and torchvision's detection reference transforms
# (DataLoader, one worker per host core), same call: 960-image and 7,680-image epochs.
set -u
REPO=$PWD
cp "$REPO"/.hs/d5/dali.tar.xz.* /tmp/parts/
if [ ! -e /tmp/dali/.done ]; then
  mkdir -p /tmp/dali && cat $(ls /tmp/parts/dali.tar.xz.* | sort) | xz -dcT0 | tar xf - -C /tmp/dali && touch /tmp/dali/.done
fi
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  PYTHONPATH=/tmp/dali /tmp/vnew2/bin/python -c 'import sys, torch, torchvision, nvidia.dali as d, gm; print(sys.version.split()[0], torch.__version__, torchvision.__version__, "dali", d.__version__)'; } 2>&1 | tee "$OUT/env.txt"
cd bench/peers
for r in 1 2; do
  for p in "8 gm 3" "8 dali 3" "8 torchvision 2" "64 gm 3" "64 dali 3"; do
    set -- $p
    PYTHONPATH=/tmp/dali GM_BENCH_REPEAT=$1 GM_BENCH_EPOCHS=$3 GM_PEERS=$2 GM_DALI_THREADS=8 GM_DET_MASKS=1 GM_DET_IMPORT=batch \
      timeout 150 /tmp/vnew2/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-r$1 2>>"$OUT/det.err" \
      | grep '"peer"' | sed "s/^{/{\"round\": $r, \"repeat\": $1, /" >> "$OUT/detection.jsonl"
  done
done
python3 -c "
import json
for l in open('$OUT/detection.jsonl'):
    d=json.loads(l); print(d['round'], d['repeat'], d['peer'], round(d['images_per_s']), d.get('objects'), d.get('workers') or d.get('threads') or '')
" | tee "$OUT/summary.txt"
tail -n 3 "$OUT/det.err"
