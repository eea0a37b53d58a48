#!/bin/bash
# Issue 21, 2026-11-24: the four codec/size halves of the 500 small clips. mixed = H.264 360p +
# VP9 240p (as made); swap = VP9 360p + H.264 240p (the re-encodes); all-H.264 and all-VP9. If
# switching codecs cost nothing, time per frame would add up: T(mixed) + T(swap) = T(h264) +
# T(vp9). Random 8-frame clips, 7 sessions, ROUNDS rounds.
set -u
C=target/small-carry; out=$OUT/swap; mkdir -p $out /tmp/b
unxz -c $C/clips.xz > /tmp/b/clips; chmod +x /tmp/b/clips
for set in clips swap h264 vp9; do
  mkdir -p /tmp/set-$set
  for k in 0 1 2 3 4 5 6 7 8 9; do for f in $C/$set/*; do cp $f /tmp/set-$set/v${k}_$(basename $f); done; done
  cat /tmp/set-$set/* > /dev/null
done
for r in $(seq 1 ${ROUNDS:-2}); do
  for set in clips swap h264 vp9; do
    GM_BENCH_MIX=1 GM_BENCH_COPIES=1 GM_BENCH_ACCESS=random GM_BENCH_SESSIONS=7 GM_BENCH_RANDOM_BATCHES=125 \
      GM_BENCH_REPS=3 timeout 200 /tmp/b/clips /tmp/set-$set/* 2>>$out/gm.err \
      | grep '^{' | sed "s/^{/{\"set\":\"$set\",\"round\":$r,/" >> $out/gm.jsonl
  done
done
python3 - $out/gm.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if not d["gop_cache"]:
        print(d["set"], d["round"], d["fps"], d["decoded_per_returned"])
PY
