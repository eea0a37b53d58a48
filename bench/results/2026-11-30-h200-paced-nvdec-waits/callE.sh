#!/usr/bin/env bash
# Issue 44, paced NVDEC waits with one pace per number of pictures ahead (a job's first
# pictures no longer sleep for a deep queue's time): GPU tests; gm-codec's nvdec bench with
# paced waits, nvcuvid's waits and main's 100 us polls (93dcde1), alternated; the clip loader's
# stream (7 sessions) and random (16) access on H.264; the mixed dataset, paced (main was run beside it in calls 2 and 4).
set -u
REPO=$PWD; H=$REPO/.hs/g131; W=/tmp/w; mkdir -p $W/ff /tmp/b
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/
for t in clips-paced nvdec-bench nvdec-bench-main video nvdec; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; grep -m1 "model name" /proc/cpuinfo; } > $OUT/env.txt
(export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
 cd $REPO/crates/gm-codec && echo "== nvdec" && timeout 150 /tmp/b/nvdec 2>&1 | grep -E "^test |^test result|panicked|failed" | tail -40
 cd $REPO/crates/gm-loader && echo "== video" && timeout 200 /tmp/b/video 2>&1 | grep -E "^test |^test result|FAILED|panicked|failed" | head -40) > $OUT/tests.txt 2>&1
grep -E "^==|test result|FAIL|panick" $OUT/tests.txt
nb() { local tag=$1 bin=$2; echo "== $tag $(date +%T)" >> $OUT/nvdec-bench.txt; timeout 90 /tmp/b/$bin $W/bench_1080p_h264.mp4 $W/bench_1080p_hevc.mp4 2>&1 | grep '^{' | sed "s/^{/{\"tag\":\"$tag\",/" >> $OUT/nvdec-bench.jsonl; }
nb paced nvdec-bench; GM_NVDEC_WAIT=nvcuvid nb nvcuvid nvdec-bench; nb main nvdec-bench-main
nb main nvdec-bench-main; GM_NVDEC_WAIT=nvcuvid nb nvcuvid nvdec-bench; nb paced nvdec-bench
python3 - $OUT/nvdec-bench.jsonl <<'PY' | tee $OUT/nvdec-summary.txt
import json,sys,collections
r=collections.defaultdict(list)
for j in map(json.loads, open(sys.argv[1])):
    k=(j['video'], j['workload'], j.get('sessions'))
    r[k].append((j['tag'], j.get('fps', j.get('ms'))))
for k,v in r.items(): print(*k, v)
PY
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1 bin=$2 t=$3; shift 3; timeout $t /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], j['access'], j['sessions'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'ms/dec', j['cpu_decode_ms_per_decoded_frame'], 'reads/frame', j.get('status_reads_per_frame'), 'parked', j.get('parked_jobs'), {k: b[k] for k in ('decoded_wait','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
s() { GM_BENCH_SESSIONS=0 GM_BENCH_ACCESS=stream GM_BENCH_COPIES=48 row "$@" 60 $B; }
s paced clips-paced; GM_NVDEC_WAIT=nvcuvid s nvcuvid clips-paced
export GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
GM_BENCH_COPIES=8 row h264 clips-paced 70 $B
GM_BENCH_COPIES=4 row av1 clips-paced 100 $A
read a b < <(python3 -c "
import json
r=[j['fps'] for j in map(json.loads, open('$OUT/rows.jsonl')) if j['tag']=='av1']
k=1.15*1855/r[0]
print(*min(((a,b) for a in (1,2,3) for b in range(1,13)), key=lambda p:(abs(p[1]/p[0]-k), p[0])))")
echo "ratio $a AV1 : $b H.264 files" | tee -a $OUT/summary.txt
M=""; for i in $(seq $a); do M="$M $A"; done; for i in $(seq $b); do M="$M $B"; done
c=$(( 12 / (a + b) )); [ $c -lt 1 ] && c=1
mix() { GM_BENCH_COPIES=$c GM_BENCH_MIX=1 row "$1" "$2" 75 $M; }
mix paced clips-paced; GM_BENCH_COPIES=4 row av1 clips-paced 70 $A; mix paced clips-paced
tail -n 3 $OUT/clips.err
