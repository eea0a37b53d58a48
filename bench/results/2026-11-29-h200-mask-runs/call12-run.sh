#!/usr/bin/env bash
# Issue 42: Batch.torch_targets with one as_strided per tensor; the loop's steps timed with the
# loader at 12, 8 and 6 host workers and idle; gm-python's torch_targets test; the bench with
# 12/8/6 workers (masks, batch import).
set -u
REPO=$PWD; H=$REPO/.hs/g74
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -e /tmp/vcur/bin/python ]; then
  SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
  python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
fi
/tmp/vcur/bin/pip install -q --no-index --no-deps --force-reinstall "$H"/*.whl 2>&1 | tail -2
mkdir -p /tmp/img && tar -xf "$H/imagenet.tar" -C /tmp/img
for w in 12 8 6; do W=$w GM_BENCH_REPEAT=8 timeout 100 /tmp/vcur/bin/python "$H/micro.py" 2>>"$OUT/micro.err" | tee -a "$OUT/micro.jsonl"; done
(cd crates/gm-python/tests && GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1 timeout 200 /tmp/vcur/bin/python -m pytest -q -p no:cacheprovider \
   gpu/test_torch.py -k "torch_targets or detection" 2>&1 | tail -5) | tee "$OUT/pytest.txt"
cd bench/peers
for w in 12 8 6; do
  GM_BENCH_REPEAT=8 GM_PEERS=gm GM_BENCH_WORKERS=$w timeout 100 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-m1 2>>"$OUT/det.err" | tee -a "$OUT/detection.jsonl"
done
tail -3 "$OUT/det.err" "$OUT/micro.err"
