#!/usr/bin/env bash
# Segmentation against classification (issue 42's 1.3x goal) with the per-image antialias
# precisions (the chains' RandomResize is antialiased), as bench/results/2026-11-28-h200-masks-fused call 2.
set -u
REPO=$PWD; H=$REPO/.hs/g46
mkdir -p /tmp/g && cp -r "$H"/* /tmp/g/ && H=/tmp/g
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/summary.txt"
python3 -m venv /tmp/gmv && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/gradient_mechanics_rs-*.whl
export GM_BENCH_REPEAT=7
for rep in 1 2; do
  timeout 150 /tmp/gmv/bin/python bench/peers/segmentation_bench.py "$H/imagenet" /tmp/segbench 2>"$OUT/seg$rep.err" | sed "s/^{/{\"run\": $rep, /" | tee -a "$OUT/bench.jsonl"
done
tail -3 "$OUT/seg1.err"
