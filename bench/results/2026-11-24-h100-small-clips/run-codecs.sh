#!/bin/bash
# Issue 21, 2026-11-24: the clip loader on the 500 small videos as made (VP9 and H.264 mixed,
# alternating) against the same clips re-encoded to one codec (h264/: the VP9 clips as H.264,
# 428x240 (libx264 needs an even width), GOP 24; vp9/: the H.264 clips as VP9, GOP 60), each
# set copied to 500 distinct files; random 8-frame clips, 7 sessions, ROUNDS rounds
# alternating the sets.
set -u
C=target/small-carry; out=$OUT/codecs; mkdir -p $out /tmp/b
unxz -c $C/clips.xz > /tmp/b/clips; chmod +x /tmp/b/clips
for set in clips h264 vp9; do
  mkdir -p /tmp/set-$set
  for k in 0 1 2 3 4 5 6 7 8 9; do for f in $C/$set/*; do cp $f /tmp/set-$set/v${k}_$(basename $f); done; done
  cat /tmp/set-$set/* > /dev/null
done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; date -u; ls /tmp/set-clips | wc -l; } > $out/env.txt
for r in $(seq 1 ${ROUNDS:-2}); do
  for set in clips h264 vp9; do
    echo "round $r $set $(date -u +%T)" >> $out/run.log
    GM_BENCH_MIX=1 GM_BENCH_COPIES=1 GM_BENCH_ACCESS=${ACCESS:-random} GM_BENCH_SESSIONS=7 GM_BENCH_RANDOM_BATCHES=125 \
      GM_BENCH_REPS=3 timeout 200 /tmp/b/clips /tmp/set-$set/* 2>>$out/gm.err \
      | grep '^{' | sed "s/^{/{\"set\":\"$set\",\"round\":$r,/" >> $out/gm.jsonl
  done
done
python3 - $out/gm.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    print(d["set"], d["round"], d["access"], d["gop_cache"], d["fps"], d["decoded_per_returned"], d["decoders_created"])
PY
