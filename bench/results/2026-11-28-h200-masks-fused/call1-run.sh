#!/usr/bin/env bash
# Issue 42: masks moved in the fused launch. GPU tests (kernel twin, loaders), then the
# segmentation and detection benches with this build.
set -u
REPO=$PWD; H=$REPO/.hs/g30
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/summary.txt"
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
mkdir -p /tmp/bins
for b in "$H"/bin/*.xz; do n=$(basename "$b" .xz); xz -dc "$b" > /tmp/bins/$n; chmod +x /tmp/bins/$n; done
for n in fused_gpu segmentation coco; do
  (cd crates/$( [ $n = fused_gpu ] && echo gm-transforms || echo gm-loader ) && timeout 200 /tmp/bins/$n --test-threads=4 > /tmp/test_$n.txt 2>&1; echo "$n rc=$? $(grep -E '^test result' /tmp/test_$n.txt)" | tee -a "$OUT/summary.txt"; grep -E -A3 "panicked|^seed" /tmp/test_$n.txt >> "$OUT/summary.txt")
done
python3 -m venv /tmp/gmv && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/gradient_mechanics_rs-*.whl "$H"/whl/*.whl
/tmp/gmv/bin/python -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)" | tee -a "$OUT/summary.txt"
(cd crates/gm-python && timeout 150 /tmp/gmv/bin/python -m pytest -q -p no:cacheprovider tests/test_coco.py tests/test_segmentation.py tests/gpu/test_torch.py -k "coco or segmentation or detection or mask" > "$OUT/pytest.txt" 2>&1; tail -3 "$OUT/pytest.txt" | tee -a "$OUT/summary.txt")
export GM_BENCH_REPEAT=7
for rep in 1 2; do
  timeout 120 /tmp/gmv/bin/python bench/peers/segmentation_bench.py "$H/imagenet" /tmp/segbench 2>"$OUT/seg$rep.err" | sed "s/^{/{\"run\": $rep, /" | tee -a "$OUT/bench.jsonl"
done
timeout 240 /tmp/gmv/bin/python bench/peers/detection_bench.py "$H/imagenet" /tmp/detbench 2>"$OUT/det.err" | sed "s/^{/{\"run\": 1, /" | tee -a "$OUT/bench.jsonl"
