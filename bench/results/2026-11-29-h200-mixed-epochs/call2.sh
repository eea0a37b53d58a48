#!/usr/bin/env bash
# Issue 44: where a mixed random-access clip loader's host time goes. Tests first (staging
# events), then AV1 alone, H.264 alone, the mix twice, per-thread cores; perf on one mix.
set -u
REPO=$PWD; H=$REPO/.hs/g91; W=/tmp/w
for f in clips video nvdec; do xz -dc $H/$f.xz > $W/$f; chmod +x $W/$f; done
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p $OUT/logs
for t in video nvdec; do
  s=$(date +%s)
  GM_REQUIRE_GPU=1 GM_REQUIRE_LIBAVCODEC=1 GM_FIXTURES="$REPO/tests/media" timeout 200 $W/$t --test-threads=4 > $OUT/logs/$t.log 2>&1; rc=$?
  echo "$t rc=$rc $(( $(date +%s) - s ))s skips=$(grep -c '^SKIP' $OUT/logs/$t.log) $(grep '^test result' $OUT/logs/$t.log | tail -n 1)" | tee -a $OUT/summary.txt
done
export GM_BENCH_REPS=2 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_RANDOM_BATCHES=200 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_COPIES=4
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1; shift; timeout 150 $W/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], j['video'], 'fps', j['fps'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,1), 'cpu_dec', j['cpu_frames_decoded'], j['cpu_decode_ms_per_decoded_frame'], 'ms', j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
row alone $A $B
k=$(python3 -c "
import json
r={j['video']:j['fps'] for j in map(json.loads, open('$OUT/rows.jsonl')) if j['tag']=='alone'}
print(max(1, round(r['bench_1080p_h264.mp4']/r['bench_1080p_av1.mp4'])))")
echo "k=$k" | tee -a $OUT/summary.txt
args="$A"; for i in $(seq $k); do args="$args $B"; done
GM_BENCH_MIX=1 row mix $args
GM_BENCH_MIX=1 GM_BENCH_CPU_DECODERS=12 row mix-cpu12 $args
GM_BENCH_MIX=1 row mix $args
GM_BENCH_MIX=1 GM_BENCH_REPS=1 LD_LIBRARY_PATH=$W/perf/lib:$LD_LIBRARY_PATH timeout 150 $W/perf/perf record -F 199 -g -o $W/mix.data $W/clips $args > $OUT/perf-row.jsonl 2>$OUT/perf.err
LD_LIBRARY_PATH=$W/perf/lib $W/perf/perf report -i $W/mix.data --no-children --sort comm,dso --stdio 2>/dev/null | head -60 > $OUT/perf-comm-dso.txt
LD_LIBRARY_PATH=$W/perf/lib $W/perf/perf report -i $W/mix.data --no-children --sort comm,sym --stdio -g none 2>/dev/null | head -120 > $OUT/perf-sym.txt
tail -3 $OUT/perf.err
