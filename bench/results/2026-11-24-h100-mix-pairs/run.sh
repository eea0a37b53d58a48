#!/bin/bash
# Issue 21: is the 1080p mixed-codec loss the engines' or the loader's? Two clips-bench
# processes at once (4 + 3 sessions, one file each, random 8-frame clips), same codec against
# different codecs: the engines see one codec per decoder object either way, so a loss in the
# mixed pairs is the hardware's.
set -u
C=target/mix-carry; out=$OUT/pairs; mkdir -p $out /tmp/b
unxz -c $C/clips-old.xz > /tmp/b/clips; chmod +x /tmp/b/clips
cat $C/videos/* > /dev/null
declare -A F=([h264]=$C/videos/bench_1080p_h264.mp4 [hevc]=$C/videos/bench_1080p_hevc.mp4 [vp9]=$C/videos/bench_1080p_vp9.webm)
one() {  # label codec sessions batches mix files
  local label=$1 codec=$2 s=$3 b=$4 mix=$5; shift 5
  GM_BENCH_MIX=$mix GM_BENCH_COPIES=16 GM_BENCH_ACCESS=random GM_BENCH_SESSIONS=$s GM_BENCH_RANDOM_BATCHES=$b \
    GM_BENCH_REPS=3 GM_BENCH_GOP_CACHE=0 timeout 200 /tmp/b/clips "$@" 2>>$out/gm.err \
    | grep '^{' | sed "s/^{/{\"label\":\"$label\",\"codec\":\"$codec\",/" >> $out/gm.jsonl
}
pair() {  # a b
  echo "pair $1+$2 $(date -u +%T)" >> $out/run.log
  one "pair:$1+$2" $1 4 40 0 ${F[$1]} &
  one "pair:$1+$2" $2 3 30 0 ${F[$2]} &
  wait
}
for c in h264 hevc vp9; do one alone7 $c 7 60 0 ${F[$c]}; done
pair h264 h264; pair hevc hevc; pair vp9 vp9
pair h264 hevc; pair hevc h264; pair h264 vp9; pair vp9 hevc
one mix2 h264+hevc 7 60 1 ${F[h264]} ${F[hevc]}
echo "done $(date -u +%T)" >> $out/run.log
python3 - $out/gm.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d.get("gop_cache"): continue
    s = d["session_us_per_frame"]
    print(d["label"], d["codec"], d["sessions"], d["fps"], d["seconds"], s["submit"], s["map"], s["idle"])
PY
