#!/usr/bin/env bash
# Issue 42: this tree's wheel (COCO masks cached, outlines by crossing steps) against DALI 2.4.0's
# COCO pipeline (8 threads), three same-call rounds at 7,680- and 960-image epochs, masks on,
# the loop taking every target into torch. DALI's chunks arrived one per call (this is the last).
set -u
REPO=$PWD
mkdir -p /tmp/parts && cp "$REPO"/.hs/d5/dali.tar.xz.* /tmp/parts/
ls /tmp/parts | tee "$OUT/parts.txt"
if [ ! -e /tmp/dali/.done ]; then
  mkdir -p /tmp/dali && cat $(ls /tmp/parts/dali.tar.xz.* | sort) | xz -dcT0 | tar xf - -C /tmp/dali && touch /tmp/dali/.done
fi
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  PYTHONPATH=/tmp/dali /tmp/vcur/bin/python -c 'import sys, torch, nvidia.dali as d, gm; print(sys.version.split()[0], torch.__version__, "dali", d.__version__)'; } 2>&1 | tee "$OUT/env.txt"
cd bench/peers
for r in 1 2 3; do
  for p in "64 gm" "64 dali" "8 gm" "8 dali"; do
    set -- $p
    PYTHONPATH=/tmp/dali GM_BENCH_REPEAT=$1 GM_BENCH_EPOCHS=3 GM_PEERS=$2 GM_DALI_THREADS=8 GM_DET_MASKS=1 GM_DET_IMPORT=batch \
      timeout 120 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-r$1 2>>"$OUT/det.err" \
      | grep '"peer"' | sed "s/^{/{\"round\": $r, \"repeat\": $1, /" >> "$OUT/detection.jsonl"
  done
done
python3 -c "
import json
rows=[json.loads(l) for l in open('$OUT/detection.jsonl')]
for d in rows: print(d['round'], d['repeat'], d['peer'], round(d['images_per_s']), d.get('objects'))
for r in (1,2,3):
  for rep in (64,8):
    g=[d['images_per_s'] for d in rows if d['round']==r and d['repeat']==rep and d['peer']=='gm']
    x=[d['images_per_s'] for d in rows if d['round']==r and d['repeat']==rep and d['peer']=='dali']
    if g and x: print('round', r, 'epoch', rep*120, 'gm/dali', round(g[0]/x[0],2))
" | tee "$OUT/summary.txt"
tail -n 3 "$OUT/det.err"
