#!/usr/bin/env bash
# GPU call: gm-codec's JPEG GPU tests with the shared photos (their pinned uploads under the
# new same-stream copy rule), then segmentation's host workers: 8 (the core plan's), 6, 4.
set -u
REPO=$PWD; H=$REPO/.hs/g54
date -u | tee "$OUT/env.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/env.txt"
mkdir -p /tmp/b && xz -dc "$H/jpeg_gpu.xz" > /tmp/b/jpeg_gpu && chmod +x /tmp/b/jpeg_gpu
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
GM_SHARED_MEDIA="$H" GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1 timeout 120 /tmp/b/jpeg_gpu --test-threads=4 > "$OUT/jpeg_gpu.log" 2>&1; rc=$?
echo "jpeg_gpu rc=$rc skips=$(grep -c '^SKIP' "$OUT/jpeg_gpu.log") $(grep '^test result' "$OUT/jpeg_gpu.log" | tail -n 1)" | tee -a "$OUT/env.txt"
mkdir -p /tmp/img && tar -xf "$H/imagenet.tar" -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv /tmp/vn && echo "$SP" > "$(/tmp/vn/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vn/bin/pip install -q --no-index --no-deps "$H"/*.whl 2>&1 | tail -2
row() { GM_BENCH_REPEAT=7 GM_PEERS="$1" timeout 60 /tmp/vn/bin/python bench/peers/segmentation_bench.py /tmp/img/imagenet /tmp/segbench 2>>"$OUT/seg.err" | grep '"peer"' | sed "s/^{/{\"workers\": \"${GM_BENCH_WORKERS:-default}\", /" | tee -a "$OUT/bench.jsonl"; }
for r in 1 2; do
  unset GM_BENCH_WORKERS; row gm-classification
  for w in default 6 4; do
    if [ $w = default ]; then unset GM_BENCH_WORKERS; else export GM_BENCH_WORKERS=$w; fi
    row gm-segmentation
  done
done
