#!/usr/bin/env bash
# Session 2026-11-29b: GPU tests of HEAD + the aa-table change (gm-transforms fused/geometry/
# colour/mask_runs, gm-loader coco, gm-python GPU torch/apply/coco), venv for the bench.
set -u
REPO=$PWD; H=$REPO/.hs/g110
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/img /tmp/b /tmp/parts && tar -xf $H/imagenet.tar -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
rm -rf /tmp/vnew; python3 -m venv /tmp/vnew && echo "$SP" > "$(/tmp/vnew/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vnew/bin/pip install -q --no-index --no-deps $H/new/*.whl 2>&1 | tail -2
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
for t in fused_gpu geometry_gpu colour_gpu mask_runs_gpu coco; do
  xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t
  echo "== $t" | tee -a "$OUT/tests.txt"
  (cd crates/$([ $t = coco ] && echo gm-loader || echo gm-transforms) && timeout 200 /tmp/b/$t 2>&1) | grep -E "^test result|FAILED|panicked|SKIP|failed" | tee -a "$OUT/tests.txt"
done
(cd crates/gm-python/tests && timeout 360 /tmp/vnew/bin/python -m pytest -q -p no:cacheprovider gpu/ test_coco.py 2>&1 | tail -12) | tee -a "$OUT/tests.txt"
