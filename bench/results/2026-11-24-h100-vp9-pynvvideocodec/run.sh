#!/bin/bash
# Issue 21, 2026-11-24: 1080p VP9 (WebM) on NVDEC, gm against PyNvVideoCodec 2.2.4 in the same
# call, H.264 as the control: gm-codec's nvdec bench (sequential 1..8 sessions, random clips and
# frames through 7 sessions) and bench/peers/pynvvideocodec_bench.py (1..8 decoders, random
# clips and frames with 1 and 7), ROUNDS rounds alternating.
set -u
C=target/vp9-carry; out=$OUT/vp9; mkdir -p $out /tmp/b
unxz -c $C/nvdec.xz > /tmp/b/nvdec; chmod +x /tmp/b/nvdec
[ -e /tmp/pynv/.done ] || { python3 -m pip install -q --no-index --no-deps --target /tmp/pynv $C/whl/pynvvideocodec-*.whl && touch /tmp/pynv/.done; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; date -u
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
  PYTHONPATH=/tmp/pynv python3 -c 'import PyNvVideoCodec as n; print("PyNvVideoCodec", getattr(n, "__version__", "2.2.4"))'; } > $out/env.txt 2>&1
cat $C/videos/* > /dev/null
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in bench_1080p_vp9.webm bench_1080p_h264.mp4; do
    echo "round $r $v gm $(date -u +%T)" >> $out/run.log
    timeout 200 /tmp/b/nvdec $C/videos/$v 2>>$out/gm.err | grep '^{' | sed "s/^{/{\"round\":$r,/" >> $out/gm.jsonl
    echo "round $r $v peer $(date -u +%T)" >> $out/run.log
    PYTHONPATH=/tmp/pynv timeout 200 python3 bench/peers/pynvvideocodec_bench.py $C/videos/$v 2>>$out/peer.err \
      | grep '^{' | sed "s/^{/{\"round\":$r,/" >> $out/peer.jsonl
  done
done
echo "done $(date -u +%T)" >> $out/run.log
tail -3 $out/*.err
