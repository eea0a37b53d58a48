#!/bin/bash
# Issue 20/24: 2 against 3 GPU stages at the default decoder settings, both orders within a
# process (the second config of a process could gain from a warm machine), ROUNDS rounds.
set -u
C=target/split-carry; out=$OUT/order; mkdir -p $out /tmp/s/c0
unxz -c $C/pipeline.xz > /tmp/pipeline; chmod +x /tmp/pipeline
cp $C/imagenet/*.jpg /tmp/s/c0/; cat /tmp/s/c0/* > /dev/null
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
export GM_BENCH_REPS=5
for r in $(seq 1 ${ROUNDS:-3}); do
  for order in 4x2,4x3 4x3,4x2 4x2,4x3,4x4; do
    for rep in 50 200; do
      GM_BENCH_REPEAT=$rep GM_BENCH_CONFIGS=$order timeout 150 /tmp/pipeline /tmp/s/c0 2>>$out/err.txt | grep '^{' \
        | sed "s/^{/{\"order\":\"$order\",\"repeat\":$rep,\"round\":$r,/" >> $out/order.jsonl
    done
  done
done
python3 - $out/order.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["round"], r["order"], r["repeat"], f'{r["workers"]}x{r["stages"]}', r["img_per_s"], r["min"], r["max"], "wait", r["wait_us_per_batch"], "cores", r["cpu_cores"], r.get("timeline_ms"))
PY
