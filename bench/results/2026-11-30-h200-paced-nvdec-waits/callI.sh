#!/usr/bin/env bash
# Issue 44, NVDEC waits paced by an engine clock (a session's pictures decode one after another:
# each is expected when the one before it is plus the learnt picture time; first read a fifth of
# a picture time before that), experimental build with knobs (GM_NVDEC_PACE_FIRST: 800 = read
# 0.2 picture early, 600 = 0.4, 0 = read at submission; GM_NVDEC_PACE_STEP_MAX_US) and trace.
# gm-codec's nvdec bench on H.264 (7 sessions) against nvcuvid's waits and main's polls,
# alternated; then the clip loader's random (16 sessions) and stream (7) access.
set -u
REPO=$PWD; H=$REPO/.hs/g135; W=/tmp/w; mkdir -p $W /tmp/b; cp $H/*.mp4 $W/
for t in nvdec-bench nvdec-bench-main clips-clock; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; grep -m1 "model name" /proc/cpuinfo; } > $OUT/env.txt
export GM_BENCH_SESSIONS=7
B=$W/bench_1080p_h264.mp4
GM_NVDEC_TRACE=1 timeout 60 /tmp/b/nvdec-bench $B 2>$OUT/trace-clock.txt > $OUT/trace-clock.json; xz -T4 $OUT/trace-clock.txt
nb() { local tag=$1 bin=$2; echo "== $tag $(date +%T)" >> $OUT/nvdec-bench.txt; timeout 40 /tmp/b/$bin $B 2>&1 | grep '^{' | sed "s/^{/{\"tag\":\"$tag\",/" >> $OUT/nvdec-bench.jsonl; }
grid() {
 GM_NVDEC_WAIT=nvcuvid nb nvcuvid nvdec-bench
 nb clock nvdec-bench
 GM_NVDEC_PACE_FIRST=600 nb clock-lead40 nvdec-bench
 GM_NVDEC_PACE_FIRST=0 GM_NVDEC_PACE_STEP_MAX_US=100 nb f0-max100 nvdec-bench
 nb main nvdec-bench-main
}
grid; grid; grid
unset GM_BENCH_SESSIONS
python3 - $OUT/nvdec-bench.jsonl <<'PY' | tee $OUT/nvdec-summary.txt
import json,sys,collections
r=collections.defaultdict(lambda: collections.defaultdict(list))
for j in map(json.loads, open(sys.argv[1])):
    r[(j['workload'], j.get('sessions'))][j['tag']].append(j.get('fps', j.get('ms')))
for k,v in r.items(): print(*k, dict(v))
PY
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0
row() { local tag=$1 bin=$2 t=$3; shift 3; timeout $t /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], j['access'], j['sessions'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'reads/frame', j.get('status_reads_per_frame'), {k: b[k] for k in ('decoded_wait','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
r() { GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=8 row "$@" 70 $B; }
s() { GM_BENCH_SESSIONS=0 GM_BENCH_ACCESS=stream GM_BENCH_COPIES=48 row "$@" 60 $B; }
r clock clips-clock; GM_NVDEC_WAIT=nvcuvid r nvcuvid clips-clock; GM_NVDEC_PACE_FIRST=0 GM_NVDEC_PACE_STEP_MAX_US=100 r f0-max100 clips-clock
s clock clips-clock; GM_NVDEC_WAIT=nvcuvid s nvcuvid clips-clock
tail -n 3 $OUT/clips.err
