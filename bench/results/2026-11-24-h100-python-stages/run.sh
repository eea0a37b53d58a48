#!/bin/bash
# Issue 20: gm.ImageLoader from Python with 2 GPU stages against its new default (3 from a
# 10-core budget) and the Rust pipeline bench with 4x2 and 4x3, interleaved, ROUNDS rounds.
set -u
C=target/pyb; out=$OUT/pyb; mkdir -p $out
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; date -u
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'; } > $out/env.txt
python3 -m venv /tmp/gmv
python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall $C/whl/gradient_mechanics_rs-*.whl
unxz -c $C/pipeline.xz > /tmp/pipeline; chmod +x /tmp/pipeline
mkdir -p /tmp/img; cp $C/imagenet/*.jpg /tmp/img/; cat /tmp/img/* > /dev/null
export GM_BENCH_REPEAT=100 GM_BENCH_REPS=5
for r in $(seq 1 ${ROUNDS:-3}); do
  echo "round $r $(date -u +%T)" >> $out/run.log
  for st in 2 auto; do
    GM_BENCH_STAGES=$st timeout 150 /tmp/gmv/bin/python bench/peers/python_package_bench.py images /tmp/img 2>>$out/err.txt \
      | sed "s/^{/{\"round\": $r, /" >> $out/python.jsonl
  done
  GM_BENCH_CONFIGS=4x2,4x3 timeout 150 /tmp/pipeline /tmp/img 2>>$out/err.txt | grep '^{' \
    | sed "s/^{/{\"round\":$r,/" >> $out/rust.jsonl
done
python3 - $out <<'PY'
import json, sys
for f in ("python.jsonl", "rust.jsonl"):
    for l in open(f"{sys.argv[1]}/{f}"):
        r = json.loads(l)
        print(f, r["round"], r.get("stages"), r.get("workers"), r["img_per_s"], r["min"], r["max"], "wait", r["wait_us_per_batch"])
PY
tail -3 $out/err.txt
