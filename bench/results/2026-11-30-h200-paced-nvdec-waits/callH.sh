#!/usr/bin/env bash
# Issue 44, why paced NVDEC waits lose 11% on random single H.264 frames: an experimental build
# with pacing knobs (GM_NVDEC_PACE_FIRST per mille of the learnt time before the first read,
# GM_NVDEC_PACE_STEP_DIV, GM_NVDEC_PACE_STEP_MAX_US) and a per-wait trace (GM_NVDEC_TRACE);
# traces of paced waits and of 50 us polls from submission (the true decode times), then a grid
# of knob settings against nvcuvid's waits and main's polls, alternated, gm-codec's nvdec bench.
set -u
REPO=$PWD; H=$REPO/.hs/g134; W=/tmp/w; mkdir -p $W /tmp/b; cp $H/*.mp4 $W/
for t in nvdec-bench nvdec-bench-main; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; grep -m1 "model name" /proc/cpuinfo; } > $OUT/env.txt
export GM_BENCH_SESSIONS=7
B=$W/bench_1080p_h264.mp4
GM_NVDEC_TRACE=1 timeout 60 /tmp/b/nvdec-bench $B 2>$OUT/trace-paced.txt | tee $OUT/trace-paced.json
GM_NVDEC_TRACE=1 GM_NVDEC_PACE_FIRST=0 GM_NVDEC_PACE_STEP_MAX_US=50 timeout 60 /tmp/b/nvdec-bench $B 2>$OUT/trace-poll50.txt | tee $OUT/trace-poll50.json
xz -T4 $OUT/trace-*.txt
nb() { local tag=$1 bin=$2; echo "== $tag $(date +%T)" >> $OUT/nvdec-bench.txt; timeout 40 /tmp/b/$bin $B 2>&1 | grep '^{' | sed "s/^{/{\"tag\":\"$tag\",/" >> $OUT/nvdec-bench.jsonl; }
grid() {
 GM_NVDEC_WAIT=nvcuvid nb nvcuvid nvdec-bench
 nb paced nvdec-bench
 GM_NVDEC_PACE_STEP_MAX_US=100 nb f800-max100 nvdec-bench
 GM_NVDEC_PACE_FIRST=500 nb f500 nvdec-bench
 GM_NVDEC_PACE_FIRST=500 GM_NVDEC_PACE_STEP_MAX_US=100 nb f500-max100 nvdec-bench
 GM_NVDEC_PACE_FIRST=0 GM_NVDEC_PACE_STEP_MAX_US=100 nb f0-max100 nvdec-bench
 nb main nvdec-bench-main
}
grid; grid
python3 - $OUT/nvdec-bench.jsonl <<'PY' | tee $OUT/nvdec-summary.txt
import json,sys,collections
r=collections.defaultdict(lambda: collections.defaultdict(list))
for j in map(json.loads, open(sys.argv[1])):
    r[(j['workload'], j.get('sessions'))][j['tag']].append(j.get('fps', j.get('ms')))
for k,v in r.items(): print(*k, dict(v))
PY
