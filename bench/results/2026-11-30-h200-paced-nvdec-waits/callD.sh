#!/usr/bin/env bash
# Issue 44, paced NVDEC waits: gm-codec's nvdec bench (sequential 1-8 sessions, random clips and
# frames on a 7-session pool, first-frame latency) with paced waits and with nvcuvid's own,
# alternated; then the mixed dataset, paced against main (93dcde1), at a ratio read from this
# host's AV1 rate with a little more H.264.
set -u
REPO=$PWD; H=$REPO/.hs/g130; W=/tmp/w; mkdir -p $W/ff /tmp/b
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/
for t in clips-paced clips-main nvdec-bench; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; grep -m1 "model name" /proc/cpuinfo; } > $OUT/env.txt
nb() { echo "== $1" >> $OUT/nvdec-bench.txt; timeout 90 /tmp/b/nvdec-bench $W/bench_1080p_h264.mp4 $W/bench_1080p_hevc.mp4 2>&1 | grep '^{' | sed "s/^{/{\"tag\":\"$1\",/" >> $OUT/nvdec-bench.jsonl; }
nb paced; GM_NVDEC_WAIT=nvcuvid nb nvcuvid; GM_NVDEC_WAIT=nvcuvid nb nvcuvid; nb paced
python3 - $OUT/nvdec-bench.jsonl <<'PY' | tee $OUT/nvdec-summary.txt
import json,sys,collections
r=collections.defaultdict(list)
for j in map(json.loads, open(sys.argv[1])):
    k=(j['video'], j['workload'], j.get('sessions'))
    r[k].append((j['tag'], j.get('fps', j.get('ms', j.get('first_frame_ms')))))
for k,v in r.items(): print(*k, v)
PY
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=4
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1 bin=$2 t=$3; shift 3; timeout $t /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'ms/dec', j['cpu_decode_ms_per_decoded_frame'], 'reads/frame', j.get('status_reads_per_frame'), 'parked', j.get('parked_jobs'), {k: b[k] for k in ('decoded_wait','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
row av1 clips-paced 100 $A
read a b < <(python3 -c "
import json
r=[j['fps'] for j in map(json.loads, open('$OUT/rows.jsonl'))]
k=1.15*1855/r[0]
print(*min(((a,b) for a in (1,2,3) for b in range(1,13)), key=lambda p:(abs(p[1]/p[0]-k), p[0])))")
echo "ratio $a AV1 : $b H.264 files" | tee -a $OUT/summary.txt
M=""; for i in $(seq $a); do M="$M $A"; done; for i in $(seq $b); do M="$M $B"; done
c=$(( 12 / (a + b) )); [ $c -lt 1 ] && c=1
mix() { GM_BENCH_COPIES=$c GM_BENCH_MIX=1 row "$1" "$2" 75 $M; }
mix paced clips-paced; mix main clips-main
row av1 clips-paced 70 $A
mix main clips-main; mix paced clips-paced
GM_BENCH_COPIES=8 row h264 clips-paced 70 $B
tail -n 3 $OUT/clips.err
