#!/usr/bin/env bash
# Epochs back to back: the image loader with the next epoch started earlier (its reads sent
# before its stages are free) against the wheel before that change, beside gm's Rust bench
# (per epoch and back to back) and DALI, interleaved, on one GPU in one call.
# Layout (carried to the GPU machine in earlier calls of the same session):
#   DIR/imagenet/ (bench/data/make_jpeg_sets.sh), DIR/gm-loader--pipeline (the Rust bench),
#   DIR/new/*.whl and DIR/old/*.whl (gm's wheels), DALI unpacked in /tmp/dali (as
#   bench/scripts/python_run.sh unpacks it); bench/peers/*.py from the repository.
# Env: DIR (/tmp/pr), ROUNDS (3), REPEAT (50: 10,000 images an epoch), DALI_THREADS (12,16).
# (Run from bench/scripts/ of the experiment's working tree, where REPO resolved to the checkout.)
set -u
dir="${DIR:-/tmp/pr}"; repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$dir/out}/prestart"; mkdir -p "$out"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores: $(nproc)"; date -u
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
} > "$out/env.txt"
for v in new old; do  # a fresh venv per wheel, lent the machine's PyTorch
    if [ ! -x /tmp/gm-$v/bin/python ]; then
        python3 -m venv /tmp/gm-$v
        python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gm-$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
    fi
    /tmp/gm-$v/bin/pip install -q --no-index --no-deps --force-reinstall "$dir"/$v/gradient_mechanics_rs-*.whl
done
[ -x "$dir/gm-loader--pipeline" ] || { unxz -kf "$dir/gm-loader--pipeline.xz" && chmod +x "$dir/gm-loader--pipeline"; }
cat "$dir"/imagenet/* > /dev/null
export GM_BENCH_REPS="${REPS:-5}" GM_BENCH_REPEAT="${REPEAT:-50}"
tag() { sed "s/^{/{\"round\": $1, \"build\": \"$2\", /"; }
for r in $(seq 1 "${ROUNDS:-3}"); do
    log "round $r: rust"
    GM_BENCH_CONFIGS=4x3 timeout 150 "$dir/gm-loader--pipeline" "$dir/imagenet" 2>> "$out/rust.err" | grep '^{' | tag $r new >> "$out/rust.jsonl"
    for v in new old; do
        log "round $r: python $v"
        GM_BENCH_STAGES=auto timeout 150 /tmp/gm-$v/bin/python "$repo/bench/peers/python_package_bench.py" images "$dir/imagenet" \
            2>> "$out/python.err" | tag $r $v >> "$out/python.jsonl"
    done
    log "round $r: dali"
    GM_PEERS=dali GM_DALI_THREADS="${DALI_THREADS:-12,16}" PYTHONPATH=/tmp/dali timeout 200 \
        python3 "$repo/bench/peers/loader_pipeline_peers.py" "$dir/imagenet" 2>> "$out/dali.err" | tag $r dali >> "$out/dali.jsonl"
done
log "done"
python3 - "$out" <<'PY'
import json, sys
for f in ("rust", "python", "dali"):
    for line in open(f"{sys.argv[1]}/{f}.jsonl"):
        r = json.loads(line)
        extra = r.get("back_to_back", {}).get("img_per_s", "")
        print(f, r["round"], r["build"], r.get("num_threads", r.get("stages")), r["img_per_s"], r["min"], r["max"],
              "b2b", extra, "first", r.get("timeline_ms", {}).get("first_batch", ""))
PY
tail -n 3 "$out"/*.err
