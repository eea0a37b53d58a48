#!/usr/bin/env bash
# Issue 42: GPU tests of "new" (targets uploaded by the stages) and setup of the venvs
# (cur: targets moved on the stages, uploaded by the loop; new) for the DALI call.
set -u
REPO=$PWD; H=$REPO/.hs/g106
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/img /tmp/b && tar -xf $H/imagenet.tar -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
for v in cur new; do rm -rf /tmp/v$v; python3 -m venv /tmp/v$v && echo "$SP" > "$(/tmp/v$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
  /tmp/v$v/bin/pip install -q --no-index --no-deps $H/$v/*.whl 2>&1 | tail -2; done
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
xz -dc $H/coco.xz > /tmp/b/coco && chmod +x /tmp/b/coco
timeout 200 /tmp/b/coco 2>&1 | grep -E "^test |^test result|FAILED|panicked|SKIP" | tee -a "$OUT/tests.txt"
