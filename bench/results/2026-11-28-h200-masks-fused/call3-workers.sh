#!/usr/bin/env bash
# Host workers for the segmentation loader: the default (8 on 16 cores) against 12 and 14.
set -u
REPO=$PWD; H=$REPO/.hs/g30
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
python3 -m venv /tmp/gmv && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/gradient_mechanics_rs-*.whl "$H"/whl/*.whl
export GM_BENCH_REPEAT=7 GM_PEERS="gm-classification gm-segmentation"
for w in 8 12 14 8 12 14; do
  GM_BENCH_WORKERS=$w timeout 60 /tmp/gmv/bin/python bench/peers/segmentation_bench.py "$H/imagenet" /tmp/segbench 2>>"$OUT/sweep.err" | sed "s/^{/{\"workers\": $w, /" | tee -a "$OUT/sweep.jsonl"
done
