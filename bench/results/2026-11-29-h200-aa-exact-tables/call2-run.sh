#!/usr/bin/env bash
# Issue 42 diagnosis 2: GPU busy (torch.profiler kernels, nvidia-smi dmon sm/jpg), engines alone
# at 2-4 stages, perf over a long run.
set -u
REPO=$PWD; H=$REPO/.hs/g97; W=/tmp/w
if [ ! -x /tmp/vcur/bin/python ]; then
  G=$REPO/.hs/g96; mkdir -p $W/perf /tmp/img
  tar -xJf $G/perf.tar.xz -C $W/perf && tar -xf $G/imagenet.tar -C /tmp/img
  SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
  python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
  /tmp/vcur/bin/pip install -q --no-index --no-deps $G/whl/*.whl 2>&1 | tail -2
fi
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd bench/peers
export GM_PEERS=gm
det() { # label, env...
  local label=$1; shift
  env GM_BENCH_REPEAT=8 "$@" timeout 100 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-$label 2>>"$OUT/det.err" | grep '"peer"' | sed "s/^{/{\"label\": \"$label\", /" >> "$OUT/det.jsonl"
}
for m in 0 1; do
  GM_BENCH_REPEAT=8 GM_DET_MASKS=$m GM_DET_IMPORT=none timeout 100 /tmp/vcur/bin/python $H/prof.py /tmp/img/imagenet /tmp/det-prof$m > $OUT/prof$m.jsonl 2> $OUT/prof$m.txt
done
for r in 1 2; do
  det b16 GM_DET_MASKS=0 GM_DET_IMPORT=none
  det e2 GM_DET_MASKS=0 GM_DET_IMPORT=none GM_BENCH_CORES=8
  det e3 GM_DET_MASKS=0 GM_DET_IMPORT=none GM_BENCH_CORES=8 GM_BENCH_STAGES=3
  det e4 GM_DET_MASKS=0 GM_DET_IMPORT=none GM_BENCH_CORES=8 GM_BENCH_STAGES=4
  det m16 GM_DET_MASKS=1 GM_DET_IMPORT=none
  det me3 GM_DET_MASKS=1 GM_DET_IMPORT=none GM_BENCH_CORES=8 GM_BENCH_STAGES=3
done
nvidia-smi dmon -s u -d 1 > $OUT/dmon.txt 2>&1 &
DM=$!
GM_DET_MASKS=0 GM_DET_IMPORT=none GM_BENCH_REPEAT=64 GM_BENCH_EPOCHS=4 LD_LIBRARY_PATH=$W/perf/lib:$LD_LIBRARY_PATH timeout 150 $W/perf/perf record -F 997 -g -o $W/det.data /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-perf > $OUT/perf-row.jsonl 2>$OUT/perf.err
kill $DM
LD_LIBRARY_PATH=$W/perf/lib $W/perf/perf report -i $W/det.data --no-children --sort comm,dso --stdio -g none 2>/dev/null | grep -v "^$" | head -60 > $OUT/perf-comm-dso.txt
LD_LIBRARY_PATH=$W/perf/lib $W/perf/perf report -i $W/det.data --no-children --sort comm,dso,sym --stdio -g none 2>/dev/null | grep -v "^$" | head -200 > $OUT/perf-sym.txt
python3 -c "
import json
for l in open('$OUT/det.jsonl'):
    d=json.loads(l)
    print(d['label'], round(d['images_per_s']), 'dec', round(d.get('decode_us_per_image',0)), 'hw', round(d.get('decode_hardware_us_per_image',0)), 'cuda', round(d.get('decode_cuda_us_per_image',0)), 'tr', round(d.get('transform_us_per_image',0)), 'rd', round(d.get('read_us_per_image',0)), 'wait', round(d.get('wait_fraction',0),2), d.get('decode_paths'))
" > $OUT/summary.txt
cat $OUT/summary.txt; grep PROF $OUT/prof*.txt; head -c 600 $OUT/perf-row.jsonl; tail -n 3 "$OUT/det.err"
