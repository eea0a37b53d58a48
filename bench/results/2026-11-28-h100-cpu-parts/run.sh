#!/usr/bin/env bash
# GPU run for CPU-route parts (issue 44, mixed routing under random access) and Matroska
# orientation: the video and orientation tests, then AV1 (CPU) and H.264 (NVDEC) alone and
# mixed, random access, before (clips_before: 2026-11-28 pools) and after, alternated.
set -u
REPO=$PWD; H=$REPO/.hs/g21
(cd "$H" && for f in clips clips_before video; do xz -dc $f.xz > $f; chmod +x $f; done && mkdir -p ff && tar -xJf ffmpeg71.tar.xz -C ff)
export GM_FFMPEG_DIR="$(dirname "$(find "$H/ff" -name 'libavcodec.so*' | head -n 1)")"
export LD_LIBRARY_PATH="$GM_FFMPEG_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/env.txt"; nproc | tee -a "$OUT/env.txt"; date -u | tee -a "$OUT/env.txt"
mkdir -p "$OUT/logs"
for t in video; do
  s=$(date +%s)
  GM_REQUIRE_GPU=1 GM_REQUIRE_LIBAVCODEC=1 GM_FIXTURES="$REPO/tests/media" timeout 300 "$H/$t" --test-threads=4 --nocapture > "$OUT/logs/$t.log" 2>&1; rc=$?
  echo "$t rc=$rc $(( $(date +%s) - s ))s skips=$(grep -c '^SKIP' "$OUT/logs/$t.log") $(grep '^test result' "$OUT/logs/$t.log" | tail -n 1)" | tee -a "$OUT/env.txt"
done
grep -h "videos on the CPU route" "$OUT/logs/video.log" | cut -c1-600 | tee -a "$OUT/env.txt"
export GM_BENCH_REPS=3 GM_BENCH_DEVICE=0 GM_BENCH_SESSIONS=16 GM_BENCH_RANDOM_BATCHES=200 GM_BENCH_GOP_CACHE=0
A=$H/bench_1080p_av1.mp4; B=$H/bench_1080p_h264.mp4
cat "$A" "$B" > /dev/null
row() { local bin=$1 tag=$2; shift 2; timeout 200 "$H/$bin" "$@" 2>>"$OUT/clips.err" | grep '"gop_cache":false' | sed "s/^{/{\"bin\":\"$bin\",\"tag\":\"$tag\",/" | tee -a "$OUT/rows.jsonl"; }
export GM_BENCH_ACCESS=random GM_BENCH_COPIES=4
row clips alone "$A" "$B"
k=$(python3 - "$OUT/rows.jsonl" <<'PY'
import json, sys
r = {j["video"]: j["fps"] for j in map(json.loads, open(sys.argv[1])) if j["tag"] == "alone"}
print(max(1, round(r["bench_1080p_h264.mp4"] / r["bench_1080p_av1.mp4"])))
PY
)
echo "random: $k H.264 copies per AV1 copy" | tee -a "$OUT/env.txt"
args="$A"; for i in $(seq 1 "$k"); do args="$args $B"; done
for rep in 1 2; do
  GM_BENCH_MIX=1 row clips mix $args
  GM_BENCH_MIX=1 row clips_before mix $args
done
export GM_BENCH_ACCESS=stream GM_BENCH_COPIES=16
row clips s-alone "$A" "$B"
args="$A $B $B $B $B"
GM_BENCH_MIX=1 row clips s-mix $args
tail -3 "$OUT/clips.err"
python3 - "$OUT/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def alone(tags):
    a = [r["fps"] for r in rows if r["tag"] in tags and r["video"] == "bench_1080p_av1.mp4"]
    b = [r["fps"] for r in rows if r["tag"] in tags and r["video"] == "bench_1080p_h264.mp4"]
    return sum(a) / len(a), sum(b) / len(b)
for acc, tags, mixtag in (("random", ("alone",), "mix"), ("stream", ("s-alone",), "s-mix")):
    a, b = alone(tags)
    for m in (r for r in rows if r["tag"] == mixtag):
        print(f"{acc} {m['bin']}: AV1 alone {a:.0f}, H.264 alone {b:.0f}, mix {m['fps']}: {m['fps'] / (a + b):.3f} of the sum; parts {m.get('cpu_parts')}, cpu ms/1000 {m['cpu_ms_per_1000_frames']}, {m['device_mem_used_mb']} MB")
PY
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
