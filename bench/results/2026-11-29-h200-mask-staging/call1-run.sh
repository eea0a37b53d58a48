#!/usr/bin/env bash
# GPU call: the review mends (apply masks' taps from the pool, the kernel without the blocks'
# precision fallback, the device masks' count check) and the host workers' pinned masks
# (issue 42): tests, then segmentation against classification, 3 then 4 GPU stages.
set -u
REPO=$PWD; H=$REPO/.hs/g50
date -u | tee "$OUT/env.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/env.txt"; nproc | tee -a "$OUT/env.txt"
mkdir -p /tmp/b && (cd /tmp/b && for f in "$H"/*.xz; do n=$(basename "$f" .xz); xz -dc "$f" > "$n"; chmod +x "$n"; done)
mkdir -p /tmp/img && tar -xf "$H/imagenet.tar" -C /tmp/img
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
mkdir -p "$OUT/logs"
for t in fused_gpu coco segmentation; do
  s=$(date +%s); timeout 200 /tmp/b/$t --test-threads=4 > "$OUT/logs/$t.log" 2>&1; rc=$?
  echo "$t rc=$rc $(( $(date +%s) - s ))s skips=$(grep -c '^SKIP' "$OUT/logs/$t.log") $(grep '^test result' "$OUT/logs/$t.log" | tail -n 1)" | tee -a "$OUT/env.txt"
done
python3 -m venv /tmp/gmv && SP=$(python3 -c 'import site; print(site.getsitepackages()[0])') && echo "$SP" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps "$H"/*.whl 2>&1 | tail -2
cd crates/gm-python
s=$(date +%s); timeout 240 /tmp/gmv/bin/python -m pytest -q -p no:cacheprovider tests/gpu/test_apply_gpu.py tests/test_apply.py tests/test_coco.py tests/test_segmentation.py > "$OUT/logs/pytest.log" 2>&1; rc=$?
echo "pytest rc=$rc $(( $(date +%s) - s ))s $(tail -n 1 "$OUT/logs/pytest.log")" | tee -a "$OUT/env.txt"
cd "$REPO"
for cfg in "1 default" "2 default" "3 4" "4 4"; do
  set -- $cfg
  if [ "$2" = default ]; then unset GM_BENCH_STAGES; else export GM_BENCH_STAGES=$2; fi
  GM_BENCH_REPEAT=7 GM_PEERS="gm-classification gm-segmentation" timeout 150 /tmp/gmv/bin/python bench/peers/segmentation_bench.py /tmp/img/imagenet /tmp/segbench 2>"$OUT/seg$1.err" | sed "s/^{/{\"run\": $1, /" | tee -a "$OUT/bench.jsonl"
done
unset GM_BENCH_STAGES
GM_BENCH_REPEAT=7 GM_PEERS="torchvision-segmentation" timeout 100 /tmp/gmv/bin/python bench/peers/segmentation_bench.py /tmp/img/imagenet /tmp/segbench 2>"$OUT/tv.err" | sed "s/^{/{\"run\": 5, /" | tee -a "$OUT/bench.jsonl"
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
