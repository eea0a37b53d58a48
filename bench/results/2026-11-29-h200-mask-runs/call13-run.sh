#!/usr/bin/env bash
# GPU call (issue 42): COCO's spans packed into the stage's one upload; a loader whose masks
# are runs keeps the image plan. The loader tests that move masks, gm-python's GPU tests of
# targets; installs the wheel for the bench call after it.
set -u
REPO=$PWD; H=$REPO/.hs/g75
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
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
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vcur/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/*.whl 2>&1 | tail -2
(cd crates/gm-python/tests && GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1 timeout 200 /tmp/vcur/bin/python -m pytest -q -p no:cacheprovider \
   gpu/test_torch.py -k "torch_targets or detection or loader_batches" 2>&1 | tail -5) | tee -a "$OUT/env.txt"
