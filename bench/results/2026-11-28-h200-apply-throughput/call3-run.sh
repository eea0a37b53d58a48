#!/usr/bin/env bash
# Issue 42 item 5: masks moved in the launch for Transform.__call__; the apply GPU tests, the
# COCO / segmentation GPU tests, and the apply bench (host time, masks rows).
set -u
REPO=$PWD; H=$REPO/.hs/g45
mkdir -p /tmp/g && cp -r "$H"/* /tmp/g/ && H=/tmp/g
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; } | tee "$OUT/summary.txt"
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
python3 -m venv /tmp/gmv && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall $H/gradient_mechanics_rs-*.whl
/tmp/gmv/bin/python -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)" | tee -a "$OUT/summary.txt"
(cd crates/gm-python && timeout 240 /tmp/gmv/bin/python -m pytest -q -p no:cacheprovider tests/gpu/test_apply_gpu.py tests/test_apply.py tests/test_coco.py tests/test_segmentation.py > "$OUT/pytest.txt" 2>&1; echo "pytest rc=$?" | tee -a "$OUT/summary.txt")
tail -30 "$OUT/pytest.txt" | tee -a "$OUT/summary.txt"
(cd bench/peers && timeout 200 /tmp/gmv/bin/python apply_bench.py > "$OUT/apply_bench.jsonl" 2> "$OUT/apply_bench.err"; echo "apply_bench rc=$?" | tee -a "$OUT/summary.txt")
cat "$OUT/apply_bench.jsonl"; tail -5 "$OUT/apply_bench.err"
