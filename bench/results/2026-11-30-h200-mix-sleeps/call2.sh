#!/usr/bin/env bash
# Issue 44: CPU-route jobs hand their NVDEC videos to the NVDEC sessions as parts (call 1
# found the CPU decoders blocked a tenth of their time in NVDEC waits of their own stray H.264
# videos). GPU test of the new build (gm-loader `video`, with the new test
# cpu_route_jobs_hand_their_nvdec_videos_to_the_sessions); then the clip loader, random
# access, 16 NVDEC sessions: AV1 alone and H.264 alone (one path in both builds), and the
# 3:5 and 3:8 AV1 : H.264 mixes, new against old (53bb1e5) alternated over two rounds; one new
# 3:5 row sampled with sleeps.py. Carried: .hs/g141/{video,clips,clips-old}.xz, .hs/g139's
# bench videos and avlibs.tar.xz (FFmpeg 7.1 with libdav1d).
set -u
REPO=$PWD; H=$REPO/.hs/g141; G=$REPO/.hs/g139; W=/tmp/w; START=$(date +%s)
S=$REPO/bench/results/2026-11-30-h200-mix-av1-cost/sleeps.py
mkdir -p $W/ff /tmp/b $OUT/sleeps; cp $G/*.mp4 $W/
tar -xJf $G/avlibs.tar.xz -C $W/ff
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for t in clips clips-old video; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
(export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
 cd $REPO/crates/gm-loader && echo "== video" && timeout 200 /tmp/b/video --nocapture 2>&1 | grep -E "^test |^test result|FAILED|panicked|failed|NVDEC parts|SKIP" | head -40) > $OUT/tests.txt 2>&1
grep -E "^==|test result|FAIL|panick|NVDEC parts" $OUT/tests.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
M35="$A $A $A $B $B $B $B $B"; M38="$A $A $A $B $B $B $B $B $B $B $B"
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { # tag binary files...
  local tag=$1 bin=$2; shift 2
  [ $(( $(date +%s) - START )) -gt 545 ] && { echo "skip $tag" | tee -a $OUT/summary.txt; return; }
  local pre=(); [ "$tag" = mix35-new-1 ] && pre=(python3 $S $OUT/sleeps/$tag.json gm-cpu-route 2 --)
  timeout 75 "${pre[@]}" /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], 'fps', j['fps'], 'spread', j['spread'], 'ms/dec', j.get('cpu_decode_ms_per_decoded_frame'), 'parts cpu', j.get('cpu_parts'), 'nvdec', j.get('nvdec_parts'), 'parked', j.get('parked_jobs'), j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
GM_BENCH_COPIES=4 row av1-1 clips $A
GM_BENCH_COPIES=8 row h264 clips $B
export GM_BENCH_COPIES=1 GM_BENCH_MIX=1
row mix35-new-1 clips $M35
row mix35-old-1 clips-old $M35
row mix38-old-1 clips-old $M38
row mix38-new-1 clips $M38
row mix35-old-2 clips-old $M35
row mix35-new-2 clips $M35
row mix38-new-2 clips $M38
row mix38-old-2 clips-old $M38
GM_BENCH_COPIES=4 GM_BENCH_MIX=0 row av1-2 clips $A
[ -f $OUT/sleeps/mix35-new-1.json ] && python3 -c "
import json; print('sleeps mix35-new-1'); [print('   ', *r) for r in json.load(open('$OUT/sleeps/mix35-new-1.json'))[:12]]" | tee -a $OUT/summary.txt
python3 - $OUT/rows.jsonl <<'EOF' | tee -a $OUT/summary.txt
import json, statistics, sys
rows = {j['tag']: j for j in map(json.loads, open(sys.argv[1]))}
av1 = [rows[t]['fps'] for t in ('av1-1', 'av1-2') if t in rows]
h264 = rows.get('h264', {}).get('fps')
if av1 and h264:
    s = statistics.mean(av1) + h264
    print('sum (mean AV1 %s + H.264 %s) = %.0f' % (av1, h264, s))
    for t, j in rows.items():
        if t.startswith('mix'):
            print('  %-12s %6.0f  %.3f of sum' % (t, j['fps'], j['fps'] / s))
EOF
tail -n 3 $OUT/clips.err
