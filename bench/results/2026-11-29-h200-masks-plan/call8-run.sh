#!/usr/bin/env bash
# GPU call 3 (issue 42): the loader tests after this session's changes (COCO outlines of one
# polygon not re-encoded, RLE decoded without a division per pixel, masks' plans on the engines
# alone with 12 workers, targets moved on the consumer's thread); segmentation against
# classification at the defaults, three rounds; detection (gm alone, masks and boxes only).
set -u
REPO=$PWD; H=$REPO/.hs/g62
date -u | tee "$OUT/env.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/env.txt"; nproc | tee -a "$OUT/env.txt"
mkdir -p /tmp/b && (cd /tmp/b && for f in "$H"/*.xz; do n=$(basename "$f" .xz); xz -dc "$f" > "$n"; chmod +x "$n"; done)
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT/logs"
for t in "coco" "segmentation" "pipeline gpu::"; do
  set -- $t
  s=$(date +%s); GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1 timeout 200 /tmp/b/$1 ${2:-} --test-threads=4 > "$OUT/logs/$1.log" 2>&1; rc=$?
  echo "$1 ${2:-} rc=$rc $(( $(date +%s) - s ))s skips=$(grep -c '^SKIP' "$OUT/logs/$1.log") $(grep '^test result' "$OUT/logs/$1.log" | tail -n 1)" | tee -a "$OUT/env.txt"
done
grep -h "panicked\|FAILED" "$OUT"/logs/*.log | head -20
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
mkdir -p /tmp/img && tar -xf "$H/imagenet.tar" -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vcur/bin/pip install -q --no-index --no-deps "$H"/*.whl 2>&1 | tail -2
for r in 1 2 3; do
  GM_BENCH_REPEAT=7 GM_PEERS="gm-classification gm-segmentation" timeout 100 /tmp/vcur/bin/python bench/peers/segmentation_bench.py /tmp/img/imagenet /tmp/segbench 2>>"$OUT/seg.err" | sed "s/^{/{\"round\": $r, /" | tee -a "$OUT/seg.jsonl"
done
cd bench/peers
for r in 1 2; do
  for v in 1 0; do
    GM_PEERS=gm GM_DET_MASKS=$v timeout 100 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$v 2>>"$OUT/det.err" | grep '"peer"' | sed "s/^{/{\"round\": $r, /" | tee -a "$OUT/det.jsonl"
  done
done
