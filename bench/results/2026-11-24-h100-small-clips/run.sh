#!/bin/bash
# Issue 21, 2026-11-24: random 8-frame clips over 500 small videos (bench/data/make_small_clips.sh:
# 50 clips of 2-10 s, VP9 427x240 12 fps and H.264 640x360 30 fps, each copied to 10 distinct
# files here), gm's clip loader (7 sessions, 224x224 RGB u8, batches of 8, with and without the
# GOP cache) against PyNvVideoCodec 2.2.4 (1 and 7 decoders, a SimpleDecoder per clip's video)
# on the same clips (gm's first measured epoch, written by the bench), with nvidia-smi dmon's
# decoder utilisation during each. ROUNDS rounds.
set -u
C=target/small-carry; out=$OUT/small; mkdir -p $out /tmp/b /tmp/small
unxz -c $C/clips.xz > /tmp/b/clips; chmod +x /tmp/b/clips
[ -e /tmp/pynv/.done ] || { python3 -m pip install -q --no-index --no-deps --target /tmp/pynv $C/pynvvideocodec-*.whl && touch /tmp/pynv/.done; }
for k in 0 1 2 3 4 5 6 7 8 9; do for f in $C/clips/*; do cp $f /tmp/small/v${k}_$(basename $f); done; done
ls /tmp/small | wc -l > $out/files.txt; du -sh /tmp/small >> $out/files.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; date -u; } > $out/env.txt
cat /tmp/small/* > /dev/null
for r in $(seq 1 ${ROUNDS:-2}); do
  echo "round $r gm $(date -u +%T)" >> $out/run.log
  nvidia-smi dmon -s u -d 1 -o T > $out/dmon-gm-$r.txt 2>&1 & dm=$!
  GM_BENCH_MIX=1 GM_BENCH_COPIES=1 GM_BENCH_ACCESS=random GM_BENCH_SESSIONS=7 GM_BENCH_RANDOM_BATCHES=125 \
    GM_BENCH_REPS=3 GM_BENCH_EPISODES=$out timeout 240 /tmp/b/clips /tmp/small/* 2>>$out/gm.err \
    | grep '^{' | sed "s/^{/{\"round\":$r,/" >> $out/gm.jsonl
  kill $dm
  echo "round $r peer $(date -u +%T)" >> $out/run.log
  nvidia-smi dmon -s u -d 1 -o T > $out/dmon-peer-$r.txt 2>&1 & dm=$!
  GM_BENCH_CLIPS=$out/random-mix.json PYTHONPATH=/tmp/pynv timeout 300 python3 bench/peers/pynvvideocodec_bench.py \
    2>>$out/peer.err | grep '^{' | sed "s/^{/{\"round\":$r,/" >> $out/peer.jsonl
  kill $dm
done
echo "done $(date -u +%T)" >> $out/run.log
cat $out/gm.jsonl $out/peer.jsonl; tail -n 3 $out/gm.err $out/peer.err
