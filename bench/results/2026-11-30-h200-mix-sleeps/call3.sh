#!/usr/bin/env bash
# Issue 44: the mix at the rule's ratio: 3 AV1 files to round(3 x H.264 rate / AV1 rate) H.264 files, the rates taken from this call's
# first two rows; new against old (53bb1e5) alternated over three rounds, then each part alone
# again. Carried: .hs/g141/{clips,clips-old}.xz, .hs/g139's bench videos and avlibs.tar.xz.
# (The Python tests went to call 4: with them the carry passed 64 MiB.)
set -u
REPO=$PWD; H=$REPO/.hs/g141; G=$REPO/.hs/g139; W=/tmp/w; START=$(date +%s)
mkdir -p $W/ff /tmp/b; cp $G/*.mp4 $W/
tar -xJf $G/avlibs.tar.xz -C $W/ff
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for t in clips clips-old; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { # tag binary files...
  local tag=$1 bin=$2; shift 2
  [ $(( $(date +%s) - START )) -gt 545 ] && { echo "skip $tag" | tee -a $OUT/summary.txt; return; }
  timeout 75 /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], 'fps', j['fps'], 'spread', j['spread'], 'ms/dec', j.get('cpu_decode_ms_per_decoded_frame'), 'parts cpu', j.get('cpu_parts'), 'nvdec', j.get('nvdec_parts'), 'parked', j.get('parked_jobs'), j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
GM_BENCH_COPIES=4 row av1-1 clips $A
GM_BENCH_COPIES=8 row h264-1 clips $B
N=$(python3 -c "
import json; r={j['tag']: j['fps'] for j in map(json.loads, open('$OUT/rows.jsonl'))}
print(max(1, round(3 * r['h264-1'] / r['av1-1'])))" 2>/dev/null || echo 6)
echo "rule's ratio 3:$N" | tee -a $OUT/summary.txt
M="$A $A $A"; for _ in $(seq $N); do M="$M $B"; done
export GM_BENCH_COPIES=1 GM_BENCH_MIX=1
row mix-new-1 clips $M
row mix-old-1 clips-old $M
row mix-old-2 clips-old $M
row mix-new-2 clips $M
row mix-new-3 clips $M
row mix-old-3 clips-old $M
export GM_BENCH_MIX=0
GM_BENCH_COPIES=4 row av1-2 clips $A
GM_BENCH_COPIES=8 row h264-2 clips $B
python3 - $OUT/rows.jsonl <<'EOF' | tee -a $OUT/summary.txt
import json, statistics, sys
rows = {j['tag']: j for j in map(json.loads, open(sys.argv[1]))}
av1 = [rows[t]['fps'] for t in ('av1-1', 'av1-2') if t in rows]
h264 = [rows[t]['fps'] for t in ('h264-1', 'h264-2') if t in rows]
s = statistics.mean(av1) + statistics.mean(h264)
print('sum (mean AV1 %s + mean H.264 %s) = %.0f' % (av1, h264, s))
for t, j in rows.items():
    if t.startswith('mix'):
        print('  %-10s %6.0f  %.3f of sum' % (t, j['fps'], j['fps'] / s))
EOF
tail -n 3 $OUT/clips.err
