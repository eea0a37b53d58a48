#!/usr/bin/env bash
# The segmentation and detection benches again, with more host workers when masks are read.
set -u
REPO=$PWD; H=$REPO/.hs/g30
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/summary.txt"
python3 -m venv /tmp/gmv && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/gradient_mechanics_rs-*.whl "$H"/whl/*.whl
export GM_BENCH_REPEAT=7
for rep in 1 2; do
  timeout 120 /tmp/gmv/bin/python bench/peers/segmentation_bench.py "$H/imagenet" /tmp/segbench 2>"$OUT/seg$rep.err" | sed "s/^{/{\"run\": $rep, /" | tee -a "$OUT/bench.jsonl"
done
GM_PEERS=gm timeout 100 /tmp/gmv/bin/python bench/peers/detection_bench.py "$H/imagenet" /tmp/detbench 2>"$OUT/det.err" | sed "s/^{/{\"run\": 2, /" | tee -a "$OUT/bench.jsonl"
