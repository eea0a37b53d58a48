#!/usr/bin/env bash
# Issue 44, paced NVDEC waits with in-order marking (a picture seen decoded marks its decoder's
# earlier pictures decoded), patch applied to main 1d23e69: gm-codec's nvdec bench on H.264,
# paced against nvcuvid's waits and main's 100 us polls, alternated; GPU tests (gm-codec nvdec,
# gm-loader video); the clip loader's stream (7 sessions) and random (16) access on H.264 (main's clips binary left out: the carry limit).
set -u
REPO=$PWD; H=$REPO/.hs/g133; W=/tmp/w; mkdir -p $W/ff /tmp/b
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/
for t in clips-paced nvdec-bench nvdec-bench-main video nvdec; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; grep -m1 "model name" /proc/cpuinfo; } > $OUT/env.txt
nb() { local tag=$1 bin=$2; echo "== $tag $(date +%T)" >> $OUT/nvdec-bench.txt; timeout 40 /tmp/b/$bin $W/bench_1080p_h264.mp4 2>&1 | grep '^{' | sed "s/^{/{\"tag\":\"$tag\",/" >> $OUT/nvdec-bench.jsonl; }
export GM_BENCH_SESSIONS=7
nb paced nvdec-bench; GM_NVDEC_WAIT=nvcuvid nb nvcuvid nvdec-bench; nb main nvdec-bench-main
nb main nvdec-bench-main; GM_NVDEC_WAIT=nvcuvid nb nvcuvid nvdec-bench; nb paced nvdec-bench
unset GM_BENCH_SESSIONS
python3 - $OUT/nvdec-bench.jsonl <<'PY' | tee $OUT/nvdec-summary.txt
import json,sys,collections
r=collections.defaultdict(list)
for j in map(json.loads, open(sys.argv[1])):
    r[(j['workload'], j.get('sessions'))].append((j['tag'], j.get('fps', j.get('ms'))))
for k,v in r.items(): print(*k, v)
PY
(export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
 cd $REPO/crates/gm-codec && echo "== nvdec" && timeout 60 /tmp/b/nvdec 2>&1 | grep -E "^test |^test result|panicked|failed" | tail -40
 cd $REPO/crates/gm-loader && echo "== video" && timeout 150 /tmp/b/video 2>&1 | grep -E "^test |^test result|FAILED|panicked|failed" | head -40) > $OUT/tests.txt 2>&1
grep -E "^==|test result|FAIL|panick" $OUT/tests.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0
B=$W/bench_1080p_h264.mp4
row() { local tag=$1 bin=$2 t=$3; shift 3; timeout $t /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], j['access'], j['sessions'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'reads/frame', j.get('status_reads_per_frame'), {k: b[k] for k in ('decoded_wait','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
s() { GM_BENCH_SESSIONS=0 GM_BENCH_ACCESS=stream GM_BENCH_COPIES=48 row "$@" 60 $B; }
s paced clips-paced; GM_NVDEC_WAIT=nvcuvid s nvcuvid clips-paced
r() { GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=8 row "$@" 70 $B; }
r paced clips-paced; GM_NVDEC_WAIT=nvcuvid r nvcuvid clips-paced
tail -n 3 $OUT/clips.err
