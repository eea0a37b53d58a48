#!/usr/bin/env bash
# GPU run for the CPU-route decoders beside the NVDEC sessions (issue 44, mixed routing): the
# video tests, then AV1 (CPU, libdav1d) and H.264 (NVDEC) alone and mixed at the parts' rate
# ratio, stream access (16 copies of each file, and 48 for a longer epoch); jobs in flight at
# the default and 4 x; one random-access mix. Jobs cut per route.
set -u
REPO=$PWD; H=$REPO/.hs/g10
(cd "$H" && for f in clips video video_cpu; do xz -dc $f.xz > $f; chmod +x $f; done && mkdir -p ff && tar -xJf ffmpeg71.tar.xz -C ff)
export GM_FFMPEG_DIR="$(dirname "$(find "$H/ff" -name 'libavcodec.so*' | head -n 1)")"
export LD_LIBRARY_PATH="$GM_FFMPEG_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/env.txt"; nproc | tee -a "$OUT/env.txt"
mkdir -p "$OUT/logs"
for t in video video_cpu; do
  s=$(date +%s)
  GM_REQUIRE_GPU=1 GM_REQUIRE_LIBAVCODEC=1 GM_FIXTURES="$REPO/tests/media" timeout 300 "$H/$t" --test-threads=4 > "$OUT/logs/$t.log" 2>&1; rc=$?
  echo "$t rc=$rc $(( $(date +%s) - s ))s skips=$(grep -c '^SKIP' "$OUT/logs/$t.log") $(grep '^test result' "$OUT/logs/$t.log" | tail -n 1)" | tee -a "$OUT/env.txt"
done
export GM_BENCH_ACCESS=stream GM_BENCH_REPS=3 GM_BENCH_COPIES=16 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16
A=$H/bench_1080p_av1.mp4; B=$H/bench_1080p_h264.mp4
cat "$A" "$B" > /dev/null
timeout 200 "$H/clips" "$A" "$B" 2>>"$OUT/clips.err" | grep '"gop_cache":false' | tee -a "$OUT/mix.jsonl" > "$OUT/alone.jsonl"
k=$(python3 - "$OUT/alone.jsonl" <<'PY'
import json, sys
r = {json.loads(l)["video"]: json.loads(l)["fps"] for l in open(sys.argv[1])}
print(max(1, round(r["bench_1080p_h264.mp4"] / r["bench_1080p_av1.mp4"])))
PY
)
args="$A"; for i in $(seq 1 "$k"); do args="$args $B"; done
echo "$k H.264 copies per AV1 copy" | tee -a "$OUT/env.txt"
for cfg in "default default" "48 default"; do
  set -- $cfg
  if [ "$1" = default ]; then export GM_BENCH_COPIES=16; else export GM_BENCH_COPIES=$1; fi
  if [ "$2" = default ]; then unset GM_BENCH_JOBS_IN_FLIGHT; else export GM_BENCH_JOBS_IN_FLIGHT=$2; fi
  GM_BENCH_MIX=1 timeout 200 "$H/clips" $args 2>>"$OUT/clips.err" | grep '"gop_cache":false' | sed "s/^{/{\"h264_weight\":$k,\"cfg\":\"$cfg\",/" | tee -a "$OUT/mix.jsonl"
done
unset GM_BENCH_JOBS_IN_FLIGHT; export GM_BENCH_COPIES=16
GM_BENCH_COPIES=48 timeout 200 "$H/clips" "$A" "$B" 2>>"$OUT/clips.err" | grep '"gop_cache":false' | sed 's/^{/{"cfg":"48 alone",/' | tee -a "$OUT/mix.jsonl"
GM_BENCH_ACCESS=random GM_BENCH_COPIES=4 timeout 200 "$H/clips" "$A" "$B" 2>>"$OUT/clips.err" | grep '"gop_cache":false' | sed 's/^{/{"cfg":"random",/' | tee -a "$OUT/mix.jsonl"
GM_BENCH_ACCESS=random GM_BENCH_COPIES=4 GM_BENCH_MIX=1 timeout 200 "$H/clips" $args 2>>"$OUT/clips.err" | grep '"gop_cache":false' | sed "s/^{/{\"h264_weight\":$k,\"cfg\":\"random\",/" | tee -a "$OUT/mix.jsonl"
tail -3 "$OUT/clips.err"
python3 - "$OUT/mix.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for acc in ("stream", "random"):
    rs = [r for r in rows if r["access"] == acc]
    for m in (r for r in rs if r["video"] == "mix"):
        alone = [r for r in rs if r["video"] != "mix" and (r.get("cfg") == "48 alone") == m["cfg"].startswith("48")]
        a = next((r["fps"] for r in alone if r["video"] == "bench_1080p_av1.mp4"), None)
        b = next((r["fps"] for r in alone if r["video"] == "bench_1080p_h264.mp4"), None)
        print(f"{acc} {m.get('cfg')}: AV1 alone {a}, H.264 alone {b}, mix {m['fps']} (weight {m.get('h264_weight')}): {m['fps'] / (a + b):.3f} of the sum, {m['cpu_ms_per_1000_frames']} cpu ms/1000, {m['device_mem_used_mb']} MB")
PY
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
