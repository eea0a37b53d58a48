#!/usr/bin/env bash
# Where gm's segmentation and classification loaders spend their time (loader stats).
set -u
REPO=$PWD; H=$REPO/.hs/g30
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
python3 -m venv /tmp/gmv && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/gradient_mechanics_rs-*.whl "$H"/whl/*.whl
export GM_BENCH_REPEAT=7 GM_PEERS="gm-classification gm-segmentation"
for rep in 1 2; do
  timeout 60 /tmp/gmv/bin/python bench/peers/segmentation_bench.py "$H/imagenet" /tmp/segbench 2>>"$OUT/stats.err" | sed "s/^{/{\"run\": $rep, /" | tee -a "$OUT/stats.jsonl"
done
