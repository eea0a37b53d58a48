#!/usr/bin/env bash
# Target dicts built when batch.targets is first read: the GPU pytest cases, then gm's
# segmentation against classification (loader stats) and detection.
set -u
REPO=$PWD; H=$REPO/.hs/g30
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/summary.txt"
python3 -m venv /tmp/gmv && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/gradient_mechanics_rs-*.whl "$H"/whl/*.whl
(cd crates/gm-python && GM_FIXTURES="$REPO/tests/media" timeout 100 /tmp/gmv/bin/python -m pytest -q -p no:cacheprovider tests/test_coco.py tests/test_segmentation.py tests/gpu/test_torch.py -k "coco or segmentation or detection or mask" > "$OUT/pytest.txt" 2>&1; tail -1 "$OUT/pytest.txt" | tee -a "$OUT/summary.txt")
export GM_BENCH_REPEAT=7
for rep in 1 2; do
  GM_PEERS="gm-classification gm-segmentation" timeout 60 /tmp/gmv/bin/python bench/peers/segmentation_bench.py "$H/imagenet" /tmp/segbench 2>>"$OUT/bench.err" | sed "s/^{/{\"run\": $rep, /" | tee -a "$OUT/bench.jsonl"
done
GM_PEERS=gm timeout 100 /tmp/gmv/bin/python bench/peers/detection_bench.py "$H/imagenet" /tmp/detbench 2>>"$OUT/bench.err" | sed "s/^{/{\"run\": 1, /" | tee -a "$OUT/bench.jsonl"
