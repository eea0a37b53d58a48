#!/usr/bin/env bash
# GPU call 4 (issue 42): segmentation against classification with masks' plans on the engines
# alone now also from Python (three rounds); then where the consumer's time in reading a COCO
# batch's targets goes: detection, boxes only, under py-spy (native stacks), and the same
# run unprofiled with the loop reading only the boxes' shapes.
set -u
REPO=$PWD; H=$REPO/.hs/g63
date -u | tee "$OUT/env.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/img && tar -xf "$H/imagenet.tar" -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vcur/bin/pip install -q --no-index --no-deps "$H"/*.whl 2>&1 | tail -2
for r in 1 2 3; do
  GM_BENCH_REPEAT=7 GM_PEERS="gm-classification gm-segmentation" timeout 100 /tmp/vcur/bin/python bench/peers/segmentation_bench.py /tmp/img/imagenet /tmp/segbench 2>>"$OUT/seg.err" | sed "s/^{/{\"round\": $r, /" | tee -a "$OUT/seg.jsonl"
done
cd bench/peers
GM_PEERS=gm GM_DET_MASKS=0 GM_BENCH_EPOCHS=10 GM_BENCH_REPEAT=8 timeout 200 "$H/py-spy" record --native --rate 100 --format raw -o "$OUT/boxes.raw" -- /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m0 > "$OUT/prof.jsonl" 2>>"$OUT/det.err"
GM_PEERS=gm GM_DET_MASKS=1 GM_BENCH_EPOCHS=6 GM_BENCH_REPEAT=8 timeout 200 "$H/py-spy" record --native --rate 100 --format raw -o "$OUT/masks.raw" -- /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m1 >> "$OUT/prof.jsonl" 2>>"$OUT/det.err"
grep peer "$OUT/prof.jsonl"; tail -3 "$OUT/det.err"
