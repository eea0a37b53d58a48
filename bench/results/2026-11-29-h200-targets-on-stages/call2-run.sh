#!/usr/bin/env bash
set -u
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd bench/peers
run() { local r=$1 v=$2 m=$3 i=$4; shift 4
  env GM_BENCH_REPEAT=8 GM_PEERS=gm GM_DET_MASKS=$m GM_DET_IMPORT=$i "$@" timeout 100 /tmp/v$v/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$m 2>>"$OUT/err.txt" | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"; }
for r in 1 2; do
  for v in old cur; do run $r $v 1 batch; run $r $v 1 none; run $r $v 0 none; done
  run $r cur 1 batch GM_BENCH_WORKERS=6
  run $r cur 1 batch GM_BENCH_WORKERS=8
done
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l); g=lambda k: round(d.get(k) or 0)
    print(d['round'], d['v'], 'masks' if d.get('masks') else 'boxes', d.get('import_mode'), 'w', d.get('workers'), g('images_per_s'), '| loop tgt', g('targets_move_us_per_image'), g('targets_import_us_per_image'), 'stage_tgt', round(d.get('stage_targets_us_per_image') or 0,1), 'read', g('read_us_per_image'), 'dec', g('decode_us_per_image'), 'tr', g('transform_us_per_image'), 'wait', round(d.get('wait_fraction',0),2))
" | tee "$OUT/summary.txt"
tail -n 3 "$OUT/err.txt"
