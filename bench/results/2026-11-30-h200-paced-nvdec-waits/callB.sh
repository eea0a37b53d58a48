#!/usr/bin/env bash
# Issue 44, paced NVDEC waits revised (poll step a sixteenth of the learnt decode time; pictures
# waited for keep their place in the queue as on main): GPU tests, then NVDEC alone against
# main (93dcde1) and nvcuvid's waits, stream access at 7 sessions and random at 16.
set -u
REPO=$PWD; H=$REPO/.hs/g130; W=/tmp/w; mkdir -p $W/ff /tmp/b
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/
for t in clips-paced clips-main video nvdec; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
(export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
 cd $REPO/crates/gm-codec && echo "== nvdec" && timeout 150 /tmp/b/nvdec 2>&1 | grep -E "^test |^test result|panicked|failed" | tail -40
 cd $REPO/crates/gm-loader && echo "== video" && timeout 200 /tmp/b/video 2>&1 | grep -E "^test |^test result|FAILED|panicked|failed" | head -40) > $OUT/tests.txt 2>&1
grep -E "^==|test result|FAIL|panick" $OUT/tests.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0
B=$W/bench_1080p_h264.mp4
row() { local tag=$1 bin=$2 t=$3; shift 3; timeout $t /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['access'], j['sessions'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'reads/frame', j.get('status_reads_per_frame'), {k: b[k] for k in ('decoded_wait','map','submit','idle','other')})" | tee -a $OUT/summary.txt; }
s() { GM_BENCH_SESSIONS=0 GM_BENCH_ACCESS=stream GM_BENCH_COPIES=48 row "$@" 60 $B; }
s paced clips-paced; GM_NVDEC_WAIT=nvcuvid s nvcuvid clips-paced; s main clips-main; s paced clips-paced
r() { GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=8 row "$@" 70 $B; }
r paced clips-paced; GM_NVDEC_WAIT=nvcuvid r nvcuvid clips-paced; r main clips-main
tail -n 3 $OUT/clips.err
