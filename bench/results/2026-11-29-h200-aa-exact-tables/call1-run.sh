#!/usr/bin/env bash
# Issue 42 diagnosis: where gm's COCO detection loop's time goes at batch 16 (boxes only, loop
# reading shapes; and masks). Batch size sweep, cores by thread, perf by thread and symbol.
set -u
REPO=$PWD; H=$REPO/.hs/g96; W=/tmp/w; mkdir -p $W/perf /tmp/img
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; ls /usr/local/cuda/bin | tr '\n' ' '; which nsys ncu; ls /opt/nvidia 2>&1; } 2>&1 | tee "$OUT/env.txt"
tar -xJf $H/perf.tar.xz -C $W/perf && tar -xf $H/imagenet.tar -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vcur/bin/pip install -q --no-index --no-deps $H/whl/*.whl 2>&1 | tail -2
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd bench/peers
export GM_BENCH_REPEAT=8 GM_PEERS=gm
det() { # label, env...
  local label=$1; shift
  env "$@" timeout 100 /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-$label 2>>"$OUT/det.err" | grep '"peer"' | sed "s/^{/{\"label\": \"$label\", /" | tee -a "$OUT/det.jsonl"
}
for r in 1 2; do
  det b16 GM_DET_MASKS=0 GM_DET_IMPORT=none
  det b32 GM_DET_MASKS=0 GM_DET_IMPORT=none GM_BENCH_BATCH=32
  det b64 GM_DET_MASKS=0 GM_DET_IMPORT=none GM_BENCH_BATCH=64
  det m16 GM_DET_MASKS=1 GM_DET_IMPORT=batch
  det m64 GM_DET_MASKS=1 GM_DET_IMPORT=batch GM_BENCH_BATCH=64
done
det b16s5 GM_DET_MASKS=0 GM_DET_IMPORT=none GM_BENCH_STAGES=6
det b16c8 GM_DET_MASKS=0 GM_DET_IMPORT=none GM_BENCH_CORES=8
GM_DET_MASKS=0 GM_DET_IMPORT=none GM_BENCH_EPOCHS=8 LD_LIBRARY_PATH=$W/perf/lib:$LD_LIBRARY_PATH timeout 150 $W/perf/perf record -F 499 -g -o $W/det.data /tmp/vcur/bin/python detection_bench.py /tmp/img/imagenet /tmp/det-perf > $OUT/perf-row.jsonl 2>$OUT/perf.err
LD_LIBRARY_PATH=$W/perf/lib $W/perf/perf report -i $W/det.data --no-children --sort comm,dso --stdio 2>/dev/null | grep -v "^$" | head -70 > $OUT/perf-comm-dso.txt
LD_LIBRARY_PATH=$W/perf/lib $W/perf/perf report -i $W/det.data --no-children --sort comm,dso,sym --stdio -g none 2>/dev/null | grep -v "^$" | head -150 > $OUT/perf-sym.txt
LD_LIBRARY_PATH=$W/perf/lib $W/perf/perf report -i $W/det.data --children --sort comm,sym --stdio -g none 2>/dev/null | grep -v "^$" | head -150 > $OUT/perf-children.txt
python3 -c "
import json
for l in open('$OUT/det.jsonl'):
    d=json.loads(l)
    print(d['label'], round(d['images_per_s']), 'dec', round(d.get('decode_us_per_image',0)), 'hw', round(d.get('decode_hardware_us_per_image',0)), 'cuda', round(d.get('decode_cuda_us_per_image',0)), 'tr', round(d.get('transform_us_per_image',0)), 'wait', round(d.get('wait_fraction',0),2), d.get('decode_paths'), d.get('cores_by_thread'))
" | tee $OUT/summary.txt
tail -n 3 "$OUT/det.err"
