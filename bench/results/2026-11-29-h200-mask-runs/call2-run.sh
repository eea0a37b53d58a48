#!/usr/bin/env bash
# GPU call A (issue 42): COCO masks sent to the GPU as spans of 1s and written there. The
# kernel against its CPU twin, the fused kernel's masks, the loader tests that move masks
# (coco, segmentation, pipeline gpu::), then gm's detection bench alone (masks with targets
# read, masks without, boxes only); the wheel and photos stay for the DALI calls after it.
set -u
REPO=$PWD; H=$REPO/.hs/g70
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
mkdir -p /tmp/b && (cd /tmp/b && for f in "$H"/*.xz; do n=$(basename "$f" .xz); xz -dc "$f" > "$n"; chmod +x "$n"; done)
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT/logs"
for t in "mask_runs_gpu" "fused_gpu" "coco" "segmentation" "pipeline gpu::"; do
  set -- $t
  s=$(date +%s); GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1 timeout 200 /tmp/b/$1 ${2:-} --test-threads=4 > "$OUT/logs/$1.log" 2>&1; rc=$?
  echo "$1 ${2:-} rc=$rc $(( $(date +%s) - s ))s skips=$(grep -c '^SKIP' "$OUT/logs/$1.log") $(grep '^test result' "$OUT/logs/$1.log" | tail -n 1)" | tee -a "$OUT/env.txt"
done
grep -h "panicked\|FAILED" "$OUT"/logs/*.log | head -20
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vcur/bin/pip install -q --no-index --no-deps "$H"/*.whl 2>&1 | tail -2
