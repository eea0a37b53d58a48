#!/usr/bin/env bash
# Issue 42: python GPU tests of new2 (next epoch started where the running epoch's workers
# have read their last batch; stages send their first reads before taking the GPU stage),
# then new (HEAD + aa table once) against new2 on the detection bench, alternated.
set -u
REPO=$PWD; H=$REPO/.hs/g111a
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/img /tmp/b /tmp/parts && tar -xf $H/imagenet.tar -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
for v in new new2; do rm -rf /tmp/v$v; python3 -m venv /tmp/v$v && echo "$SP" > "$(/tmp/v$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
  /tmp/v$v/bin/pip install -q --no-index --no-deps $H/$v/*.whl 2>&1 | tail -2; done
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
(cd crates/gm-python/tests && timeout 200 /tmp/vnew2/bin/python -m pytest -q -p no:cacheprovider gpu/ test_coco.py test_image_loader.py -k "not nvdec_lacks" 2>&1 | tail -5) | tee "$OUT/tests.txt"
cd bench/peers
for r in 1 2 3; do
  for p in "new 8 1 batch" "new2 8 1 batch" "new 8 0 none" "new2 8 0 none"; do
    set -- $p
    GM_BENCH_REPEAT=$2 GM_PEERS=gm GM_DET_MASKS=$3 GM_DET_IMPORT=$4 timeout 100 /tmp/v$1/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$3-r$2 2>>"$OUT/det.err" \
      | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$1\", \"repeat\": $2, /" >> "$OUT/detection.jsonl"
  done
done
for r in 1 2; do
  for v in new new2; do
    GM_BENCH_REPEAT=64 GM_PEERS=gm GM_DET_MASKS=1 GM_DET_IMPORT=batch timeout 100 /tmp/v$v/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m1-r64 2>>"$OUT/det.err" \
      | grep '"peer"' | sed "s/^{/{\"round\": $r, \"v\": \"$v\", \"repeat\": 64, /" >> "$OUT/detection.jsonl"
  done
done
python3 -c "
import json
for l in open('$OUT/detection.jsonl'):
    d=json.loads(l); g=lambda k: round(d.get(k) or 0)
    print(d['round'], d['v'], d['repeat'], 'masks' if d.get('masks') else 'boxes', d.get('import_mode'), g('images_per_s'), 'loader', g('loader_images_per_s'), '| loop tgt', g('targets_move_us_per_image'), g('targets_import_us_per_image'), 'read', g('read_us_per_image'), 'dec', g('decode_us_per_image'), 'tr', g('transform_us_per_image'), 'wait', round(d.get('wait_fraction') or 0,2))
" | tee "$OUT/summary.txt"
tail -n 2 "$OUT/det.err"
