#!/bin/bash
# Issue 21, 2026-11-24: grouping a job's videos by codec (decode.rs `group_by_codec`), old
# (first-use order: random clips alternate codecs) against new, on the 500 small clips mixed
# and in one codec, random 8-frame clips, 1 and 7 sessions, ROUNDS rounds.
set -u
C=target/small-carry; out=$OUT/group; mkdir -p $out /tmp/b
unxz -c $C/clips.xz > /tmp/b/clips-old; unxz -c $C/clips-new.xz > /tmp/b/clips-new; chmod +x /tmp/b/*
for set in clips h264 vp9; do
  mkdir -p /tmp/set-$set
  for k in 0 1 2 3 4 5 6 7 8 9; do for f in $C/$set/*; do cp $f /tmp/set-$set/v${k}_$(basename $f); done; done
  cat /tmp/set-$set/* > /dev/null
done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; date -u; } > $out/env.txt
run() {  # set sessions variant batches
  GM_BENCH_MIX=1 GM_BENCH_COPIES=1 GM_BENCH_ACCESS=random GM_BENCH_SESSIONS=$2 GM_BENCH_RANDOM_BATCHES=$4 \
    GM_BENCH_REPS=3 timeout 200 /tmp/b/clips-$3 /tmp/set-$1/* 2>>$out/gm.err \
    | grep '^{' | sed "s/^{/{\"set\":\"$1\",\"variant\":\"$3\",\"round\":$r,/" >> $out/gm.jsonl
}
for r in $(seq 1 ${ROUNDS:-2}); do
  echo "round $r $(date -u +%T)" >> $out/run.log
  for s in 7 1; do
    b=$([ $s = 1 ] && echo 40 || echo 125)
    run clips $s old $b; run clips $s new $b
    [ $r = 1 ] && { run h264 $s new $b; run vp9 $s new $b; }
  done
done
python3 - $out/gm.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if not d["gop_cache"]:
        print(d["set"], d["variant"], d["round"], d["sessions"], d["fps"], d["decoded_per_returned"])
PY
