#!/usr/bin/env bash
# GPU call (issue 42, the 1.5x DALI goal): gm's COCO detection pipeline against DALI's (its SSD
# example's readers.coco, random_bbox_crop, image_slice on the engines, bb_flip, resize 800/1333,
# crop_mirror_normalize, pad) on the same photos and annotations, three rounds alternated; DALI
# at 16 and 8 host threads; gm with masks (its loop reading every image's targets into torch, and not reading them) and with boxes only (as DALI moves them). Both peers' runs make torch's CUDA state first, as a training script has. DALI 2.4.0 and its dependencies arrive as dali.tar.xz.NN chunks,
# one per call (this call's is the last); the photos and gm's wheel are on the machine from the call before.
set -u
REPO=$PWD
mkdir -p /tmp/parts && cp "$REPO"/.hs/d5/dali.tar.xz.* /tmp/parts/
ls -la /tmp/parts | tee "$OUT/parts.txt"
if [ ! -e /tmp/dali/.done ]; then
  mkdir -p /tmp/dali && cat $(ls /tmp/parts/dali.tar.xz.* | sort) | xz -dcT0 | tar xf - -C /tmp/dali && touch /tmp/dali/.done
fi
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  PYTHONPATH=/tmp/dali /tmp/vcur/bin/python -c 'import sys, torch, nvidia.dali as d, gm; print(sys.version.split()[0], torch.__version__, "dali", d.__version__)'; } 2>&1 | tee "$OUT/env.txt"
cd bench/peers
export GM_BENCH_REPEAT=8
for r in 1 2 3; do
  for p in "gm 1 batch" "gm 1 none" "gm 0 batch" "gm 0 none" "dali 1 batch"; do
    set -- $p
    PYTHONPATH=/tmp/dali GM_PEERS=$1 GM_DALI_THREADS=8 GM_DET_MASKS=$2 GM_DET_IMPORT=$3 timeout 100 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m$2 2>>"$OUT/det.err" \
      | sed "s/^{/{\"round\": $r, /" | tee -a "$OUT/detection.jsonl"
  done
done
tail -n 5 "$OUT/det.err"
