#!/usr/bin/env bash
# The mixed AV1 (CPU) + H.264 (NVDEC) dataset again, with the clip loader's jobs in flight as
# the variable: sessions + 1 (the old bound), the new default for mixed routing (4 x sessions)
# and 8 x sessions; the parts alone once more in the same call.
set -u
REPO=$PWD; H=$REPO/.hs/g9
(cd "$H" && xz -dc clips2.xz > clips2 && chmod +x clips2 && mkdir -p ff && tar -xJf ffmpeg71.tar.xz -C ff)
export GM_FFMPEG_DIR="$(dirname "$(find "$H/ff" -name 'libavcodec.so*' | head -n 1)")"
export LD_LIBRARY_PATH="$GM_FFMPEG_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GM_BENCH_ACCESS=stream GM_BENCH_REPS=3 GM_BENCH_COPIES=16 GM_BENCH_DEVICE=0
A=$H/bench_1080p_av1.mp4; B=$H/bench_1080p_h264.mp4
cat "$A" "$B" > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/env.txt"; nproc | tee -a "$OUT/env.txt"
S=${SESSIONS:-16}
GM_BENCH_SESSIONS=$S timeout 200 "$H/clips2" "$A" "$B" 2>>"$OUT/clips.err" | grep '"gop_cache":false' | tee -a "$OUT/mix2.jsonl"
for J in $((S + 1)) default $((8 * S)); do
  if [ "$J" = default ]; then unset GM_BENCH_JOBS_IN_FLIGHT; else export GM_BENCH_JOBS_IN_FLIGHT=$J; fi
  GM_BENCH_MIX=1 GM_BENCH_SESSIONS=$S timeout 200 "$H/clips2" "$A" "$B" "$B" "$B" 2>>"$OUT/clips.err" | grep '"gop_cache":false' | sed "s/^{/{\"h264_weight\":3,\"jobs\":\"$J\",/" | tee -a "$OUT/mix2.jsonl"
done
unset GM_BENCH_JOBS_IN_FLIGHT
tail -3 "$OUT/clips.err"
python3 - "$OUT/mix2.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
a = next(r["fps"] for r in rows if r["video"] == "bench_1080p_av1.mp4")
b = next(r["fps"] for r in rows if r["video"] == "bench_1080p_h264.mp4")
for m in (r for r in rows if r["video"] == "mix"):
    print(f"jobs in flight {m['jobs']}: AV1 alone {a}, H.264 alone {b}, mix {m['fps']} = {m['fps'] / (a + b):.3f} of the sum, {m['device_mem_used_mb']} MB")
PY
