#!/usr/bin/env bash
# Issue 44: CPU decoders get 4 x their jobs in flight by default; the mixed dataset balanced
# to the parts' rates (one AV1 file per two H.264 files) over whole epochs. Video tests first.
set -u
REPO=$PWD; H=$REPO/.hs/g94; W=/tmp/w; mkdir -p $W/ff
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/ && for f in clips video; do xz -dc $H/$f.xz > $W/$f; chmod +x $W/$f; done
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/env.txt; nproc >> $OUT/env.txt; date -u >> $OUT/env.txt
s=$(date +%s)
GM_REQUIRE_GPU=1 GM_REQUIRE_LIBAVCODEC=1 GM_FIXTURES="$REPO/tests/media" timeout 200 $W/video --test-threads=4 --nocapture > $OUT/video.log 2>&1; rc=$?
echo "video rc=$rc $(( $(date +%s) - s ))s skips=$(grep -c '^SKIP' $OUT/video.log) $(grep '^test result' $OUT/video.log | tail -n 1)" | tee -a $OUT/summary.txt
grep -h "parts dropped with" $OUT/video.log | tee -a $OUT/summary.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=4
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1; shift; timeout 150 $W/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'frames', j['frames'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,1), 'cpu_dec', j['cpu_frames_decoded'], j['cpu_decode_ms_per_decoded_frame'], 'ms', j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
row av1 $A
GM_BENCH_COPIES=8 row h264 $B
GM_BENCH_MIX=1 row mix-1:2 $A $B $B
GM_BENCH_MIX=1 row mix-1:3 $A $B $B $B
row av1 $A
GM_BENCH_MIX=1 row mix-1:2 $A $B $B
