#!/usr/bin/env bash
# A dataset mixing AV1 (CPU: libavcodec's libdav1d, NVDEC has no AV1 here) and H.264 (NVDEC):
# each part alone, then one dataset interleaving both with the H.264 file weighted by the
# parts' own rates (so that each part alone would take the same time), stream access, the same
# session count throughout. Goal: mixed rate at least 0.9x the sum of the parts' rates.
set -u
REPO=$PWD; H=$REPO/.hs/g9
(cd "$H" && xz -dc clips-new.xz > clips && chmod +x clips && mkdir -p ff && tar -xJf ffmpeg71.tar.xz -C ff)
export GM_FFMPEG_DIR="$(dirname "$(find "$H/ff" -name 'libavcodec.so*' | head -n 1)")"
export LD_LIBRARY_PATH="$GM_FFMPEG_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GM_BENCH_ACCESS=stream GM_BENCH_REPS=3 GM_BENCH_COPIES=${COPIES:-16} GM_BENCH_DEVICE=0
A=$H/bench_1080p_av1.mp4; B=$H/bench_1080p_h264.mp4
cat "$A" "$B" > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/env.txt"; nproc | tee -a "$OUT/env.txt"
for S in ${SESSIONS:-16 24}; do
  GM_BENCH_SESSIONS=$S timeout 200 "$H/clips" "$A" "$B" 2>>"$OUT/clips.err" | grep '"gop_cache":false' | tee -a "$OUT/mix.jsonl" > "$OUT/alone-$S.jsonl"
  k=$(python3 - "$OUT/alone-$S.jsonl" <<'PY'
import json, sys
r = {json.loads(l)["video"]: json.loads(l)["fps"] for l in open(sys.argv[1])}
print(max(1, round(r["bench_1080p_h264.mp4"] / r["bench_1080p_av1.mp4"])))
PY
)
  args="$A"; for i in $(seq 1 "$k"); do args="$args $B"; done
  echo "sessions $S: $k H.264 copies per AV1 copy" | tee -a "$OUT/env.txt"
  GM_BENCH_MIX=1 GM_BENCH_SESSIONS=$S timeout 300 "$H/clips" $args 2>>"$OUT/clips.err" | grep '"gop_cache":false' | sed "s/^{/{\"h264_weight\":$k,/" | tee -a "$OUT/mix.jsonl"
done
tail -3 "$OUT/clips.err"
python3 - "$OUT/mix.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for s in sorted({r["sessions"] for r in rows}):
    a = next(r["fps"] for r in rows if r["sessions"] == s and r["video"] == "bench_1080p_av1.mp4")
    b = next(r["fps"] for r in rows if r["sessions"] == s and r["video"] == "bench_1080p_h264.mp4")
    m = next(r for r in rows if r["sessions"] == s and r["video"] == "mix")
    print(f"sessions {s}: AV1 alone {a}, H.264 alone {b}, mix {m['fps']} (weight {m['h264_weight']}): {m['fps'] / (a + b):.3f} of the sum")
PY
