#!/usr/bin/env bash
# Issue 42: new2 (epochs started where the workers run out of reads) against DALI, same call.
# 960-image epochs and 7,680-image ones; gm's dicts with every key or torchvision's three.
set -u
REPO=$PWD
cp "$REPO"/.hs/d5/dali.tar.xz.* /tmp/parts/
if [ ! -e /tmp/dali/.done ]; then
  mkdir -p /tmp/dali && cat $(ls /tmp/parts/dali.tar.xz.* | sort) | xz -dcT0 | tar xf - -C /tmp/dali && touch /tmp/dali/.done
fi
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  PYTHONPATH=/tmp/dali /tmp/vnew2/bin/python -c 'import sys, torch, nvidia.dali as d, gm; print(sys.version.split()[0], torch.__version__, "dali", d.__version__)'; } 2>&1 | tee "$OUT/env.txt"
cd bench/peers
for r in 1 2; do
  for rep in 8 64; do
    for p in "gm 1 batch all" "gm 1 batch boxes_labels_masks" "gm 1 none all" "gm 0 none all" "dali 1 batch all"; do
      set -- $p
      PYTHONPATH=/tmp/dali GM_BENCH_REPEAT=$rep GM_PEERS=$1 GM_DALI_THREADS=8 GM_DET_MASKS=$2 GM_DET_IMPORT=$3 GM_DET_KEYS="${4//_/ }" \
        timeout 100 /tmp/vnew2/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$2-r$rep 2>>"$OUT/det.err" \
        | grep '"peer"' | sed "s/^{/{\"round\": $r, \"repeat\": $rep, /" >> "$OUT/detection.jsonl"
    done
  done
done
python3 -c "
import json
for l in open('$OUT/detection.jsonl'):
    d=json.loads(l); g=lambda k: round(d.get(k) or 0)
    print(d['round'], d['repeat'], d['peer'], 'masks' if d.get('masks', True) and d['peer']=='gm' else 'boxes', d.get('import_mode'), d.get('target_keys'), g('images_per_s'), '| loop tgt', g('targets_move_us_per_image'), g('targets_import_us_per_image'), 'read', g('read_us_per_image'), 'dec', g('decode_us_per_image'), 'tr', g('transform_us_per_image'), 'mup', g('mask_upload_us_per_image'), 'wait', round(d.get('wait_fraction') or 0,2))
" | tee "$OUT/summary.txt"
tail -n 3 "$OUT/det.err"
