#!/usr/bin/env bash
# Issue 42: semantic segmentation's pipeline against classification's on the same images (gm,
# and torchvision's segmentation pipeline beside them), and the Python COCO/segmentation
# suites with this build.
set -u
REPO=$PWD; H=$REPO/.hs/g22
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/summary.txt"; nproc | tee -a "$OUT/summary.txt"; date -u | tee -a "$OUT/summary.txt"
python3 -m venv /tmp/gmv && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/gradient_mechanics_rs-*.whl
/tmp/gmv/bin/python -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)" | tee -a "$OUT/summary.txt"
for rep in 1 2; do
  timeout 200 /tmp/gmv/bin/python bench/peers/segmentation_bench.py "$H/imagenet" /tmp/segbench 2>"$OUT/bench$rep.err" | sed "s/^{/{\"run\": $rep, /" | tee -a "$OUT/segmentation.jsonl"
done
(cd crates/gm-python && GM_FIXTURES="$REPO/tests/media" timeout 150 /tmp/gmv/bin/python -m pytest -q -p no:cacheprovider tests/test_coco.py tests/test_segmentation.py tests/gpu/test_torch.py -k "coco or segmentation or detection or mask" > "$OUT/pytest.txt" 2>&1; tail -3 "$OUT/pytest.txt" | tee -a "$OUT/summary.txt")
