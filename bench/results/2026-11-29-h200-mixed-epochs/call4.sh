#!/usr/bin/env bash
# Issue 44: the mixed random-access loader over whole epochs (as training runs them) against
# each part alone over the same files; then the bench's old truncated epochs (200 batches),
# old and new binary (parts of a dropped epoch dropped). Video tests first.
set -u
REPO=$PWD; H=$REPO/.hs/g92; W=/tmp/w
for f in clips clips_old video; do xz -dc $H/$f.xz > $W/$f; chmod +x $W/$f; done
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/env.txt; nproc >> $OUT/env.txt; date -u >> $OUT/env.txt
s=$(date +%s)
GM_REQUIRE_GPU=1 GM_REQUIRE_LIBAVCODEC=1 GM_FIXTURES="$REPO/tests/media" timeout 200 $W/video --test-threads=4 --nocapture > $OUT/video.log 2>&1; rc=$?
echo "video rc=$rc $(( $(date +%s) - s ))s skips=$(grep -c '^SKIP' $OUT/video.log) $(grep '^test result' $OUT/video.log | tail -n 1)" | tee -a $OUT/summary.txt
grep -h "parts dropped with" $OUT/video.log | tee -a $OUT/summary.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local bin=$1 tag=$2; shift 2; timeout 170 $W/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"bin\":\"$bin\",\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['bin'], j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'frames', j['frames'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,1), 'cpu_dec', j['cpu_frames_decoded'], j['cpu_decode_ms_per_decoded_frame'], 'ms parts', j['cpu_parts'], j.get('cpu_parts_dropped'), j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
export GM_BENCH_RANDOM_BATCHES=100000
GM_BENCH_COPIES=4 row clips alone-whole $A
GM_BENCH_COPIES=12 row clips alone-whole $B
GM_BENCH_COPIES=4 GM_BENCH_MIX=1 row clips mix-whole $A $B $B $B
GM_BENCH_COPIES=4 GM_BENCH_MIX=1 row clips mix-whole $A $B $B $B
export GM_BENCH_RANDOM_BATCHES=200 GM_BENCH_COPIES=4 GM_BENCH_MIX=1
row clips_old mix-200 $A $B $B $B
row clips mix-200 $A $B $B $B
