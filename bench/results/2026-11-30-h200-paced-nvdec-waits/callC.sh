#!/usr/bin/env bash
# Issue 44: the mixed AV1 (CPU) + H.264 (NVDEC) dataset with paced NVDEC waits ('paced', this
# build) against main's 100 us polls (93dcde1, 'main'), alternated in one call, 16 sessions,
# random access; the file ratio from this host's AV1 rate (read first), with a little more
# H.264 than the parts' rates so that the engines bind where the cores are short.
set -u
REPO=$PWD; H=$REPO/.hs/g130; W=/tmp/w; mkdir -p $W/ff /tmp/b
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/
for t in clips-paced clips-main; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
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
