#!/usr/bin/env bash
# Issue 44: the Python package's GPU tests of the new build, those of video (clip loader mixed
# defaults, frames equal to the video decoders, LeRobot, erasing, rotation), with the machine's
# first use of the kernels timed (pytest's durations; the PTX JIT cache's size before and after);
# then the rule's 3:6 mix (new build) between rows of each part alone, so that each mix row has
# its parts' rates measured beside it. Carried: .hs/g141/whl.tar.xz (the wheel's files, unpacked
# into PYTHONPATH: the pip install into a fresh venv is CI's), .hs/g141/clips.xz, .hs/g139's
# bench videos and avlibs.tar.xz (FFmpeg 7.1 with libdav1d).
set -u
REPO=$PWD; H=$REPO/.hs/g141; G=$REPO/.hs/g139; W=/tmp/w; START=$(date +%s)
mkdir -p $W/ff /tmp/site /tmp/b; cp $G/*.mp4 $W/
tar -xJf $G/avlibs.tar.xz -C $W/ff
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tar -xJf $H/whl.tar.xz -C /tmp/site
xz -T4 -dc $H/clips.xz > /tmp/b/clips && chmod +x /tmp/b/clips
{ nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader; date -u; python3 -c 'import torch; print("torch", torch.__version__)'
  echo "JIT cache before: $(du -sh ~/.nv/ComputeCache 2>/dev/null || echo none)"; } > $OUT/env.txt
(cd crates/gm-python/tests && GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1 PYTHONPATH=/tmp/site timeout 240 \
   python3 -m pytest -q -p no:cacheprovider --durations=6 gpu -k "clip or video or lerobot or mixed or rotat" 2>&1 | tail -14) | tee $OUT/tests.txt
echo "JIT cache after: $(du -sh ~/.nv/ComputeCache 2>/dev/null || echo none)" | tee -a $OUT/env.txt
A=$W/bench_1080p_av1.mp4; B=$W/bench_1080p_h264.mp4; M="$A $A $A $B $B $B $B $B $B"
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_GOP_CACHE=0 GM_BENCH_SESSIONS=16 GM_BENCH_ACCESS=random GM_BENCH_RANDOM_BATCHES=100000
row() { # tag files...
  local tag=$1; shift
  [ $(( $(date +%s) - START )) -gt 540 ] && { echo "skip $tag" | tee -a $OUT/summary.txt; return; }
  timeout 75 /tmp/b/clips "$@" 2>>$OUT/clips.err | sed "s/^{/{\"tag\":\"$tag\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import json,sys
for j in map(json.loads, sys.stdin):
    print(j['tag'], 'fps', j['fps'], 'spread', j['spread'], 'ms/dec', j.get('cpu_decode_ms_per_decoded_frame'), 'parts cpu', j.get('cpu_parts'), 'nvdec', j.get('nvdec_parts'), j['cores_by_thread'])" | tee -a $OUT/summary.txt; }
for r in 1 2; do
  GM_BENCH_COPIES=4 row av1-$r $A
  GM_BENCH_COPIES=1 GM_BENCH_MIX=1 row mix-$r $M
  GM_BENCH_COPIES=8 row h264-$r $B
done
GM_BENCH_COPIES=4 row av1-3 $A
python3 - $OUT/rows.jsonl <<'EOF' | tee -a $OUT/summary.txt
import json, sys
rows = {j['tag']: j['fps'] for j in map(json.loads, open(sys.argv[1]))}
for r in (1, 2):
    a = [rows[t] for t in (f'av1-{r}', f'av1-{r + 1}') if t in rows]
    if f'mix-{r}' in rows and a and f'h264-{r}' in rows:
        s = sum(a) / len(a) + rows[f'h264-{r}']
        print(f'mix-{r} {rows[f"mix-{r}"]:.0f}: AV1 beside it {a}, H.264 {rows[f"h264-{r}"]:.0f}, sum {s:.0f}, {rows[f"mix-{r}"] / s:.3f} of sum')
EOF
