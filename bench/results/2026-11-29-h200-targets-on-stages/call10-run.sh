#!/usr/bin/env bash
# Issue 42: what bounds gm's COCO loader with masks: host workers 4 (default), 6, 8; loop
# reading shapes (none) or taking targets into torch (batch), and masks unread.
set -u
bash .hs/g104/setup.sh > $OUT/setup.txt 2>&1
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd bench/peers
run() { local r=$1 m=$2 i=$3 w=$4; shift 4
  env GM_BENCH_REPEAT=8 GM_PEERS=gm GM_DET_MASKS=$m GM_DET_IMPORT=$i GM_BENCH_WORKERS=$w "$@" timeout 100 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$m 2>>"$OUT/err.txt" | grep '"peer"' | sed "s/^{/{\"round\": $r, /" >> "$OUT/bench.jsonl"; }
for r in 1 2; do
  for w in 4 6 8; do run $r 1 none $w; run $r 1 batch $w; done
  run $r 1 none 8 GM_DET_TARGETS=0
  run $r 1 none 8 GM_BENCH_STAGES=4
done
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l); g=lambda k: round(d.get(k) or 0)
    print(d['round'], 'masks' if d.get('masks') else 'boxes', d.get('import_mode'), 'w', d.get('workers'), 'st', d.get('stages'), 'read' if d.get('targets_read') else 'unread', g('images_per_s'), '| loop tgt', g('targets_move_us_per_image'), g('targets_import_us_per_image'), 'read', g('read_us_per_image'), 'dec', g('decode_us_per_image'), 'tr', g('transform_us_per_image'), 'mprep', g('mask_prepare_us_per_image'), 'mup', g('mask_upload_us_per_image'), 'wait', round(d.get('wait_fraction',0),2))
" | tee "$OUT/summary.txt"
tail -n 3 "$OUT/err.txt"
