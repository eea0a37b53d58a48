#!/usr/bin/env bash
# GPU tests for this tree (issue 42): uploads from one pinned buffer on one stream no longer
# wait for each other (gm-cuda), masks pinned and planned by the host workers (gm-loader), and
# the crates whose uploads go through pinned buffers (gm-codec's JPEG finish, the AV1 CPU route).
set -u
REPO=$PWD; H=$REPO/.hs/g53
date -u | tee "$OUT/env.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/env.txt"
mkdir -p /tmp/b && (cd /tmp/b && for f in "$H"/*.xz; do n=$(basename "$f" .xz); xz -dc "$f" > "$n"; chmod +x "$n"; done)
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
mkdir -p "$OUT/logs"
for t in "cuda_gpu" "coco" "segmentation" "pipeline gpu::" "jpeg_gpu" "bundled_av1"; do
  set -- $t
  s=$(date +%s); timeout 240 /tmp/b/$1 ${2:-} --test-threads=4 > "$OUT/logs/$1.log" 2>&1; rc=$?
  echo "$1 ${2:-} rc=$rc $(( $(date +%s) - s ))s skips=$(grep -c '^SKIP' "$OUT/logs/$1.log") $(grep '^test result' "$OUT/logs/$1.log" | tail -n 1)" | tee -a "$OUT/env.txt"
done
grep -h "uploads_one_buffer\|panicked\|FAILED" "$OUT"/logs/*.log | head -20
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
