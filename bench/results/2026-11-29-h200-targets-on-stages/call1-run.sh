#!/usr/bin/env bash
# Issue 42, COCO with masks: targets moved on the loader's stages (LoaderBuilder::targets) and
# torch_targets cut by runs (split_with_sizes). GPU tests on new; old (805ea60) against new
# alternated: masks (torch_targets / shapes), boxes (shapes); new with 6 and 8 workers.
set -u
REPO=$PWD; H=$REPO/.hs/g102
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/b /tmp/img && tar -xf $H/imagenet.tar -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
for v in old cur; do
  python3 -m venv /tmp/v$v && echo "$SP" > "$(/tmp/v$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
done
/tmp/vold/bin/pip install -q --no-index --no-deps $H/old/*.whl 2>&1 | tail -2
/tmp/vcur/bin/pip install -q --no-index --no-deps $H/whl/*.whl 2>&1 | tail -2
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
xz -dc $H/coco.xz > /tmp/b/coco && chmod +x /tmp/b/coco
timeout 200 /tmp/b/coco 2>&1 | grep -E "^test |^test result|FAILED|panicked|SKIP" | tee -a "$OUT/tests.txt"
(cd crates/gm-python/tests && timeout 300 /tmp/vcur/bin/python -m pytest -q -p no:cacheprovider \
   gpu/test_torch.py -k "torch_targets or detection or loader_batches or coco" test_coco.py 2>&1 | tail -6) | tee -a "$OUT/tests.txt"
unset GM_REQUIRE_GPU
cd bench/peers
run() { # round version masks import [env...]
  local r=$1 v=$2 m=$3 i=$4; shift 4
  env GM_BENCH_REPEAT=8 GM_PEERS=gm GM_DET_MASKS=$m GM_DET_IMPORT=$i "$@" timeout 100 /tmp/v$v/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$m 2>>"$OUT/err.txt" | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$v\", /" >> "$OUT/bench.jsonl"
}
for r in 1 2; do
  for v in old cur; do
    run $r $v 1 batch; run $r $v 1 none; run $r $v 0 none
  done
  run $r cur 1 batch GM_BENCH_WORKERS=6
  run $r cur 1 batch GM_BENCH_WORKERS=8
  run $r cur 1 none GM_DET_TARGETS=0
done
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l)
    g=lambda k: round(d.get(k) or 0)
    print(d['round'], d['v'], 'masks' if d.get('masks') else 'boxes', d.get('import_mode'), 'w', d.get('workers'), 'read' if d.get('targets_read') else 'unread', g('images_per_s'), '| tgt', g('targets_move_us_per_image'), g('targets_import_us_per_image'), 'stage_tgt', round(d.get('targets_us_per_image') or 0,1), 'read', g('read_us_per_image'), 'dec', g('decode_us_per_image'), 'tr', g('transform_us_per_image'), 'wait', round(d.get('wait_fraction',0),2))
" | tee "$OUT/summary.txt"
tail -n 3 "$OUT/err.txt"
