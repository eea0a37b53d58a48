#!/usr/bin/env bash
# Where the detection loop's targets time goes: micro timings (old, cur) and py-spy of cur's bench.
set -u
REPO=$PWD; H=$REPO/.hs/g103; G=$REPO/.hs/g102
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -d /tmp/vcur ]; then
  mkdir -p /tmp/img && tar -xf $G/imagenet.tar -C /tmp/img
  SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
  for v in old cur; do python3 -m venv /tmp/v$v && echo "$SP" > "$(/tmp/v$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"; done
  /tmp/vold/bin/pip install -q --no-index --no-deps $G/old/*.whl 2>&1 | tail -2
  /tmp/vcur/bin/pip install -q --no-index --no-deps $G/whl/*.whl 2>&1 | tail -2
fi
/tmp/vcur/bin/pip install -q --no-index --no-deps $H/py_spy*.whl 2>&1 | tail -2
for v in old cur; do echo -n "$v "; GM_BENCH_REPEAT=8 timeout 100 /tmp/v$v/bin/python $H/micro.py 2>>$OUT/err.txt | tail -1; done | tee $OUT/micro.txt
cd bench/peers
GM_BENCH_REPEAT=8 GM_BENCH_EPOCHS=6 GM_PEERS=gm GM_DET_MASKS=1 GM_DET_IMPORT=batch timeout 150 /tmp/vcur/bin/py-spy record --native -r 400 -f raw -o $OUT/cur.raw -- /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m1 2>>$OUT/err.txt | grep '"peer"' | tee $OUT/spy-bench.jsonl | cut -c1-200
python3 - <<'PY' | tee $OUT/spy.txt
import collections, os
c = collections.Counter(); tot = 0
for l in open(os.environ["OUT"] + "/cur.raw"):
    stack, n = l.rstrip().rsplit(" ", 1); n = int(n)
    if "run_gm" not in stack or "epoch (detection_bench.py" not in stack: continue
    tot += n
    for f in set(stack.split(";")): c[f] += n
print("consumer samples", tot)
for f, n in c.most_common(60): print(n, f[:160])
PY
tail -n 3 $OUT/err.txt
