#!/usr/bin/env bash
# Call C (issue 45, x2): tests of the name-keyed split; name against position; gm against DALI in rounds.
set -u
here="$(cd "$(dirname "$0")" && pwd)"; out="$OUT"; mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
if [ ! -e /tmp/dali/.done ]; then
  mkdir -p /tmp/dali && cat $(ls /tmp/gm-parts/dali.tar.xz.* | sort) | xz -dcT0 | tar xf - -C /tmp/dali && touch /tmp/dali/.done
fi
ls /tmp/dali | head -3
xz -dc "$here/pipeline.xz" > /tmp/pipeline && chmod +x /tmp/pipeline
mkdir -p /tmp/data && tar xf "$here/imagenet.tar" -C /tmp/data
data=/tmp/data/imagenet; cat $data/* > /dev/null
{ date -u; nproc; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
  nvidia-smi topo -m; PYTHONPATH=/tmp/dali python3 -c 'import nvidia.dali as d; print("dali", d.__version__)'; } > "$out/env.txt" 2>&1
nvidia-smi dmon -s u -d 1 > "$out/dmon.txt" 2>&1 & dmon=$!
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat; }
export GM_BENCH_REPEAT=250 GM_BENCH_REPS=3
gm() { # LABEL DEVICE ENV...: the pipeline bench with extra settings
  local l=$1 d=$2; shift 2
  env GM_BENCH_DEVICE=$d "$@" timeout 120 /tmp/pipeline $data 2>> "$out/gm.err" | sed "s/^{/{\"run\":\"$l\",\"dev\":$d,/" >> "$out/gm.jsonl"
}
dali() { # LABEL DEVICE THREADS
  CUDA_VISIBLE_DEVICES=$2 GM_PEERS=dali GM_DALI_THREADS=$3 PYTHONPATH=/tmp/dali timeout 200 python3 "$here/loader_pipeline_peers.py" $data \
    2>> "$out/dali.err" | sed "s/^{/{\"run\":\"$1\",\"dev\":$2,/" >> "$out/dali.jsonl"
}
phase() { # LABEL N FN ARGS...: FN LABEL DEVICE ARGS on devices 0..N-1 at once
  local l=$1 n=$2 fn=$3 pids=() b0 t0 b1 t1 s0; shift 3
  read -r b0 t0 < <(busy); s0=$(date +%s)
  echo "$s0 start $l"
  for d in $(seq 0 $((n - 1))); do "$fn" "$l" "$d" "$@" & pids+=($!); done
  wait "${pids[@]}"
  read -r b1 t1 < <(busy)
  awk -v l="$l" -v b="$((b1 - b0))" -v t="$((t1 - t0))" -v c="$(nproc)" -v s="$(( $(date +%s) - s0 ))" \
    'BEGIN {printf "%s: %.1f host cores busy over %d s\n", l, c * b / t, s}' | tee -a "$out/cores.txt"
}
AUTO="GM_BENCH_CORES=auto GM_BENCH_CONFIGS=4x3"
S="GM_BENCH_CONFIGS=4x3 GM_BENCH_HW_LOAD=0.8 GM_BENCH_CUDA_THREADS=4"
if [ -z "${SKIP_TESTS:-}" ]; then
  for t in jpeg_gpu pipetest video; do xz -dc "$here/$t.xz" > /tmp/$t && chmod +x /tmp/$t; done
  (cd crates/gm-codec && GM_FIXTURES=$PWD/../../tests/media GM_SHARED_MEDIA=$here/media GM_REQUIRE_GPU=1 timeout 150 /tmp/jpeg_gpu 2>&1 | grep -E "^test |test result|panicked" | tail -15)
  (cd crates/gm-loader && GM_FIXTURES=$PWD/../../tests/media GM_REQUIRE_GPU=1 timeout 150 /tmp/pipetest gpu:: --test-threads=4 2>&1 | grep -E "^test |test result|panicked|paths by|by position|paths: 2 cores" | tail -40)
  (cd crates/gm-loader && GM_FIXTURES=$PWD/../../tests/media GM_REQUIRE_GPU=1 timeout 150 /tmp/video 2>&1 | grep -E "^test |test result|panicked|SKIP" | tail -20)
fi
for p in ${PHASES:-name1 pos1 name1b pos1b def2 dali2 def2b dali2b def2c dali2c}; do
  case $p in
    name1*) phase "$p" 1 gm $S ;;
    pos1*)  phase "$p" 1 gm $S GM_BENCH_SPLIT_KEY=position ;;
    def2*)  phase "$p" 2 gm $AUTO LOCAL_WORLD_SIZE=2 ;;
    dali2*) phase "$p" 2 dali 12 ;;
  esac
done
kill $dmon
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for f in ("gm.jsonl", "dali.jsonl"):
    try:
        rows = [json.loads(l) for l in open(f"{out}/{f}")]
    except FileNotFoundError:
        continue
    for r in rows:
        ms = r.get("ms_per_batch", {})
        print(r["run"], r["dev"], r.get("img_per_s"), r.get("min"), r.get("max"), "cores", r.get("cpu_cores"),
              "hw/cuda", r.get("hardware"), r.get("cuda"), r.get("split_key"), "b2b", r.get("back_to_back", {}).get("img_per_s"),
              "hwms", ms.get("hardware"), "cudams", ms.get("cuda"), "thr", r.get("num_threads"))
PY
