#!/usr/bin/env bash
# GPU call (issue 42): segmentation against classification, the wheel at 501c29f (old: the GPU
# stage copies each batch's label maps into pinned staging) against this tree's (new: the host
# workers pin them with their taps, the stage uploads each in one copy, uploads from one pinned
# buffer on one stream no longer wait for each other; label maps decoded without a
# second buffer),
# alternated, three rounds each.
set -u
REPO=$PWD; H=$REPO/.hs/g52
date -u | tee "$OUT/env.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/env.txt"; nproc | tee -a "$OUT/env.txt"
mkdir -p /tmp/img && tar -xf "$H/imagenet.tar" -C /tmp/img
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
for v in old new; do
  python3 -m venv /tmp/v$v && echo "$SP" > "$(/tmp/v$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
  /tmp/v$v/bin/pip install -q --no-index --no-deps "$H"/$v/*.whl 2>&1 | tail -2
done
for r in 1 2 3; do for v in old new; do
  GM_BENCH_REPEAT=7 GM_PEERS="gm-classification gm-segmentation" timeout 100 /tmp/v$v/bin/python bench/peers/segmentation_bench.py /tmp/img/imagenet /tmp/segbench 2>>"$OUT/seg.err" | sed "s/^{/{\"round\": $r, \"wheel\": \"$v\", /" | tee -a "$OUT/bench.jsonl"
done; done
