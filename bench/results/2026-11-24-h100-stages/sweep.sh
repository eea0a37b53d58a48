#!/bin/bash
# Issue 20/24: the decoder split on the whole 16-core H100 host (no core budget: the loader's
# settings set by the bench's env), engines alone against fixed and run-time shares with more
# CUDA threads, 2 and 3 stages; ROUNDS interleaved rounds.
set -u
C=target/split-carry; out=$OUT/split; mkdir -p $out /tmp/s/c0
unxz -c $C/pipeline.xz > /tmp/pipeline; chmod +x /tmp/pipeline
cp $C/imagenet/*.jpg /tmp/s/c0/; cat /tmp/s/c0/* > /dev/null
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
export GM_BENCH_REPEAT=100 GM_BENCH_REPS=5 GM_BENCH_CONFIGS=4x2,4x3
run() {  # label, env...
  local label=$1; shift
  env "$@" timeout 120 /tmp/pipeline /tmp/s/c0 2>>$out/err.txt | grep '^{' \
    | sed "s/^{/{\"label\":\"$label\",\"round\":$r,/" >> $out/split.jsonl
}
for r in $(seq 1 ${ROUNDS:-2}); do
  echo "round $r $(date -u +%T)" >> $out/run.log
  run engines GM_BENCH_HW_LOAD=1.0 GM_BENCH_CUDA_THREADS=1
  run fixed-0.8-4 GM_BENCH_HW_LOAD=0.8 GM_BENCH_CUDA_THREADS=4
  run fixed-0.7-6 GM_BENCH_HW_LOAD=0.7 GM_BENCH_CUDA_THREADS=6
  run fixed-0.7-8 GM_BENCH_HW_LOAD=0.7 GM_BENCH_CUDA_THREADS=8
  run fixed-0.6-8 GM_BENCH_HW_LOAD=0.6 GM_BENCH_CUDA_THREADS=8
  run balanced-0.8-4 GM_BENCH_HW_LOAD=0.8 GM_BENCH_CUDA_THREADS=4 GM_BENCH_BALANCED=1
  run balanced-0.7-8 GM_BENCH_HW_LOAD=0.7 GM_BENCH_CUDA_THREADS=8 GM_BENCH_BALANCED=1
done
python3 - $out/split.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["round"], r["label"], f'{r["workers"]}x{r["stages"]}', r["img_per_s"], r["min"], r["max"], "cores", r["cpu_cores"], "us/img", r["cpu_us_per_img"], "paths", r["hardware"], r["cuda"], r["cpu"])
PY
