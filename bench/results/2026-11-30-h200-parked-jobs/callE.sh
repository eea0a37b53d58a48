#!/usr/bin/env bash
# Issue 44: jobs that leave their tails to their parts (this build, 'parked') against jobs that
# wait for them (576d532, 'waiting'), alternated, with 16 sessions, on a mix whose file ratio
# matches this host's AV1 rate (read first; H.264 alone is 1,853-1,856 on every host).
set -u
REPO=$PWD; H=$REPO/.hs/g128; W=/tmp/w; mkdir -p $W/ff /tmp/b
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/
for t in clips clips-old; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; } > $OUT/env.txt
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_GOP_CACHE=0 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000 GM_BENCH_COPIES=4
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
row() { local tag=$1 t=$2; shift 2; timeout $t /tmp/b/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], 'fps', j['fps'], 'spread', j['spread'], 'threads', j['decoder_threads'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'parked', j.get('parked_jobs'), 'parts', j.get('cpu_parts'), {k: b[k] for k in ('decoded_wait','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
old() { local tag=$1 t=$2; shift 2; ( cp /tmp/b/clips /tmp/b/clips-new; cp /tmp/b/clips-old /tmp/b/clips; row "$tag" $t "$@"; cp /tmp/b/clips-new /tmp/b/clips ); }
row av1 100 $A
read a b < <(python3 -c "
import json
r=[j['fps'] for j in map(json.loads, open('$OUT/rows.jsonl'))]
k=1855/r[0]
print(*min(((a,b) for a in (1,2,3,4) for b in range(1,13)), key=lambda p:(abs(p[1]/p[0]-k), p[0])))")
echo "ratio $a AV1 : $b H.264 files (H.264 alone: 1,853-1,856 in every call)" | tee -a $OUT/summary.txt
M=""; for i in $(seq $a); do M="$M $A"; done; for i in $(seq $b); do M="$M $B"; done
c=$(( 12 / (a + b) )); [ $c -lt 1 ] && c=1
GM_BENCH_COPIES=$c GM_BENCH_MIX=1 row mix-parked 70 $M
GM_BENCH_COPIES=$c GM_BENCH_MIX=1 old mix-waiting 70 $M
row av1 70 $A
GM_BENCH_COPIES=$c GM_BENCH_MIX=1 old mix-waiting 70 $M
GM_BENCH_COPIES=$c GM_BENCH_MIX=1 row mix-parked 70 $M
tail -n 3 $OUT/clips.err
