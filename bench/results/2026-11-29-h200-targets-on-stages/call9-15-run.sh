#!/usr/bin/env bash
# Issue 42: gm (cur: targets moved on the stages, torch_targets by runs; old: 805ea60) against
# DALI's COCO pipeline, three rounds alternated, same photos and annotations.
set -u
REPO=$PWD
mkdir -p /tmp/parts && cp "$REPO"/.hs/d5/dali.tar.xz.* /tmp/parts/
if [ ! -e /tmp/dali/.done ]; then
  mkdir -p /tmp/dali && cat $(ls /tmp/parts/dali.tar.xz.* | sort) | xz -dcT0 | tar xf - -C /tmp/dali && touch /tmp/dali/.done
fi
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  PYTHONPATH=/tmp/dali /tmp/vcur/bin/python -c 'import sys, torch, nvidia.dali as d, gm; print(sys.version.split()[0], torch.__version__, "dali", d.__version__)'; } 2>&1 | tee "$OUT/env.txt"
cd bench/peers
export GM_BENCH_REPEAT=8
for r in 1 2 3; do
  for p in "cur gm 1 batch" "cur gm 1 none" "old gm 1 none" "cur gm 0 none" "cur gm 0 batch" "cur dali 1 batch"; do
    set -- $p
    PYTHONPATH=/tmp/dali GM_PEERS=$2 GM_DALI_THREADS=8 GM_DET_MASKS=$3 GM_DET_IMPORT=$4 timeout 100 /tmp/v$1/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$3 2>>"$OUT/det.err" \
      | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$1\", /" >> "$OUT/detection.jsonl"
  done
done
python3 -c "
import json
for l in open('$OUT/detection.jsonl'):
    d=json.loads(l); g=lambda k: round(d.get(k) or 0)
    print(d['round'], d['v'], d['peer'], 'masks' if d.get('masks', True) and d['peer']=='gm' else 'boxes', d.get('import_mode'), g('images_per_s'), '| loop tgt', g('targets_move_us_per_image'), g('targets_import_us_per_image'), 'read', g('read_us_per_image'), 'dec', g('decode_us_per_image'), 'tr', g('transform_us_per_image'), 'wait', round(d.get('wait_fraction') or 0,2))
" | tee "$OUT/summary.txt"
tail -n 3 "$OUT/det.err"
