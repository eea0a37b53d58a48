#!/usr/bin/env bash
# The image loader's pipeline bench with antialias (torchvision's default filter), the kernel
# before (old: every block recomputes the precisions) and after (new: gm_aa_exact_prepare),
# alternated, same call.
set -u
REPO=$PWD; H=$REPO/.hs/g47
mkdir -p /tmp/g && cp -r "$H"/* /tmp/g/ && H=/tmp/g
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee "$OUT/summary.txt"
for f in $H/bin/*.xz; do xz -d "$f"; chmod +x "${f%.xz}"; done
cat $H/imagenet/* > /dev/null
for r in 1 2; do for b in old new; do
  GM_BENCH_ANTIALIAS=1 GM_BENCH_CORES=auto GM_BENCH_REPS=5 timeout 60 $H/bin/bench_$b $H/imagenet 2>>"$OUT/bench.err" \
    | sed "s/^{/{\"build\":\"$b\",\"round\":$r,/" >> "$OUT/bench.jsonl"
done; done
python3 - "$OUT/bench.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    v = json.loads(l); print(v["build"], v["round"], v.get("img_per_s"), v.get("cpu_us_per_img"), v.get("ms_per_batch"))
PY
tail -3 "$OUT/bench.err"
