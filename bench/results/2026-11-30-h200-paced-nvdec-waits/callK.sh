#!/usr/bin/env bash
# Issue 44, the mixed AV1 (CPU) + H.264 (NVDEC) dataset with the waits to land against main's
# (1d23e69), alternated, with AV1 alone between them (a first version of this call lost its
# AV1 row to a 90 s timeout): the clip loader, random access, 16 sessions.
# Without FFmpeg every row ran past its timeout: AV1 then decodes on the bundled rav1d, which
# has no assembly and is 11-14x slower than FFmpeg's libdav1d (design-log, 2026-11-27). See
# callL.sh for the version that carries FFmpeg.
set -u
REPO=$PWD; H=$REPO/.hs/g137; W=/tmp/w; mkdir -p $W /tmp/b; cp $H/*.mp4 $W/
for t in clips clips-main; do xz -T4 -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; grep -m1 "model name" /proc/cpuinfo; } > $OUT/env.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { local tag=$1 bin=$2 t=$3; shift 3; timeout $t /tmp/b/$bin "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    b=j['session_us_per_frame']
    print(j['tag'], j['video'], j['access'], j['sessions'], 'fps', j['fps'], 'spread', j['spread'], 'cores', round(j['fps']*j['cpu_ms_per_1000_frames']/1e6,2), 'ms/dec', j['cpu_decode_ms_per_decoded_frame'], 'reads/frame', j.get('status_reads_per_frame'), {k: b[k] for k in ('decoded_wait','idle','other')}, j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
a=3; b=5  # the ratio the 1.15 rule gave from AV1 alone in callJ on this machine (1,168 frames/s)
echo "ratio $a AV1 : $b H.264 files" | tee -a $OUT/summary.txt
M=""; for i in $(seq $a); do M="$M $A"; done; for i in $(seq $b); do M="$M $B"; done
c=$(( 12 / (a + b) )); [ $c -lt 1 ] && c=1
mix() { GM_BENCH_COPIES=$c GM_BENCH_MIX=1 row "mix-$1" "$2" 75 $M; }
mix land clips; mix main clips-main
GM_BENCH_COPIES=4 row av1 clips 110 $A
mix main clips-main; mix land clips
tail -n 3 $OUT/clips.err
