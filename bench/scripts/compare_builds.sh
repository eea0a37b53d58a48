#!/usr/bin/env bash
# Two builds of gm's image-pipeline and clip-loader benches, interleaved on one GPU machine in one
# call, so that a change meant to keep speed (a refactor) is judged against run-to-run spread.
# Layout, carried to the GPU machine:
#   DIR/old/{gm-loader--pipeline,gm-loader--clips}   the build before the change
#   DIR/new/{gm-loader--pipeline,gm-loader--clips}   the build after it
#   DIR/data/jpeg/imagenet, DIR/data/video/bench_1080p_{h264,hevc}.mp4
#     (bench/data/make_jpeg_sets.sh, bench/data/make_videos.sh)
# Usage: compare_builds.sh DIR [ROUNDS] (GM_COMPARE=images: the image pipeline only). Writes $OUT/compare/{old,new}-{images,clips}.jsonl and
# prints one line per measurement; `cargo xtask bench --report` is not needed to read them.
set -u
dir="$(cd "${1:?usage: compare_builds.sh DIR [ROUNDS]}" && pwd)"
rounds="${2:-3}"
out="${OUT:-$dir/out}/compare"; mkdir -p "$out"
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  echo "cores: $(nproc)  date: $(date -u +%FT%TZ)  rounds: $rounds"
} | tee "$out/env.txt"
cat "$dir"/data/jpeg/imagenet/* "$dir"/data/video/* > /dev/null   # page cache
v="$dir/data/video"
for r in $(seq 1 "$rounds"); do
    # Alternate which build goes first, so that drift within the call favours neither.
    if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
    for b in $order; do
        # The loader's defaults (4 workers x 2 stages) and the best configuration of the last
        # report (engine share 0.6, 8 CUDA threads, 4 x 3).
        GM_BENCH_CONFIGS=4x2 GM_BENCH_REPS=3 timeout 120 "$dir/$b/gm-loader--pipeline" \
            "$dir/data/jpeg/imagenet" >> "$out/$b-images.jsonl" 2>> "$out/$b-images.err"
        GM_BENCH_CONFIGS=4x3 GM_BENCH_HW_LOAD=0.6 GM_BENCH_CUDA_THREADS=8 GM_BENCH_REPS=3 \
            timeout 120 "$dir/$b/gm-loader--pipeline" "$dir/data/jpeg/imagenet" \
            >> "$out/$b-images.jsonl" 2>> "$out/$b-images.err"
        [ "${GM_COMPARE:-all}" = images ] || GM_BENCH_SESSIONS=7 GM_BENCH_REPS=3 GM_BENCH_COPIES=8 GM_BENCH_RANDOM_BATCHES=60 timeout 150 \
            "$dir/$b/gm-loader--clips" "$v/bench_1080p_h264.mp4" "$v/bench_1080p_hevc.mp4" \
            >> "$out/$b-clips.jsonl" 2>> "$out/$b-clips.err"
        echo "round $r $b done"
    done
done
tail -n 3 "$out"/*.err
python3 - "$out" <<'EOF'
import json, sys, collections, statistics, pathlib
out = pathlib.Path(sys.argv[1])
rows = collections.defaultdict(list)
for f in sorted(out.glob("*.jsonl")):
    build, kind = f.stem.split("-", 1)
    for line in f.read_text().splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        rate = m.get("img_per_s") or m.get("fps")
        if rate is None:
            continue
        key = tuple(f"{k}={m[k]}" for k in ("workers", "stages", "hw_load", "cuda_threads",
                                            "video", "access", "sessions", "gop_cache") if k in m)
        rows[(kind, key)].append((build, float(rate)))
lines = []
for (kind, key), vals in sorted(rows.items()):
    old = [r for b, r in vals if b == "old"]
    new = [r for b, r in vals if b == "new"]
    if not old or not new:
        continue
    mo, mn = statistics.median(old), statistics.median(new)
    spread = (max(old) - min(old)) / mo * 100 if len(old) > 1 else 0
    lines.append(f"{kind:6} {' '.join(key):60.60} old {mo:10.0f} new {mn:10.0f} "
                 f"new/old {mn / mo:5.3f}  old spread {spread:4.1f}%  n={len(old)},{len(new)}")
(out / "summary.txt").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
