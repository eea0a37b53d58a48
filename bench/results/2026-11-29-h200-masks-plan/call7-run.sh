#!/usr/bin/env bash
# GPU call 2 (issue 42, COCO detection against DALI): where gm's detection pipeline spends its
# time. Variants, two rounds: the bench as it ran against DALI (masks, targets read); targets
# unread; boxes only (annotations without outlines, as DALI moves them); 12 host workers;
# engines-only decode (LOCAL_WORLD_SIZE=2, cores 16). Then one py-spy profile (native) of the
# default variant.
set -u
REPO=$PWD; H=$REPO/.hs/g61
date -u | tee "$OUT/env.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/env.txt"; nproc | tee -a "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/img && tar -xf "$H/imagenet.tar" -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vcur/bin/pip install -q --no-index --no-deps "$H"/*.whl 2>&1 | tail -2
cd bench/peers
det() { # LABEL [ENV...]
  local label=$1; shift
  env GM_PEERS=gm "$@" timeout 100 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-$label 2>>"$OUT/det.err" \
    | grep '"peer"' | sed "s/^{/{\"round\": $r, \"variant\": \"$label\", /" | tee -a "$OUT/detection.jsonl"
}
for r in 1 2; do
  det default
  det no-targets GM_DET_TARGETS=0
  det boxes-only GM_DET_MASKS=0
  det workers12 GM_BENCH_WORKERS=12
  det engines LOCAL_WORLD_SIZE=2 GM_BENCH_CORES=16
done
r=3 GM_PEERS=gm GM_BENCH_EPOCHS=6 timeout 150 "$H/py-spy" record --native --rate 200 --format raw -o "$OUT/det-default.raw" -- /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-prof > "$OUT/prof.jsonl" 2>>"$OUT/det.err"
tail -3 "$OUT/det.err"; ls -la "$OUT"
