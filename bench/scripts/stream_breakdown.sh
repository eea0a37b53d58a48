#!/usr/bin/env bash
# Issue 24 item 2: where the clip loader's stream-access time goes against the engines' raw
# sequential rate, in one call on one GPU on the same files. Raw NVDEC (gm-codec--nvdec,
# sequential, 1 and 7 sessions) and the clip loader (gm-loader--clips, stream access, 7
# sessions) on the 1080p H.264/HEVC twins of bench/data/make_videos.sh (VIDEOS) and the
# six-camera scene of bench/data/make_scenes.sh (SCENES), at several NVDEC display delays
# (GM_NVDEC_DISPLAY_DELAY: DELAYS, RAW_DELAYS for the raw runs), COPIES copies of each
# video or scene in the dataset (16 and 64), and with the binary of the commit before the change (BEFORE: a
# gm-loader--clips built from it) for the before/after table. Each clips line carries
# session_us_per_frame: idle, start, read, parser, submit, map, consume, retire, drain,
# finish, other (microseconds of session time per frame delivered).
# Run from the repository root on the GPU machine with target/gpu-bundle carried.
# Results: $OUT/stream/*.jsonl.
set -u
root="$(pwd)"
out="${OUT:-/tmp/out}/stream"; mkdir -p "$out"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
bundle="${BUNDLE:-$root/target/gpu-bundle}"
[ -d "$bundle/bench" ] || tar -xJf "$bundle/tests.tar.xz" -C "$bundle"
videos="${VIDEOS:-$root/target/bench-data/video}"
scenes="${SCENES:-$root/target/bench-data/scenes}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores: $(nproc)"; date -u; git -C "$root" log -1 --format=%h 2>/dev/null
} | tee "$out/env.txt"
cat "$videos"/* "$scenes"/* > /dev/null
v="$videos/bench_1080p_h264.mp4 $videos/bench_1080p_hevc.mp4"
cams=$(ls "$scenes"/scene_cam*.mp4)
export GM_BENCH_ACCESS=stream GM_BENCH_SESSIONS=7 GM_BENCH_REPS="${REPS:-3}"
for d in ${RAW_DELAYS:-${DELAYS:-0 1 2 4}}; do
    log "raw NVDEC, display delay $d"
    GM_NVDEC_DISPLAY_DELAY=$d GM_BENCH_SESSIONS=1,7 timeout 120 "$bundle/bench/gm-codec--nvdec" $v \
        "$scenes/scene_cam0.mp4" \
        2>>"$out/err.txt" | grep '^{' >> "$out/raw.jsonl"
done
for copies in ${COPIES:-16 64}; do
    if [ -n "${BEFORE:-}" ]; then
        log "clips before, $copies copies"
        GM_BENCH_COPIES=$copies timeout 150 "$BEFORE" $v 2>>"$out/err.txt" \
            | sed 's/^{/{"build":"before",/' >> "$out/clips.jsonl"
        GM_BENCH_SCENES=1 GM_BENCH_COPIES=$copies timeout 150 "$BEFORE" $cams 2>>"$out/err.txt" \
            | sed 's/^{/{"build":"before",/' >> "$out/clips.jsonl"
    fi
    for d in ${DELAYS:-0 1 2 4}; do
        log "clips after, $copies copies, display delay $d"
        GM_NVDEC_DISPLAY_DELAY=$d GM_BENCH_COPIES=$copies timeout 150 \
            "$bundle/bench/gm-loader--clips" $v 2>>"$out/err.txt" >> "$out/clips.jsonl"
        GM_NVDEC_DISPLAY_DELAY=$d GM_BENCH_SCENES=1 GM_BENCH_COPIES=$copies timeout 150 \
            "$bundle/bench/gm-loader--clips" $cams 2>>"$out/err.txt" >> "$out/clips.jsonl"
    done
done
log done
