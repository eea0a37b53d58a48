#!/usr/bin/env bash
set -u
here="$(cd "$(dirname "$0")" && pwd)"; out="$OUT"; mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
xz -dc "$here/pipeline.xz" > /tmp/pipeline && chmod +x /tmp/pipeline
mkdir -p /tmp/data && tar xf "$here/imagenet.tar" -C /tmp/data
data=/tmp/data/imagenet; cat $data/* > /dev/null
{ date -u; nproc; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; } > "$out/env.txt" 2>&1
nvidia-smi dmon -s u -d 1 > "$out/dmon.txt" 2>&1 & dmon=$!
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat; }
export GM_BENCH_REPEAT=250 GM_BENCH_REPS=3
gm() { # LABEL DEVICE ENV...: the pipeline bench with extra settings
  local l=$1 d=$2; shift 2
  env GM_BENCH_DEVICE=$d "$@" timeout 120 /tmp/pipeline $data 2>> "$out/gm.err" | sed "s/^{/{\"run\":\"$l\",\"dev\":$d,/" >> "$out/gm.jsonl"
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
lscpu > "$out/lscpu.txt"; lscpu -e >> "$out/lscpu.txt"
# Halves of the host by physical core: CPUs sorted by (socket, core, thread), cut in two.
read -r H0 H1 < <(python3 - <<'PY'
import os, glob
cpus = []
for d in glob.glob("/sys/devices/system/cpu/cpu[0-9]*"):
    n = int(d.rsplit("cpu", 1)[1])
    t = d + "/topology/"
    pk = int(open(t + "physical_package_id").read()); core = int(open(t + "core_id").read())
    cpus.append((pk, core, n))
cpus.sort()
h = len(cpus) // 2
print(",".join(str(c[2]) for c in cpus[:h]), ",".join(str(c[2]) for c in cpus[h:]))
PY
)
echo "halves: $H0 | $H1" | tee -a "$out/cores.txt"
for c in 0 1 2 3 16 17; do echo "cpu$c siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list)"; done | tee -a "$out/cores.txt"
gmp() { # LABEL DEVICE ENV...: gm pinned to its half
  local l=$1 d=$2; shift 2
  local set=$H0; [ "$d" = 1 ] && set=$H1
  env GM_BENCH_DEVICE=$d "$@" taskset -c "$set" timeout 120 /tmp/pipeline $data 2>> "$out/gm.err" | sed "s/^{/{\"run\":\"$l\",\"dev\":$d,/" >> "$out/gm.jsonl"
}
for p in ${PHASES:-s80x2 s80x2p s80x1p s80x1 s80x2pb s80x2b def2p def2}; do
  case $p in
    s80x2p*) phase "$p" 2 gmp $S ;;
    s80x1p)  phase "$p" 1 gmp $S ;;
    s80x2*)  phase "$p" 2 gm $S ;;
    s80x1)   phase "$p" 1 gm $S ;;
    def2p)   phase "$p" 2 gmp $AUTO LOCAL_WORLD_SIZE=2 ;;
    def2)    phase "$p" 2 gm $AUTO LOCAL_WORLD_SIZE=2 ;;
  esac
done
kill $dmon
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for r in (json.loads(l) for l in open(f"{out}/gm.jsonl")):
    ms = r.get("ms_per_batch", {})
    print(r["run"], r["dev"], r.get("img_per_s"), r.get("min"), r.get("max"), "cores", r.get("cpu_cores"), "budget", r.get("core_budget"),
          "w", r.get("workers"), "st", r.get("stages"), "hw/cuda", r.get("hardware"), r.get("cuda"), "b2b", r.get("back_to_back", {}).get("img_per_s"),
          "hwms", ms.get("hardware"), "cudams", ms.get("cuda"), "plan", ms.get("decode_plan"), "read", ms.get("read"))
PY
head -30 "$out/lscpu.txt" | grep -E "Thread|Core|Socket|Model name|NUMA"
