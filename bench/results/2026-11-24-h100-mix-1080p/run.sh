#!/bin/bash
# Issue 21, 2026-11-24: the 1080p three-codec mix (bench/data/make_videos.sh's H.264, HEVC and
# VP9 clips of the same 10 s, each listed 16 times, interleaved) in random access, old (main)
# against new (a job's videos grouped by codec), 7 and 1 sessions, and each file alone (old),
# ROUNDS rounds.
set -u
C=target/mix-carry; out=$OUT/mix; mkdir -p $out /tmp/b
for v in old new; do unxz -c $C/clips-$v.xz > /tmp/b/clips-$v; done; chmod +x /tmp/b/*
cat $C/videos/* > /dev/null
V="$C/videos/bench_1080p_h264.mp4 $C/videos/bench_1080p_hevc.mp4 $C/videos/bench_1080p_vp9.webm"
run() {  # label variant sessions batches mix files...
  local label=$1 v=$2 s=$3 b=$4 mix=$5; shift 5
  GM_BENCH_MIX=$mix GM_BENCH_COPIES=16 GM_BENCH_ACCESS=random GM_BENCH_SESSIONS=$s GM_BENCH_RANDOM_BATCHES=$b \
    GM_BENCH_REPS=3 timeout 200 /tmp/b/clips-$v "$@" 2>>$out/gm.err \
    | grep '^{' | sed "s/^{/{\"label\":\"$label\",\"variant\":\"$v\",\"round\":$r,/" >> $out/gm.jsonl
}
for r in $(seq 1 ${ROUNDS:-2}); do
  echo "round $r $(date -u +%T)" >> $out/run.log
  for s in 7 1; do
    b=$([ $s = 1 ] && echo 20 || echo 60)
    run mix old $s $b 1 $V; run mix new $s $b 1 $V
    [ $r = 1 ] && run alone old $s $b 0 $V
  done
done
python3 - $out/gm.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if not d["gop_cache"]:
        print(d["label"], d["variant"], d["round"], d["video"], d["sessions"], d["fps"], d["decoded_per_returned"])
PY
